package retry

import (
	"context"
	"time"
)

// Sleep waits d, or until ctx is done, and then returns ctx's error. It is
// the one wait every live loop takes between attempts (the command runner,
// notification delivery, the store's delivery lock); tests inject their
// own in its place.
func Sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

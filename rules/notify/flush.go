package notify

import (
	"context"
	"fmt"

	"github.com/orchstat/orchstat/rules/alerting"
)

// Item is a notification to deliver: a queued one (ID > 0) or an
// Alertmanager refresh (ID 0), which is not queued.
type Item struct {
	ID       int64
	Receiver string
	Reason   string
	Message  Message
}

// Result is what became of an Item in one check.
type Result struct {
	Item
	Attempts int
	Err      error // nil when delivered
}

// Flush delivers items in order, each receiver's in the order given. Once
// one of a receiver's items fails, the rest of that receiver's are held
// back untried, so a receiver never gets a resolution before the firing
// it resolves. Items for receivers that are not in receivers (removed from
// the rule file) fail without an attempt and stay queued.
//
// done, when set, is called with each result as soon as it is known, so a
// caller can record an acknowledgement before the next item is tried.
func (s *Sender) Flush(ctx context.Context, receivers []*alerting.Receiver, items []Item, done func(Result)) []Result {
	byName := map[string]*alerting.Receiver{}
	for _, r := range receivers {
		byName[r.Name] = r
	}
	failed := map[string]bool{}
	out := make([]Result, 0, len(items))
	for _, it := range items {
		res := Result{Item: it}
		r := byName[it.Receiver]
		switch {
		case r == nil:
			res.Err = &Error{Receiver: it.Receiver, Msg: "no such receiver in the rule file; the notification stays queued until it is back"}
		case failed[it.Receiver]:
			res.Err = &Error{Receiver: it.Receiver, Msg: "held back behind an earlier notification that failed"}
		case ctx.Err() != nil:
			res.Err = &Error{Receiver: it.Receiver, Msg: fmt.Sprintf("not tried: %v", ctx.Err())}
		default:
			res.Attempts, res.Err = s.Deliver(ctx, r, it.Message)
		}
		if res.Err != nil {
			failed[it.Receiver] = true
		}
		if done != nil {
			done(res)
		}
		out = append(out, res)
	}
	return out
}

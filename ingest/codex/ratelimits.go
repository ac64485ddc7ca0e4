package codex

import (
	"encoding/json"
	"time"
)

// rateLimits is the plan's use as Codex's server reported it in
// token_counts' rate_limits, each window's latest a rollout carries: the
// run's detail keeps them for `report --by block`. These are the
// provider's own figures, so they are copied, never computed.
type rateLimits struct {
	Primary   *rateLimitWindow `json:"primary,omitempty"`
	Secondary *rateLimitWindow `json:"secondary,omitempty"`
}

// rateLimitWindow is one window: the 5-hour one (primary, 300 minutes)
// or the week (secondary, 10080) in the rollouts seen so far. ResetsAt is
// absolute: the record's resets_at (Unix seconds, newer versions), else
// the line's time plus resets_in_seconds (older ones).
type rateLimitWindow struct {
	// ObservedAt is the time of the line that gave the figures.
	ObservedAt    time.Time  `json:"observed_at"`
	UsedPercent   float64    `json:"used_percent"`
	WindowMinutes int64      `json:"window_minutes"`
	ResetsAt      *time.Time `json:"resets_at,omitempty"`
}

// rawWindow is a window as the record writes it.
type rawWindow struct {
	UsedPercent     *float64 `json:"used_percent"`
	WindowMinutes   *float64 `json:"window_minutes"`
	ResetsInSeconds *float64 `json:"resets_in_seconds"`
	ResetsAt        *float64 `json:"resets_at"`
}

// readRateLimits keeps each window a token_count's rate_limits name. A
// line often names one window (secondary null), which leaves the other's
// figures as they were. Some versions write every figure as 0 (no plan,
// an API key), and an older shape flattens them (primary_used_percent):
// neither names a window, so neither replaces the figures kept. A payload whose
// rate_limits do not parse leaves them as they were: the call the line
// records is read all the same.
func (r *rollout) readRateLimits(ts time.Time, payload json.RawMessage) {
	var p struct {
		RateLimits *struct {
			Primary   *rawWindow `json:"primary"`
			Secondary *rawWindow `json:"secondary"`
		} `json:"rate_limits"`
	}
	if json.Unmarshal(payload, &p) != nil || p.RateLimits == nil {
		return
	}
	primary, secondary := p.RateLimits.Primary.window(ts), p.RateLimits.Secondary.window(ts)
	if primary == nil && secondary == nil {
		return
	}
	if r.RateLimits == nil {
		r.RateLimits = &rateLimits{}
	}
	if primary != nil {
		r.RateLimits.Primary = primary
	}
	if secondary != nil {
		r.RateLimits.Secondary = secondary
	}
}

func (w *rawWindow) window(ts time.Time) *rateLimitWindow {
	if w == nil || w.UsedPercent == nil || w.WindowMinutes == nil || *w.WindowMinutes <= 0 {
		return nil
	}
	out := &rateLimitWindow{ObservedAt: ts.UTC(), UsedPercent: *w.UsedPercent, WindowMinutes: int64(*w.WindowMinutes)}
	switch {
	case w.ResetsAt != nil && *w.ResetsAt > 0 && *w.ResetsAt < 1<<40:
		t := time.Unix(int64(*w.ResetsAt), 0).UTC()
		out.ResetsAt = &t
	case w.ResetsInSeconds != nil && *w.ResetsInSeconds >= 0 && *w.ResetsInSeconds < 1<<40:
		t := ts.Add(time.Duration(*w.ResetsInSeconds * float64(time.Second))).UTC()
		out.ResetsAt = &t
	}
	return out
}

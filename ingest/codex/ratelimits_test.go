package codex

import (
	"encoding/json"
	"testing"
	"time"
)

// TestReadRateLimits: each window is kept from the line that names it,
// its reset made absolute from either shape, and lines that name no
// window (all zeros, the flattened older shape, null) change nothing.
func TestReadRateLimits(t *testing.T) {
	ts := time.Date(2026, 3, 4, 17, 0, 0, 0, time.UTC)
	r := &rollout{}
	for _, p := range []string{
		`{"type":"token_count","rate_limits":{"primary":{"used_percent":40,"window_minutes":300,"resets_in_seconds":60},"secondary":{"used_percent":70,"window_minutes":10080,"resets_in_seconds":120}}}`,
		`{"type":"token_count","rate_limits":{"limit_id":"codex","primary":{"used_percent":42,"window_minutes":300,"resets_at":1772654400},"secondary":null}}`,
		`{"type":"token_count","rate_limits":{"primary":{"used_percent":0,"window_minutes":0,"resets_in_seconds":0},"secondary":{"used_percent":0,"window_minutes":0,"resets_in_seconds":0}}}`,
		`{"type":"token_count","rate_limits":{"primary_used_percent":0,"secondary_used_percent":0,"primary_window_minutes":0}}`,
		`{"type":"token_count","rate_limits":null}`,
		`{"type":"token_count","rate_limits":{"primary":"full"}}`,
	} {
		r.readRateLimits(ts, json.RawMessage(p))
		ts = ts.Add(time.Minute)
	}
	rl := r.RateLimits
	if rl == nil || rl.Primary == nil || rl.Secondary == nil {
		t.Fatalf("rate limits %+v, want both windows", rl)
	}
	p, s := rl.Primary, rl.Secondary
	if p.UsedPercent != 42 || p.ResetsAt == nil || !p.ResetsAt.Equal(time.Date(2026, 3, 4, 20, 0, 0, 0, time.UTC)) ||
		!p.ObservedAt.Equal(time.Date(2026, 3, 4, 17, 1, 0, 0, time.UTC)) {
		t.Errorf("primary %+v: want 42%% from the second line, resetting at its resets_at", p)
	}
	if s.UsedPercent != 70 || s.WindowMinutes != 10080 || s.ResetsAt == nil || !s.ResetsAt.Equal(time.Date(2026, 3, 4, 17, 2, 0, 0, time.UTC)) {
		t.Errorf("secondary %+v: want 70%% from the first line, resetting 120 s after it", s)
	}
}

package reports

import (
	"testing"
	"time"
)

// TestFoldBlocks holds FoldBlocks to ccusage 18's identifySessionBlocks
// case by case: the hour floor, the five hours counted from it (a call at
// exactly five hours stays), the idle gap and its gap block, activity.
func TestFoldBlocks(t *testing.T) {
	at := func(s string) time.Time {
		t.Helper()
		v, err := time.Parse(time.RFC3339, s)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	call := func(s string, tokens float64) BlockCall {
		c := 1.0
		return BlockCall{TS: at(s), Model: "m", Input: tokens, Cost: &c}
	}
	type want struct {
		start, end string
		gap        bool
		active     bool
		calls      int64
	}
	for _, tc := range []struct {
		name  string
		calls []BlockCall
		now   string
		want  []want
	}{
		{"none", nil, "2026-01-01T00:00:00Z", nil},
		{"floored to the hour", []BlockCall{call("2026-01-01T10:59:59Z", 1)}, "2026-02-01T00:00:00Z",
			[]want{{"2026-01-01T10:00:00Z", "2026-01-01T15:00:00Z", false, false, 1}}},
		{"exactly five hours after the start stays", []BlockCall{call("2026-01-01T10:00:00Z", 1), call("2026-01-01T15:00:00Z", 1)}, "2026-02-01T00:00:00Z",
			[]want{{"2026-01-01T10:00:00Z", "2026-01-01T15:00:00Z", false, false, 2}}},
		{"past the block's end starts another, no gap", []BlockCall{call("2026-01-01T10:30:00Z", 1), call("2026-01-01T14:00:00Z", 1), call("2026-01-01T15:10:00Z", 1)}, "2026-02-01T00:00:00Z",
			[]want{{"2026-01-01T10:00:00Z", "2026-01-01T15:00:00Z", false, false, 2}, {"2026-01-01T15:00:00Z", "2026-01-01T20:00:00Z", false, false, 1}}},
		{"idle more than five hours: a gap block", []BlockCall{call("2026-01-01T10:30:00Z", 1), call("2026-01-01T16:31:00Z", 1)}, "2026-02-01T00:00:00Z",
			[]want{{"2026-01-01T10:00:00Z", "2026-01-01T15:00:00Z", false, false, 1}, {"2026-01-01T15:30:00Z", "2026-01-01T16:31:00Z", true, false, 0},
				{"2026-01-01T16:00:00Z", "2026-01-01T21:00:00Z", false, false, 1}}},
		{"out of order in, sorted", []BlockCall{call("2026-01-01T11:00:00Z", 1), call("2026-01-01T10:05:00Z", 1)}, "2026-02-01T00:00:00Z",
			[]want{{"2026-01-01T10:00:00Z", "2026-01-01T15:00:00Z", false, false, 2}}},
		{"active: now before the end, last call within five hours", []BlockCall{call("2026-01-01T10:05:00Z", 1)}, "2026-01-01T14:59:59Z",
			[]want{{"2026-01-01T10:00:00Z", "2026-01-01T15:00:00Z", false, true, 1}}},
		{"not active at the end itself", []BlockCall{call("2026-01-01T10:05:00Z", 1)}, "2026-01-01T15:00:00Z",
			[]want{{"2026-01-01T10:00:00Z", "2026-01-01T15:00:00Z", false, false, 1}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := FoldBlocks(tc.calls, at(tc.now), BlockLength)
			if len(got) != len(tc.want) {
				t.Fatalf("%d blocks, want %d: %+v", len(got), len(tc.want), got)
			}
			for i, w := range tc.want {
				g := got[i]
				if !g.Start.Equal(at(w.start)) || !g.End.Equal(at(w.end)) || g.Gap != w.gap || g.Active != w.active || g.Calls != w.calls {
					t.Errorf("block %d: %s..%s gap=%v active=%v calls=%d; want %+v", i, g.Start.Format(time.RFC3339), g.End.Format(time.RFC3339), g.Gap, g.Active, g.Calls, w)
				}
			}
		})
	}
}

// TestBurnRateAndProjection: the active block's rate is its use over the
// hours between its first and last call, and its projection that rate
// from now to its end, exactly (ccusage's calculateBurnRate and
// projectBlockUsage, per hour rather than per minute).
func TestBurnRateAndProjection(t *testing.T) {
	start := time.Date(2026, 1, 1, 10, 0, 0, 0, time.UTC)
	c1, c2 := 0.5, 1.5
	calls := []BlockCall{
		{TS: start.Add(10 * time.Minute), Model: "a", Input: 1000, Output: 500, Cost: &c1},
		{TS: start.Add(70 * time.Minute), Model: "b", CacheRead: 2000, CacheWrite: 500, Cost: &c2},
		{TS: start.Add(80 * time.Minute), Model: "c", Input: 100},
	}
	now := start.Add(2 * time.Hour)
	b := FoldBlocks(calls, now, BlockLength)
	if len(b) != 1 || !b[0].Active {
		t.Fatalf("blocks %+v, want one active", b)
	}
	x := b[0]
	if x.TotalTokens != 4100 || x.CostUSD != 2 || x.NoPriceCalls != 1 {
		t.Errorf("tokens %v cost %v no price %d; want 4100, 2, 1", x.TotalTokens, x.CostUSD, x.NoPriceCalls)
	}
	if len(x.Models) != 3 || x.Models[0] != "a" || x.Models[2] != "c" {
		t.Errorf("models %v, want a, b, c in order of first use", x.Models)
	}
	// 70 minutes between the first and last call.
	h := 70.0 / 60
	if x.BurnRate == nil || x.BurnRate.TokensPerHour != 4100/h || x.BurnRate.CostPerHour != 2/h {
		t.Fatalf("burn rate %+v, want %v tokens/h, %v $/h", x.BurnRate, 4100/h, 2/h)
	}
	p := x.Projection
	if p == nil || p.RemainingMinutes != 180 || p.TotalTokens != 4100+(4100/h)*3 || p.CostUSD != 2+(2/h)*3 || !p.At.Equal(start.Add(5*time.Hour)) {
		t.Errorf("projection %+v, want 3 hours more at the rate", p)
	}
	if one := FoldBlocks(calls[:1], now, BlockLength); one[0].BurnRate != nil || one[0].Projection != nil {
		t.Errorf("one call: %+v, want no burn rate (no span), as ccusage", one[0])
	}
}

// TestFoldWeek: the week holds the calls of the seven days before now,
// by day in the zone, and counts the blocks that reach into it.
func TestFoldWeek(t *testing.T) {
	now := time.Date(2026, 1, 8, 12, 0, 0, 0, time.UTC)
	c := 1.0
	calls := []BlockCall{
		{TS: now.Add(-WeekLength - time.Minute), Model: "old", Input: 1, Cost: &c},
		{TS: now.Add(-WeekLength), Model: "a", Input: 10, Cost: &c},
		{TS: now.Add(-time.Hour), Model: "a", Output: 5, Cost: &c},
		{TS: now.Add(-30 * time.Minute), Model: "b", Output: 5},
		{TS: now, Model: "now", Input: 1, Cost: &c},
	}
	w := FoldWeek(calls, FoldBlocks(calls, now, BlockLength), now, time.UTC, nil)
	if w.Calls != 3 || w.TotalTokens != 20 || w.CostUSD != 2 || w.NoPriceCalls != 1 {
		t.Errorf("week %+v: want 3 calls, 20 tokens, $2, 1 without a price", w)
	}
	if len(w.Days) != 2 || w.Days[0].Day != "2026-01-01" || w.Days[1].Day != "2026-01-08" || w.Days[1].Calls != 2 {
		t.Errorf("days %+v", w.Days)
	}
	if w.Blocks != 2 {
		t.Errorf("%d blocks reach into the week, want 2 (the oldest call.s block ends with a call at the week.s start)", w.Blocks)
	}
	if w.BurnRate == nil || w.BurnRate.TokensPerHour != 20/(7*24.0) {
		t.Errorf("burn rate %+v, want 20 tokens over 168 hours", w.BurnRate)
	}
}

// TestFoldWeekFromReset: with a reset time, the week is the one it
// repeats into (before or after now), its rate the use over the hours
// since it began, and its projection that rate to its end.
func TestFoldWeekFromReset(t *testing.T) {
	now := time.Date(2026, 1, 8, 12, 0, 0, 0, time.UTC)
	c := 1.0
	calls := []BlockCall{
		{TS: time.Date(2026, 1, 5, 8, 59, 0, 0, time.UTC), Model: "before", Input: 1, Cost: &c},
		{TS: time.Date(2026, 1, 5, 9, 0, 0, 0, time.UTC), Model: "a", Input: 30, Cost: &c},
		{TS: time.Date(2026, 1, 8, 11, 0, 0, 0, time.UTC), Model: "a", Output: 10, Cost: &c},
	}
	for _, reset := range []time.Time{
		time.Date(2025, 12, 1, 9, 0, 0, 0, time.UTC), // weeks before
		time.Date(2026, 1, 5, 9, 0, 0, 0, time.UTC),  // the week's own start
		time.Date(2026, 2, 2, 9, 0, 0, 0, time.UTC),  // weeks after
	} {
		w := FoldWeek(calls, nil, now, time.UTC, &reset)
		since, until := time.Date(2026, 1, 5, 9, 0, 0, 0, time.UTC), time.Date(2026, 1, 12, 9, 0, 0, 0, time.UTC)
		if w.Rolling || !w.Since.Equal(since) || !w.Until.Equal(until) {
			t.Fatalf("reset %v: week %v..%v rolling=%v, want %v..%v", reset, w.Since, w.Until, w.Rolling, since, until)
		}
		h := now.Sub(since).Hours() // 75
		if w.Calls != 2 || w.TotalTokens != 40 || w.BurnRate == nil || w.BurnRate.TokensPerHour != 40/h {
			t.Errorf("reset %v: %d calls, %v tokens, rate %+v; want 2, 40, 40 over %v hours", reset, w.Calls, w.TotalTokens, w.BurnRate, h)
		}
		if p := w.Projection; p == nil || !p.At.Equal(until) || p.TotalTokens != 40+(40/h)*93 || p.CostUSD != 2+(2/h)*93 {
			t.Errorf("reset %v: projection %+v, want 93 more hours at the rate", reset, p)
		}
	}
}

package summary

import (
	"math"
	"testing"
	"time"

	"github.com/orchstat/orchstat/model/reports"
)

// Newcombe's own worked example (Statistics in Medicine 17, 1998, table
// II, example (a)): 56/70 against 48/80, method 10 gives 0.0524 to
// 0.3339.
func TestNewcombe(t *testing.T) {
	lo, hi := newcombe(56, 70, 48, 80)
	if math.Abs(lo-0.0524) > 5e-5 || math.Abs(hi-0.3339) > 5e-5 {
		t.Errorf("interval [%.4f, %.4f], want [0.0524, 0.3339]", lo, hi)
	}
	// Rates at 0 keep the interval inside [-1, 1] and around zero.
	lo, hi = newcombe(0, 10, 0, 20)
	if lo >= 0 || hi <= 0 || lo < -1 || hi > 1 {
		t.Errorf("0/10 against 0/20: [%v, %v], want around zero", lo, hi)
	}
}

func TestRateChange(t *testing.T) {
	for _, tt := range []struct {
		name                 string
		num, den, num0, den0 float64
		min                  float64
		share                bool
		delta, significant   bool
		reason               string
	}{
		{"doubled", 40, 200, 20, 200, 20, true, true, true, ""},
		{"alike", 20, 200, 20, 200, 20, true, true, false, ""},
		{"small now", 3, 10, 20, 200, 20, true, false, false, "fewer than 20 samples in this window (10)"},
		{"small before", 30, 100, 2, 5, 20, true, false, false, "fewer than 20 samples in the previous window (5)"},
		{"small both", 3, 10, 2, 5, 20, true, false, false, "fewer than 20 samples in either window (10 now, 5 before)"},
		{"average", 300, 100, 200, 100, 5, false, true, false, "an average: no interval"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c := rateChange(tt.num, tt.den, tt.num0, tt.den0, tt.min, tt.share)
			if (c.Delta != nil) != tt.delta || c.Significant != tt.significant || c.Reason != tt.reason {
				t.Errorf("got delta %v significant %v reason %q; want delta %v significant %v reason %q",
					c.Delta, c.Significant, c.Reason, tt.delta, tt.significant, tt.reason)
			}
			if c.Previous == nil || *c.Previous != tt.num0/tt.den0 {
				t.Errorf("previous %v, want %v", c.Previous, tt.num0/tt.den0)
			}
		})
	}
}

// A summary's days cover the window whole, with the days without data as
// zeros: a sparkline's gaps are real.
func TestBuildDaysAndSystems(t *testing.T) {
	since := time.Date(2026, 10, 1, 0, 0, 0, 0, time.UTC)
	until := since.AddDate(0, 0, 4)
	runs := 5.0
	r := &reports.Report{Calls: reports.Calls{BySystem: []reports.CallRow{{System: "claude-code", Calls: 9, Retried: 2, WithAttempts: 9,
		Metrics: reports.Metrics{"call_retry_rate": {Value: ptr(2.0 / 9), Numerator: ptr(2), Denominator: ptr(9)}}}}},
		Systems: reports.Systems{BySystem: []reports.SystemRow{{System: "factory", Runs: int64(runs)}}}}
	s := Build(Input{Now: r, Window: reports.Period{Since: &since, Until: until},
		Daily: map[string][]reports.DayPoint{"claude-code": {{Day: "2026-10-03", Count: 9}}}})
	if len(s.Window.Days) != 4 || s.Window.Days[0] != "2026-10-01" || s.Window.Days[3] != "2026-10-04" {
		t.Fatalf("days %v", s.Window.Days)
	}
	if len(s.Systems) != 2 || s.Systems[0].System != "claude-code" || s.Systems[1].System != "factory" {
		t.Fatalf("systems %+v, want claude-code then factory (SystemOrder)", s.Systems)
	}
	cc := s.Systems[0]
	if cc.Unit != "calls" || *cc.Count.Value != 9 || len(cc.Daily) != 4 || cc.Daily[2].Count != 9 || cc.Daily[0].Count != 0 {
		t.Errorf("claude-code %+v", cc)
	}
	if cc.Count.Change != nil {
		t.Errorf("a change without a previous window: %+v", cc.Count.Change)
	}
}

func ptr(v float64) *float64 { return &v }

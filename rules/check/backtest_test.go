package check

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/orchstat/orchstat/rules/alerting"
)

// A backtest runs check's state machine over made-up history: a rule
// whose condition holds for five hours with for: 2 fires at its second
// hour and resolves at the sixth; its receiver's repeat_interval of 2h
// repeats the notification twice while it fires, and its resolution is
// notified. A one-hour blip never fires. A rule without data stays
// quiet, counted as no data.
func TestRunBacktest(t *testing.T) {
	t.Parallel()
	rf, err := alerting.Parse("t.yaml", []byte(`rules:
  - name: high
    metric: runs
    threshold: 2
    condition: value > threshold
    for: 2
  - name: blip
    metric: failed_runs
    threshold: 0
    condition: value > threshold
    for: 2
  - name: empty
    metric: l2_runs
    condition: value > 1
receivers:
  - name: hook
    webhook: {url: "http://127.0.0.1:1/x"}
route:
  receiver: hook
  repeat_interval: 2h
`))
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Date(2025, 11, 3, 0, 0, 0, 0, time.UTC)
	series := map[string][]float64{
		"high": {1, 3, 3, 3, 3, 3, 1, 1},
		"blip": {0, 0, 5, 0, 0, 0, 0, 0},
	}
	times, ok := BacktestTimes(t0, t0.Add(7*time.Hour), time.Hour, 100)
	if !ok || len(times) != 8 {
		t.Fatalf("times: %v %v", times, ok)
	}
	bt, err := RunBacktest(context.Background(), BacktestOptions{Rules: rf, Times: times,
		Sampler: func(at time.Time) alerting.Sampler {
			i := int(at.Sub(t0) / time.Hour)
			return samplerFunc(func(r *alerting.Rule) ([]alerting.Sample, error) {
				s, ok := series[r.Name]
				if !ok {
					return nil, nil
				}
				return []alerting.Sample{{Value: value(s[i]), Labels: map[string]string{}}}, nil
			})
		}})
	if err != nil {
		t.Fatal(err)
	}
	if bt.Evaluations != 8 || !bt.Receivers || len(bt.Rules) != 3 {
		t.Fatalf("%+v", bt)
	}
	high := bt.Rules[0]
	if len(high.Alerts) != 1 || high.Held != 5 || high.Blips != 0 {
		t.Fatalf("high: %+v", high)
	}
	a := high.Alerts[0]
	at := func(h int) time.Time { return t0.Add(time.Duration(h) * time.Hour) }
	// Pending at 1h, firing at 2h; notified at 2h (fired), 4h and 6h
	// (repeats) would be three, but at 6h the condition no longer holds:
	// resolved, notified as a change. So 2h, 4h, 6h.
	if !a.ActiveAt.Equal(at(1)) || !a.FiredAt.Equal(at(2)) || a.ResolvedAt == nil || !a.ResolvedAt.Equal(at(6)) ||
		a.Value == nil || *a.Value != 3 {
		t.Errorf("high's alert: %+v", a)
	}
	if high.Notifications != 3 || a.Notifications != 3 || bt.Notifications != 3 {
		t.Errorf("notifications: rule %d, alert %d, all %d; want 3 (fired, a repeat 2h later, resolved)",
			high.Notifications, a.Notifications, bt.Notifications)
	}
	if blip := bt.Rules[1]; len(blip.Alerts) != 0 || blip.Blips != 1 || blip.Held != 1 || blip.Notifications != 0 {
		t.Errorf("blip: %+v", blip)
	}
	if empty := bt.Rules[2]; empty.NoData != 8 || len(empty.Alerts) != 0 {
		t.Errorf("empty: %+v", empty)
	}
}

// The default step keeps a backtest to at most MaxDefaultPoints
// evaluations: an hour over three days, a day over half a year.
func TestDefaultStep(t *testing.T) {
	t0 := time.Date(2025, 11, 3, 9, 12, 0, 0, time.UTC)
	for _, tc := range []struct {
		span time.Duration
		want time.Duration
	}{
		{3 * time.Hour, 5 * time.Minute},
		{58 * time.Hour, time.Hour},
		{180 * 24 * time.Hour, 24 * time.Hour},
		{10 * 365 * 24 * time.Hour, 7 * 24 * time.Hour},
	} {
		if got := DefaultStep(t0, t0.Add(tc.span)); got != tc.want {
			t.Errorf("span %v: step %v, want %v", tc.span, got, tc.want)
		}
	}
	if _, ok := BacktestTimes(t0, t0.Add(time.Hour), time.Second, 100); ok {
		t.Error("3,600 evaluations passed a limit of 100")
	}
}

func TestDataTimes(t *testing.T) {
	at := func(h, m int) time.Time { return time.Date(2026, 1, 1, h, m, 0, 0, time.UTC) }
	starts := []time.Time{at(1, 10), at(1, 50), at(5, 0)}
	got, ok := DataTimes(starts, 2*time.Hour, 100)
	want := []time.Time{at(2, 0), at(4, 0), at(6, 0), at(8, 0)}
	if !ok || !slices.Equal(got, want) {
		t.Errorf("DataTimes = %v, %v; want %v", got, ok, want)
	}
	if _, ok := DataTimes(starts, 2*time.Hour, 2); ok {
		t.Error("more than the limit, and ok")
	}
}

// A grid's instants with no run in the window before them are left out,
// but for the first after a stretch of data, where alerts resolve.
func TestWithData(t *testing.T) {
	at := func(h int) time.Time { return time.Date(2026, 1, 1, h, 0, 0, 0, time.UTC) }
	starts := []time.Time{at(1).Add(30 * time.Minute), at(10).Add(10 * time.Minute)}
	var grid []time.Time
	for h := range 14 {
		grid = append(grid, at(h))
	}
	kept, dropped := WithData(grid, starts, time.Hour)
	want := []time.Time{at(2), at(3), at(11), at(12)}
	if !slices.Equal(kept, want) || dropped != 10 {
		t.Errorf("kept %v, dropped %d; want %v, 10", kept, dropped, want)
	}
}

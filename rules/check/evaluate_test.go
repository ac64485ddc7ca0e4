package check

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/orchstat/orchstat/rules/alerting"
)

// samplerFunc is a made-up alerting.Sampler: Evaluate needs no store.
type samplerFunc func(r *alerting.Rule) ([]alerting.Sample, error)

func (f samplerFunc) Samples(_ context.Context, r *alerting.Rule) ([]alerting.Sample, error) {
	return f(r)
}

func value(v float64) *float64 { return &v }

// Evaluate advances alerts from made-up samples: a failing rule is that
// rule's (its alerts kept, the check UNKNOWN unless a critical alert
// fires), a rule without samples has no data, and a scoped check labels
// its alerts.
func TestEvaluate(t *testing.T) {
	t.Parallel()
	rf, err := alerting.Parse("t.yaml", []byte(`rules:
  - name: high
    metric: runs
    threshold: 2
    condition: value > threshold
    severity: critical
  - name: broken
    metric: runs
    condition: value > 1
  - name: quiet
    metric: runs
    condition: value > 100
    severity: warning
`))
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	kept := alerting.Alert{Rule: "broken", Labels: map[string]string{}, Fingerprint: alerting.Fingerprint("broken", nil), State: alerting.StateFiring}
	for _, tc := range []struct {
		name    string
		samples map[string][]alerting.Sample
		scope   string
		code    int
		states  map[string]string // rule → its first row's state; high has no for, so it fires at once
	}{
		{"critical fires", map[string][]alerting.Sample{"high": {{Value: value(3), Labels: map[string]string{}}}, "quiet": {{Value: value(3), Labels: map[string]string{}}}},
			"", Critical, map[string]string{"high": "firing", "broken": "error", "quiet": "inactive"}},
		{"no data", map[string][]alerting.Sample{}, "", Unknown, map[string]string{"high": "no data", "broken": "error", "quiet": "no data"}},
		{"scoped", map[string][]alerting.Sample{"high": {{Value: value(3), Labels: map[string]string{}}}}, "a,b", Critical,
			map[string]string{"high": "firing", "broken": "error", "quiet": "no data"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := samplerFunc(func(r *alerting.Rule) ([]alerting.Sample, error) {
				if r.Name == "broken" {
					return nil, errors.New("no such table")
				}
				return tc.samples[r.Name], nil
			})
			ev := Evaluate(context.Background(), s, rf, map[string][]alerting.Alert{"broken": {kept}}, now, tc.scope)
			if ev.Code != tc.code {
				t.Errorf("code %d, want %d", ev.Code, tc.code)
			}
			got := map[string]string{}
			for _, r := range ev.Rows {
				if _, ok := got[r.Rule]; !ok {
					got[r.Rule] = r.State
				}
				if tc.scope != "" && r.Rule == "high" && r.Labels["scope"] != tc.scope {
					t.Errorf("row %+v has no scope label %q", r, tc.scope)
				}
			}
			for rule, want := range tc.states {
				if got[rule] != want {
					t.Errorf("%s: state %q, want %q", rule, got[rule], want)
				}
			}
			if len(ev.Failures) != 1 || ev.Failures[0].Rule != "broken" {
				t.Errorf("failures %+v, want broken's", ev.Failures)
			}
			keptBroken := false
			for _, a := range ev.Alerts {
				keptBroken = keptBroken || (a.Rule == "broken" && a.State == alerting.StateFiring)
			}
			if !keptBroken {
				t.Errorf("the failing rule's alert was not kept: %+v", ev.Alerts)
			}
		})
	}
}

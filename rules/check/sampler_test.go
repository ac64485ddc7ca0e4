package check

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/orchstat/orchstat/model/alerts"
	"github.com/orchstat/orchstat/model/reports"
	"github.com/orchstat/orchstat/rules/alerting"
)

// fakeData is made-up Data that logs what the sampler asks of it.
type fakeData struct {
	Data       // the rest is not called
	records    bool
	calls      []string
	lastWindow alerts.Window
}

func (d *fakeData) log(format string, args ...any) {
	d.calls = append(d.calls, fmt.Sprintf(format, args...))
}

func (d *fakeData) WindowMetrics(_ context.Context, w alerts.Window, records bool) (reports.Metrics, error) {
	d.log("metrics records=%v", records)
	d.lastWindow = w
	return reports.Metrics{"runs": {Value: value(3)}, "record_runs": {Value: value(1)}}, nil
}

func (d *fakeData) CallSeries(_ context.Context, w alerts.Window, metric string, by []string) ([]alerts.Series, error) {
	d.log("calls %s by %s", metric, strings.Join(by, ","))
	return []alerts.Series{{Labels: map[string]string{"model": "m"}, Metric: reports.Metric{Value: value(2)}}}, nil
}

func (d *fakeData) ProviderSeries(_ context.Context, w alerts.Window, metric string, by []string) ([]alerts.Series, error) {
	d.log("providers %s by %s", metric, strings.Join(by, ","))
	return nil, nil
}

func (d *fakeData) HasRecords(context.Context) (bool, error) {
	d.log("has records")
	return d.records, nil
}

func (d *fakeData) SystemSeries(_ context.Context, w alerts.Window, metric string) ([]alerts.Series, error) {
	d.log("systems %s", metric)
	return nil, nil
}

// The sampler turns a rule's window into the runs it reads, computes the
// metrics once per window and family, and sends a split rule to the
// series its metric splits by; at a past time a rule's own SQL cannot be
// evaluated.
func TestStoreSampler(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	day, ago := alerting.Window{Duration: 24 * time.Hour}, now.Add(-24*time.Hour)
	for _, tc := range []struct {
		name   string
		past   bool
		rules  []alerting.Rule
		want   []string
		window alerts.Window // the last window WindowMetrics was asked for
		err    string
	}{
		{name: "one computation per window", rules: []alerting.Rule{{Name: "a", Metric: "runs", Window: day}, {Name: "b", Metric: "runs", Window: day}},
			want: []string{"metrics records=false"}, window: alerts.Window{Since: &ago, Paths: []string{"/runs"}}},
		{name: "families apart", rules: []alerting.Rule{{Name: "a", Metric: "runs"}, {Name: "b", Metric: "record_runs"}},
			want: []string{"metrics records=false", "metrics records=true"}, window: alerts.Window{Paths: []string{"/runs"}}},
		{name: "last runs, at a past time", past: true, rules: []alerting.Rule{{Name: "a", Metric: "runs", Window: alerting.Window{Runs: 5}}},
			want: []string{"metrics records=false"}, window: alerts.Window{Last: 5, Until: &now, Paths: []string{"/runs"}}},
		{name: "splits", rules: []alerting.Rule{{Name: "a", Metric: "calls", By: []string{"model"}},
			{Name: "b", Metric: "provider_requests", By: []string{"provider"}}, {Name: "c", Metric: "record_runs", By: []string{"system"}}},
			want: []string{"calls calls by model", "providers provider_requests by provider", "has records"}},
		{name: "a record metric by model", rules: []alerting.Rule{{Name: "a", Metric: "record_runs", By: []string{"model"}}},
			err: `rule "a": record_runs can be split by system only`},
		{name: "sql at a past time", past: true, rules: []alerting.Rule{{Name: "a", SQL: "SELECT 1 AS value"}}, err: ErrNotAtTime.Error()},
		{name: "unknown metric", rules: []alerting.Rule{{Name: "a", Metric: "nope"}}, want: []string{"metrics records=false"},
			window: alerts.Window{Paths: []string{"/runs"}}, err: `rule "a": unknown metric "nope"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			d := &fakeData{}
			s := NewSampler(d, now)
			s.Paths, s.Past = []string{"/runs"}, tc.past
			var err error
			for i := range tc.rules {
				if _, err = s.Samples(context.Background(), &tc.rules[i]); err != nil {
					break
				}
			}
			if got := fmt.Sprint(err); (tc.err == "" && err != nil) || (tc.err != "" && got != tc.err) {
				t.Errorf("error %v, want %q", err, tc.err)
			}
			if tc.err == ErrNotAtTime.Error() && !errors.Is(err, ErrNotAtTime) {
				t.Errorf("%v is not ErrNotAtTime", err)
			}
			if !reflect.DeepEqual(d.calls, tc.want) {
				t.Errorf("asked %q, want %q", d.calls, tc.want)
			}
			if !reflect.DeepEqual(d.lastWindow, tc.window) {
				t.Errorf("window %+v, want %+v", d.lastWindow, tc.window)
			}
		})
	}
}

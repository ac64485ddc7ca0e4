package alerting

import (
	"strings"
	"testing"

	"github.com/orchstat/orchstat"
)

func f(v float64) *float64 { return &v }

func TestDefaultRules(t *testing.T) {
	t.Parallel()
	file, err := Parse("alerts.yaml", orchstat.DefaultAlerts)
	if err != nil {
		t.Fatal(err)
	}
	byMetric := map[string]*Rule{}
	for _, r := range file.Rules {
		byMetric[r.Metric] = r
	}
	for _, tc := range []struct {
		metric          string
		value, num, den float64
		want            bool
	}{
		{"provider_retry_rate", 0.25, 50, 200, true},
		{"provider_retry_rate", 0.5, 1, 2, false}, // a rate over two requests never fires
		{"provider_retry_rate", 0.2, 40, 200, false},
		{"l2_escalation_rate", 0.4, 4, 10, true},
		{"l2_escalation_rate", 0.4, 2, 4, false},
		{"avg_repair_iterations", 3.5, 35, 10, true},
		{"avg_repair_iterations", 3, 30, 10, false},
		{"l3_diagnosis_rate", 0.2, 4, 20, true},
		{"l3_diagnosis_rate", 0.2, 1, 5, false},
	} {
		r := byMetric[tc.metric]
		if r == nil {
			t.Fatalf("no default rule for %s", tc.metric)
		}
		got, err := r.Holds(Sample{Value: f(tc.value), Numerator: f(tc.num), Denominator: f(tc.den)})
		if err != nil || got != tc.want {
			t.Errorf("%s at %v (%v/%v): %v, %v; want %v", tc.metric, tc.value, tc.num, tc.den, got, err, tc.want)
		}
	}
	// No value (denominator 0) is no data, never a crossing.
	if got, _ := byMetric["provider_retry_rate"].Holds(Sample{Numerator: f(0), Denominator: f(0)}); got {
		t.Error("a null ratio crossed a threshold")
	}
}

func TestParseErrors(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ yaml, want string }{
		{"rules:\n  - name: a\n    metric: runs\n    condition: value >\n", "condition"},
		{"rules:\n  - name: a\n    metric: runs\n    condition: value + 1\n", "condition"},
		{"rules:\n  - name: a\n    condition: os.Getenv('HOME') != ''\n", "condition"},
		{"rules:\n  - name: a\n    condition: value > 1\n  - name: a\n    condition: value > 2\n", "duplicate"},
		{"rules:\n  - metric: runs\n    condition: value > 1\n", "name is required"},
		{"rules:\n  - name: a\n", "condition is required"},
		{"rules: [\n", "alerts.yaml"},
	} {
		_, err := Parse("alerts.yaml", []byte(tc.yaml))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: got %v, want an error mentioning %q", tc.yaml, err, tc.want)
		}
	}
}

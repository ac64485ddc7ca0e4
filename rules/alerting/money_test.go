package alerting

import (
	"strings"
	"testing"

	"github.com/orchstat/orchstat"
)

// The shipped failed_attempt_cost_high fires above $5 whatever the
// calls' number, and its summary says how many calls had no price.
func TestFailedAttemptCostRule(t *testing.T) {
	t.Parallel()
	file, err := Parse("alerts.yaml", orchstat.DefaultAlerts)
	if err != nil {
		t.Fatal(err)
	}
	var r *Rule
	for _, x := range file.Rules {
		if x.Name == "failed_attempt_cost_high" {
			r = x
		}
	}
	if r == nil {
		t.Fatal("no failed_attempt_cost_high in alerts.yaml")
	}
	labels := map[string]string{"system": "otel", "provider": "anthropic", "model": "claude-opus-4-1"}
	for _, tc := range []struct {
		name           string
		value, noPrice *float64
		holds          bool
		summary        string
	}{
		{"over", f(5.25), f(0), true,
			"otel anthropic/claude-opus-4-1: failed attempts cost $5.25 in 24h, above $5"},
		{"over, with calls left out", f(5.25), f(2), true,
			"otel anthropic/claude-opus-4-1: failed attempts cost $5.25 in 24h, above $5 (2 calls without a price not counted)"},
		{"at the threshold", f(5), f(0), false, ""},
		{"no price at all: no data, not $0", nil, f(3), false, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := Sample{Value: tc.value, NoPrice: tc.noPrice, Labels: labels}
			got, err := r.Holds(s)
			if err != nil || got != tc.holds {
				t.Fatalf("holds %v, %v; want %v", got, err, tc.holds)
			}
			if tc.summary == "" {
				return
			}
			ann, err := r.Annotate(s)
			if err != nil || ann["summary"] != tc.summary {
				t.Errorf("summary %q, %v; want %q", ann["summary"], err, tc.summary)
			}
		})
	}
}

// no_price is a cost metric's: a condition of a cost rule may use it, and
// one of any other rule is told, at its place in the file, that it would
// always be 0. .NoPrice is a template field like the others.
func TestNoPrice(t *testing.T) {
	t.Parallel()
	budget := "rules:\n  - name: budget\n    metric: call_cost_usd\n    by: [model]\n    window: 24h\n    threshold: 50\n" +
		"    condition: value > threshold || no_price > 0\n" +
		"    annotations: {summary: \"{{ .Labels.model }}: {{ .Value }}, {{ .NoPrice }} unpriced\"}\n"
	file, err := Parse("b.yaml", []byte(budget))
	if err != nil {
		t.Fatal(err)
	}
	r := file.Rules[0]
	for _, tc := range []struct {
		value, noPrice float64
		want           bool
	}{{60, 0, true}, {10, 0, false}, {10, 1, true}} {
		got, err := r.Holds(Sample{Value: f(tc.value), NoPrice: f(tc.noPrice), Labels: map[string]string{"model": "m"}})
		if err != nil || got != tc.want {
			t.Errorf("value %v, no price %v: %v, %v; want %v", tc.value, tc.noPrice, got, err, tc.want)
		}
	}
	ann, err := r.Annotate(Sample{Value: f(60), NoPrice: f(2), Labels: map[string]string{"model": "m"}})
	if want := "m: 60, 2 unpriced"; err != nil || ann["summary"] != want {
		t.Errorf("summary %q, %v; want %q", ann["summary"], err, want)
	}

	for _, tc := range []struct{ name, yaml, want string }{
		{"a rate", "rules:\n  - name: r\n    metric: call_retry_rate\n    condition: value > 0.2 && no_price == 0\n",
			`x.yaml:4:16: rule "r": condition: uses no_price, which only cost metrics (call_cost_usd, failed_attempt_cost_usd) set; for call_retry_rate it would be 0`},
		{"a token sum", "rules:\n  - name: r\n    metric: call_input_tokens\n    threshold: 1000000\n    condition: value > threshold || no_price > 0\n",
			`x.yaml:5:16: rule "r": condition: uses no_price, which only cost metrics (call_cost_usd, failed_attempt_cost_usd) set; for call_input_tokens it would be 0`},
		{"a sql rule", "rules:\n  - name: r\n    sql: SELECT 1 AS value\n    condition: no_price > 0\n",
			`x.yaml:4:16: rule "r": condition: uses no_price, which only cost metrics (call_cost_usd, failed_attempt_cost_usd) set; for a sql rule it would be 0`},
		{"a misspelt field", "rules:\n  - name: r\n    metric: call_cost_usd\n    condition: value > 1\n    annotations: {summary: \"{{ .NoPrices }}\"}\n",
			`unknown field .NoPrices (templates see .Value, .Numerator, .Denominator, .Threshold, .NoPrice and .Labels)`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			problems := Check("x.yaml", []byte(tc.yaml))
			if len(problems) != 1 || !strings.Contains(problems[0].String(), tc.want) {
				t.Errorf("problems %v, want one with %q", problems, tc.want)
			}
		})
	}
}

// The new call metrics are call metrics: they split by system, provider
// and model, and by nothing else.
func TestSumMetricsSplit(t *testing.T) {
	t.Parallel()
	for _, m := range []string{"call_cost_usd", "call_input_tokens", "call_cache_read_tokens", "call_cache_write_tokens", "call_output_tokens"} {
		good := "rules:\n  - name: r\n    metric: " + m + "\n    by: [system, provider, model]\n    window: 24h\n    condition: value > 1\n"
		if problems := Check("x.yaml", []byte(good)); len(problems) > 0 {
			t.Errorf("%s by system, provider, model: %v", m, problems)
		}
		bad := "rules:\n  - name: r\n    metric: " + m + "\n    by: [session]\n    condition: value > 1\n"
		if problems := Check("x.yaml", []byte(bad)); len(problems) != 1 || !strings.Contains(problems[0].Message, "call metrics group by system, provider and model") {
			t.Errorf("%s by session: %v", m, problems)
		}
	}
}

package promrules

import (
	"bytes"
	"flag"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/orchstat/orchstat/rules/alerting"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden")

// TestExportShippedRules holds the export of the shipped alerts.yaml to
// its golden file (go test ./rules/promrules -update rewrites it).
func TestExportShippedRules(t *testing.T) {
	data, err := os.ReadFile("../../alerts.yaml")
	if err != nil {
		t.Fatal(err)
	}
	f, err := alerting.Parse("alerts.yaml", data)
	if err != nil {
		t.Fatal(err)
	}
	e, err := New(f, Options{Source: "alerts.yaml", Interval: time.Minute, Windows: []time.Duration{time.Hour}})
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := e.Write(&b); err != nil {
		t.Fatal(err)
	}
	const golden = "testdata/alerts.rules.yml.golden"
	if *update {
		if err := os.WriteFile(golden, b.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run with -update to write it)", err)
	}
	if b.String() != string(want) {
		t.Errorf("export differs from %s (run with -update after checking the diff):\n%s", golden, b.String())
	}
}

// TestRules tables single rules: what each becomes, or why it cannot.
func TestRules(t *testing.T) {
	for _, c := range []struct {
		name, rule string
		expr, skip string
		forText    string
	}{
		{"ratio with its guard", "metric: provider_retry_rate\n    window: 1h\n    threshold: 0.2\n    condition: value > threshold && denominator >= 20\n    for: 3",
			"fleet:orchstat_provider_retry_rate:ratio1h > 0.2 and sum (increase(orchstat_requests_total[1h])) >= 20", "", "2m"},
		{"split by system, the number first", "metric: call_failure_rate\n    by: [system]\n    window: 30m\n    condition: 5 <= denominator and 0.1 < value",
			"system:orchstat_call_failure_rate:ratio30m > 0.1 and sum by (system) (increase(orchstat_call_known_total[30m])) >= 5", "", ""},
		{"a cost", "metric: call_cost_usd\n    by: [model]\n    window: 24h\n    threshold: 50\n    condition: value > threshold\n    for: 10m",
			"(sum by (model) (increase(orchstat_call_cost_usd_total[24h]))) > 50", "", "10m"},
		{"last runs", "metric: record_failure_rate\n    by: [system]\n    window: {last: 5}\n    condition: numerator >= 3", "", "last 5 runs", ""},
		{"or", "metric: provider_retry_rate\n    window: 1h\n    condition: value > 0.2 || denominator > 100", "", "only comparisons", ""},
		{"labels", "metric: provider_retry_rate\n    window: 1h\n    condition: value > 0.2 && labels.provider == \"x\"", "", "only comparisons", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			f, err := alerting.Parse("t.yaml", []byte("rules:\n  - name: r\n    "+c.rule+"\n"))
			if err != nil {
				t.Fatal(err)
			}
			e, err := New(f, Options{Interval: time.Minute})
			if err != nil {
				t.Fatal(err)
			}
			if c.skip != "" {
				if len(e.Skipped) != 1 || !strings.Contains(e.Skipped[0].Why, c.skip) {
					t.Fatalf("skipped %+v, want one saying %q", e.Skipped, c.skip)
				}
				return
			}
			if len(e.Alerting) != 1 {
				t.Fatalf("alerting %+v, skipped %+v", e.Alerting, e.Skipped)
			}
			a := e.Alerting[0]
			if a.Expr != c.expr {
				t.Errorf("expr\n %s\nwant\n %s", a.Expr, c.expr)
			}
			if got := promDuration(a.For); c.forText != "" && got != c.forText || c.forText == "" && a.For != 0 {
				t.Errorf("for %s, want %q", a.For, c.forText)
			}
		})
	}
}

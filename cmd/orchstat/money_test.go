package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/orchstat/orchstat/model/reports"
	"github.com/orchstat/orchstat/rules/check"
)

// The money rules' store: testdata/rules/calls/costly (see its README),
// calls that start on 2026-03-02 at 09:00 UTC. At the built-in prices
// (Claude Opus 4.1: $15 input, $75 output per million tokens) the Opus
// call costs $2.625 and its failed attempts $5.25; acme-coder-1 has no
// price.
var moneyAt = time.Date(2026, 3, 2, 12, 0, 0, 0, time.UTC)

// moneyData copies the costly calls into a new directory and returns it,
// with a store path beside it.
func moneyData(t *testing.T) (data, db string) {
	t.Helper()
	dir := t.TempDir()
	data = filepath.Join(dir, "calls")
	if err := os.CopyFS(data, os.DirFS("../../testdata/rules/calls/costly")); err != nil {
		t.Fatal(err)
	}
	return data, filepath.Join(dir, "o.duckdb")
}

func moneyRules(t *testing.T, text string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "rules.yaml")
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// budgetRules is a per-model daily budget on call_cost_usd.
func budgetRules(threshold float64, severity string) string {
	return fmt.Sprintf(`rules:
  - name: model_daily_budget
    metric: call_cost_usd
    by: [model]
    window: 24h
    threshold: %g
    condition: value > threshold
    severity: %s
    annotations:
      summary: "{{ .Labels.model }} cost {{ .Value }}; {{ .NoPrice }} calls without a price"
`, threshold, severity)
}

func checkDoc(t *testing.T, code int, out, stderr string) lookDoc {
	t.Helper()
	var doc lookDoc
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("exit %d, %v: %q %q", code, err, out, stderr)
	}
	return doc
}

func rowFor(doc lookDoc, rule, model string) check.Row {
	for _, r := range doc.Alerts {
		if r.Rule == rule && r.Labels["model"] == model {
			return r
		}
	}
	return check.Row{State: "-"}
}

// A check of a store whose Opus calls cost $2.625 in the day exits as
// its budget rule's severity says when the budget is under that (2 for
// critical, 1 for warning), and 0 when it is over; the model without a
// price is no data, with its call counted as without a price, not $0.
func TestMoneyCheckExitsBySeverity(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name      string
		threshold float64
		severity  string
		code      int
		state     string
	}{
		{"critical over budget", 2, "critical", check.Critical, "firing"},
		{"warning over budget", 2, "warning", check.Warning, "firing"},
		{"under budget", 3, "critical", check.OK, "inactive"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			data, db := moneyData(t)
			rulesFile := moneyRules(t, budgetRules(c.threshold, c.severity))
			code, out, stderr := runCLIAt(t, moneyAt, "", "check", "--format", "json", "--db", db, "--rules", rulesFile, data)
			doc := checkDoc(t, code, out, stderr)
			if code != c.code {
				t.Errorf("exit %d, want %d: %s %s", code, c.code, out, stderr)
			}
			opus := rowFor(doc, "model_daily_budget", "claude-opus-4-1")
			if opus.State != c.state || opus.Value == nil || *opus.Value != 2.625 {
				t.Errorf("Opus: %s at %v, want %s at 2.625", opus.State, showPtr(opus.Value), c.state)
			}
			acme := rowFor(doc, "model_daily_budget", "acme-coder-1")
			if acme.Value != nil || acme.NoPriceCalls == nil || *acme.NoPriceCalls != 1 || !acme.NoData {
				t.Errorf("acme-coder-1: value %v, %v calls without a price, no data %v; want none, 1, true",
					showPtr(acme.Value), showPtr(acme.NoPriceCalls), acme.NoData)
			}
		})
	}
}

// The table says which calls a cost leaves out.
func TestMoneyCheckNamesCallsWithoutPrice(t *testing.T) {
	endToEnd(t, "runs orchstat against a real store")
	t.Parallel()
	data, db := moneyData(t)
	code, out, stderr := runCLIAt(t, moneyAt, "", "check", "--db", db, "--rules", moneyRules(t, budgetRules(2, "critical")), data)
	if code != check.Critical {
		t.Errorf("exit %d, want %d: %s", code, check.Critical, stderr)
	}
	want := `model_daily_budget{model="acme-coder-1"}: 1 call without a price left out of the cost`
	if !strings.Contains(strings.Join(strings.Fields(out), " "), want) {
		t.Errorf("no note %q in:\n%s", want, out)
	}
}

// --prices prices a model the built-in table does not know, and a budget
// on it fires: acme-coder-1's call, 150,000 input and 5,000 output tokens
// at $10 and $20 per million, costs $1.60, over a budget of $1.
func TestMoneyCheckPricesFile(t *testing.T) {
	endToEnd(t, "runs orchstat against a real store")
	t.Parallel()
	data, db := moneyData(t)
	priceFile := filepath.Join(t.TempDir(), "prices.json")
	if err := os.WriteFile(priceFile, []byte(`{"acme-coder-1": {"input_cost_per_token": 1e-5, "output_cost_per_token": 2e-5}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	rulesFile := moneyRules(t, strings.Replace(budgetRules(1, "critical"), "by: [model]", "by: [provider, model]", 1))
	for _, c := range []struct {
		name  string
		args  []string
		state string
		value *float64
	}{
		{"built-in prices", nil, "inactive", nil},
		{"with --prices", []string{"--prices", priceFile}, "firing", ptr(1.6)},
	} {
		args := append([]string{"check", "--format", "json", "--db", db, "--rules", rulesFile}, c.args...)
		code, out, stderr := runCLIAt(t, moneyAt, "", append(args, data)...)
		doc := checkDoc(t, code, out, stderr)
		acme := rowFor(doc, "model_daily_budget", "acme-coder-1")
		if acme.State != c.state || !sameValue(acme.Value, c.value) {
			t.Errorf("%s: acme-coder-1 %s at %v, want %s at %v (exit %d)", c.name, acme.State, showPtr(acme.Value), c.state, showPtr(c.value), code)
		}
		if c.value != nil && (acme.NoPriceCalls == nil || *acme.NoPriceCalls != 0) {
			t.Errorf("%s: %v calls without a price, want 0", c.name, showPtr(acme.NoPriceCalls))
		}
	}
}

// check --at on old data and report over the same day agree, model by
// model, on the calls' cost, their failed attempts' cost and the calls
// left out for want of a price: both read the same priced calls.
func TestMoneyCheckAtAgreesWithReport(t *testing.T) {
	endToEnd(t, "runs orchstat against a real store")
	t.Parallel()
	data, db := moneyData(t)
	now := moneyAt.AddDate(0, 1, 0) // a month later: the calls are old
	rulesFile := moneyRules(t, `rules:
  - name: cost
    metric: call_cost_usd
    by: [system, provider, model]
    window: 24h
    threshold: 1
    condition: value > threshold
  - name: failed_cost
    metric: failed_attempt_cost_usd
    by: [system, provider, model]
    window: 24h
    threshold: 5
    condition: value > threshold
`)
	code, out, stderr := runCLIAt(t, now, "", "check", "--format", "json", "--db", db, "--rules", rulesFile,
		"--at", moneyAt.Format(time.RFC3339), data)
	doc := checkDoc(t, code, out, stderr)
	if code != check.Warning {
		t.Errorf("check --at: exit %d, want %d (warning): %s", code, check.Warning, stderr)
	}
	code, out, stderr = runCLIAt(t, now, "", "report", "--format", "json", "--db", db, "--no-ingest",
		"--since", moneyAt.Add(-24*time.Hour).Format(time.RFC3339), "--until", moneyAt.Format(time.RFC3339))
	if code != 0 {
		t.Fatalf("report: exit %d: %s", code, stderr)
	}
	var rep reports.Report
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatal(err)
	}
	if len(rep.Calls.ByModel) != 2 {
		t.Fatalf("report: %d models, want 2", len(rep.Calls.ByModel))
	}
	for _, row := range rep.Calls.ByModel {
		model := *row.Model
		for _, c := range []struct {
			rule   string
			report *float64
		}{{"cost", row.CostUSD}, {"failed_cost", row.FailedCostUSD}} {
			r := rowFor(doc, c.rule, model)
			if r.State == "-" || !sameValue(r.Value, c.report) {
				t.Errorf("%s of %s: check --at %v (%s), report %v", c.rule, model, showPtr(r.Value), r.State, showPtr(c.report))
			}
			if r.NoPriceCalls == nil || int64(*r.NoPriceCalls) != row.NoPriceCalls {
				t.Errorf("%s of %s: check --at leaves out %v calls without a price, report %d", c.rule, model, showPtr(r.NoPriceCalls), row.NoPriceCalls)
			}
		}
	}
	if r := rowFor(doc, "failed_cost", "claude-opus-4-1"); r.State != "firing" {
		t.Errorf("failed attempts' $5.25 over $5: %s, want firing", r.State)
	}
}

func ptr(v float64) *float64 { return &v }

func sameValue(a, b *float64) bool {
	if a == nil || b == nil {
		return a == b
	}
	d := *a - *b
	return d < 1e-9 && d > -1e-9
}

func showPtr(v *float64) any {
	if v == nil {
		return "none"
	}
	return *v
}

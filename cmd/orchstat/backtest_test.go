package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/orchstat/orchstat/rules/check"
)

// backtestDoc is rules backtest's JSON.
type backtestDoc struct {
	From, To      time.Time
	Step          string
	Evaluations   int
	Receivers     bool
	Notifications int
	Rules         []check.RuleBacktest
}

func runBacktest(t *testing.T, now time.Time, args ...string) (int, backtestDoc, string) {
	t.Helper()
	code, out, stderr := runCLIAt(t, now, "", append([]string{"rules", "backtest", "--format", "json"}, args...)...)
	var doc backtestDoc
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("exit %d, %v: %q %q", code, err, out, stderr)
	}
	return code, doc, stderr
}

func ruleBacktest(doc backtestDoc, rule string) check.RuleBacktest {
	for _, r := range doc.Rules {
		if r.Rule == rule {
			return r
		}
	}
	return check.RuleBacktest{}
}

// rules backtest over the bundled runs, a year old: by default every hour
// from the first run to just after the last, it finds when
// provider_retry_rate_high (for: 2) and the cascade would have fired and
// resolved, and that l2_escalation_rate_high, which report marks ALERT
// over the three days, never had the samples it asks for in 24h. Before,
// there was no rules backtest.
func TestRulesBacktestBundledRuns(t *testing.T) {
	endToEnd(t, "backtests rules over a real store")
	t.Parallel()
	runs, err := filepath.Abs("../../testdata/runs")
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 11, 27, 1, 0, 0, 0, time.UTC)
	db := filepath.Join(t.TempDir(), "o.duckdb")
	code, doc, stderr := runBacktest(t, now, "--db", db, runs)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	// By default at the data's own times: the hour after each run started
	// and after it left the 24h windows, from the first run's hour to a
	// day after the last (its alerts resolve there), 34 instants where an
	// hourly grid took 60, most of them alike.
	from, to := time.Date(2025, 11, 3, 10, 0, 0, 0, time.UTC), time.Date(2025, 11, 6, 20, 0, 0, 0, time.UTC)
	if !doc.From.Equal(from) || !doc.To.Equal(to) || doc.Step != "data" || doc.Evaluations != 34 || doc.Receivers || doc.Notifications != 0 {
		t.Fatalf("span %v to %v every %s, %d evaluations, receivers %v, %d sent", doc.From, doc.To, doc.Step, doc.Evaluations, doc.Receivers, doc.Notifications)
	}
	retry := ruleBacktest(doc, "provider_retry_rate_high")
	if len(retry.Alerts) != 1 || !retry.Alerts[0].FiredAt.Equal(time.Date(2025, 11, 3, 17, 0, 0, 0, time.UTC)) ||
		!retry.Alerts[0].ActiveAt.Before(retry.Alerts[0].FiredAt) || retry.Alerts[0].ResolvedAt == nil {
		t.Errorf("provider_retry_rate_high: %+v", retry)
	}
	cascade := ruleBacktest(doc, "run_failure_cascade")
	if len(cascade.Alerts) != 2 || cascade.Alerts[0].ResolvedAt == nil || cascade.Alerts[1].ResolvedAt == nil {
		t.Errorf("run_failure_cascade: %+v", cascade)
	}
	if l2 := ruleBacktest(doc, "l2_escalation_rate_high"); len(l2.Alerts) != 0 || l2.Held != 0 || l2.Short == 0 {
		t.Errorf("l2_escalation_rate_high: %+v", l2)
	}
	// The store's alert state is untouched: a check now has nothing pending.
	code, out, _ := runCLIAt(t, now, "", "--db", db, "sql", "--format", "csv", "SELECT count(*) AS n FROM alert_state")
	if code != 0 || !strings.HasSuffix(out, "\n0\n") {
		t.Errorf("alert_state after a backtest: exit %d %q", code, out)
	}
	// At a terminal the tables fit 80 columns (three hours are enough).
	code, out, _ = runCLIWidth(t, 80, now, "--db", db, "rules", "backtest", "--no-ingest",
		"--from", "2025-11-03T15:00:00Z", "--to", "2025-11-03T17:00:00Z", "--step", "1h", runs)
	if code != 0 || !strings.Contains(out, "| provider_retry_rate_high | 11-03 16:00 | still firing | 33.3% (9/27) |") {
		t.Errorf("table: exit %d\n%s", code, out)
	}
	for _, line := range strings.Split(out, "\n") {
		if displayWidth(line) > 80 {
			t.Errorf("line wider than 80 columns: %q", line)
		}
	}
}

// A backtest plans notifications as check does, honouring the route's
// repeat_interval, and sends none: a rule that holds for five hours
// fires, is repeated once after 2h, and resolves; the webhook hears
// nothing.
func TestRulesBacktestCountsNotificationsSendsNone(t *testing.T) {
	endToEnd(t, "backtests rules over a real store")
	t.Parallel()
	hook := newHookServer(t)
	now := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	t0 := time.Date(2026, 10, 1, 0, 0, 0, 0, time.UTC)
	dir := t.TempDir()
	runs := filepath.Join(dir, "runs")
	// A sick run at 00:30, then healthy ones from 05:30 that outweigh it.
	writeRequests(t, runs, "sick", t0.Add(90*time.Minute), 30, 30)
	writeRequests(t, runs, "well", t0.Add(390*time.Minute), 300, 0)
	rulesFile := filepath.Join(dir, "rules.yaml")
	os.WriteFile(rulesFile, []byte(fmt.Sprintf(`rules:
  - name: retries
    metric: provider_retry_rate
    window: 24h
    threshold: 0.2
    condition: value > threshold
receivers:
  - name: hook
    webhook: {url: %q}
route:
  receiver: hook
  repeat_interval: 2h
`, hook.URL)), 0o644)
	code, doc, stderr := runBacktest(t, now, "--db", filepath.Join(dir, "o.duckdb"), "--rules", rulesFile,
		"--from", t0.Format(time.RFC3339), "--to", t0.Add(8*time.Hour).Format(time.RFC3339), "--step", "1h", runs)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	r := ruleBacktest(doc, "retries")
	if doc.Evaluations != 9 || len(r.Alerts) != 1 {
		t.Fatalf("%d evaluations, %+v", doc.Evaluations, r)
	}
	a := r.Alerts[0]
	// Fired at 01:00 (the run started at 00:30), repeated at 03:00 and
	// 05:00, resolved at 06:00 once the healthy run counts: 4.
	if !a.FiredAt.Equal(t0.Add(time.Hour)) || a.ResolvedAt == nil || !a.ResolvedAt.Equal(t0.Add(6*time.Hour)) ||
		a.Notifications != 4 || r.Notifications != 4 || doc.Notifications != 4 || !doc.Receivers {
		t.Errorf("alert %+v, rule %d, all %d notifications", a, r.Notifications, doc.Notifications)
	}
	if got := hook.take(); len(got) != 0 {
		t.Errorf("a backtest sent %v", got)
	}
}

// Bad spans and steps are usage errors.
func TestRulesBacktestUsage(t *testing.T) {
	endToEnd(t, "backtests rules over a real store")
	t.Parallel()
	now := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	dir := t.TempDir()
	runs := filepath.Join(dir, "runs")
	writeRequests(t, runs, "r", now, 3, 0)
	if code, _, stderr := runCLIAt(t, now, "", "--db", filepath.Join(dir, "o.duckdb"), "rules", "backtest", "--step", "1d", "--from", "7d", runs); code != 0 {
		t.Fatalf("a good backtest: exit %d: %s", code, stderr)
	}
	for _, args := range [][]string{
		{"--step", "0s"},
		{"--step", "soon"},
		{"--from", "2026-11-20", "--to", "2026-11-19"},
		{"--from", "2026-01-01", "--to", "2026-11-01", "--step", "1m"},
		{"--from", "tomorrow"},
	} {
		code, _, stderr := runCLIAt(t, now, "", append([]string{"--db", filepath.Join(dir, "o.duckdb"), "rules", "backtest"}, append(args, runs)...)...)
		if code != exitUsage {
			t.Errorf("%v: exit %d, stderr %q; want %d", args, code, stderr, exitUsage)
		}
	}
}

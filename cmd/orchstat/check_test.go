package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/olekukonko/tablewriter/pkg/twwidth"
	"github.com/prometheus/common/expfmt"

	"github.com/orchstat/orchstat/rules/check"
)

// writeRequests writes a run with n provider requests of which retried
// needed retries, an hour before now.
func writeRequests(t *testing.T, runs, run string, now time.Time, n, retried int) {
	t.Helper()
	var b strings.Builder
	ts := now.Add(-time.Hour)
	for i := range n {
		r := 0
		if i < retried {
			r = 1
		}
		fmt.Fprintf(&b, `{"type":"ProviderRequestFinished","schemaVersion":1,"timestamp":%q,"runId":%q,"payload":{"provider":"p","success":true,"retries":%d}}`+"\n",
			ts.Add(time.Duration(i)*time.Second).Format(time.RFC3339Nano), run, r)
	}
	p := filepath.Join(runs, run, "trace.jsonl")
	os.MkdirAll(filepath.Dir(p), 0o755)
	if err := os.WriteFile(p, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
}

type checkOutput struct {
	Status   string `json:"status"`
	ExitCode int    `json:"exit_code"`
	Alerts   []struct {
		Rule, State, Changed string
		Labels               map[string]string
	} `json:"alerts"`
}

func runCheck(t *testing.T, now time.Time, args ...string) (int, checkOutput) {
	t.Helper()
	return runCheckWith(t, defaultDeps(), now, args...)
}

// runCheckWith is runCheck with the dependencies d.
func runCheckWith(t *testing.T, d deps, now time.Time, args ...string) (int, checkOutput) {
	t.Helper()
	code, out, stderr := runCLIWith(t, now, d, "", append([]string{"check", "--format", "json", "-q"}, args...)...)
	var co checkOutput
	if err := json.Unmarshal([]byte(out), &co); err != nil {
		t.Fatalf("exit %d, %v: %q %q", code, err, out, stderr)
	}
	return code, co
}

func stateOf(co checkOutput, rule string) string {
	for _, a := range co.Alerts {
		if a.Rule == rule {
			return a.State + " " + a.Changed
		}
	}
	return "-"
}

// State spans cron runs: pending, then firing (exit 1, a warning), then
// resolved once healthy traces bring the rate down.
func TestCheckAcrossRuns(t *testing.T) {
	endToEnd(t, "checks rules against a real store")
	t.Parallel()
	dir := t.TempDir()
	runs := filepath.Join(dir, "runs")
	db := filepath.Join(dir, "orchstat.duckdb")
	now := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	writeRequests(t, runs, "bad", now, 30, 12) // 40% retried over 30 requests

	steps := []struct {
		at    time.Duration
		code  int
		state string
	}{
		{0, 0, "pending inactive→pending"},
		{5 * time.Minute, 1, "firing pending→firing"},
		{10 * time.Minute, 1, "firing "},
	}
	prom := filepath.Join(dir, "orchstat.prom")
	for i, s := range steps {
		code, co := runCheck(t, now.Add(s.at), "--db", db, "--textfile", prom, runs)
		if got := stateOf(co, "provider_retry_rate_high"); code != s.code || got != s.state {
			t.Fatalf("check %d: exit %d, %q; want %d, %q (%+v)", i, code, got, s.code, s.state, co)
		}
	}
	// The textfile is valid exposition format and shows the firing alert.
	f, err := os.Open(prom)
	if err != nil {
		t.Fatal(err)
	}
	var p expfmt.TextParser
	fams, err := p.TextToMetricFamilies(f)
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	var firing bool
	for _, m := range fams["orchstat_alerts"].GetMetric() {
		for _, l := range m.GetLabel() {
			firing = firing || (l.GetName() == "alertstate" && l.GetValue() == "firing")
		}
	}
	if !firing || fams["orchstat_rule_value"] == nil || fams["orchstat_check_status"].GetMetric()[0].GetGauge().GetValue() != 1 {
		t.Fatalf("textfile: %v", fams)
	}
	// 170 healthy requests: 12/200 = 6%, below the threshold.
	writeRequests(t, runs, "good", now.Add(15*time.Minute), 170, 0)
	code, co := runCheck(t, now.Add(15*time.Minute), "--db", db, runs)
	if got := stateOf(co, "provider_retry_rate_high"); code != 0 || got != "resolved firing→resolved" {
		t.Fatalf("after recovery: exit %d, %q (%+v)", code, got, co)
	}
	// A check with no data in the window keeps what it has, and says so.
	code, co = runCheck(t, now.Add(48*time.Hour), "--db", db, "--no-ingest")
	if code != 0 || !strings.Contains(stateOf(co, "l2_escalation_rate_high"), "no data") {
		t.Fatalf("no data: exit %d %+v", code, co)
	}
}

func TestCheckUnknown(t *testing.T) {
	t.Parallel()
	bad := filepath.Join(t.TempDir(), "bad.yaml")
	os.WriteFile(bad, []byte("rules:\n  - name: x\n    metric: nope\n    condition: value > 1\n"), 0o644)
	code, _, stderr := runCLI(t, "", "--db", filepath.Join(t.TempDir(), "x.duckdb"), "check", "--no-ingest", "--rules", bad)
	if code != 3 || !strings.Contains(stderr, "UNKNOWN") {
		t.Fatalf("exit %d: %s", code, stderr)
	}
}

// The retry handler's cascade: 3 failed runs among the last 5 fire at once, critical.
func TestCheckCascade(t *testing.T) {
	endToEnd(t, "checks rules against a real store")
	t.Parallel()
	dir := t.TempDir()
	runs := filepath.Join(dir, "runs")
	now := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	for i, status := range []string{"success", "success", "failure", "success", "failure", "failure"} {
		run := fmt.Sprintf("run%d", i)
		line := fmt.Sprintf(`{"type":"RunFinished","schemaVersion":1,"timestamp":%q,"runId":%q,"payload":{"status":%q}}`+"\n",
			now.Add(time.Duration(i-10)*time.Minute).Format(time.RFC3339Nano), run, status)
		p := filepath.Join(runs, run, "trace.jsonl")
		os.MkdirAll(filepath.Dir(p), 0o755)
		os.WriteFile(p, []byte(line), 0o644)
	}
	code, co := runCheck(t, now, "--db", filepath.Join(dir, "o.duckdb"), runs)
	if got := stateOf(co, "run_failure_cascade"); code != 2 || got != "firing inactive→firing" {
		t.Fatalf("exit %d, %q (%+v)", code, got, co)
	}
}

// A rule split by provider, and a rule with its own query, each give one
// alert per label set.
func TestCheckByAndSQLRules(t *testing.T) {
	endToEnd(t, "checks rules against a real store")
	t.Parallel()
	dir := t.TempDir()
	runs := filepath.Join(dir, "runs")
	now := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	writeRequests(t, runs, "r1", now, 30, 15)
	rulesFile := filepath.Join(dir, "rules.yaml")
	os.WriteFile(rulesFile, []byte(`rules:
  - name: retries_by_provider
    metric: provider_retry_rate
    by: [provider]
    window: 24h
    threshold: 0.2
    condition: value > threshold
    severity: critical
  - name: busy_providers
    sql: SELECT provider, count(*) AS value FROM provider_requests GROUP BY provider
    condition: value > 10
`), 0o644)
	code, co := runCheck(t, now, "--db", filepath.Join(dir, "o.duckdb"), "--rules", rulesFile, runs)
	if code != 2 {
		t.Fatalf("exit %d, want 2 (a critical alert): %+v", code, co)
	}
	if stateOf(co, "retries_by_provider") != "firing inactive→firing" || stateOf(co, "busy_providers") != "firing inactive→firing" {
		t.Fatalf("%+v", co)
	}
	for _, a := range co.Alerts {
		if a.Labels["provider"] != "p" {
			t.Errorf("%s: labels %v, want provider=p", a.Rule, a.Labels)
		}
	}
}

// runCLIWidth is runCLI with stdout a terminal width columns wide.
func runCLIWidth(t *testing.T, width int, now time.Time, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	code = run(context.Background(), args, &IO{In: strings.NewReader(""), Out: &out, Err: &errb, OutWidth: width,
		Now: func() time.Time { return now }})
	return code, out.String(), errb.String()
}

// writeCascade writes runs whose last five hold three failures, so
// run_failure_cascade (critical) fires.
func writeCascade(t *testing.T, runs string, now time.Time) {
	t.Helper()
	for i, status := range []string{"success", "success", "failure", "success", "failure", "failure"} {
		run := fmt.Sprintf("run%d", i)
		line := fmt.Sprintf(`{"type":"RunFinished","schemaVersion":1,"timestamp":%q,"runId":%q,"payload":{"status":%q}}`+"\n",
			now.Add(time.Duration(i-10)*time.Minute).Format(time.RFC3339Nano), run, status)
		p := filepath.Join(runs, run, "trace.jsonl")
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(line), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// --quiet is for cron: nothing on a healthy system, and when something
// fires the monitoring-plugin status line and one line per firing alert.
func TestCheckQuiet(t *testing.T) {
	endToEnd(t, "checks rules against a real store")
	t.Parallel()
	now := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	dir := t.TempDir()
	healthy := filepath.Join(dir, "healthy")
	writeRequests(t, healthy, "ok", now, 30, 1)
	code, out, stderr := runCLIWidth(t, 0, now, "--db", filepath.Join(dir, "h.duckdb"), "check", "--quiet", healthy)
	if code != 0 || out != "" {
		t.Fatalf("healthy: exit %d, stdout %q (stderr %q); want 0 and nothing", code, out, stderr)
	}

	sick := filepath.Join(dir, "sick")
	writeCascade(t, sick, now)
	db := filepath.Join(dir, "s.duckdb")
	for _, width := range []int{0, 80} {
		code, out, stderr = runCLIWidth(t, width, now, "--db", db, "check", "-q", sick)
		want := "CRITICAL - 1 alert firing\nrun_failure_cascade 3 >= 3 (active since " + now.Format(time.RFC3339) + ")\n"
		if code != 2 || out != want {
			t.Fatalf("firing at width %d: exit %d, stdout\n%s\nwant exit 2 and\n%s(stderr %q)", width, code, out, want, stderr)
		}
	}
	// JSON is a document for programs: --quiet does not change it.
	code, co := runCheck(t, now, "--db", db, "--no-ingest")
	if code != 2 || stateOf(co, "run_failure_cascade") != "firing " {
		t.Fatalf("json: exit %d %+v", code, co)
	}
}

// Every rule is listed with its state, value, threshold and counts, the
// inactive ones too, in the table and the JSON.
func TestCheckListsEveryRule(t *testing.T) {
	endToEnd(t, "checks rules against a real store")
	t.Parallel()
	now := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	dir := t.TempDir()
	runs := filepath.Join(dir, "runs")
	writeRequests(t, runs, "ok", now, 30, 3) // 10%: under the 20% threshold
	db := filepath.Join(dir, "o.duckdb")
	code, out, stderr := runCLI(t, "", "--db", db, "check", "--format", "json", runs)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var doc struct {
		Alerts []check.Row `json:"alerts"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatal(err)
	}
	rf, err := loadRules("")
	if err != nil {
		t.Fatal(err)
	}
	byRule := map[string]check.Row{}
	for _, a := range doc.Alerts {
		byRule[a.Rule] = a
	}
	for _, r := range rf.Rules {
		if _, ok := byRule[r.Name]; !ok {
			t.Errorf("rule %s is not listed", r.Name)
		}
	}
	retry := byRule["provider_retry_rate_high"]
	if retry.State != "inactive" || retry.Value == nil || *retry.Value != 0.1 || retry.Threshold == nil || *retry.Threshold != 0.2 ||
		retry.Denominator == nil || *retry.Denominator != 30 || retry.Condition == "" {
		t.Errorf("provider_retry_rate_high: %+v", retry)
	}
	if c := byRule["run_failure_cascade"]; c.State != "inactive" || c.Value == nil || *c.Value != 0 {
		t.Errorf("run_failure_cascade: %+v", c)
	}

	// The table: every rule, the rate as a percentage, its threshold.
	code, out, _ = runCLI(t, "", "--db", db, "check", "--no-ingest")
	if code != 0 {
		t.Fatalf("table: exit %d", code)
	}
	for _, r := range rf.Rules {
		if !strings.Contains(out, "| "+r.Name+" ") {
			t.Errorf("table lacks rule %s:\n%s", r.Name, out)
		}
	}
	if !regexp.MustCompile(`provider_retry_rate_high +\| warning +\| inactive +\| +\| 10\.0% +\| > 20% +\| +3 \| +30 \|`).MatchString(out) {
		t.Errorf("table's provider_retry_rate_high row:\n%s", out)
	}
	// CSV is for programs: full precision.
	code, out, _ = runCLI(t, "", "--db", db, "check", "--no-ingest", "--format", "csv")
	if code != 0 || !strings.Contains(out, "provider_retry_rate_high,warning,inactive,,provider_retry_rate,0.1,3,30,0.2,value > threshold && denominator >= 20,,,,\n") ||
		!strings.Contains(out, "run_failure_cascade,critical,inactive,,failed_runs,0,,,3,") {
		t.Errorf("csv: exit %d\n%s", code, out)
	}
}

// Inactive label sets of a split rule are listed with their labels.
func TestCheckListsInactiveLabelSets(t *testing.T) {
	endToEnd(t, "checks rules against a real store")
	t.Parallel()
	now := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	dir := t.TempDir()
	runs := filepath.Join(dir, "runs")
	writeRequests(t, runs, "r1", now, 30, 15)
	rulesFile := filepath.Join(dir, "rules.yaml")
	os.WriteFile(rulesFile, []byte(`rules:
  - name: retries_by_provider
    metric: provider_retry_rate
    by: [provider]
    window: 24h
    threshold: 0.9
    condition: value > threshold
`), 0o644)
	code, co := runCheck(t, now, "--db", filepath.Join(dir, "o.duckdb"), "--rules", rulesFile, runs)
	if code != 0 || len(co.Alerts) != 1 || co.Alerts[0].State != "inactive" || co.Alerts[0].Labels["provider"] != "p" {
		t.Fatalf("exit %d %+v", code, co)
	}
}

// displayWidth is what a terminal gives a line: wide characters take two
// columns, combining ones none.
func displayWidth(s string) int { return twwidth.Width(s) }

// At a terminal check's and report's tables fit 80 and 120 columns; --wide
// and a pipe print them whole.
func TestCheckFitsTerminal(t *testing.T) {
	endToEnd(t, "checks rules against a real store")
	t.Parallel()
	now := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	dir := t.TempDir()
	runs := filepath.Join(dir, "runs")
	writeRequests(t, runs, "bad", now, 30, 12)
	writeCascade(t, runs, now)
	db := filepath.Join(dir, "o.duckdb")
	if code, _, stderr := runCLIWidth(t, 0, now, "--db", db, "ingest", "-q", runs); code != 0 {
		t.Fatalf("ingest: %s", stderr)
	}
	rdb := bundledStoreAt(t, now)
	commands := [][]string{
		{"--db", db, "check", "--no-ingest"},
		{"--db", db, "check", "--no-ingest", "--format", "markdown"},
		{"--db", rdb, "report", "--no-ingest"},
		{"--db", rdb, "report", "--no-ingest", "--format", "markdown"},
	}
	for _, args := range commands {
		_, whole, _ := runCLIWidth(t, 0, now, args...)
		widest := 0
		for _, l := range strings.Split(whole, "\n") {
			widest = max(widest, displayWidth(l))
		}
		if widest <= 120 {
			t.Fatalf("%v is %d columns wide off a terminal: the test tests nothing", args, widest)
		}
		for _, width := range []int{80, 120} {
			_, out, stderr := runCLIWidth(t, width, now, args...)
			if out == "" {
				t.Fatalf("%v at %d: no output (%s)", args, width, stderr)
			}
			for _, l := range strings.Split(out, "\n") {
				if displayWidth(l) > width {
					t.Errorf("%v at %d columns: a line of %d:\n%s", args, width, displayWidth(l), l)
				}
			}
			_, wide, _ := runCLIWidth(t, width, now, append(args, "--wide")...)
			if args[2] == "report" && wide != whole {
				t.Errorf("%v --wide at %d differs from the output to a pipe", args, width)
			}
			// Each check advances the alerts' states, so its output is
			// compared by layout: --wide has every column.
			if args[2] == "check" && !strings.Contains(wide, "active_since") {
				t.Errorf("%v --wide at %d is not the whole table:\n%s", args, width, wide)
			}
		}
	}
	_, out, _ := runCLIWidth(t, 80, now, "--db", rdb, "report", "--no-ingest")
	if !strings.Contains(out, "> 20% ALERT") {
		t.Errorf("report at 80 columns: the threshold cell is not \"> 20%% ALERT\":\n%s", out)
	}
}

// sql prints NULL as NULL, and the string '-' as -.
func TestCheckSQLNull(t *testing.T) {
	endToEnd(t, "checks rules against a real store")
	t.Parallel()
	db := bundledStore(t)
	for _, f := range []string{"table", "markdown"} {
		code, out, stderr := runCLI(t, "", "--db", db, "sql", "--format", f, "SELECT NULL AS a, '-' AS b")
		if code != 0 || !strings.Contains(out, "| NULL | - |") {
			t.Errorf("%s: exit %d:\n%s%s", f, code, out, stderr)
		}
	}
}

// A pending alert whose condition stops holding is listed as inactive,
// with the change this check made.
func TestCheckPendingBackToInactive(t *testing.T) {
	endToEnd(t, "checks rules against a real store")
	t.Parallel()
	now := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	dir := t.TempDir()
	runs, db := filepath.Join(dir, "runs"), filepath.Join(dir, "o.duckdb")
	writeRequests(t, runs, "bad", now, 30, 15)
	rulesFile := filepath.Join(dir, "rules.yaml")
	os.WriteFile(rulesFile, []byte(`rules:
  - name: retries
    metric: provider_retry_rate
    window: 24h
    threshold: 0.2
    condition: value > threshold
    for: 2
`), 0o644)
	if _, co := runCheck(t, now, "--db", db, "--rules", rulesFile, runs); stateOf(co, "retries") != "pending inactive→pending" {
		t.Fatalf("%+v", co)
	}
	writeRequests(t, runs, "good", now.Add(5*time.Minute), 300, 0)
	if _, co := runCheck(t, now.Add(5*time.Minute), "--db", db, "--rules", rulesFile, runs); stateOf(co, "retries") != "inactive pending→inactive" {
		t.Fatalf("%+v", co)
	}
}

package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/orchstat/orchstat/model/reports"
	"github.com/orchstat/orchstat/rules/check"
)

// lookDoc is check's JSON, with what a look adds.
type lookDoc struct {
	Status     string      `json:"status"`
	At         time.Time   `json:"at"`
	Look       bool        `json:"look"`
	LatestData *time.Time  `json:"latest_data"`
	Alerts     []check.Row `json:"alerts"`
}

func runLook(t *testing.T, now time.Time, args ...string) (int, lookDoc, string) {
	t.Helper()
	code, out, stderr := runCLIAt(t, now, "", append([]string{"check", "--format", "json"}, args...)...)
	var doc lookDoc
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("exit %d, %v: %q %q", code, err, out, stderr)
	}
	return code, doc, stderr
}

func rowOf(doc lookDoc, rule string) check.Row {
	for _, r := range doc.Alerts {
		if r.Rule == rule {
			return r
		}
	}
	return check.Row{State: "-"}
}

// check --at TIME ends every window at TIME: runs a month old fire the
// rule they would have fired then, and a run started after TIME is left
// out. It is a look: a second look is pending still (the state is not
// saved), a firing alert notifies no receiver, and a later check at the
// present does not see the look's alerts. Before, check had no --at, and
// the old runs were only "no data".
func TestCheckAtEndsWindowsAndKeepsNoState(t *testing.T) {
	endToEnd(t, "checks rules against a real store")
	t.Parallel()
	hook := newHookServer(t)
	now := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	then := now.AddDate(0, 0, -30)
	dir := t.TempDir()
	runs := filepath.Join(dir, "runs")
	writeRequests(t, runs, "old", then, 30, 15)                   // 50% retried, an hour before then
	writeRequests(t, runs, "later", then.Add(2*time.Hour), 90, 0) // healthy, an hour after then
	rulesFile := filepath.Join(dir, "rules.yaml")
	os.WriteFile(rulesFile, []byte(fmt.Sprintf(`rules:
  - name: retries_pending
    metric: provider_retry_rate
    window: 24h
    threshold: 0.2
    condition: value > threshold && denominator >= 20
    for: 2
  - name: retries_now
    metric: provider_retry_rate
    window: 24h
    threshold: 0.2
    condition: value > threshold
receivers:
  - name: hook
    webhook: {url: %q}
`, hook.URL)), 0o644)
	db := filepath.Join(dir, "o.duckdb")
	at := then.Format(time.RFC3339)
	for i := range 2 {
		code, doc, stderr := runLook(t, now, "--db", db, "--rules", rulesFile, "--at", at, runs)
		p, n := rowOf(doc, "retries_pending"), rowOf(doc, "retries_now")
		if code != 1 || !doc.Look || !doc.At.Equal(then) || p.State != "pending" || n.State != "firing" ||
			p.Value == nil || *p.Value != 0.5 || p.Denominator == nil || *p.Denominator != 30 || p.Changed != "" {
			t.Fatalf("look %d: exit %d, %+v (stderr %q); want exit 1, pending and firing at 50%% of 30", i+1, code, doc, stderr)
		}
	}
	if got := hook.take(); len(got) != 0 {
		t.Errorf("a look notified %v", got)
	}
	// The present: the windows hold nothing, and no state came from the looks.
	code, doc, _ := runLook(t, now, "--db", db, "--rules", rulesFile, "--no-ingest")
	if code != 0 || rowOf(doc, "retries_now").State != "no data" || len(hook.take()) != 0 {
		t.Fatalf("check after looks: exit %d %+v", code, doc)
	}
	// A day later the later run alone is in the window: healthy.
	code, doc, _ = runLook(t, now, "--db", db, "--rules", rulesFile, "--no-ingest", "--at", then.Add(3*time.Hour).Format(time.RFC3339))
	if r := rowOf(doc, "retries_now"); code != 0 || r.State != "inactive" || r.Denominator == nil || *r.Denominator != 120 {
		t.Fatalf("look 3h later: exit %d %+v", code, r)
	}
	// A date, as report --since takes, is midnight UTC.
	code, doc, _ = runLook(t, now, "--db", db, "--rules", rulesFile, "--no-ingest", "--at", then.Format("2006-01-02"))
	if !doc.At.Equal(then.Truncate(24*time.Hour)) || code != 0 {
		t.Fatalf("--at a date: exit %d, at %v", code, doc.At)
	}
	// The table says it is a look.
	code, out, _ := runCLIAt(t, now, "", "--db", db, "check", "--rules", rulesFile, "--no-ingest", "--at", at)
	if code != 1 || !strings.Contains(out, "orchstat check at "+at+": WARNING") || !strings.Contains(out, "not a round of cron") {
		t.Errorf("table: exit %d\n%s", code, out)
	}
}

// A bad --at is a usage error, as a bad --since is; so is a time not in
// the past, and --at with --textfile (node_exporter would take a look at
// the past for the present). A good one, in each form report --since
// takes, is not: UNKNOWN (3), as every usage error of check is.
func TestCheckAtUsage(t *testing.T) {
	endToEnd(t, "checks rules against a real store")
	t.Parallel()
	now := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	dir := t.TempDir()
	runs := filepath.Join(dir, "runs")
	writeRequests(t, runs, "r", now, 3, 0)
	for _, at := range []string{"2026-11-20", "36h", "7d", "2026-11-21T10:30:00Z", "2026-11-21T11:30:00+01:00"} {
		if code, _, stderr := runCLIAt(t, now, "", "--db", filepath.Join(dir, "o.duckdb"), "check", "--at", at, runs); code != 0 {
			t.Errorf("--at %s: exit %d, stderr %q; want 0", at, code, stderr)
		}
	}
	for _, args := range [][]string{
		{"--at", "yesterday"},
		{"--at", "2027-01-01"},
		{"--at", "2026-11-20", "--textfile", filepath.Join(dir, "x.prom")},
	} {
		code, _, stderr := runCLIAt(t, now, "", append([]string{"--db", filepath.Join(dir, "o.duckdb"), "check"}, args...)...)
		if code != checkUnknown || !strings.Contains(stderr, "--at") {
			t.Errorf("%v: exit %d, stderr %q; want %d naming --at", args, code, stderr, checkUnknown)
		}
	}
}

// A rule without data in its window says when the latest data is and how
// to look at it. Before, it said "no data" and nothing more.
func TestCheckNoDataSaysWhereTheDataIs(t *testing.T) {
	endToEnd(t, "checks rules against a real store")
	t.Parallel()
	now := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	then := now.AddDate(-1, 0, 0)
	dir := t.TempDir()
	runs := filepath.Join(dir, "runs")
	writeRequests(t, runs, "old", then, 30, 15) // started at then-1h
	db := filepath.Join(dir, "o.duckdb")
	code, doc, _ := runLook(t, now, "--db", db, runs)
	latest := then.Add(-time.Hour)
	r := rowOf(doc, "provider_retry_rate_high")
	want := "nothing in the last 24h; the latest run started " + latest.Format(time.RFC3339) + ": try check --at " +
		latest.Add(time.Minute).Format(time.RFC3339) + ", or rules backtest"
	if code != 0 || r.State != "no data" || r.Note != want || doc.LatestData == nil || !doc.LatestData.Equal(latest) {
		t.Fatalf("exit %d, row %+v, latest %v; want note %q", code, r, doc.LatestData, want)
	}
	code, out, _ := runCLIWidth(t, 80, now, "--db", db, "check", "--no-ingest", runs)
	if code != 0 || !strings.Contains(strings.Join(strings.Fields(out), " "), "try check --at "+latest.Add(time.Minute).Format(time.RFC3339)) {
		t.Errorf("table: exit %d\n%s", code, out)
	}
	for _, line := range strings.Split(out, "\n") {
		if displayWidth(line) > 80 {
			t.Errorf("line wider than 80 columns: %q", line)
		}
	}
	// The suggested look finds the data.
	code, doc, _ = runLook(t, now, "--db", db, "--no-ingest", "--at", latest.Add(time.Minute).Format(time.RFC3339))
	if r := rowOf(doc, "provider_retry_rate_high"); r.State != "pending" {
		t.Errorf("the suggested look: exit %d, %+v", code, r)
	}

	// A run inside the window that holds nothing the rule counts: the
	// note says so, not "no data" beside a latest run inside the window.
	fresh := filepath.Join(runs, "fresh", "trace.jsonl")
	os.MkdirAll(filepath.Dir(fresh), 0o755)
	os.WriteFile(fresh, []byte(fmt.Sprintf(`{"type":"RunStarted","schemaVersion":1,"timestamp":%q,"runId":"fresh","payload":{}}`+"\n",
		now.Add(-time.Hour).Format(time.RFC3339Nano))), 0o644)
	_, doc, _ = runLook(t, now, "--db", db, runs)
	if r := rowOf(doc, "provider_retry_rate_high"); !strings.HasPrefix(r.Note, "none of what the rule counts in the last 24h, though runs started there (the latest ") {
		t.Errorf("a run of another kind in the window: note %q", r.Note)
	}
}

// A label set past its threshold but short of the samples its condition
// asks for says why it is inactive. Before, it said "inactive" only.
func TestCheckShortOfSamplesSaysWhy(t *testing.T) {
	endToEnd(t, "checks rules against a real store")
	t.Parallel()
	now := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	dir := t.TempDir()
	runs := filepath.Join(dir, "runs")
	writeRequests(t, runs, "r", now, 4, 4)
	rulesFile := filepath.Join(dir, "rules.yaml")
	os.WriteFile(rulesFile, []byte(`rules:
  - name: retries
    metric: provider_retry_rate
    window: 24h
    threshold: 0.5
    condition: value > threshold && denominator >= 5
`), 0o644)
	db := filepath.Join(dir, "o.duckdb")
	code, doc, _ := runLook(t, now, "--db", db, "--rules", rulesFile, runs)
	r := rowOf(doc, "retries")
	if code != 0 || r.State != "inactive" || r.NeedsSamples != "≥ 5" || r.Note != "100.0% (4/4) > 50%, needs ≥ 5" {
		t.Fatalf("exit %d, %+v", code, r)
	}
	code, out, _ := runCLIWidth(t, 80, now, "--db", db, "check", "--rules", rulesFile, "--no-ingest")
	if code != 0 || !strings.Contains(out, "retries: 100.0% (4/4) > 50%, needs ≥ 5\n") {
		t.Errorf("table: exit %d\n%s", code, out)
	}
}

// The README's tour: report marks metrics ALERT on the bundled runs, a
// year old, and check at the present finds no data. check --at the data's
// end (as check's no-data note suggests) and a report over the same
// window agree rule for rule: a rule's condition holds in the look
// (pending or firing) exactly when the report marks its metric ALERT.
// Before, check had no --at, and said "no data" for every windowed rule.
func TestCheckAtAgreesWithReportOnBundledRuns(t *testing.T) {
	endToEnd(t, "checks rules against a real store")
	t.Parallel()
	runs, err := filepath.Abs("../../testdata/runs")
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 11, 27, 1, 0, 0, 0, time.UTC)
	db := filepath.Join(t.TempDir(), "o.duckdb")
	_, present, _ := runLook(t, now, "--db", db, runs)
	m := regexp.MustCompile(`try check --at (\S+),`).FindStringSubmatch(rowOf(present, "provider_retry_rate_high").Note)
	if m == nil {
		t.Fatalf("no suggestion in %+v", rowOf(present, "provider_retry_rate_high"))
	}
	at, err := time.Parse(time.RFC3339, m[1])
	if err != nil {
		t.Fatal(err)
	}
	code, look, stderr := runLook(t, now, "--db", db, "--no-ingest", "--at", m[1], runs)
	if code == 3 {
		t.Fatalf("look: exit 3: %s", stderr)
	}
	code, out, stderr := runCLIAt(t, now, "", "--db", db, "report", "--no-ingest", "--format", "json",
		"--since", at.Add(-24*time.Hour).Format(time.RFC3339), "--until", m[1], runs)
	if code != 0 {
		t.Fatalf("report: exit %d: %s", code, stderr)
	}
	var rep reports.Report
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatal(err)
	}
	rf, err := loadRules("")
	if err != nil {
		t.Fatal(err)
	}
	alerts := 0
	for _, th := range rep.Thresholds {
		r := rowOf(look, th.Rule)
		holds := r.State == "pending" || r.State == "firing"
		if holds != th.Crossed {
			t.Errorf("%s: report marks ALERT %v, check --at %s says %s", th.Rule, th.Crossed, m[1], r.State)
		}
		if th.Crossed {
			alerts++
		}
		for _, rule := range rf.Rules {
			if rule.Name == th.Rule && rule.Window.Duration != 24*time.Hour {
				t.Errorf("%s: window %v; this test compares 24h windows", th.Rule, rule.Window)
			}
		}
	}
	if alerts == 0 {
		t.Errorf("no ALERT at the data's end: the comparison says nothing")
	}
}

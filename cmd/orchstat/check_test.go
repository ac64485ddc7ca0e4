package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
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
	saved := fixedNow
	fixedNow = now
	defer func() { fixedNow = saved }()
	code, out, stderr := runCLI(t, "", append([]string{"check", "--format", "json", "-q"}, args...)...)
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
	bad := filepath.Join(t.TempDir(), "bad.yaml")
	os.WriteFile(bad, []byte("rules:\n  - name: x\n    metric: nope\n    condition: value > 1\n"), 0o644)
	code, _, stderr := runCLI(t, "", "--db", filepath.Join(t.TempDir(), "x.duckdb"), "check", "--no-ingest", "--rules", bad)
	if code != 3 || !strings.Contains(stderr, "UNKNOWN") {
		t.Fatalf("exit %d: %s", code, stderr)
	}
}

// Seed 001's cascade: 3 failed runs among the last 5 fire at once, critical.
func TestCheckCascade(t *testing.T) {
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

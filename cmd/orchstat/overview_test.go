package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

type overviewReport struct {
	Scope struct {
		RunsInStore int64 `json:"runs_in_store"`
		RunsLeftOut int64 `json:"runs_left_out"`
	} `json:"scope"`
	Overview struct {
		Runs         int64 `json:"runs"`
		RunsBySystem []struct {
			System string `json:"system"`
			Runs   int64  `json:"runs"`
		} `json:"runs_by_system"`
		Success, Failure, Cancelled, Unfinished int64
		OtherStatus                             int64 `json:"other_status"`
		Quarantined                             int64 `json:"quarantined"`
	} `json:"overview"`
}

// The overview counts every run in scope once, under the system that
// recorded it, and its counts add up to the scope line's: before, exec's
// runs were counted twice in the scope line (as trace runs and as record
// runs), queued tasks were counted as runs there and not in the
// overview, other systems' runs not at all in the overview, and the
// quarantined lines were the whole store's.
func TestOverviewAddsUpToTheScope(t *testing.T) {
	requireProcesses(t)
	top := t.TempDir()
	db := filepath.Join(top, "store.duckdb")
	in := filepath.Join(top, "in")
	writeRuns(t, filepath.Join(in, "runs"), "r", 3)
	copyTree(t, filepath.Join("..", "..", "testdata", "claudestrator", "webshop"), filepath.Join(in, "webshop"))
	for _, cmd := range []string{"true", "false"} {
		if code, _, stderr := runCLI(t, "", "exec", "-q", "--db", db, "--runs-dir", filepath.Join(in, "exec"), "--op", "build", "--", cmd); code != 0 && cmd == "true" {
			t.Fatalf("exec %s: %d %s", cmd, code, stderr)
		}
	}
	out := filepath.Join(top, "out")
	writeRuns(t, out, "o", 2)
	bad := filepath.Join(out, "o0", "trace.jsonl")
	f, err := os.OpenFile(bad, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString("not json\n")
	f.Close()
	for _, dir := range []string{filepath.Join(in, "runs"), filepath.Join(in, "webshop"), filepath.Join(in, "exec"), out} {
		if code, _, stderr := runCLI(t, "", "ingest", "-q", "--db", db, dir); code != 0 {
			t.Fatalf("ingest %s: %d %s", dir, code, stderr)
		}
	}

	for _, tc := range []struct {
		name  string
		paths []string
		quar  int64
	}{
		{"named", []string{in}, 0},
		{"whole store", nil, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := append([]string{"report", "-f", "json", "--no-ingest", "--db", db}, tc.paths...)
			if tc.paths == nil {
				args = append(args, "--all")
			}
			code, stdout, stderr := runCLI(t, "", args...)
			if code != 0 {
				t.Fatalf("report: %d %s", code, stderr)
			}
			var r overviewReport
			if err := json.Unmarshal([]byte(stdout), &r); err != nil {
				t.Fatal(err)
			}
			o := r.Overview
			by := map[string]int64{}
			var sum int64
			for _, s := range o.RunsBySystem {
				by[s.System] = s.Runs
				sum += s.Runs
			}
			inScope := r.Scope.RunsInStore - r.Scope.RunsLeftOut
			if sum != o.Runs || o.Runs != inScope {
				t.Errorf("overview runs %d, by system %v (sum %d), scope %d of %d", o.Runs, by, sum, inScope, r.Scope.RunsInStore)
			}
			if by["exec"] != 2 || by["claudestrator"] == 0 {
				t.Errorf("by system %v: want 2 exec runs and the claudestrator tasks that ran", by)
			}
			if want := by["orchestrator"]; tc.paths != nil && want != 3 || tc.paths == nil && want != 5 {
				t.Errorf("orchestrator runs %d", want)
			}
			if o.Success+o.Failure+o.Cancelled+o.Unfinished+o.OtherStatus != o.Runs {
				t.Errorf("outcomes %+v do not add up to the runs", o)
			}
			if o.Quarantined != tc.quar {
				t.Errorf("quarantined %d, want %d (the scope's)", o.Quarantined, tc.quar)
			}
		})
	}
}

// A report with no orchestrator run in scope leaves out the
// orchestrator's empty sections, says so once, and leads with what the
// scope holds.
func TestReportWithoutTracesLeadsWithWhatIsThere(t *testing.T) {
	endToEnd(t, "runs orchstat against a real store")
	top := t.TempDir()
	db := filepath.Join(top, "store.duckdb")
	copyTree(t, filepath.Join("..", "..", "testdata", "claudestrator", "webshop"), filepath.Join(top, "webshop"))
	code, stdout, stderr := runCLI(t, "", "report", "--db", db, filepath.Join(top, "webshop"))
	if code != 0 {
		t.Fatalf("report: %d %s", code, stderr)
	}
	if strings.Contains(stdout, "Stop reasons") || strings.Contains(stdout, "By provider") || strings.Contains(stdout, "provider_retry_rate") {
		t.Errorf("empty orchestrator sections shown:\n%s", stdout)
	}
	if strings.Count(stdout, "the orchestrator's breakdowns") != 1 || !strings.Contains(stdout, "Other systems") {
		t.Errorf("the report does not say once what it left out, or lacks the systems:\n%s", stdout)
	}
	code, stdout, _ = runCLI(t, "", "report", "-f", "json", "--no-ingest", "--db", db, filepath.Join(top, "webshop"))
	if code != 0 || !strings.Contains(stdout, `"by_provider": []`) || !strings.Contains(stdout, `"provider_retry_rate"`) {
		t.Errorf("the JSON must keep every section and metric:\n%s", stdout)
	}
}

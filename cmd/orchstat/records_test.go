package main

import (
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
)

const harness = "../../../shared/testdata-external/llm-contract-harness"

// factorySummaries reads the real factory run summaries under dirs straight
// from their JSON, one per run id (artifacts/X and examples/artifacts/X are
// copies), as attempt counts and verdicts.
func factorySummaries(t *testing.T, dirs ...string) map[string][]bool {
	t.Helper()
	runs := map[string][]bool{}
	for _, d := range dirs {
		err := filepath.WalkDir(d, func(p string, e fs.DirEntry, err error) error {
			if err != nil || e.Name() != "run_summary.json" {
				return err
			}
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			var s struct {
				RunID    string            `json:"run_id"`
				Verdict  string            `json:"verdict"`
				Attempts []json.RawMessage `json:"attempts"`
			}
			if err := json.Unmarshal(b, &s); err != nil {
				return err
			}
			passed := make([]bool, len(s.Attempts))
			for i, a := range s.Attempts {
				var x struct {
					Brief json.RawMessage `json:"failure_brief"`
				}
				json.Unmarshal(a, &x)
				passed[i] = len(x.Brief) == 0 || string(x.Brief) == "null"
			}
			runs[s.RunID] = passed
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	return runs
}

// simulate on the real factory records answers the audit's questions
// exactly: the figures follow from the recorded attempts alone.
func TestSimulateFactoryRecords(t *testing.T) {
	endToEnd(t, "starts the binary on the factory's records")
	t.Parallel()
	if _, err := os.Stat(harness); err != nil {
		t.Skip("../shared/testdata-external is absent")
	}
	dirs := []string{filepath.Join(harness, "artifacts"), filepath.Join(harness, "artifacts2"), filepath.Join(harness, "examples")}
	runs := factorySummaries(t, dirs...)
	db := filepath.Join(t.TempDir(), "s.duckdb")
	args := append([]string{"simulate", "--db", db, "--format", "json"}, dirs...)
	out, err := runOrchstat(args...).Output()
	if err != nil {
		t.Fatalf("simulate: %v\n%s", err, out)
	}
	var res struct {
		Systems []struct {
			System   string
			Baseline struct {
				Runs, Attempts int
			}
			Policies []struct {
				Policy        string
				Runs          int
				Attempts      int
				Saved         int `json:"attempts_saved"`
				SuccessesLost int `json:"successes_lost"`
				Failed        int
			}
		}
	}
	if err := json.Unmarshal(out, &res); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if len(res.Systems) != 1 || res.Systems[0].System != "factory" {
		t.Fatalf("systems = %+v", res.Systems)
	}
	sys := res.Systems[0]
	attempts := 0
	for _, r := range runs {
		attempts += len(r)
	}
	if sys.Baseline.Runs != len(runs) || sys.Baseline.Attempts != attempts {
		t.Errorf("baseline: %d runs, %d attempts; the JSON has %d runs, %d attempts", sys.Baseline.Runs, sys.Baseline.Attempts, len(runs), attempts)
	}
	// Under max attempts 2 a run makes at most 2 attempts, and a run that
	// passed later than its 2nd attempt is given up.
	saved, lost := 0, 0
	for _, r := range runs {
		if len(r) > 2 {
			saved += len(r) - 2
			if r[len(r)-1] {
				lost++
			}
		}
	}
	found := false
	for _, p := range sys.Policies {
		if p.Policy == "factory with max-attempts 2" {
			found = true
			if p.Saved != saved || p.SuccessesLost != lost || p.Attempts != attempts-saved {
				t.Errorf("max-attempts 2: saved %d, lost %d, attempts %d; want %d, %d, %d", p.Saved, p.SuccessesLost, p.Attempts, saved, lost, attempts-saved)
			}
		}
	}
	if !found {
		t.Errorf("no max-attempts 2 policy in %+v", sys.Policies)
	}
}

// report on the real records shows each system's section, and the JSON
// counts agree with the files.
func TestReportFactoryRecords(t *testing.T) {
	endToEnd(t, "starts the binary on the factory's records")
	t.Parallel()
	if _, err := os.Stat(harness); err != nil {
		t.Skip("../shared/testdata-external is absent")
	}
	dirs := []string{filepath.Join(harness, "artifacts"), filepath.Join(harness, "artifacts2"), filepath.Join(harness, "examples")}
	runs := factorySummaries(t, dirs...)
	db := filepath.Join(t.TempDir(), "r.duckdb")
	out, err := runOrchstat(append([]string{"report", "--db", db, "--format", "json"}, dirs...)...).Output()
	if err != nil {
		t.Fatalf("report: %v\n%s", err, out)
	}
	var rep struct {
		Metrics map[string]struct{ Value *float64 }
		Systems struct {
			BySystem []struct {
				System                 string
				Runs, Success, Failure int
				Attempts               int
				FailedAttempts         int `json:"failed_attempts"`
			} `json:"by_system"`
		}
	}
	if err := json.Unmarshal(out, &rep); err != nil {
		t.Fatal(err)
	}
	var pass, fail, attempts, failed int
	for _, r := range runs {
		attempts += len(r)
		for _, p := range r {
			if !p {
				failed++
			}
		}
		if r[len(r)-1] {
			pass++
		} else {
			fail++
		}
	}
	if len(rep.Systems.BySystem) != 1 {
		t.Fatalf("by_system = %+v", rep.Systems.BySystem)
	}
	s := rep.Systems.BySystem[0]
	if s.System != "factory" || s.Runs != len(runs) || s.Success != pass || s.Failure != fail || s.Attempts != attempts || s.FailedAttempts != failed {
		t.Errorf("factory = %+v; the JSON has %d runs (%d pass, %d fail), %d attempts, %d failed", s, len(runs), pass, fail, attempts, failed)
	}
	if v := rep.Metrics["record_runs"].Value; v == nil || int(*v) != len(runs) {
		t.Errorf("record_runs = %v, want %d", v, len(runs))
	}
}

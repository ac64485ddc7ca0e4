package factory_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/orchstat/orchstat/ingest/factory"
	"github.com/orchstat/orchstat/model/records"
)

// realData is the factory's own records (see its README); the tests skip
// when it is absent.
const realData = "../../../shared/testdata-external/llm-contract-harness"

func realFiles(t testing.TB, name string) []string {
	t.Helper()
	if _, err := os.Stat(realData); err != nil {
		t.Skipf("real factory records not present: %v", err)
	}
	var out []string
	err := filepath.WalkDir(realData, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && d.Name() == name {
			out = append(out, p)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(out) == 0 {
		t.Fatalf("no %s under %s", name, realData)
	}
	return out
}

func decodeMap(t *testing.T, p string) (map[string]any, []byte) {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("%s: %v", p, err)
	}
	return m, b
}

func list(v any) []any { l, _ := v.([]any); return l }

// Each real summary yields one run and every attempt and command result
// it holds, counted here from the JSON itself.
func TestRealSummaries(t *testing.T) {
	var runs, attempts, failed, stages int
	for _, p := range realFiles(t, "run_summary.json") {
		m, b := decodeMap(t, p)
		set, err := factory.ParseSummary(p, b)
		if err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		if len(set.Problems) > 0 {
			t.Errorf("%s: problems %v", p, set.Problems)
		}
		if len(set.Runs) != 1 {
			t.Fatalf("%s: %d runs", p, len(set.Runs))
		}
		r := set.Runs[0]
		if r.RunID != m["run_id"] || r.Verdict != m["verdict"] {
			t.Errorf("%s: run %s verdict %s, want %v %v", p, r.RunID, r.Verdict, m["run_id"], m["verdict"])
		}
		if want := map[any]string{"PASS": "success", "FAIL": "failure"}[m["verdict"]]; r.Status != want {
			t.Errorf("%s: status %s, want %s", p, r.Status, want)
		}
		wantItem, _ := m["work_order_id"].(string)
		if wo, ok := m["work_order_path"].(string); ok {
			wantItem = strings.TrimSuffix(filepath.Base(wo), ".json")
		}
		if r.Item != wantItem {
			t.Errorf("%s: item %q, want %q", p, r.Item, wantItem)
		}
		if _, timed := m["started_utc"]; timed != (r.StartedAt != nil && r.FinishedAt != nil && r.MaxAttempts != nil) {
			t.Errorf("%s: started_utc %v, but start %v end %v max %v", p, timed, r.StartedAt, r.FinishedAt, r.MaxAttempts)
		}
		atts := list(m["attempts"])
		if r.Attempts == nil || *r.Attempts != len(atts) {
			t.Errorf("%s: attempts %v, want %d", p, r.Attempts, len(atts))
		}
		runs++
		attempts += len(atts)
		nFailed, nStages := 0, 0
		for _, a := range atts {
			am := a.(map[string]any)
			if am["failure_brief"] != nil {
				nFailed++
			}
			nStages += len(list(am["verify"])) + len(list(am["acceptance"]))
			for _, k := range []string{"write_ok", "apply_ok"} {
				if _, ok := am[k]; ok {
					nStages++
				}
			}
		}
		failed += nFailed
		stages += nStages
		gotFailed := 0
		for _, a := range set.Attempts {
			if a.Passed == nil {
				t.Errorf("%s: attempt %d does not say whether it passed", p, a.Attempt)
			} else if !*a.Passed {
				gotFailed++
				if a.Class == "" || a.Class == "unknown" || a.Signature == "" {
					t.Errorf("%s: failed attempt %d: class %q signature %q", p, a.Attempt, a.Class, a.Signature)
				}
			}
		}
		if len(set.Attempts) != len(atts) || gotFailed != nFailed || len(set.Stages) != nStages {
			t.Errorf("%s: %d attempts (%d failed), %d stages; want %d (%d), %d", p, len(set.Attempts), gotFailed, len(set.Stages), len(atts), nFailed, nStages)
		}
	}
	// What the files hold, before artifacts/X and examples/artifacts/X
	// copies are told apart.
	t.Logf("%d summaries, %d attempts, %d failed, %d stages", runs, attempts, failed, stages)
}

func TestRealBriefs(t *testing.T) {
	for _, p := range realFiles(t, "failure_brief.json") {
		m, b := decodeMap(t, p)
		set, err := factory.ParseBrief(p, b)
		if err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		if len(set.Runs) != 1 || len(set.Attempts) != 1 {
			t.Fatalf("%s: %d runs, %d attempts", p, len(set.Runs), len(set.Attempts))
		}
		a := set.Attempts[0]
		attemptDir := filepath.Base(filepath.Dir(p))
		runDir := filepath.Base(filepath.Dir(filepath.Dir(p)))
		if a.RunID != runDir || "attempt_"+itoa(a.Attempt) != attemptDir || a.Stage != m["stage"] || a.Error != m["primary_error_excerpt"] {
			t.Errorf("%s: got %s", p, attemptLine(a))
		}
		if set.Runs[0].Source != factory.SourceBrief || *a.Passed {
			t.Errorf("%s: run %s, attempt %s", p, runLine(set.Runs[0]), attemptLine(a))
		}
	}
}

func itoa(i int) string { b, _ := json.Marshal(i); return string(b) }

// Each pipeline's events yield one run per work order that ran and one
// attempt per attempt_N event; its meta.json adds nothing.
func TestRealPipelines(t *testing.T) {
	for _, p := range realFiles(t, "events.jsonl") {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		ran := map[string]bool{}
		passed := map[string]bool{}
		attempts := 0
		for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
			var e map[string]any
			if err := json.Unmarshal([]byte(line), &e); err != nil {
				t.Fatalf("%s: %v", p, err)
			}
			if e["type"] != "wo_status" {
				continue
			}
			id := e["wo_id"].(string)
			st := e["status"].(string)
			switch {
			case st == "running":
				ran[id] = true
			case strings.HasPrefix(st, "attempt_"):
				attempts++
			case st == "pass":
				passed[id] = true
			}
		}
		set, err := factory.ParseEvents(p, b)
		if err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		if len(set.Problems) > 0 {
			t.Errorf("%s: problems %v", p, set.Problems)
		}
		pipeline := filepath.Base(filepath.Dir(p))
		if len(set.Runs) != len(ran) || len(set.Attempts) != attempts {
			t.Errorf("%s: %d runs, %d attempts; want %d, %d", p, len(set.Runs), len(set.Attempts), len(ran), attempts)
		}
		for _, r := range set.Runs {
			if r.Batch != pipeline || r.RunID != pipeline+"/"+r.Item || !ran[r.Item] || (r.Status == "success") != passed[r.Item] || r.StartedAt == nil {
				t.Errorf("%s: %s", p, runLine(r))
			}
		}
		for _, a := range set.Attempts {
			if a.TS == nil || a.Passed == nil {
				t.Errorf("%s: %s", p, attemptLine(a))
			}
		}

		meta := filepath.Join(filepath.Dir(p), "meta.json")
		mb, err := os.ReadFile(meta)
		if err != nil {
			t.Fatal(err)
		}
		ms, err := factory.ParseMeta(meta, mb)
		if err != nil {
			t.Fatalf("%s: %v", meta, err)
		}
		if len(ms.Runs)+len(ms.Attempts)+len(ms.Stages)+len(ms.Problems) != 0 {
			t.Errorf("%s: meta added rows: %+v", meta, ms)
		}
	}
}

var _ records.Parser = factory.ParseSummary

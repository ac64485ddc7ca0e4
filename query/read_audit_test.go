package query_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/orchstat/orchstat/ingest"
	"github.com/orchstat/orchstat/model/failure"
	"github.com/orchstat/orchstat/model/reports"
	"github.com/orchstat/orchstat/query"
)

const (
	auditFixtures = "../testdata/factory/audit"
	auditRealData = "../../shared/testdata-external/llm-contract-harness"
)

func auditStore(t *testing.T, dir string) *query.Store {
	t.Helper()
	ctx := context.Background()
	st, err := query.Open(ctx, filepath.Join(t.TempDir(), "audit.duckdb"), query.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	res, err := ingest.Run(ctx, st, ingest.Options{Paths: []string{dir}})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Errors) > 0 {
		t.Fatalf("ingest: %v", res.Errors)
	}
	return st
}

// stageRow is one row of the audit's stage table.
func stageRow(id, stage, helps string, failed, runs int64) reports.AuditStage {
	return reports.AuditStage{Class: id, Stage: stage, FailedAttempts: failed, Runs: runs, RetryHelps: helps}
}

// taxonomy is the stage table with counts by seed id (or stage, for
// patch_apply_failed), the classification text left out.
func taxonomy(counts map[string][2]int64) []reports.AuditStage {
	rows := []reports.AuditStage{
		stageRow("precondition failure", "preflight", reports.RetryNo, 0, 0),
		stageRow("model API error", "exception", reports.RetryDepends, 0, 0),
		stageRow("unparseable model output", "llm_output_invalid", reports.RetryMaybe, 0, 0),
		stageRow("write outside allowed files", "write_scope_violation", reports.RetryMaybe, 0, 0),
		stageRow("stale file hash", "stale_context", reports.RetryMaybe, 0, 0),
		stageRow("file-write failure", "write_failed", reports.RetryNo, 0, 0),
		stageRow("verification failure", "verify_failed", reports.RetryYes, 0, 0),
		stageRow("acceptance failure", "acceptance_failed", reports.RetryYes, 0, 0),
		stageRow("acceptance command does not parse", "acceptance_failed", reports.RetryNo, 0, 0),
		stageRow("", "patch_apply_failed", reports.RetryMaybe, 0, 0),
	}
	for i, r := range rows {
		k := r.Class
		if k == "" {
			k = r.Stage
		}
		rows[i].FailedAttempts, rows[i].Runs = counts[k][0], counts[k][1]
	}
	return rows
}

// deterministic is the retried deterministic failures: runs is the runs
// with any, the arrays failures, runs and wasted attempts of F1, F6, F8a.
func deterministic(runs int64, f1, f6, f8a [3]int64) reports.AuditRetriedDeterministic {
	d := reports.AuditRetriedDeterministic{Runs: runs, ByStage: []reports.AuditDeterministicRow{
		{Class: "precondition failure", Stage: "preflight", Failures: f1[0], Runs: f1[1], WastedAttempts: f1[2]},
		{Class: "file-write failure", Stage: "write_failed", Failures: f6[0], Runs: f6[1], WastedAttempts: f6[2]},
		{Class: "acceptance command does not parse", Stage: "acceptance_failed", Failures: f8a[0], Runs: f8a[1], WastedAttempts: f8a[2]},
	}}
	for _, r := range d.ByStage {
		d.Failures += r.Failures
		d.WastedAttempts += r.WastedAttempts
	}
	return d
}

// withoutClassification blanks the audit's words, which the tests do not
// pin.
func withoutClassification(a *reports.FactoryAudit) *reports.FactoryAudit {
	c := *a
	c.Stages = append([]reports.AuditStage(nil), a.Stages...)
	for i := range c.Stages {
		if c.Stages[i].Classification == "" {
			panic("a stage row without its classification: " + c.Stages[i].Stage)
		}
		c.Stages[i].Classification = ""
	}
	return &c
}

func compareAudit(t *testing.T, got, want *reports.FactoryAudit) {
	t.Helper()
	g := withoutClassification(got)
	if !reflect.DeepEqual(g, want) {
		gj, _ := json.MarshalIndent(g, "", "  ")
		wj, _ := json.MarshalIndent(want, "", "  ")
		t.Errorf("audit:\n got  %s\n want %s", gj, wj)
	}
}

func ts(s string) *time.Time {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		panic(err)
	}
	return &t
}

// The fixtures hold one run for each part of the audit; the numbers are
// counted by hand (testdata/factory/README.md).
func TestFactoryAuditFixtures(t *testing.T) {
	st := auditStore(t, auditFixtures)
	ctx := context.Background()
	all := &reports.FactoryAudit{
		Runs: 10, Attempts: 22, FailedAttempts: 17, RetriedRuns: 9, UndatedRuns: 4,
		Stages: append(taxonomy(map[string][2]int64{
			"precondition failure": {3, 1}, "model API error": {2, 1}, "unparseable model output": {2, 1}, "file-write failure": {1, 1}, "verification failure": {4, 3}, "acceptance command does not parse": {2, 1}, "patch_apply_failed": {2, 1},
		}), stageRow("", "(none)", reports.RetryUnknown, 1, 1)),
		RetriedDeterministic: deterministic(3, [3]int64{2, 1, 2}, [3]int64{1, 1, 1}, [3]int64{1, 1, 1}),
		RepeatedSignatures: reports.AuditRepeats{Runs: 4, RepeatedAttempts: 5, Worst: []reports.AuditRepeatRun{
			{RunID: "f1-preflight", Item: "WO-01", Stage: "preflight", Attempts: 3, RepeatedAttempts: 2},
			{RunID: "brief-only", Item: "", Stage: "llm_output_invalid", Attempts: 2, RepeatedAttempts: 1},
			{RunID: "f8a-shlex", Item: "WO-04", Stage: "acceptance_failed", Attempts: 2, RepeatedAttempts: 1},
			{RunID: "old-patch", Item: "WO-06", Stage: "patch_apply_failed", Attempts: 2, RepeatedAttempts: 1},
		}},
		Exceptions: reports.AuditExceptions{
			Transient: reports.AuditCount{Attempts: 1, Runs: 1, Retried: 1},
			Permanent: reports.AuditCount{Attempts: 1, Runs: 1, Retried: 1},
			ByClass: []reports.AuditExceptionClass{
				{Class: "rate_limit", Transient: true, Attempts: 1, Runs: 1},
				{Class: "unknown", Transient: false, Attempts: 1, Runs: 1},
			},
		},
		CommandTimeouts: reports.AuditTimeouts{Total: reports.AuditCount{Attempts: 1, Runs: 1, Retried: 1},
			ByStage: []reports.AuditTimeoutRow{{Stage: "verify_failed", Count: reports.AuditCount{Attempts: 1, Runs: 1, Retried: 1}}}},
	}
	empty := func(runs, undated int64) *reports.FactoryAudit {
		return &reports.FactoryAudit{Runs: runs, UndatedRuns: undated, Stages: taxonomy(nil),
			RetriedDeterministic: deterministic(0, [3]int64{}, [3]int64{}, [3]int64{}),
			RepeatedSignatures:   reports.AuditRepeats{Worst: []reports.AuditRepeatRun{}},
			Exceptions:           reports.AuditExceptions{ByClass: []reports.AuditExceptionClass{}},
			CommandTimeouts:      reports.AuditTimeouts{ByStage: []reports.AuditTimeoutRow{}},
		}
	}
	// f6-write and t2-timeout started in the window; the undated runs are
	// left out of it.
	window := empty(2, 4)
	window.Attempts, window.FailedAttempts, window.RetriedRuns = 5, 3, 2
	window.Stages = taxonomy(map[string][2]int64{"file-write failure": {1, 1}, "verification failure": {2, 1}})
	window.RetriedDeterministic = deterministic(1, [3]int64{}, [3]int64{1, 1, 1}, [3]int64{})
	window.CommandTimeouts = all.CommandTimeouts

	// The pipeline's WO-02 started last: attempt 1 failed where the events
	// do not say, attempt 2 at verify. Undated runs are outside Until.
	last := empty(1, 4)
	last.Attempts, last.FailedAttempts, last.RetriedRuns = 2, 2, 1
	last.Stages = append(taxonomy(map[string][2]int64{"verification failure": {1, 1}}), stageRow("", "(none)", reports.RetryUnknown, 1, 1))

	f1 := empty(1, 0)
	f1.Attempts, f1.FailedAttempts, f1.RetriedRuns = 3, 3, 1
	f1.Stages = taxonomy(map[string][2]int64{"precondition failure": {3, 1}})
	f1.RetriedDeterministic = deterministic(1, [3]int64{2, 1, 2}, [3]int64{}, [3]int64{})
	f1.RepeatedSignatures = reports.AuditRepeats{Runs: 1, RepeatedAttempts: 2, Worst: all.RepeatedSignatures.Worst[:1]}

	tests := []struct {
		name   string
		filter query.Filter
		want   *reports.FactoryAudit
	}{
		{"all", query.Filter{}, all},
		{"window", query.Filter{Since: ts("2026-03-02T00:00:00Z"), Until: ts("2026-03-04T00:00:00Z")}, window},
		// Undated runs are in no time window, nor among the last to start.
		{"last", query.Filter{Until: ts("2026-06-01T00:00:00Z"), Last: 1}, last},
		{"runs", query.Filter{Runs: []string{"f1-preflight"}}, f1},
		{"provider", query.Filter{Provider: "openai"}, empty(0, 0)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := st.FactoryAudit(ctx, tt.filter)
			if err != nil {
				t.Fatal(err)
			}
			compareAudit(t, got, tt.want)
		})
	}
}

// realAttempt is one attempt as the test reads it from the JSON itself.
type realAttempt struct {
	failed         bool
	stage, excerpt string
	exit           *float64
	timedOut       bool
}

type realRun struct {
	id, item string
	attempts []realAttempt
}

// realRuns decodes the real records independently of the parsers: one
// run per run_id among the summaries (artifacts/X and examples/artifacts/X
// are copies), one per work order that ran in a pipeline's events.
func realRuns(t *testing.T) []realRun {
	t.Helper()
	byID := map[string]realRun{}
	var pipelines []realRun
	err := filepath.WalkDir(auditRealData, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		switch d.Name() {
		case "run_summary.json":
			var m struct {
				RunID    string `json:"run_id"`
				WO       string `json:"work_order_id"`
				WOPath   string `json:"work_order_path"`
				Attempts []struct {
					Brief *struct {
						Stage   string   `json:"stage"`
						Excerpt string   `json:"primary_error_excerpt"`
						Exit    *float64 `json:"exit_code"`
					} `json:"failure_brief"`
					Verify     []map[string]any `json:"verify"`
					Acceptance []map[string]any `json:"acceptance"`
				} `json:"attempts"`
			}
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			if err := json.Unmarshal(b, &m); err != nil {
				return fmt.Errorf("%s: %w", p, err)
			}
			if _, dup := byID[m.RunID]; dup {
				return nil
			}
			r := realRun{id: m.RunID, item: m.WO}
			if r.item == "" {
				r.item = strings.TrimSuffix(filepath.Base(m.WOPath), ".json")
			}
			for _, a := range m.Attempts {
				ra := realAttempt{failed: a.Brief != nil}
				if a.Brief != nil {
					ra.stage, ra.excerpt, ra.exit = a.Brief.Stage, a.Brief.Excerpt, a.Brief.Exit
					for _, c := range append(a.Verify, a.Acceptance...) {
						if c["exit_code"] == -1.0 && strings.Contains(fmt.Sprint(c["stderr_trunc"]), "[TIMEOUT]") {
							ra.timedOut = true
						}
					}
					ra.timedOut = ra.timedOut || ra.exit != nil && *ra.exit == -1 && strings.Contains(ra.excerpt, "[TIMEOUT]")
				}
				r.attempts = append(r.attempts, ra)
			}
			byID[m.RunID] = r
		case "events.jsonl":
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			pipeline := filepath.Base(filepath.Dir(p))
			order := []string{}
			wos := map[string]*realRun{}
			for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
				var e map[string]any
				if err := json.Unmarshal([]byte(line), &e); err != nil {
					return fmt.Errorf("%s: %w", p, err)
				}
				if e["type"] != "wo_status" {
					continue
				}
				id, st := e["wo_id"].(string), e["status"].(string)
				if st == "running" {
					order = append(order, id)
					wos[id] = &realRun{id: pipeline + "/" + id, item: id}
				}
				if strings.HasPrefix(st, "attempt_") {
					// Every pipeline of the real data passes its work orders
					// at their first attempt; a failed one would need
					// the pass/fail events read too.
					wos[id].attempts = append(wos[id].attempts, realAttempt{})
				}
			}
			for _, id := range order {
				pipelines = append(pipelines, *wos[id])
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	out := pipelines
	for _, r := range byID {
		out = append(out, r)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].id < out[j].id })
	return out
}

// expectAudit applies the audit's definitions (query.FactoryAudit) to runs
// read by the test.
func expectAudit(runs []realRun) *reports.FactoryAudit {
	seedID := func(a realAttempt) string {
		ids := map[string]string{"preflight": "precondition failure", "exception": "model API error", "llm_output_invalid": "unparseable model output", "write_scope_violation": "write outside allowed files",
			"stale_context": "stale file hash", "write_failed": "file-write failure", "verify_failed": "verification failure", "acceptance_failed": "acceptance failure", "patch_apply_failed": "patch_apply_failed"}
		if a.stage == "acceptance_failed" && strings.HasPrefix(a.excerpt, "Failed to parse acceptance command") {
			return "acceptance command does not parse"
		}
		return ids[a.stage]
	}
	deterministicIDs := map[string]bool{"precondition failure": true, "file-write failure": true, "acceptance command does not parse": true}
	type set map[string]bool
	stageN, stageRuns := map[string]int64{}, map[string]set{}
	det := map[string][3]int64{}
	detAny := int64(0)
	toStage := map[string]*reports.AuditTimeoutRow{}
	toStageRuns := map[string]set{}
	detRuns := map[string]set{}
	a := &reports.FactoryAudit{}
	var transient, permanent, timeouts reports.AuditCount
	trRuns, pmRuns, toRuns := set{}, set{}, set{}
	classes := map[string]*reports.AuditExceptionClass{}
	classRuns := map[string]set{}
	for _, r := range runs {
		a.Runs++
		a.Attempts += int64(len(r.attempts))
		if len(r.attempts) > 1 {
			a.RetriedRuns++
		}
		wastedDone := false
		repeats := int64(0)
		firstRepeatStage := ""
		for i, at := range r.attempts {
			if !at.failed {
				continue
			}
			a.FailedAttempts++
			followed := i < len(r.attempts)-1
			id := seedID(at)
			stageN[id]++
			if stageRuns[id] == nil {
				stageRuns[id] = set{}
			}
			stageRuns[id][r.id] = true
			if deterministicIDs[id] && followed {
				d := det[id]
				d[0]++
				if !wastedDone {
					d[2] += int64(len(r.attempts) - 1 - i)
					wastedDone = true
				}
				det[id] = d
				if detRuns[id] == nil {
					detRuns[id] = set{}
				}
				detRuns[id][r.id] = true
			}
			if prev := r.attempts[max(i-1, 0)]; i > 0 && prev.failed &&
				failure.Signature(prev.stage, prev.excerpt) == failure.Signature(at.stage, at.excerpt) {
				if repeats == 0 {
					firstRepeatStage = at.stage
				}
				repeats++
			}
			if at.stage == "exception" {
				c, runsOf, kind := &permanent, pmRuns, "permanent"
				if failure.ExceptionTransient(at.excerpt) {
					c, runsOf, kind = &transient, trRuns, "transient"
				}
				c.Attempts++
				runsOf[r.id] = true
				if followed {
					c.Retried++
				}
				cls := string(failure.DefaultProvider.Classify(at.excerpt))
				k := cls + "/" + kind
				if classes[k] == nil {
					classes[k] = &reports.AuditExceptionClass{Class: cls, Transient: kind == "transient"}
					classRuns[k] = set{}
				}
				classes[k].Attempts++
				classRuns[k][r.id] = true
			}
			if at.timedOut && (at.stage == "verify_failed" || at.stage == "acceptance_failed") {
				if toStage[at.stage] == nil {
					toStage[at.stage] = &reports.AuditTimeoutRow{Stage: at.stage}
					toStageRuns[at.stage] = set{}
				}
				for _, c := range []*reports.AuditCount{&timeouts, &toStage[at.stage].Count} {
					c.Attempts++
					if followed {
						c.Retried++
					}
				}
				toRuns[r.id] = true
				toStageRuns[at.stage][r.id] = true
			}
		}
		if repeats > 0 {
			a.RepeatedSignatures.Runs++
			a.RepeatedSignatures.RepeatedAttempts += repeats
			a.RepeatedSignatures.Worst = append(a.RepeatedSignatures.Worst, reports.AuditRepeatRun{
				RunID: r.id, Item: r.item, Stage: firstRepeatStage, Attempts: int64(len(r.attempts)), RepeatedAttempts: repeats})
		}
		if wastedDone {
			detAny++
		}
	}
	counts := map[string][2]int64{}
	for id, n := range stageN {
		counts[id] = [2]int64{n, int64(len(stageRuns[id]))}
	}
	a.Stages = taxonomy(counts)
	a.RetriedDeterministic = deterministic(detAny,
		[3]int64{det["precondition failure"][0], int64(len(detRuns["precondition failure"])), det["precondition failure"][2]},
		[3]int64{det["file-write failure"][0], int64(len(detRuns["file-write failure"])), det["file-write failure"][2]},
		[3]int64{det["acceptance command does not parse"][0], int64(len(detRuns["acceptance command does not parse"])), det["acceptance command does not parse"][2]})
	sort.SliceStable(a.RepeatedSignatures.Worst, func(i, j int) bool {
		x, y := a.RepeatedSignatures.Worst[i], a.RepeatedSignatures.Worst[j]
		return x.RepeatedAttempts > y.RepeatedAttempts || x.RepeatedAttempts == y.RepeatedAttempts && x.RunID < y.RunID
	})
	if len(a.RepeatedSignatures.Worst) > 20 {
		a.RepeatedSignatures.Worst = a.RepeatedSignatures.Worst[:20]
	}
	if a.RepeatedSignatures.Worst == nil {
		a.RepeatedSignatures.Worst = []reports.AuditRepeatRun{}
	}
	transient.Runs, permanent.Runs, timeouts.Runs = int64(len(trRuns)), int64(len(pmRuns)), int64(len(toRuns))
	a.Exceptions = reports.AuditExceptions{Transient: transient, Permanent: permanent, ByClass: []reports.AuditExceptionClass{}}
	for k, c := range classes {
		c.Runs = int64(len(classRuns[k]))
		a.Exceptions.ByClass = append(a.Exceptions.ByClass, *c)
	}
	sort.Slice(a.Exceptions.ByClass, func(i, j int) bool {
		x, y := a.Exceptions.ByClass[i], a.Exceptions.ByClass[j]
		if x.Attempts != y.Attempts {
			return x.Attempts > y.Attempts
		}
		if x.Class != y.Class {
			return x.Class < y.Class
		}
		return x.Transient && !y.Transient
	})
	a.CommandTimeouts = reports.AuditTimeouts{Total: timeouts, ByStage: []reports.AuditTimeoutRow{}}
	for _, stage := range []string{"acceptance_failed", "verify_failed"} {
		if r := toStage[stage]; r != nil {
			r.Count.Runs = int64(len(toStageRuns[stage]))
			a.CommandTimeouts.ByStage = append(a.CommandTimeouts.ByStage, *r)
		}
	}
	return a
}

// The audit of the factory's real records matches the same definitions
// applied to the JSON files by this test.
func TestFactoryAuditRealData(t *testing.T) {
	if _, err := os.Stat(auditRealData); err != nil {
		t.Skipf("real factory records not present: %v", err)
	}
	runs := realRuns(t)
	want := expectAudit(runs)
	st := auditStore(t, auditRealData)
	got, err := st.FactoryAudit(context.Background(), query.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	// The write factory's summaries record no time; the patch factory's
	// and the pipelines' events do.
	want.UndatedRuns = got.UndatedRuns
	compareAudit(t, got, want)
	undated := int64(0)
	for _, r := range runs {
		if !strings.Contains(r.id, "/") {
			undated++
		}
	}
	if got.UndatedRuns > undated {
		t.Errorf("%d undated runs, but only %d runs come from summaries", got.UndatedRuns, undated)
	}
	j, _ := json.MarshalIndent(got, "", "  ")
	t.Logf("factory audit of the real records:\n%s", j)
}

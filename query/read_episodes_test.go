package query_test

// External test package: ingest, which builds the stores these tests read,
// imports query.

import (
	"bufio"
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/orchstat/orchstat/ingest"
	"github.com/orchstat/orchstat/model/episode"
	"github.com/orchstat/orchstat/model/failure"
	"github.com/orchstat/orchstat/query"
)

// The expectations below come from the trace, summary and report files,
// read here in plain Go, or were worked out by hand from them (see
// testdata/README.md): never from the store's SQL.

const epRuns = "../testdata/runs"

// Runs named as in testdata/README.md.
const (
	runA   = "1762164347120"
	runB   = "1762169462777"
	runP   = "1762174939004"
	runQ   = "1762188510245"
	runC   = "1762246513640"
	runD   = "1762251704018"
	runE   = "1762258209873"
	runK   = "1762266988450"
	runV   = "1762281847315"
	runBad = "1762300000000" // in directory 1762300000000-bad
	runF   = "1762333402481"
	runG   = "1762339635066"
	runL   = "1762345798734"
	runM   = "1762352080129"
	runH   = "1762363236912"
	runS   = "1762369549358"
)

func epDir(run string) string {
	if run == runBad {
		return run + "-bad"
	}
	return run
}

func openIngested(t testing.TB, dir string) *query.Store {
	t.Helper()
	ctx := context.Background()
	st, err := query.Open(ctx, filepath.Join(t.TempDir(), "e.duckdb"), query.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	if _, err := ingest.Run(ctx, st, ingest.Options{Paths: []string{dir}}); err != nil {
		t.Fatal(err)
	}
	return st
}

// classifyRecorder is a classify func whose class names the text it was
// given, so a test can tell it was applied to the final error.
type classifyRecorder struct {
	mu    sync.Mutex
	calls []string
}

func (c *classifyRecorder) classify(s string) failure.Class {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.calls = append(c.calls, s)
	return failure.Class("c:" + s)
}

// plainQuerier hides everything but QueryContext.
type plainQuerier struct{ q query.Querier }

func (p plainQuerier) QueryContext(ctx context.Context, q string, args ...any) (*sql.Rows, error) {
	return p.q.QueryContext(ctx, q, args...)
}

type traceLine struct {
	line    int
	Type    string          `json:"type"`
	TS      time.Time       `json:"timestamp"`
	RunID   string          `json:"runId"`
	Payload json.RawMessage `json:"payload"`
}

// readTrace returns a run's well-formed lines with their 1-based physical
// line numbers (the bad run's damaged lines are skipped).
func readTrace(t *testing.T, run string) []traceLine {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(epRuns, epDir(run), "trace.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	var out []traceLine
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(nil, 1<<20)
	for n := 1; sc.Scan(); n++ {
		var l traceLine
		if json.Unmarshal(bytes.TrimPrefix(sc.Bytes(), []byte("\xef\xbb\xbf")), &l) != nil || l.RunID != run {
			continue
		}
		l.line = n
		out = append(out, l)
	}
	return out
}

func fileID(t *testing.T, st *query.Store, run string) int {
	t.Helper()
	var id int
	err := query.ConnOf(st).QueryRowContext(context.Background(),
		`SELECT file_id FROM files WHERE path LIKE ?`, "%/"+epDir(run)+"/trace.jsonl").Scan(&id)
	if err != nil {
		t.Fatal(err)
	}
	return id
}

func ms(s string) time.Time {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		panic(err)
	}
	return t
}

// wantProvider builds a run's provider episodes from its trace and
// summary.json, following EVENTS.md and the cost rule Episodes documents.
func wantProvider(t *testing.T, st *query.Store, run string) []episode.Episode {
	t.Helper()
	fid := fileID(t, st, run)
	type start struct{ provider, model string }
	var starts []start
	var out []episode.Episode
	attempts := map[string]int{}
	total := 0
	for _, l := range readTrace(t, run) {
		var p struct {
			Provider   string   `json:"provider"`
			Model      string   `json:"model"`
			DurationMs float64  `json:"durationMs"`
			Success    bool     `json:"success"`
			Error      *string  `json:"error"`
			Retries    *float64 `json:"retries"`
		}
		json.Unmarshal(l.Payload, &p)
		switch l.Type {
		case "ProviderRequestStarted":
			starts = append(starts, start{p.Provider, p.Model})
		case "ProviderRequestFinished":
			e := episode.Episode{
				Kind: episode.KindProvider, ID: fmt.Sprintf("%s/%d:%d", run, fid, l.line), Run: run, Time: l.TS,
				Provider: p.Provider, Duration: time.Duration(p.DurationMs * float64(time.Millisecond)), Success: p.Success,
			}
			for i := len(starts) - 1; i >= 0; i-- {
				if starts[i].provider == p.Provider {
					e.Model = starts[i].model
					break
				}
			}
			n := 1
			if p.Retries != nil {
				n += int(*p.Retries)
			}
			e.Attempts = make([]episode.Attempt, n)
			e.Attempts[n-1].OK = p.Success
			if !p.Success && p.Error != nil {
				e.Attempts[n-1].Class = failure.Class("c:" + *p.Error)
			}
			attempts[p.Provider] += n
			total += n
			out = append(out, e)
		}
	}
	var sum struct {
		Costs *struct {
			PerProvider map[string]struct {
				Cost *float64 `json:"estimatedCostUsd"`
			} `json:"perProvider"`
			Totals struct {
				Cost *float64 `json:"estimatedCostUsd"`
			} `json:"totals"`
		} `json:"costs"`
	}
	if b, err := os.ReadFile(filepath.Join(epRuns, epDir(run), "summary.json")); err == nil && json.Unmarshal(b, &sum) == nil && sum.Costs != nil {
		for i := range out {
			e := &out[i]
			n := float64(len(e.Attempts))
			if len(sum.Costs.PerProvider) > 0 {
				if c := sum.Costs.PerProvider[e.Provider].Cost; c != nil {
					e.CostUSD = *c * n / float64(attempts[e.Provider])
				}
			} else if c := sum.Costs.Totals.Cost; c != nil {
				e.CostUSD = *c * n / float64(total)
			}
		}
	}
	return out
}

func ofRun(eps []episode.Episode, kind episode.Kind, run string) []episode.Episode {
	var out []episode.Episode
	for _, e := range eps {
		if e.Kind == kind && e.Run == run {
			out = append(out, e)
		}
	}
	return out
}

// sameEpisodes compares exactly, but for costs, which are compared to 1e-12.
func sameEpisodes(t *testing.T, name string, got, want []episode.Episode) {
	t.Helper()
	if len(got) != len(want) {
		t.Errorf("%s: %d episodes, want %d:\n got %+v\nwant %+v", name, len(got), len(want), got, want)
		return
	}
	for i := range got {
		g, w := got[i], want[i]
		if math.Abs(g.CostUSD-w.CostUSD) > 1e-12 {
			t.Errorf("%s %s: cost %v, want %v", name, w.ID, g.CostUSD, w.CostUSD)
		}
		g.CostUSD, w.CostUSD = 0, 0
		if !reflect.DeepEqual(g, w) {
			t.Errorf("%s episode %d:\n got %+v\nwant %+v", name, i, g, w)
		}
	}
}

// sig reads the failure signature of a run's L2 report for iteration n,
// or of its initial report for n = 0.
func sig(t *testing.T, run string, n int) string {
	t.Helper()
	name := fmt.Sprintf("verification_report_iter_%d.json", n)
	if n == 0 {
		name = "verification_report_initial.json"
	}
	b, err := os.ReadFile(filepath.Join(epRuns, epDir(run), name))
	if err != nil {
		t.Fatal(err)
	}
	var v struct {
		Sig string `json:"failureSignature"`
	}
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatal(err)
	}
	if v.Sig == "" {
		t.Fatalf("%s iteration %d has no signature", run, n)
	}
	return v.Sig
}

// applyError reads the error of the PatchApplyFailed at a trace line.
func applyError(t *testing.T, run string, line int) string {
	t.Helper()
	for _, l := range readTrace(t, run) {
		if l.line == line && l.Type == "PatchApplyFailed" {
			var p struct{ Error string }
			json.Unmarshal(l.Payload, &p)
			return p.Error
		}
	}
	t.Fatalf("%s line %d is not a PatchApplyFailed", run, line)
	return ""
}

func TestEpisodes(t *testing.T) {
	ctx := context.Background()
	st := openIngested(t, epRuns)
	cl := &classifyRecorder{}
	all, err := st.Episodes(ctx, query.Filter{}, cl.classify)
	if err != nil {
		t.Fatal(err)
	}

	t.Run("counts and order", func(t *testing.T) {
		n := map[episode.Kind]int{}
		ids := map[string]bool{}
		for _, e := range all {
			n[e.Kind]++
			k := string(e.Kind) + " " + e.ID
			if ids[k] {
				t.Errorf("duplicate %s", k)
			}
			ids[k] = true
		}
		// README: 152 PRF; 8 l2_runs plus the bad run, whose
		// IterationStarted lines are quarantined but whose other L2
		// events remain; 13 L3 steps.
		want := map[episode.Kind]int{episode.KindProvider: 152, episode.KindL2: 9, episode.KindL3: 13}
		if !reflect.DeepEqual(n, want) {
			t.Errorf("episodes by kind %v, want %v", n, want)
		}
		if !slices.IsSortedFunc(all, func(a, b episode.Episode) int {
			if c := a.Time.Compare(b.Time); c != 0 {
				return c
			}
			return strings.Compare(a.ID, b.ID)
		}) {
			t.Error("episodes are not in (Time, ID) order")
		}
		// Retries and failures agree with the README's totals.
		retries, failed := 0, 0
		for _, e := range all {
			if e.Kind == episode.KindProvider {
				retries += e.Retries()
				if !e.Success {
					failed++
				}
			}
		}
		if retries != 60 || failed != 4 {
			t.Errorf("provider retries %d, failures %d; want 60, 4", retries, failed)
		}
	})

	t.Run("arrow and database/sql read alike", func(t *testing.T) {
		// The store's connection exposes its driver, so Episodes reads provider rows
		// through Arrow; hiding it makes Episodes use database/sql.
		viaSQL, err := query.EpisodesOn(ctx, plainQuerier{query.ConnOf(st)}, query.Filter{}, (&classifyRecorder{}).classify)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(viaSQL, all) {
			t.Error("database/sql and Arrow paths disagree")
		}
	})

	t.Run("provider", func(t *testing.T) {
		// P: a 401; L: a 503 after 3 retries; S: two interleaved
		// failures; A and V: per-provider costs, V's ollama cost null;
		// K: interleaved requests; Q: an old summary without costs.
		for _, run := range []string{runP, runL, runS, runA, runV, runK, runQ} {
			sameEpisodes(t, run, ofRun(all, episode.KindProvider, run), wantProvider(t, st, run))
		}
		// Spot checks of the expectation builder itself.
		s := ofRun(all, episode.KindProvider, runS)
		if len(s) != 8 || s[0].Provider != "gemini" || s[0].Success || s[0].Retries() != 0 ||
			s[1].Model != "gpt-5" || s[1].Retries() != 1 || s[1].Attempts[0] != (episode.Attempt{}) {
			t.Errorf("run S: %+v", s)
		}
		a := ofRun(all, episode.KindProvider, runA)
		var openai float64
		for _, e := range a {
			if e.Provider == "openai" {
				openai += e.CostUSD
			}
		}
		if math.Abs(openai-0.071) > 1e-12 {
			t.Errorf("run A's openai episodes cost %v in all, want its summary's 0.071", openai)
		}
	})

	t.Run("classify applies to the final error only", func(t *testing.T) {
		want := map[string]bool{}
		for _, run := range []string{runP, runL, runS} {
			for _, l := range readTrace(t, run) {
				var p struct {
					Success bool
					Error   string
				}
				if l.Type == "ProviderRequestFinished" && json.Unmarshal(l.Payload, &p) == nil && !p.Success {
					want[p.Error] = true
				}
			}
		}
		if len(want) != 4 {
			t.Fatalf("expected 4 failure texts, found %v", want)
		}
		got := map[string]bool{}
		for _, c := range cl.calls {
			if got[c] {
				t.Errorf("classify called twice with %q", c)
			}
			got[c] = true
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("classify called with %v, want %v", got, want)
		}
		for _, e := range all {
			if e.Kind != episode.KindProvider {
				continue
			}
			for i, a := range e.Attempts[:len(e.Attempts)-1] {
				if a.OK || a.Class != "" {
					t.Errorf("%s attempt %d: %+v, want a failure of unknown class", e.ID, i, a)
				}
			}
			if c := e.FinalClass(); e.Success != (c == "") || !e.Success && !want[strings.TrimPrefix(string(c), "c:")] {
				t.Errorf("%s: success %v, final class %q", e.ID, e.Success, c)
			}
		}
		none, err := st.Episodes(ctx, query.Filter{Runs: []string{runS}}, nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range none {
			if e.FinalClass() != "" {
				t.Errorf("nil classify: %s has class %q", e.ID, e.FinalClass())
			}
		}
	})

	t.Run("l2", func(t *testing.T) {
		verify := func(sig string) episode.Attempt {
			return episode.Attempt{Class: failure.ClassVerifyFailed, Signature: sig}
		}
		applyFailed := func(sig string) episode.Attempt {
			return episode.Attempt{Class: failure.ClassPatchApplyFailed, Signature: sig, PatchApplyFailed: true}
		}
		noDiff := episode.Attempt{Class: failure.ClassLLMOutputInvalid}
		pass := episode.Attempt{OK: true}
		cut := episode.Attempt{} // begun, with no outcome recorded
		l2 := func(run, start, end string, attempts ...episode.Attempt) episode.Episode {
			return episode.Episode{Kind: episode.KindL2, ID: run + "/l2", Run: run, Time: ms(start),
				Duration: ms(end).Sub(ms(start)), Attempts: attempts, Success: attempts[len(attempts)-1].OK,
				InitialSignature: sig(t, run, 0)}
		}
		with := func(e episode.Episode, f func(*episode.Episode)) episode.Episode { f(&e); return e }
		// The escalation's reason is read too: without reports it is what
		// says whether a loop escalated on repeats or on patches.
		escalated := func(reason string) func(*episode.Episode) {
			return func(e *episode.Episode) { e.Escalated, e.EscalationReason = true, reason }
		}
		want := []episode.Episode{
			// A: S1, S2, pass.
			l2(runA, "2025-11-03T10:06:22.211Z", "2025-11-03T10:07:59.756Z",
				verify(sig(t, runA, 1)), verify(sig(t, runA, 2)), pass),
			// B: three identical signatures, then IterationStarted(4)
			// and the non_improving stop.
			with(l2(runB, "2025-11-03T11:31:37.848Z", "2025-11-03T11:33:13.751Z",
				verify(sig(t, runB, 1)), verify(sig(t, runB, 2)), verify(sig(t, runB, 3)), cut),
				func(e *episode.Episode) { e.Halted, e.StopReason = true, "non_improving" }),
			// C: iterations 3 and 4 fail to apply; escalation to L3.
			with(l2(runC, "2025-11-04T08:55:50.195Z", "2025-11-04T08:57:52.705Z",
				verify(sig(t, runC, 1)), verify(sig(t, runC, 2)), applyFailed(sig(t, runC, 3)), applyFailed(sig(t, runC, 4))),
				escalated("patch_apply_failure")),
			// E: no-diff and empty-diff iterations, no reports for them;
			// L2 runs out of iterations (budget_exceeded).
			with(l2(runE, "2025-11-04T12:10:44.944Z", "2025-11-04T12:12:48.759Z",
				verify(sig(t, runE, 1)), noDiff, verify(sig(t, runE, 3)), noDiff, verify(sig(t, runE, 5))),
				func(e *episode.Episode) { e.Halted, e.StopReason = true, "budget_exceeded" }),
			// The bad run: both IterationStarted lines quarantined; the
			// loop starts at RepairAttempted(1).
			with(l2(runBad, "2025-11-04T23:47:33.270Z", "2025-11-04T23:48:28.737Z",
				applyFailed(sig(t, runBad, 1)), applyFailed(sig(t, runBad, 2))), escalated("patch_apply_failure")),
			// F: its L1→L2 escalation is not an L2 one.
			l2(runF, "2025-11-05T09:03:57.555Z", "2025-11-05T09:06:39.389Z",
				verify(sig(t, runF, 1)), verify(sig(t, runF, 2)), applyFailed(sig(t, runF, 3)), verify(sig(t, runF, 4)), pass),
			// G: escalates after one iteration; its RunStopped is L3's.
			with(l2(runG, "2025-11-05T10:47:50.137Z", "2025-11-05T10:48:21.764Z", verify(sig(t, runG, 1))), escalated("non_improving")),
			// H: unfinished while verifying iteration 4.
			// The loop's last L2 event is RepairAttempted(4).
			l2(runH, "2025-11-05T17:21:13.467Z", "2025-11-05T17:23:05.865Z",
				verify(sig(t, runH, 1)), verify(sig(t, runH, 2)), verify(sig(t, runH, 3)), cut),
		}
		for _, w := range want {
			sameEpisodes(t, w.Run, ofRun(all, episode.KindL2, w.Run), []episode.Episode{w})
		}
		if got := ofRun(all, episode.KindL2, runD); len(got) != 1 || !got[0].Escalated || got[0].Retries() != 2 ||
			!got[0].Attempts[1].PatchApplyFailed || !got[0].Attempts[2].PatchApplyFailed || got[0].Attempts[0].PatchApplyFailed {
			t.Errorf("run D: %+v", got)
		}
	})

	t.Run("l3", func(t *testing.T) {
		c := func(valid bool) episode.Attempt {
			if valid {
				return episode.Attempt{Valid: true}
			}
			return episode.Attempt{Class: failure.ClassLLMOutputInvalid}
		}
		ok := func(a episode.Attempt) episode.Attempt { a.OK, a.Class = true, ""; return a }
		failedApply := func(a episode.Attempt, run string, line int) episode.Attempt {
			a.PatchApplyFailed, a.Class, a.Signature = true, failure.ClassPatchApplyFailed, applyError(t, run, line)
			return a
		}
		l3 := func(run, step, provider, start, end string, success bool, attempts ...episode.Attempt) episode.Episode {
			return episode.Episode{Kind: episode.KindL3, ID: run + "/l3/" + step, Run: run, Provider: provider,
				Time: ms(start), Duration: ms(end).Sub(ms(start)), Attempts: attempts, Success: success}
		}
		diagnosed := func(n int, e episode.Episode) episode.Episode { e.StopReason, e.Diagnoses = "diagnosed", n; return e }
		T, F := true, false
		want := map[string][]episode.Episode{
			// D: two rounds whose patch fails to apply (lines 62, 72),
			// a diagnosis, and a third round that applies.
			runD: {diagnosed(1, l3(runD, "0", "anthropic", "2025-11-04T10:24:02.792Z", "2025-11-04T10:27:33.987Z", true,
				c(T), failedApply(c(T), runD, 62), c(F),
				failedApply(c(T), runD, 72), c(F), c(F),
				c(T), c(T), ok(c(T))))},
			// K: step 0 succeeds through the judge; step 1 fails to
			// apply four times, is diagnosed twice, and fails.
			runK: {
				l3(runK, "0", "openai", "2025-11-04T14:36:43.398Z", "2025-11-04T14:38:12.023Z", true, c(T), c(T), ok(c(F))),
				diagnosed(2, l3(runK, "1", "openai", "2025-11-04T14:38:12.028Z", "2025-11-04T14:42:47.162Z", false,
					c(T), c(F), failedApply(c(T), runK, 49),
					c(T), c(T), failedApply(c(T), runK, 59),
					c(F), c(T), failedApply(c(T), runK, 73),
					c(T), failedApply(c(T), runK, 83), c(F))),
			},
			// G: three invalid candidates, then the run stops: no
			// StepFinished, so no success.
			runG: {l3(runG, "0", "gemini", "2025-11-05T10:48:27.878Z", "2025-11-05T10:49:10.656Z", false, c(F), c(F), c(F))},
			// M: one candidate, a budget stop inside the step, yet the
			// step finishes successfully.
			runM: {l3(runM, "0", "openai", "2025-11-05T14:14:50.200Z", "2025-11-05T14:15:32.676Z", true, ok(c(T)))},
			// The bad run: its DiagnosisStarted line is quarantined.
			runBad: {l3(runBad, "0", "anthropic", "2025-11-04T23:48:34.851Z", "2025-11-04T23:49:53.198Z", true, c(T), c(F), ok(c(T)))},
		}
		for run, w := range want {
			sameEpisodes(t, run, ofRun(all, episode.KindL3, run), w)
		}
	})

	t.Run("filter", func(t *testing.T) {
		count := func(f query.Filter) map[string]int {
			t.Helper()
			eps, err := st.Episodes(ctx, f, cl.classify)
			if err != nil {
				t.Fatal(err)
			}
			n := map[string]int{}
			for _, e := range eps {
				n[e.Run]++
			}
			return n
		}
		perRun := count(query.Filter{})
		// Runs: all of each named run's episodes, and only theirs.
		if got := count(query.Filter{Runs: []string{runK, runB}}); !reflect.DeepEqual(got, map[string]int{runK: perRun[runK], runB: perRun[runB]}) {
			t.Errorf("runs filter: %v", got)
		}
		if perRun[runK] != 22+2 || perRun[runB] != 5+1 {
			t.Errorf("K has %d episodes, B %d; want 24 and 6", perRun[runK], perRun[runB])
		}
		// Since/Until select runs by their first event: 11-05 has 7 runs,
		// 11-03 6.
		day := func(d string) *time.Time { v := ms(d + "T00:00:00Z"); return &v }
		wantDay := func(prefix string) map[string]int {
			out := map[string]int{}
			for run, n := range perRun {
				first := readTrace(t, run)[0].TS
				if strings.HasPrefix(first.Format(time.RFC3339), prefix) {
					out[run] = n
				}
			}
			return out
		}
		if got, w := count(query.Filter{Since: day("2025-11-05")}), wantDay("2025-11-05"); !reflect.DeepEqual(got, w) || len(w) != 7 {
			t.Errorf("since 11-05: %v, want %v (7 runs)", got, w)
		}
		if got, w := count(query.Filter{Until: day("2025-11-04")}), wantDay("2025-11-03"); !reflect.DeepEqual(got, w) || len(w) != 6 {
			t.Errorf("until 11-04: %v, want %v (6 runs)", got, w)
		}
		// Provider selects runs that requested or selected it, with
		// all their episodes: ollama is Q's planner and V's executor.
		var ollama []string
		for run := range perRun {
			for _, l := range readTrace(t, run) {
				if (l.Type == "ProviderSelected" || strings.HasPrefix(l.Type, "ProviderRequest")) && bytes.Contains(l.Payload, []byte(`"ollama"`)) {
					ollama = append(ollama, run)
					break
				}
			}
		}
		slices.Sort(ollama)
		if !reflect.DeepEqual(ollama, []string{runQ, runV}) {
			t.Fatalf("ollama runs %v", ollama)
		}
		if got := count(query.Filter{Provider: "ollama"}); !reflect.DeepEqual(got, map[string]int{runQ: 1, runV: 5}) {
			t.Errorf("provider filter: %v", got)
		}
		if got := count(query.Filter{Runs: []string{"no such run"}}); len(got) != 0 {
			t.Errorf("unknown run: %v", got)
		}
	})
}

// TestEpisodesRunTotalCost checks the cost fallback the hand-made traces
// do not exercise: a summary with no per-provider costs spreads its total
// over all the run's attempts, and one whose per-provider costs leave a
// provider out gives that provider's requests no cost.
func TestEpisodesRunTotalCost(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	write := func(dir, summary string) {
		if err := os.MkdirAll(filepath.Join(root, dir), 0o755); err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(filepath.Join(epRuns, runA, "trace.jsonl"))
		if err != nil {
			t.Fatal(err)
		}
		b = bytes.ReplaceAll(b, []byte(runA), []byte(dir))
		for name, data := range map[string][]byte{"trace.jsonl": b, "summary.json": []byte(summary)} {
			if err := os.WriteFile(filepath.Join(root, dir, name), data, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	write("1000", `{"runId":"1000","costs":{"perProvider":{},"totals":{"estimatedCostUsd":0.7}}}`)
	write("2000", `{"runId":"2000","costs":{"perProvider":{"openai":{"estimatedCostUsd":0.07}},"totals":{"estimatedCostUsd":0.5}}}`)
	st := openIngested(t, root)
	eps, err := st.Episodes(ctx, query.Filter{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	// Run A's requests: gemini 1 attempt; openai 7 attempts over 5.
	var total, openai, gemini float64
	var n1, n2 int
	for _, e := range eps {
		switch {
		case e.Kind != episode.KindProvider:
		case e.Run == "1000":
			n1 += len(e.Attempts)
			total += e.CostUSD
			if want := 0.7 * float64(len(e.Attempts)) / 8; math.Abs(e.CostUSD-want) > 1e-12 {
				t.Errorf("%s: cost %v, want %v", e.ID, e.CostUSD, want)
			}
		case e.Run == "2000" && e.Provider == "openai":
			n2 += len(e.Attempts)
			openai += e.CostUSD
		case e.Run == "2000":
			gemini += e.CostUSD
		}
	}
	if n1 != 8 || n2 != 7 || math.Abs(total-0.7) > 1e-12 || math.Abs(openai-0.07) > 1e-12 || gemini != 0 {
		t.Errorf("attempts %d, %d; costs %v, %v, %v", n1, n2, total, openai, gemini)
	}
}

// BenchmarkEpisodes reads a million provider-request episodes (20k runs,
// each with a summary) from a store filled directly with SQL.
//
//	go test ./query -run '^$' -bench Episodes -benchtime 3x
func BenchmarkEpisodes(b *testing.B) {
	ctx := context.Background()
	st, err := query.Open(ctx, filepath.Join(b.TempDir(), "b.duckdb"), query.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	const rows, runs = 1_000_000, 20_000
	for _, s := range []string{
		fmt.Sprintf(`INSERT INTO run_spans SELECT 1, 'r' || i, TIMESTAMP '2026-01-01' + INTERVAL (i) SECOND,
			TIMESTAMP '2026-01-01' + INTERVAL (i + 600) SECOND, 100 FROM range(%d) t(i)`, runs),
		fmt.Sprintf(`INSERT INTO provider_request_finishes SELECT 1, i, 'r' || (i %% %[2]d),
			TIMESTAMP '2026-01-01' + INTERVAL (i %% %[2]d) SECOND + INTERVAL (i // %[2]d) MILLISECOND,
			['anthropic', 'openai', 'gemini'][i %% 3 + 1], ['m1', 'm2', 'm3', 'm4'][i %% 4 + 1],
			1000 + i %% 7000, i %% 50 <> 0, (i %% 7) // 3,
			CASE WHEN i %% 50 = 0 THEN ['429 Too Many Requests', '503 Service Unavailable', 'ECONNRESET'][i %% 3 + 1] END
			FROM range(%[1]d) t(i)`, rows, runs),
		fmt.Sprintf(`INSERT INTO summaries (file_id, run_id, cost_usd) SELECT 2, 'r' || i, 0.25 FROM range(%d) t(i)`, runs),
		fmt.Sprintf(`INSERT INTO summary_costs (file_id, run_id, provider, cost_usd) SELECT 2, 'r' || i, 'openai', 0.1 FROM range(%d) t(i)`, runs),
	} {
		if _, err := query.ConnOf(st).ExecContext(ctx, s); err != nil {
			b.Fatal(err)
		}
	}
	classify := func(s string) failure.Class { return failure.Class(s[:3]) }
	for _, path := range []struct {
		name string
		q    query.Querier
	}{{"arrow", query.ConnOf(st)}, {"sql", plainQuerier{query.ConnOf(st)}}} {
		b.Run("rows=1M/path="+path.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				eps, err := query.EpisodesOn(ctx, path.q, query.Filter{}, classify)
				if err != nil {
					b.Fatal(err)
				}
				if len(eps) != rows {
					b.Fatalf("%d episodes", len(eps))
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/rows, "ns/episode")
		})
	}
}

// TestEpisodesAgreeWithMetrics checks episodes against the report's
// metrics, which other SQL computes, on generated data (the oracle tests'
// datasets) and, when present, the real external traces.
func TestEpisodesAgreeWithMetrics(t *testing.T) {
	ctx := context.Background()
	for _, ds := range datasets(t) {
		if ds.name == "testdata" {
			continue // TestEpisodes has it
		}
		t.Run(ds.name, func(t *testing.T) {
			st := openDataset(t, ds)
			m, err := st.Metrics(ctx, query.Filter{})
			if err != nil {
				t.Fatal(err)
			}
			eps, err := st.Episodes(ctx, query.Filter{}, func(string) failure.Class { return failure.ClassUnknown })
			if err != nil {
				t.Fatal(err)
			}
			viaSQL, err := query.EpisodesOn(ctx, plainQuerier{query.ConnOf(st)}, query.Filter{}, func(string) failure.Class { return failure.ClassUnknown })
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(viaSQL, eps) {
				t.Error("database/sql and Arrow paths disagree")
			}
			var prov, retried, failed, retries, l2, escalated, l3, diagnosed, candidates, valid float64
			for _, e := range eps {
				if len(e.Attempts) == 0 {
					t.Errorf("%s %s has no attempts", e.Kind, e.ID)
				}
				switch e.Kind {
				case episode.KindProvider:
					prov++
					retries += float64(e.Retries())
					if e.Retries() > 0 {
						retried++
					}
					if !e.Success {
						failed++
						if e.FinalClass() != failure.ClassUnknown {
							t.Errorf("%s: final class %q", e.ID, e.FinalClass())
						}
					}
				case episode.KindL2:
					l2++
					if e.Escalated {
						escalated++
					}
				case episode.KindL3:
					l3++
					if e.StopReason == "diagnosed" {
						diagnosed++
					}
					for _, a := range e.Attempts {
						candidates++
						if a.Valid {
							valid++
						}
					}
				}
			}
			num := func(name string) float64 {
				if v := m[name].Numerator; v != nil {
					return *v
				}
				return *m[name].Value
			}
			den := func(name string) float64 { return *m[name].Denominator }
			for _, c := range []struct {
				name      string
				got, want float64
			}{
				{"provider requests", prov, num("provider_requests")},
				{"retried requests", retried, num("provider_retry_rate")},
				{"failed requests", failed, num("provider_failure_rate")},
				{"retries", retries, num("provider_retries_total")},
				{"escalated L2 loops", escalated, num("l2_escalation_rate")},
				// L2 loops are the runs with L2 events; in these sets
				// that is l2_runs and the runs escalated from L2.
				{"L2 loops", l2, den("l2_escalation_rate")},
				{"L3 steps", l3, num("l3_steps")},
				{"diagnosed steps", diagnosed, num("l3_diagnosis_rate")},
				{"candidates", candidates, den("candidate_validity_rate")},
				{"valid candidates", valid, num("candidate_validity_rate")},
			} {
				if ds.name == "exotic" && (c.name == "failed requests" || c.name == "retries") {
					// Its retries of 1e999 and 1.7e308 are clamped, and
					// a success that is not a boolean is no success.
					continue
				}
				if c.got != c.want {
					t.Errorf("%s: episodes give %v, metrics %v", c.name, c.got, c.want)
				}
			}
		})
	}
}

package ruletest

import (
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/orchstat/orchstat/rules/alerting"
	"github.com/orchstat/orchstat/rules/check"
)

// Options are the test files to run and what running them takes.
type Options struct {
	Files []string
	// Workers bounds how many tests run at once, each on a store of its
	// own (at most GOMAXPROCS).
	Workers int
	// OpenStore opens a worker's store, a new file at path.
	OpenStore func(ctx context.Context, path string) (Store, error)
	// AppendTrace writes inline events' trace lines.
	AppendTrace TraceFunc
}

// TraceFunc appends a trace line, an event of run runID of type typ at at
// with payload (nil written as {}), to dst: the trace envelope's writer
// (ingest/trace's AppendLine), which rule tests take from the command so
// they link no reader of traces.
type TraceFunc func(dst []byte, runID, typ string, at time.Time, payload any) ([]byte, error)

// Store is a worker's store of the tests' input, emptied before each test:
// the runs are ingested into it as a check's ingest would, and the rules
// read it as a check does (check.Data). cmd/orchstat wires in the DuckDB
// store.
type Store interface {
	check.Data
	// Clear empties the store.
	Clear(ctx context.Context) error
	// Ingest reads the runs under dir as of now.
	Ingest(ctx context.Context, dir string, now time.Time) error
}

// Result is the outcome of one test.
type Result struct {
	Name     string
	Failure  string // the diff, empty when the test passed
	Duration time.Duration
}

// FileResult is the outcome of one test file.
type FileResult struct {
	Path    string
	Err     error // the file could not be read or is invalid
	Results []Result
}

// job is one test of one loaded file.
type job struct {
	file *Loaded
	test int
}

// Run loads every file and runs the tests of the valid ones, and returns
// the outcome of each file in the order given.
func Run(ctx context.Context, o Options) []FileResult {
	out := make([]FileResult, len(o.Files))
	loaded := make([]*Loaded, len(o.Files))
	var jobs []job
	for fi, path := range o.Files {
		loaded[fi], out[fi].Err = Load(path)
		out[fi].Path = path
		if out[fi].Err == nil {
			for i := range loaded[fi].Tests {
				jobs = append(jobs, job{file: loaded[fi], test: i})
			}
		}
	}
	results := runJobs(ctx, o, jobs)
	for fi, lf := range loaded {
		if lf != nil {
			out[fi].Results, results = results[:len(lf.Tests)], results[len(lf.Tests):]
		}
	}
	return out
}

// runJobs runs the jobs on a few workers and returns their results in
// the jobs' order, so the output does not depend on which finished first.
func runJobs(ctx context.Context, o Options, jobs []job) []Result {
	results := make([]Result, len(jobs))
	workers := min(o.Workers, runtime.GOMAXPROCS(0), len(jobs))
	next := make(chan int)
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			store := testStore{open: o.OpenStore, appendTrace: o.AppendTrace}
			defer store.close()
			for j := range next {
				lf, i := jobs[j].file, jobs[j].test
				start := time.Now()
				diff, err := runTest(ctx, &store, lf, i)
				if err != nil {
					diff = "error: " + err.Error() + "\n"
				}
				results[j] = Result{Name: lf.Tests[i].Name, Failure: diff, Duration: time.Since(start)}
			}
		}()
	}
	for j := range jobs {
		next <- j
	}
	close(next)
	wg.Wait()
	return results
}

// runTest runs one test in an empty store and returns the diff of every
// evaluation that did not match, or "" when all did.
func runTest(ctx context.Context, store *testStore, lf *Loaded, i int) (string, error) {
	t := lf.Tests[i]
	st, tmp, err := store.fresh(ctx)
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(tmp)
	in := input{st: st, events: t.Input.Events, runs: filepath.Join(tmp, "runs"), written: -1, appendTrace: store.appendTrace}
	if lf.traces[i] != "" {
		if err := in.ingest(ctx, lf.traces[i], lf.times[i][0]); err != nil {
			return "", err
		}
	}
	var b strings.Builder
	prev := map[string][]alerting.Alert{}
	rf := testedRules(lf.Rules, t.Evaluations)
	for j, want := range t.Evaluations {
		now := lf.times[i][j]
		if lf.traces[i] == "" {
			if err := in.catchUp(ctx, now); err != nil {
				return "", err
			}
		}
		ev := check.Evaluate(ctx, check.NewSampler(st, now), rf, prev, now, "")
		if len(ev.Failures) > 0 {
			f := ev.Failures[0]
			return "", fmt.Errorf("evaluation at %s: rule %s: %w", want.At, f.Rule, f.Err)
		}
		// Thread the alerts on, by rule, as check does through the store.
		prev = map[string][]alerting.Alert{}
		for _, a := range ev.Alerts {
			prev[a.Rule] = append(prev[a.Rule], a)
		}
		b.WriteString(diff(j, now, want, ev.Alerts))
	}
	return b.String(), nil
}

// input is a test's input as it is ingested into the test's store.
type input struct {
	st          Store
	events      []Event
	runs        string // where inline events are written
	written     int    // how many events are, -1 before the first write
	appendTrace TraceFunc
}

// catchUp writes and ingests the inline events that have happened by
// now, as cron would see them.
func (in *input) catchUp(ctx context.Context, now time.Time) error {
	var due []Event
	for _, e := range in.events {
		if at, _ := parseTime(e.At); !at.After(now) {
			due = append(due, e)
		}
	}
	if len(due) == in.written {
		return nil
	}
	in.written = len(due)
	if err := writeEvents(in.runs, due, in.appendTrace); err != nil {
		return err
	}
	return in.ingest(ctx, in.runs, now)
}

// ingest ingests the runs under runs as of now.
func (in *input) ingest(ctx context.Context, runs string, now time.Time) error {
	if err := in.st.Ingest(ctx, runs, now); err != nil {
		return fmt.Errorf("ingesting the input: %w", err)
	}
	return nil
}

// diff compares evaluation j's alerts with those expected, and returns
// the missing and unexpected ones, or "" when they match.
func diff(j int, now time.Time, want Eval, alerts []alerting.Alert) string {
	got := map[string]bool{}
	for _, a := range alerts {
		if a.State == alerting.StateInactive || (len(want.Rules) > 0 && !slices.Contains(want.Rules, a.Rule)) {
			continue
		}
		got[alertKey(a.Rule, a.State.String(), a.Labels)] = true
	}
	exp := map[string]bool{}
	for _, a := range want.Alerts {
		exp[alertKey(a.Rule, a.State, a.Labels)] = true
	}
	var missing, unexpected []string
	for k := range exp {
		if !got[k] {
			missing = append(missing, k)
		}
	}
	for k := range got {
		if !exp[k] {
			unexpected = append(unexpected, k)
		}
	}
	if len(missing)+len(unexpected) == 0 {
		return ""
	}
	sort.Strings(missing)
	sort.Strings(unexpected)
	var b strings.Builder
	fmt.Fprintf(&b, "evaluation %d at %s:\n", j+1, now.Format(time.RFC3339))
	for _, m := range missing {
		fmt.Fprintf(&b, "  missing:    %s\n", m)
	}
	for _, u := range unexpected {
		fmt.Fprintf(&b, "  unexpected: %s\n", u)
	}
	return b.String()
}

// alertKey renders an alert as the diff shows it: rule state {labels}.
func alertKey(rule, state string, labels map[string]string) string {
	var ls []string
	for _, k := range slices.Sorted(maps.Keys(labels)) {
		ls = append(ls, fmt.Sprintf("%s=%q", k, labels[k]))
	}
	return fmt.Sprintf("%s %s {%s}", rule, state, strings.Join(ls, ", "))
}

// testedRules keeps the rules a test's evaluations name, when every one
// names some: rules are evaluated independently, so the others' alerts
// could not change the outcome, and skipping them saves most of the
// metric queries of a rule test.
func testedRules(rf *alerting.File, evals []Eval) *alerting.File {
	named := map[string]bool{}
	for _, e := range evals {
		if len(e.Rules) == 0 {
			return rf
		}
		for _, r := range e.Rules {
			named[r] = true
		}
	}
	sub := *rf
	sub.Rules = nil
	for _, r := range rf.Rules {
		if named[r.Name] {
			sub.Rules = append(sub.Rules, r)
		}
	}
	return &sub
}

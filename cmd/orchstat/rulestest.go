package main

import (
	"context"
	"encoding/json"
	"encoding/xml"
	"errors"
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

	"github.com/goccy/go-yaml"
	"github.com/spf13/cobra"

	"github.com/orchstat/orchstat/ingest"
	"github.com/orchstat/orchstat/query"
	"github.com/orchstat/orchstat/rules"
	"github.com/orchstat/orchstat/rules/yamlast"
)

func newRulesTestCmd(g *globals) *cobra.Command {
	var junit string
	cmd := &cobra.Command{
		Use:   "test FILE...",
		Short: "Unit-test alert rules against made-up events",
		Long: `Run rule test files, in the spirit of promtool test rules.

A test file names the rule files it tests (rule_files, relative to the test
file; omitted means the built-in alerts.yaml) and lists tests. Each test gives
its input, either inline events or a runs directory of traces, and a sequence
of evaluations. Every evaluation evaluates all the rules at its time, carrying
alert state from the one before exactly as orchstat check does between cron
runs, and lists the alerts expected to be pending, firing or resolved then
(rule, state, labels). The expected alerts are compared as a set; an empty or
missing list means no alert. An evaluation's rules restricts the comparison to
those rules.

Inline events are written as trace.jsonl files, one run directory per run, and
ingested into a fresh store as their times come: an evaluation sees the events
at or before its time, as a cron check would. A traces directory is ingested
whole before the first evaluation.

  rule_files: [../../alerts.yaml]
  tests:
    - name: retry storm fires after two checks
      input:
        events:        # or traces: DIR (a runs directory, relative to the file)
          - {run: r1, at: "2026-11-21T11:00:00Z", type: ProviderRequestFinished,
             payload: {provider: p, success: true, retries: 1}}
      evaluations:
        - at: "2026-11-21T12:00:00Z"
          alerts: []
        - at: "2026-11-21T12:05:00Z"
          rules: [provider_retry_rate_high]
          alerts: [{rule: provider_retry_rate_high, state: firing, labels: {}}]

Each failing evaluation is printed with its test and time, as missing: and
unexpected: lines.

Exit status: 0 when every test passes, 1 when any fails, 2 on usage errors or
a test file that cannot be read or is invalid.`,
		Example: `  # Run the tests of the default rules
  orchstat rules test testdata/rules/*.yaml

  # For CI
  orchstat rules test --junit rule-tests.xml testdata/rules/*.yaml`,
		Args: usageArgs(cobra.MinimumNArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			return rulesTestRun(cmd.Context(), g.io, args, junit)
		},
	}
	cmd.Flags().StringVar(&junit, "junit", "", "also write the results as JUnit XML to this file")
	return cmd
}

// The rule test file format.
type ruleTestFile struct {
	RuleFiles []string   `yaml:"rule_files"`
	Tests     []ruleTest `yaml:"tests"`
}

type ruleTest struct {
	Name  string `yaml:"name"`
	Input struct {
		Traces string          `yaml:"traces"`
		Events []ruleTestEvent `yaml:"events"`
	} `yaml:"input"`
	Evaluations []ruleTestEval `yaml:"evaluations"`
}

type ruleTestEvent struct {
	Run     string         `yaml:"run"`
	At      string         `yaml:"at"`
	Type    string         `yaml:"type"`
	Payload map[string]any `yaml:"payload"`
}

type ruleTestEval struct {
	At     string          `yaml:"at"`
	Rules  []string        `yaml:"rules"`
	Alerts []ruleTestAlert `yaml:"alerts"`
}

type ruleTestAlert struct {
	Rule   string            `yaml:"rule"`
	State  string            `yaml:"state"`
	Labels map[string]string `yaml:"labels"`
}

// loadedTestFile is a validated test file, ready to run.
type loadedTestFile struct {
	path   string
	dir    string
	rf     *rules.File
	tests  []ruleTest
	times  [][]time.Time // per test, per evaluation
	traces []string      // per test: the runs directory, or ""
}

// testResult is the outcome of one test.
type testResult struct {
	name     string
	failure  string // the diff, empty when the test passed
	duration time.Duration
}

// fileResult is the outcome of one test file.
type fileResult struct {
	path    string
	err     error // the file could not be read or is invalid
	results []testResult
}

func rulesTestRun(ctx context.Context, io *IO, files []string, junit string) error {
	invalid, failed := false, false
	loaded := make([]*loadedTestFile, len(files))
	errs := make([]error, len(files))
	var jobs []ruleTestJob
	for fi, path := range files {
		loaded[fi], errs[fi] = loadRuleTestFile(path)
		if errs[fi] == nil {
			for i := range loaded[fi].tests {
				jobs = append(jobs, ruleTestJob{file: fi, test: i})
			}
		}
	}
	results := runRuleTests(ctx, loaded, jobs)

	var all []fileResult
	next := 0
	for fi, path := range files {
		fr := fileResult{path: path}
		if err := errs[fi]; err != nil {
			fr.err = err
			invalid = true
			fmt.Fprintf(io.Err, "orchstat: %v\n", err)
			fmt.Fprintf(io.Out, "%s: invalid\n", path)
			all = append(all, fr)
			continue
		}
		lf := loaded[fi]
		nfail := 0
		for range lf.tests {
			res := results[next]
			next++
			fr.results = append(fr.results, res)
			if res.failure != "" {
				nfail++
				fmt.Fprintf(io.Out, "FAIL %s: %s\n%s", path, res.name, indent(res.failure, "  "))
			}
		}
		if nfail > 0 {
			failed = true
			fmt.Fprintf(io.Out, "%s: %d of %d test%s failed\n", path, nfail, len(lf.tests), plural(len(lf.tests)))
		} else {
			fmt.Fprintf(io.Out, "%s: %d test%s, OK\n", path, len(lf.tests), plural(len(lf.tests)))
		}
		all = append(all, fr)
	}
	if junit != "" {
		if err := writeJUnit(junit, all); err != nil {
			fmt.Fprintf(io.Err, "orchstat: %v\n", err)
			invalid = true
		}
	}
	switch {
	case invalid:
		return silentError{exitUsage}
	case failed:
		return silentError{exitError}
	}
	return nil
}

// ruleTestJob is one test of one loaded file.
type ruleTestJob struct{ file, test int }

// ruleTestWorkers bounds how many tests run at once, each on a store of
// its own: a test is a chain of small queries on one connection, so
// running a few side by side uses the cores one test leaves idle.
var ruleTestWorkers = 4

// openTestStore opens a worker's store; tests count the calls.
var openTestStore = func(ctx context.Context, path string) (*query.Store, error) {
	return query.Open(ctx, path, query.Options{})
}

// runRuleTests runs the jobs on a few workers and returns their results
// in the jobs' order, so the output does not depend on which finished
// first.
func runRuleTests(ctx context.Context, loaded []*loadedTestFile, jobs []ruleTestJob) []testResult {
	results := make([]testResult, len(jobs))
	workers := min(ruleTestWorkers, runtime.GOMAXPROCS(0), len(jobs))
	next := make(chan int)
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var store testStore
			defer store.close()
			for j := range next {
				lf, i := loaded[jobs[j].file], jobs[j].test
				start := time.Now()
				diff, err := runRuleTest(ctx, &store, lf, i)
				if err != nil {
					diff = "error: " + err.Error() + "\n"
				}
				results[j] = testResult{name: lf.tests[i].Name, failure: diff, duration: time.Since(start)}
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

func indent(s, prefix string) string {
	lines := strings.SplitAfter(s, "\n")
	var b strings.Builder
	for _, l := range lines {
		if l != "" {
			b.WriteString(prefix + l)
		}
	}
	return b.String()
}

// loadRuleTestFile reads and validates a test file and its rule files.
func loadRuleTestFile(path string) (*loadedTestFile, error) {
	data, err := yamlast.ReadFile(path)
	if err != nil {
		return nil, err
	}
	// The decoder's parser, like the rule files', costs more than the file
	// grows with nesting, and the decoder builds every value an alias
	// stands for: refuse what no test file needs first. A file that does
	// not parse is left to the decoder, whose errors say more.
	bounded := yamlast.CheckDepth(data)
	if bounded == nil {
		if f, err := yamlast.Parse(data); err == nil {
			bounded = yamlast.CheckExpansion(f)
		}
	}
	if bounded != nil {
		msg, line, col := yamlast.ErrorAt(bounded)
		return nil, fmt.Errorf("%s:%d:%d: %s", path, line, col, msg)
	}
	var tf ruleTestFile
	if err := yaml.UnmarshalWithOptions(data, &tf, yaml.Strict()); err != nil {
		var ye yaml.Error
		if errors.As(err, &ye) {
			if tk := ye.GetToken(); tk != nil && tk.Position != nil {
				return nil, fmt.Errorf("%s:%d:%d: YAML: %s", path, tk.Position.Line, tk.Position.Column, ye.GetMessage())
			}
			return nil, fmt.Errorf("%s: YAML: %s", path, ye.GetMessage())
		}
		return nil, fmt.Errorf("%s: %v", path, err)
	}
	lf := &loadedTestFile{path: path, dir: filepath.Dir(path), tests: tf.Tests}
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%s: %s", path, fmt.Sprintf(format, args...))
	}
	if len(tf.Tests) == 0 {
		return nil, bad("no tests")
	}

	// The rules under test: the named files together, or the built-in ones.
	if len(tf.RuleFiles) == 0 {
		lf.rf, err = loadRules("")
		if err != nil {
			return nil, bad("%v", err)
		}
	} else {
		lf.rf = &rules.File{Path: strings.Join(tf.RuleFiles, ",")}
		seen := map[string]string{}
		for _, rfPath := range tf.RuleFiles {
			p := rfPath
			if !filepath.IsAbs(p) {
				p = filepath.Join(lf.dir, p)
			}
			f, err := loadRules(p)
			if err != nil {
				return nil, bad("rule file %s: %v", rfPath, err)
			}
			for _, r := range f.Rules {
				if other, dup := seen[r.Name]; dup {
					return nil, bad("rule %q is in both %s and %s", r.Name, other, rfPath)
				}
				seen[r.Name] = rfPath
				lf.rf.Rules = append(lf.rf.Rules, r)
			}
		}
	}
	ruleNames := map[string]bool{}
	for _, r := range lf.rf.Rules {
		ruleNames[r.Name] = true
	}

	names := map[string]bool{}
	for i, t := range tf.Tests {
		where := fmt.Sprintf("test %d", i+1)
		if t.Name == "" {
			return nil, bad("%s has no name", where)
		}
		where = fmt.Sprintf("test %q", t.Name)
		if names[t.Name] {
			return nil, bad("%s: duplicate test name", where)
		}
		names[t.Name] = true
		traces := ""
		switch {
		case t.Input.Traces != "" && len(t.Input.Events) > 0:
			return nil, bad("%s: input has both traces and events; give one", where)
		case t.Input.Traces != "":
			traces = t.Input.Traces
			if !filepath.IsAbs(traces) {
				traces = filepath.Join(lf.dir, traces)
			}
			if fi, err := os.Stat(traces); err != nil {
				return nil, bad("%s: traces: %v", where, err)
			} else if !fi.IsDir() {
				return nil, bad("%s: traces: %s is not a directory", where, t.Input.Traces)
			}
		}
		lf.traces = append(lf.traces, traces)
		for j, e := range t.Input.Events {
			ew := fmt.Sprintf("%s: event %d", where, j+1)
			if e.Run == "" || e.Type == "" {
				return nil, bad("%s needs run and type", ew)
			}
			if e.Run != filepath.Base(e.Run) || e.Run == "." || e.Run == ".." {
				return nil, bad("%s: run %q is not a plain name", ew, e.Run)
			}
			if _, err := parseTestTime(e.At); err != nil {
				return nil, bad("%s: at: %v", ew, err)
			}
		}
		if len(t.Evaluations) == 0 {
			return nil, bad("%s has no evaluations", where)
		}
		var times []time.Time
		for j, ev := range t.Evaluations {
			ew := fmt.Sprintf("%s: evaluation %d", where, j+1)
			at, err := parseTestTime(ev.At)
			if err != nil {
				return nil, bad("%s: at: %v", ew, err)
			}
			if j > 0 && at.Before(times[j-1]) {
				return nil, bad("%s: at %s is before the evaluation before it", ew, ev.At)
			}
			times = append(times, at)
			for _, r := range ev.Rules {
				if !ruleNames[r] {
					return nil, bad("%s: no rule named %q", ew, r)
				}
			}
			for k, a := range ev.Alerts {
				if !ruleNames[a.Rule] {
					return nil, bad("%s: alert %d: no rule named %q", ew, k+1, a.Rule)
				}
				var st rules.State
				if err := st.UnmarshalText([]byte(a.State)); err != nil || st == rules.StateInactive {
					return nil, bad("%s: alert %d: state %q is not pending, firing or resolved", ew, k+1, a.State)
				}
				if len(ev.Rules) > 0 && !slices.Contains(ev.Rules, a.Rule) {
					return nil, bad("%s: alert %d: rule %q is not among the evaluation's rules", ew, k+1, a.Rule)
				}
			}
		}
		lf.times = append(lf.times, times)
	}
	return lf, nil
}

func parseTestTime(s string) (time.Time, error) {
	if s == "" {
		return time.Time{}, fmt.Errorf("missing (an RFC 3339 time such as 2026-11-21T12:00:00Z)")
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}, fmt.Errorf("%q is not an RFC 3339 time such as 2026-11-21T12:00:00Z", s)
	}
	return t.UTC(), nil
}

// testStore is the one store the tests of a run share, cleared before
// each: creating a store's schema cost about 0.15 s, most of a test's time.
type testStore struct {
	dir string
	st  *query.Store
}

// fresh returns the store emptied, and a new directory for the test's
// files.
func (s *testStore) fresh(ctx context.Context) (*query.Store, string, error) {
	if s.st == nil {
		dir, err := os.MkdirTemp("", "orchstat-rules-test-")
		if err != nil {
			return nil, "", err
		}
		s.dir = dir
		if s.st, err = openTestStore(ctx, filepath.Join(dir, "orchstat.duckdb")); err != nil {
			return nil, "", err
		}
		// The tests' data is a few rows: DuckDB's threads cost more to
		// start and join than they save, and the tests run side by side.
		if err := s.st.SetThreads(ctx, 1); err != nil {
			return nil, "", err
		}
	} else if err := s.st.Clear(ctx); err != nil {
		// A store that cannot be cleared is not reused: the next test
		// starts from a new one.
		s.close()
		return nil, "", fmt.Errorf("clearing the test store: %w", err)
	}
	tmp, err := os.MkdirTemp(s.dir, "test-")
	return s.st, tmp, err
}

func (s *testStore) close() {
	if s.st != nil {
		s.st.Close()
		s.st = nil
	}
	if s.dir != "" {
		os.RemoveAll(s.dir)
		s.dir = ""
	}
}

// runRuleTest runs one test in an empty store and returns the diff of
// every evaluation that did not match, or "" when all did.
func runRuleTest(ctx context.Context, store *testStore, lf *loadedTestFile, i int) (string, error) {
	t := lf.tests[i]
	st, tmp, err := store.fresh(ctx)
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(tmp)
	ingestAt := func(runs string, now time.Time) error {
		res, err := ingest.Run(ctx, st, ingest.Options{Paths: []string{runs}, Now: func() time.Time { return now }, Scratch: true})
		if err != nil {
			return fmt.Errorf("ingesting the input: %w", err)
		}
		if len(res.Errors) > 0 {
			var msgs []string
			for _, fe := range res.Errors {
				msgs = append(msgs, fe.Error())
			}
			return fmt.Errorf("ingesting the input: %s", strings.Join(msgs, "; "))
		}
		return nil
	}
	if lf.traces[i] != "" {
		if err := ingestAt(lf.traces[i], lf.times[i][0]); err != nil {
			return "", err
		}
	}
	runs := filepath.Join(tmp, "runs")
	written := -1

	var b strings.Builder
	prev := map[string][]rules.Alert{}
	rf := testedRules(lf.rf, t.Evaluations)
	for j, want := range t.Evaluations {
		now := lf.times[i][j]
		if lf.traces[i] == "" {
			// As cron would: only the events that have happened by now.
			var due []ruleTestEvent
			for _, e := range t.Input.Events {
				if at, _ := parseTestTime(e.At); !at.After(now) {
					due = append(due, e)
				}
			}
			if len(due) != written {
				written = len(due)
				if err := writeTestEvents(runs, due); err != nil {
					return "", err
				}
				if err := ingestAt(runs, now); err != nil {
					return "", err
				}
			}
		}
		ev := evalRules(ctx, st, rf, prev, now, nil, "")
		if len(ev.failures) > 0 {
			f := ev.failures[0]
			return "", fmt.Errorf("evaluation at %s: rule %s: %w", want.At, f.rule, f.err)
		}
		// Thread the alerts on, by rule, as check does through the store.
		prev = map[string][]rules.Alert{}
		for _, a := range ev.alerts {
			prev[a.Rule] = append(prev[a.Rule], a)
		}
		got := map[string]bool{}
		for _, a := range ev.alerts {
			if a.State == rules.StateInactive || (len(want.Rules) > 0 && !slices.Contains(want.Rules, a.Rule)) {
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
			continue
		}
		sort.Strings(missing)
		sort.Strings(unexpected)
		fmt.Fprintf(&b, "evaluation %d at %s:\n", j+1, now.Format(time.RFC3339))
		for _, m := range missing {
			fmt.Fprintf(&b, "  missing:    %s\n", m)
		}
		for _, u := range unexpected {
			fmt.Fprintf(&b, "  unexpected: %s\n", u)
		}
	}
	return b.String(), nil
}

// alertKey renders an alert as the diff shows it: rule state {labels}.
func alertKey(rule, state string, labels map[string]string) string {
	var ls []string
	for _, k := range slices.Sorted(maps.Keys(labels)) {
		ls = append(ls, fmt.Sprintf("%s=%q", k, labels[k]))
	}
	return fmt.Sprintf("%s %s {%s}", rule, state, strings.Join(ls, ", "))
}

// writeTestEvents writes inline events as trace.jsonl files, one run
// directory per run, in the order given.
func writeTestEvents(runs string, events []ruleTestEvent) error {
	if err := os.MkdirAll(runs, 0o755); err != nil {
		return err
	}
	byRun := map[string]*strings.Builder{}
	var order []string
	for _, e := range events {
		at, _ := parseTestTime(e.At)
		payload := e.Payload
		if payload == nil {
			payload = map[string]any{}
		}
		line, err := json.Marshal(struct {
			Type          string         `json:"type"`
			SchemaVersion int            `json:"schemaVersion"`
			Timestamp     string         `json:"timestamp"`
			RunID         string         `json:"runId"`
			Payload       map[string]any `json:"payload"`
		}{e.Type, 1, at.Format(time.RFC3339Nano), e.Run, payload})
		if err != nil {
			return fmt.Errorf("event of run %s: %w", e.Run, err)
		}
		b := byRun[e.Run]
		if b == nil {
			b = &strings.Builder{}
			byRun[e.Run] = b
			order = append(order, e.Run)
		}
		b.Write(line)
		b.WriteByte('\n')
	}
	for _, run := range order {
		dir := filepath.Join(runs, run)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dir, "trace.jsonl"), []byte(byRun[run].String()), 0o644); err != nil {
			return err
		}
	}
	return nil
}

// JUnit XML, as CI systems read it.
type junitSuites struct {
	XMLName  xml.Name     `xml:"testsuites"`
	Tests    int          `xml:"tests,attr"`
	Failures int          `xml:"failures,attr"`
	Errors   int          `xml:"errors,attr"`
	Suites   []junitSuite `xml:"testsuite"`
}

type junitSuite struct {
	Name     string      `xml:"name,attr"`
	Tests    int         `xml:"tests,attr"`
	Failures int         `xml:"failures,attr"`
	Errors   int         `xml:"errors,attr"`
	Time     string      `xml:"time,attr"`
	Cases    []junitCase `xml:"testcase"`
}

type junitCase struct {
	Name      string        `xml:"name,attr"`
	Classname string        `xml:"classname,attr"`
	Time      string        `xml:"time,attr"`
	Failure   *junitProblem `xml:"failure,omitempty"`
	Error     *junitProblem `xml:"error,omitempty"`
}

type junitProblem struct {
	Message string `xml:"message,attr"`
	Text    string `xml:",chardata"`
}

func writeJUnit(path string, files []fileResult) error {
	var out junitSuites
	for _, f := range files {
		s := junitSuite{Name: f.path}
		var total time.Duration
		if f.err != nil {
			s.Tests, s.Errors = 1, 1
			s.Cases = append(s.Cases, junitCase{Name: "load " + f.path, Classname: f.path, Time: "0.000",
				Error: &junitProblem{Message: f.err.Error(), Text: f.err.Error()}})
		}
		for _, r := range f.results {
			total += r.duration
			c := junitCase{Name: r.name, Classname: f.path, Time: fmt.Sprintf("%.3f", r.duration.Seconds())}
			if r.failure != "" {
				msg := strings.SplitN(r.failure, "\n", 2)[0]
				c.Failure = &junitProblem{Message: msg, Text: r.failure}
				s.Failures++
			}
			s.Tests++
			s.Cases = append(s.Cases, c)
		}
		s.Time = fmt.Sprintf("%.3f", total.Seconds())
		out.Tests += s.Tests
		out.Failures += s.Failures
		out.Errors += s.Errors
		out.Suites = append(out.Suites, s)
	}
	b, err := xml.MarshalIndent(out, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append([]byte(xml.Header), append(b, '\n')...), 0o644)
}

// testedRules keeps the rules a test's evaluations name, when every one
// names some: rules are evaluated independently, so the others' alerts
// could not change the outcome, and skipping them saves most of the
// metric queries of a rule test.
func testedRules(rf *rules.File, evals []ruleTestEval) *rules.File {
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

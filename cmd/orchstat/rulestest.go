package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/orchstat/orchstat/ingest"
	"github.com/orchstat/orchstat/ingest/trace"
	"github.com/orchstat/orchstat/query"
	"github.com/orchstat/orchstat/rules/ruletest"
)

// rulesTestOptions are rules test's flags and what it takes from outside.
type rulesTestOptions struct {
	IO    *IO
	Files []string
	JUnit string
	// Workers bounds how many tests run at once; OpenStore opens each
	// worker's store.
	Workers   int
	OpenStore func(ctx context.Context, path string) (ruletest.Store, error)
}

func newRulesTestCmd(g *globals) *cobra.Command {
	o := &rulesTestOptions{IO: g.io, Workers: g.deps.ruleTestWorkers, OpenStore: g.deps.openTestStore}
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
			o.Files = args
			return rulesTestRun(cmd.Context(), o)
		},
	}
	cmd.Flags().StringVar(&o.JUnit, "junit", "", "also write the results as JUnit XML to this file")
	return cmd
}

// rulesTestRun runs the test files, prints each failing test and a line
// per file, and writes the JUnit file if asked.
func rulesTestRun(ctx context.Context, o *rulesTestOptions) error {
	io := o.IO
	all := ruletest.Run(ctx, ruletest.Options{Files: o.Files, Workers: o.Workers, OpenStore: o.OpenStore,
		AppendTrace: trace.AppendLine})
	invalid, failed := false, false
	for _, fr := range all {
		if fr.Err != nil {
			invalid = true
			fmt.Fprintf(io.Err, "orchstat: %v\n", fr.Err)
			fmt.Fprintf(io.Out, "%s: invalid\n", fr.Path)
			continue
		}
		nfail := 0
		for _, res := range fr.Results {
			if res.Failure != "" {
				nfail++
				fmt.Fprintf(io.Out, "FAIL %s: %s\n%s", fr.Path, res.Name, indent(res.Failure, "  "))
			}
		}
		n := len(fr.Results)
		if nfail > 0 {
			failed = true
			fmt.Fprintf(io.Out, "%s: %d of %d test%s failed\n", fr.Path, nfail, n, plural(n))
		} else {
			fmt.Fprintf(io.Out, "%s: %d test%s, OK\n", fr.Path, n, plural(n))
		}
	}
	if o.JUnit != "" {
		if err := ruletest.WriteJUnit(o.JUnit, all); err != nil {
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

// ruleTestStore is a rule-test worker's store: the tests' runs are
// ingested into it as check's ingest does, and read as check reads.
type ruleTestStore struct {
	*query.CheckStore
	st *query.Store
}

// openRuleTestStore opens a new store at path for a worker's rule tests.
func openRuleTestStore(ctx context.Context, path string) (ruletest.Store, error) {
	st, err := query.Open(ctx, path, query.Options{})
	if err != nil {
		return nil, err
	}
	// The tests' data is a few rows: DuckDB's threads cost more to start
	// and join than they save, and the tests run side by side.
	if err := st.SetThreads(ctx, 1); err != nil {
		st.Close()
		return nil, err
	}
	return &ruleTestStore{CheckStore: query.NewCheckStore(st), st: st}, nil
}

func (s *ruleTestStore) Clear(ctx context.Context) error { return s.st.Clear(ctx) }

// Ingest ingests the runs under dir as of now, from scratch; a file that
// could not be read fails it.
func (s *ruleTestStore) Ingest(ctx context.Context, dir string, now time.Time) error {
	res, err := ingest.Run(ctx, s.st, ingest.Options{Paths: []string{dir}, Now: func() time.Time { return now }, Scratch: true})
	if err != nil {
		return err
	}
	if len(res.Errors) > 0 {
		var msgs []string
		for _, fe := range res.Errors {
			msgs = append(msgs, fe.Error())
		}
		return errors.New(strings.Join(msgs, "; "))
	}
	return nil
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

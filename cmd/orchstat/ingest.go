package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/orchstat/orchstat/ingest"
	"github.com/orchstat/orchstat/query"
	"github.com/orchstat/orchstat/reports/render"
)

type ingestOptions struct {
	g         *globals
	Paths     []string
	Quiet     bool
	StdinName string
	Tuning    tuning
}

func newIngestCmd(g *globals, runF func(context.Context, *ingestOptions) error) *cobra.Command {
	o := &ingestOptions{g: g}
	cmd := &cobra.Command{
		Use:   "ingest [PATH...]",
		Short: "Index run traces, summaries and verification reports into the store",
		Long: `Stream trace.jsonl files, summary.json and verification reports into the store.

PATH may be a runs directory (default: the runs of the nearest .orchestrator
at or above the working directory), a single run directory, a trace.jsonl
file, any folder above runs (they are found at any depth down to 6), or -
for standard input. Other systems' records are found by name and place,
and agents' records (OpenTelemetry, Claude Code, Codex) and traces under
other names by their first lines, wherever a walk meets them; a file
named alone is read as its first lines say (not recognised, exit 1, when no
format reads them; --input-format orchestrator reads it as a trace). Files a walk
meets that no format reads are named in one line on stderr (--verbose
lists each with the reason, and counts the records read but not used).
--input-format reads one format only. The store is orchstat.duckdb in the nearest
.orchestrator folder at or above the first PATH, else in PATH's own
.orchestrator folder (created); --db names another. A PATH with nothing to
read is an error (exit 1) and creates no store. Ingest is incremental:
each file's read position is kept in the same transaction as its rows, so a
re-run reads only new complete lines, and an ingest killed at any instant is
completed by the next one without duplicating or losing events.

Lines that cannot be used go to the quarantine table (see orchstat quarantine).
A final line without a newline may still be being written; it is left for the
next ingest (on standard input, which has no next time, it counts). A file
that shrank, whose first bytes changed, or that was replaced by another file
is re-read from the start, replacing its earlier rows; so is a file named
with another --input-format than it was read with. A file that was moved or
renamed keeps its rows; orchstat forget removes a file's rows.`,
		Example: `  orchstat ingest
  orchstat ingest path/to/repo/.orchestrator/runs
  orchstat ingest .orchestrator/runs/1769708891380
  orchstat ingest ~/backups/agents                  # transcripts, rollouts, OTLP files, runs: whatever lies there
  orchstat ingest --input-format codex ~/old-rollouts
  ssh ci-runner cat run.jsonl | orchstat ingest --stdin-name ci-runner -`,
		RunE: func(cmd *cobra.Command, args []string) error {
			o.Paths = args
			if len(o.Paths) == 0 {
				o.Paths = []string{defaultRuns()}
			}
			if runF != nil {
				return runF(cmd.Context(), o)
			}
			return ingestRun(cmd.Context(), o)
		},
	}
	addIngestFlags(cmd, &o.Quiet, &o.StdinName, &o.Tuning)
	// --format was ingest's name for --input-format before every command
	// took the one name; it still works, unlisted.
	cmd.Flags().StringVar(&o.Tuning.Format, "format", "auto", "the same as --input-format")
	cmd.Flags().MarkHidden("format")
	return cmd
}

const defaultRunsDir = ".orchestrator/runs"

// tuning holds hidden ingest knobs used by benchmarks and tests.
type tuning struct {
	Format    string // the records' format, one of ingest.Formats
	Verbose   bool   // list the files no format reads one by one
	BatchRows int
	TxnBytes  int
	Full      bool // look at sealed runs' files too
}

// addIngestFlags adds the ingest flags, the same on every command that
// ingests: --input-format names the records' format (a report's --format
// is its output's).
func addIngestFlags(cmd *cobra.Command, quiet *bool, stdinName *string, t *tuning) {
	cmd.Flags().StringVar(&t.Format, "input-format", "auto", "format of the records: "+strings.Join(ingest.Formats, ", ")+" (auto: each file's by its name, place and first lines)")
	cmd.Flags().BoolVarP(&t.Verbose, "verbose", "v", false, "list every file no format reads with the reason, and count the records read but not used")
	cmd.Flags().BoolVarP(quiet, "quiet", "q", false, "print nothing but errors")
	cmd.Flags().StringVar(stdinName, "stdin-name", "stdin", "name for data read from - (ingesting the same name again replaces it)")
	cmd.Flags().BoolVar(&t.Full, "full", false, "look at every file, finished runs' too (an ingest does so by itself once a day; see docs/ingest.md)")
	cmd.Flags().IntVar(&t.BatchRows, "batch-rows", 0, "events per batch handed to DuckDB (0 for the default)")
	cmd.Flags().IntVar(&t.TxnBytes, "txn-bytes", 0, "payload bytes per transaction (0 for the default)")
	cmd.Flags().MarkHidden("batch-rows")
	cmd.Flags().MarkHidden("txn-bytes")
}

func ingestRun(ctx context.Context, o *ingestOptions) error {
	if err := checkFormat(o.Tuning.Format); err != nil {
		return err
	}
	if err := checkPaths(o.Paths); err != nil {
		return err
	}
	db := o.g.dbPath(o.Paths)
	found, err := somethingToRead(o.g, db, o.Paths, o.Tuning, o.Quiet)
	if err != nil {
		return err
	}
	st, err := o.g.open(ctx, db, false)
	if err != nil {
		return err
	}
	defer st.Close()
	res, err := doIngest(ctx, o.g, st, o.Paths, found, o.Quiet, o.StdinName, o.Tuning)
	if err != nil {
		return err
	}
	if nothingFound(o.Paths, res) {
		return nothingToRead(o.Paths, o.Tuning.Format, "the store is unchanged")
	}
	if !o.Quiet {
		printIngest(o.g.io, st.Path, res)
	}
	if len(res.Errors) > 0 {
		return silentError{exitError}
	}
	return nil
}

// doIngest runs an ingest with progress on a terminal and reports problems
// on stderr. report and check use it too.
// found is what somethingToRead found, if anything.
func doIngest(ctx context.Context, g *globals, st *query.Store, paths []string, found *ingest.Found, quiet bool, stdinName string, t tuning) (*ingest.Result, error) {
	if err := checkFormat(t.Format); err != nil {
		return nil, err
	}
	var prog *progress
	if g.io.ErrIsTTY && !quiet {
		prog = newProgress(g.io.Err, g.io.Now)
		defer prog.done()
	}
	hook := crashHook()
	st.SetHook(hook)
	opts := ingest.Options{Paths: paths, Format: t.Format, Found: found, Stdin: g.io.In, StdinName: stdinName, Now: g.io.Now,
		BatchRows: t.BatchRows, TxnBytes: t.TxnBytes, Hook: hook, Full: t.Full}
	if prog != nil {
		opts.Progress = prog.update
	}
	res, err := ingest.Run(ctx, st, opts)
	if prog != nil {
		prog.done()
	}
	if err != nil {
		return res, err
	}
	if found == nil {
		// What Find found was reported already (somethingToRead).
		reportSkipped(g.io, res.Skipped, t.Verbose, quiet)
	}
	if t.Verbose {
		reportIgnored(g.io, res.Ignored)
		reportSealed(g.io, res)
	}
	for _, fe := range res.Errors {
		fmt.Fprintf(g.io.Err, "orchstat: cannot read %s\n", render.EscapeControls(fe.Error()))
	}
	for _, m := range res.Moved {
		fmt.Fprintf(g.io.Err, "orchstat: %s was read before under another name (%s); its rows are kept\n",
			render.EscapeControls(m.Path), render.EscapeControls(strings.TrimPrefix(m.Reason, "it was ")))
	}
	for _, r := range res.Replaced {
		fmt.Fprintf(g.io.Err, "orchstat: re-reading %s from the start because %s; its earlier rows were replaced\n", render.EscapeControls(r.Path), r.Reason)
	}
	return res, nil
}

// reportSealed says, with --verbose, when an ingest was a full pass; the
// summary line says what a cron pass did not look at.
func reportSealed(io *IO, r *ingest.Result) {
	if r.Full {
		fmt.Fprintln(io.Err, "orchstat: a full pass: every file was looked at, sealed runs' too")
	}
}

func printIngest(io *IO, db string, r *ingest.Result) {
	calls := ""
	if r.Calls > 0 {
		calls = fmt.Sprintf(" and %d model calls", r.Calls)
	}
	// A sealed run's files count as unchanged, as sealing promises
	// (docs/ingest.md); the line says they were not looked at.
	sealed := ""
	if r.Sealed > 0 {
		sealed = fmt.Sprintf(" (%d of them in %d finished runs whose folders did not change, not looked at; --full looks)", r.Sealed, r.SealedRuns)
	}
	fmt.Fprintf(io.Out, "ingested %d events%s (%s) from %d of %d files into %s; %d unchanged%s; %d lines quarantined",
		r.Events, calls, humanBytes(r.Bytes), r.Read, r.Files+r.Sealed, render.EscapeControls(db), r.Unchanged+r.Sealed, sealed, r.Quarantined)
	if r.Quarantined > 0 {
		fmt.Fprintf(io.Out, " (see orchstat --db %s quarantine)", render.EscapeControls(db))
	}
	fmt.Fprintln(io.Out)
}

// checkPaths fails before any store is created when none of the PATH
// arguments exists, so a typo does not leave an empty store behind.
func checkPaths(paths []string) error {
	var missing []string
	for _, p := range paths {
		if p == "-" {
			return nil
		}
		_, err := os.Stat(p)
		if err == nil {
			return nil
		}
		missing = append(missing, fmt.Sprintf("%s is %v", render.EscapeControls(p), ingest.DescribePathError(err)))
	}
	return fmt.Errorf("nothing to ingest: %s", strings.Join(missing, "; "))
}

func checkFormat(format string) error {
	if !slices.Contains(ingest.Formats, format) {
		return usageError{fmt.Errorf("unknown records format %q (formats: %s)", format, strings.Join(ingest.Formats, ", "))}
	}
	return nil
}

// somethingToRead fails, before the store at db is created, when the
// paths hold nothing any format reads: an empty folder or a typo must not
// leave an empty store and an all-zero report behind. An existing store is
// checked after its ingest instead (nothingFound), which lists no more
// than the ingest does. What it found is the ingest's to read (nil when
// it did not look); the files it met that no format reads are reported
// here.
func somethingToRead(g *globals, db string, paths []string, t tuning, quiet bool) (*ingest.Found, error) {
	if slices.Contains(paths, "-") {
		return nil, nil
	}
	if _, err := os.Stat(db); err == nil {
		return nil, nil
	}
	found, err := ingest.Find(paths, t.Format, g.io.Now())
	if err != nil {
		return found, err
	}
	reportSkipped(g.io, found.Skipped(), t.Verbose, quiet)
	if found.Files() > 0 {
		return found, nil
	}
	format := t.Format
	if errs := found.Errors(); len(errs) > 0 {
		msgs := make([]string, len(errs))
		for i, e := range errs {
			msgs[i] = render.EscapeControls(e.Error())
		}
		return nil, fmt.Errorf("cannot read %s; no store was created", strings.Join(msgs, "; "))
	}
	return nil, nothingToRead(paths, format, "no store was created")
}

// skippedShown is how many files not recognised are named without
// --verbose.
const skippedShown = 5

// reportSkipped says on stderr, in one line, which files the walks met
// that no format reads; with verbose, every one of them with the reason.
// quiet silences it unless verbose asks for it.
func reportSkipped(io *IO, skipped []ingest.Skipped, verbose, quiet bool) {
	if len(skipped) == 0 || quiet && !verbose {
		return
	}
	files := "files"
	if len(skipped) == 1 {
		files = "file"
	}
	if verbose {
		fmt.Fprintf(io.Err, "orchstat: %d %s not recognised (no format reads them):\n", len(skipped), files)
		for _, s := range skipped {
			fmt.Fprintf(io.Err, "  %s: %s\n", render.EscapeControls(shortPath(s.Path)), render.EscapeControls(s.Reason))
		}
		return
	}
	var names []string
	for _, s := range skipped[:min(len(skipped), skippedShown)] {
		names = append(names, render.EscapeControls(shortPath(s.Path)))
	}
	more := ""
	if n := len(skipped) - skippedShown; n > 0 {
		more = fmt.Sprintf(" and %d more", n)
	}
	fmt.Fprintf(io.Err, "orchstat: %d %s not recognised: %s%s; see --verbose\n", len(skipped), files, strings.Join(names, ", "), more)
}

// reportIgnored says, by reason, how many records of the files read gave
// no row (OpenTelemetry spans that are no model call, agent or tool).
func reportIgnored(io *IO, ignored map[string]int64) {
	reasons := make([]string, 0, len(ignored))
	var total int64
	for why, n := range ignored {
		reasons = append(reasons, why)
		total += n
	}
	if total == 0 {
		return
	}
	slices.Sort(reasons)
	fmt.Fprintf(io.Err, "orchstat: %d records read but not used:\n", total)
	for _, why := range reasons {
		fmt.Fprintf(io.Err, "  %d %s\n", ignored[why], render.EscapeControls(why))
	}
}

// shortPath is a path relative to the working directory when it lies
// below it, else as it is.
func shortPath(p string) string {
	wd, err := os.Getwd()
	if err != nil {
		return p
	}
	if rel, err := filepath.Rel(wd, p); err == nil && !strings.HasPrefix(rel, "..") {
		return rel
	}
	return p
}

// nothingFound reports whether an ingest of paths found no file at all.
func nothingFound(paths []string, res *ingest.Result) bool {
	return res.Files+res.Sealed == 0 && len(res.Errors) == 0 && !slices.Contains(paths, "-")
}

// nothingToRead names the paths and what was looked for there.
func nothingToRead(paths []string, format, outcome string) error {
	named := make([]string, len(paths))
	for i, p := range paths {
		named[i] = render.EscapeControls(p)
	}
	what := "no orchestrator runs (trace.jsonl, summary.json or verification reports in run folders) and no factory, claudestrator, orchestr8, OpenTelemetry, Claude Code or Codex records"
	if format != "" && format != "auto" {
		what = "no " + format + " records (--input-format auto looks for every kind)"
	}
	return fmt.Errorf("nothing to read in %s: found %s; %s", strings.Join(named, ", "), what, outcome)
}

func humanBytes(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}

// crashHook lets the exactly-once test kill orchstat at a named point inside
// a commit. It is inert unless ORCHSTAT_TEST_CRASH is set to point:count.
func crashHook() func(string) {
	spec := os.Getenv("ORCHSTAT_TEST_CRASH")
	if spec == "" {
		return nil
	}
	point, count, _ := strings.Cut(spec, ":")
	n := 1
	fmt.Sscan(count, &n)
	return func(p string) {
		if p != point {
			return
		}
		n--
		if n <= 0 {
			proc, _ := os.FindProcess(os.Getpid())
			proc.Signal(os.Kill)
			select {} // never continue past the crash point
		}
	}
}

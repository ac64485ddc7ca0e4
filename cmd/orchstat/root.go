package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"runtime/debug"
	"runtime/pprof"
	"slices"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/mattn/go-isatty"
	"github.com/spf13/cobra"

	"github.com/orchstat/orchstat/query"
)

// Exit codes. Commands that report on monitored systems may speak the
// monitoring-plugin convention instead; none does yet.
const (
	exitOK    = 0
	exitError = 1
	exitUsage = 2
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

// IO carries the process's streams and clock so commands can be tested
// with buffers and a fixed time.
type IO struct {
	In       io.Reader
	Out, Err io.Writer
	Now      func() time.Time
	// ErrIsTTY decides whether progress is drawn on Err.
	ErrIsTTY bool
	// OutWidth is the width in columns of the terminal Out is, so tables
	// can fit it; 0 when Out is no terminal (a pipe, a file), where every
	// cell is printed in full and the output never depends on a terminal.
	OutWidth int
	// OutIsTTY says Out is a terminal, even when --wide forgets its width:
	// a page for a browser is not dumped on one.
	OutIsTTY bool
	// Quiet is the command's -q: set, nothing but errors and warnings is
	// said on Err.
	Quiet bool
	// Report, when set, tells the supervisor the command and the store, so
	// it can explain a crash (see supervise.go).
	Report func(key, value string)
}

func (io *IO) report(key, value string) {
	if io.Report != nil {
		io.Report(key, value)
	}
}

// globals are the flags every command shares.
type globals struct {
	io          *IO
	db          string
	lockTimeout time.Duration
	cpuProfile  string
	deps        deps
	// after runs once the command has answered, whatever its outcome:
	// work the answer must not wait for (a lake's replica's build).
	after []func()
}

// usageError marks errors that should print usage and exit 2.
type usageError struct{ error }

// silentError exits with a code without printing anything more.
type silentError struct{ code int }

func (e silentError) Error() string { return fmt.Sprintf("exit status %d", e.code) }

// mainWith runs orchstat with args and returns the exit code, telling
// report (when set) what it does; see supervise.go.
func mainWith(args []string, in io.Reader, out, errw io.Writer, report func(key, value string)) (code int) {
	if os.Getenv(noSupervisor) == "1" {
		// No supervisor to tell a crash from an exit: a panic here would
		// exit 2, which cron reads from check as CRITICAL. (A fatal error
		// of the runtime, or a panic on another goroutine, still exits 2:
		// only a supervisor can catch those.) The command is known as the
		// supervisor knows it, from what the command reports.
		var command string
		next := report
		report = func(key, value string) {
			if key == "command" {
				command = value
			}
			if next != nil {
				next(key, value)
			}
		}
		defer func() {
			if r := recover(); r != nil {
				fmt.Fprintf(errw, "orchstat: internal error: %v; this is a bug in orchstat, not in your data\n%s", r, debug.Stack())
				code = exitCrash
				if command == "check" {
					code = checkUnknown
				}
			}
		}()
	}
	tty := false
	if f, ok := errw.(*os.File); ok {
		tty = isatty.IsTerminal(f.Fd())
	}
	width, outTTY := 0, false
	if f, ok := out.(*os.File); ok && isatty.IsTerminal(f.Fd()) {
		width, outTTY = terminalWidth(f), true
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return run(ctx, args, &IO{In: in, Out: out, Err: errw, Now: time.Now, ErrIsTTY: tty, OutWidth: width, OutIsTTY: outTTY, Report: report})
}

func run(ctx context.Context, args []string, io *IO) int {
	return runWith(ctx, args, io, defaultDeps())
}

// runWith is run with the dependencies deps instead of the real ones.
func runWith(ctx context.Context, args []string, io *IO, deps deps) int {
	root, g := newRoot(io, deps)
	root.SetArgs(args)
	root.SetIn(io.In)
	root.SetOut(io.Out)
	root.SetErr(io.Err)
	cmd, err := root.ExecuteContextC(ctx)
	for _, f := range g.after {
		f()
	}
	if err == nil {
		return exitOK
	}
	var se silentError
	if errors.As(err, &se) {
		return se.code
	}
	var ue usageError
	if errors.As(err, &ue) || isUnknownCommand(err) {
		fmt.Fprintf(io.Err, "orchstat: %v\n", err)
		if cmd != nil {
			fmt.Fprintf(io.Err, "Run '%s --help' for usage.\n", cmd.CommandPath())
		}
		if isCheck(cmd) {
			// To cron, 2 is CRITICAL: a mistyped check is UNKNOWN.
			return checkUnknown
		}
		return exitUsage
	}
	fmt.Fprintf(io.Err, "orchstat: %v\n", err)
	if isCheck(cmd) {
		return checkUnknown
	}
	return exitError
}

// isCheck reports whether cmd is `orchstat check`, whose every failure
// that is not a critical alert exits 3 (UNKNOWN), as monitoring plugins
// do (docs/exit-codes.md).
func isCheck(cmd *cobra.Command) bool {
	return cmd != nil && cmd.Name() == "check" && cmd.HasParent() && !cmd.Parent().HasParent()
}

// isUnknownCommand recognises cobra's error for a mistyped subcommand, the
// one usage error cobra returns without a hook to type it.
func isUnknownCommand(err error) bool {
	return strings.HasPrefix(err.Error(), "unknown command ")
}

// usageArgs makes a cobra argument check's error a usage error.
func usageArgs(check cobra.PositionalArgs) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if err := check(cmd, args); err != nil {
			return usageError{err}
		}
		return nil
	}
}

func newRootCmd(io *IO) *cobra.Command { return newRootCmdWith(io, defaultDeps()) }

func newRootCmdWith(io *IO, deps deps) *cobra.Command {
	root, _ := newRoot(io, deps)
	return root
}

// newRoot is newRootCmdWith, with the globals its commands share.
func newRoot(io *IO, deps deps) (*cobra.Command, *globals) {
	g := &globals{io: io, deps: deps}
	root := &cobra.Command{
		Use:   "orchstat",
		Short: "Retry, failure and cost statistics for LLM orchestrators and coding agents",
		Long: `orchstat indexes the records of LLM coding orchestrators and agents into an
embedded DuckDB file: the orchestrator's .orchestrator/runs/*/trace.jsonl with
each run's summary.json and verification reports, the factory's,
claudestrator's and orchestr8's records, Claude Code transcripts, Codex
rollouts and OpenTelemetry GenAI exports. It answers how often runs and model
calls retried, failed, escalated, iterated and diagnosed, what they cost, what
needs attention and what changed, and what other retry policies would have
done.

The store is orchstat.duckdb in the nearest .orchestrator folder at or above
the data named (else in that folder's own .orchestrator); agents' records
under ~/.claude or ~/.codex get theirs in $XDG_DATA_HOME/orchstat instead
(~/.local/share/orchstat), as orchstat writes nothing into another tool's
folder. There is no server to start. Set --db or ORCHSTAT_DB to put it elsewhere. report, check,
simulate and recommend cover the runs found under the PATHs named, or the
whole store with no PATH or --all.`,
		Example: `  # Index the runs under the current repository, then report
  orchstat ingest
  orchstat report

  # Report on the last day only, as JSON
  orchstat report --since 24h --format json

  # Ask your own question in SQL
  orchstat sql "SELECT status, count(*) FROM runs GROUP BY ALL"`,
		SilenceErrors: true,
		SilenceUsage:  true,
	}
	root.PersistentFlags().StringVar(&g.db, "db", os.Getenv("ORCHSTAT_DB"),
		"DuckDB file to use (env ORCHSTAT_DB; default orchstat.duckdb in the nearest .orchestrator at or above the data)")
	root.PersistentFlags().DurationVar(&g.lockTimeout, "lock-timeout", 30*time.Second,
		"how long to wait while another process holds the database")
	root.PersistentFlags().StringVar(&g.cpuProfile, "cpuprofile", "", "write a CPU profile to this file")
	root.PersistentFlags().MarkHidden("cpuprofile")
	var profile *os.File
	root.PersistentPreRunE = func(cmd *cobra.Command, args []string) error {
		io.report("command", strings.TrimPrefix(cmd.CommandPath(), "orchstat "))
		if q := cmd.Flags().Lookup("quiet"); q != nil && q.Value.String() == "true" {
			io.Quiet = true
		}
		if err := refuseHTMLAtTerminal(cmd, io); err != nil {
			return err
		}
		if g.cpuProfile == "" {
			return nil
		}
		f, err := os.Create(g.cpuProfile)
		if err != nil {
			return err
		}
		profile = f
		return pprof.StartCPUProfile(f)
	}
	root.PersistentPostRun = func(cmd *cobra.Command, args []string) {
		if profile != nil {
			pprof.StopCPUProfile()
			profile.Close()
		}
	}
	setHelp(root, io)
	root.AddCommand(newIngestCmd(g, nil), newReportCmd(g, nil), newSQLCmd(g, nil), newQuarantineCmd(g, nil), newRulesCmd(g), newMetricsCmd(g, nil), newVersionCmd(io), newCheckCmd(g, nil), newSimulateCmd(g, nil))
	root.AddCommand(newExecCmd(g, nil))
	root.AddCommand(newRecommendCmd(g, nil))
	root.AddCommand(newRetryConfigCmd(g))
	root.AddCommand(newForgetCmd(g))
	root.AddCommand(newExportCmd(g))
	root.AddCommand(newLakeReplicaCmd(g))
	root.AddCommand(newReceiveCmd(g))
	root.AddCommand(newSQLViewsCmd(g, nil))
	root.AddCommand(newGenDocsCmd())
	registerCompletions(root)
	return root, g
}

// dbPath picks the database for a command given its PATH arguments: the
// explicit --db, or orchstat.duckdb beside the data named (see
// defaultDBFor); with no PATH, beside the working directory's runs.
func (g *globals) dbPath(paths []string) string {
	if g.db != "" {
		return g.db
	}
	for _, p := range paths {
		if p == "-" {
			continue
		}
		return defaultDBFor(p)
	}
	return defaultDBFor(".")
}

// defaultDBFor is the store for data at p: orchstat.duckdb in the nearest
// .orchestrator directory at or above p (a file counts from its folder),
// else in p's own .orchestrator (a file's folder's). It is never in an
// unrelated working directory, so a report on a copy of some runs does not
// land in a store that already holds others.
func defaultDBFor(p string) string {
	abs, err := filepath.Abs(p)
	if err != nil {
		return filepath.Join(p, ".orchestrator", "orchstat.duckdb")
	}
	fi, err := os.Stat(abs)
	ext := filepath.Ext(abs)
	if (err == nil && !fi.IsDir()) || (err != nil && (ext == ".jsonl" || ext == ".json")) {
		abs = filepath.Dir(abs)
	}
	if tool, ok := agentToolDir(abs); ok {
		return agentStore(tool, os.Getenv, os.UserHomeDir)
	}
	if d, ok := nearestOrchestrator(abs); ok {
		return filepath.Join(d, "orchstat.duckdb")
	}
	return filepath.Join(abs, ".orchestrator", "orchstat.duckdb")
}

// agentToolDirs are the folders agents keep their records in, which
// belong to those tools: orchstat writes nothing there.
var agentToolDirs = []string{".claude", ".codex"}

// agentToolDir is the agent tool's folder at or above dir (~/.claude,
// ~/.codex), if any.
func agentToolDir(dir string) (string, bool) {
	for d := dir; ; {
		if slices.Contains(agentToolDirs, filepath.Base(d)) {
			return d, true
		}
		up := filepath.Dir(d)
		if up == d {
			return "", false
		}
		d = up
	}
}

// agentStore is the store of the records under an agent tool's folder,
// in the user's data folder ($XDG_DATA_HOME/orchstat, by default
// ~/.local/share/orchstat): claude.duckdb for ~/.claude, codex.duckdb for
// ~/.codex, and for such a folder elsewhere (a copy, another user's) its
// name with a hash of its path, so that two never share a store.
func agentStore(tool string, getenv func(string) string, home func() (string, error)) string {
	dir := getenv("XDG_DATA_HOME")
	h, herr := home()
	if dir == "" || !filepath.IsAbs(dir) {
		if herr != nil {
			return filepath.Join(tool, ".orchestrator", "orchstat.duckdb")
		}
		dir = filepath.Join(h, ".local", "share")
	}
	name := strings.TrimPrefix(filepath.Base(tool), ".")
	if herr != nil || filepath.Dir(tool) != h {
		sum := sha256.Sum256([]byte(tool))
		name += "-" + hex.EncodeToString(sum[:4])
	}
	return filepath.Join(dir, "orchstat", name+".duckdb")
}

// nearestOrchestrator finds the .orchestrator directory at or above dir, as
// git finds .git.
func nearestOrchestrator(dir string) (string, bool) {
	for d := dir; ; {
		if filepath.Base(d) == ".orchestrator" {
			return d, true
		}
		if c := filepath.Join(d, ".orchestrator"); isDir(c) {
			return c, true
		}
		parent := filepath.Dir(d)
		if parent == d {
			return "", false
		}
		d = parent
	}
}

func isDir(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.IsDir()
}

// defaultRuns is the runs directory a command reads when no PATH is named:
// the runs of the nearest .orchestrator at or above the working directory.
func defaultRuns() string {
	if wd, err := os.Getwd(); err == nil {
		if d, ok := nearestOrchestrator(wd); ok {
			return filepath.Join(d, "runs")
		}
	}
	return defaultRunsDir
}

// openExisting opens the store for reading, explaining where stores are
// when the default one is missing. A snapshot holds no lock while it is
// read (see query.Options.Snapshot).
func (g *globals) openExisting(ctx context.Context, snapshot bool) (*query.Store, error) {
	path := g.dbPath(nil)
	if _, err := os.Stat(path); err != nil && g.db == "" {
		return nil, noStoreError(path, storesBelow("."))
	}
	return g.openWith(ctx, path, query.Options{ReadOnly: true, Snapshot: snapshot})
}

// noStoreError says that the default store at path is missing and names
// the stores found below the working directory (found), which is where a
// report on a folder of runs put its store.
func noStoreError(path string, found []string) error {
	msg := fmt.Sprintf("no orchstat database at %s", path)
	switch len(found) {
	case 0:
		return fmt.Errorf("%s: pass --db, or run from the folder holding the .orchestrator directory (ingest and report keep the store in the nearest .orchestrator directory at or above the data they read)", msg)
	case 1:
		return fmt.Errorf("%s; there is one below this folder: pass --db %s (or set ORCHSTAT_DB)", msg, found[0])
	}
	return fmt.Errorf("%s; there are stores below this folder, pass one with --db (or set ORCHSTAT_DB):\n  %s", msg, strings.Join(found, "\n  "))
}

// storesSearchDepth and storesSearchDirs bound storesBelow: a store lies
// in the .orchestrator folder beside the data a report read, a few levels
// below where one works, and a search from a home folder must not walk it
// whole.
const (
	storesSearchDepth = 4
	storesSearchDirs  = 2000
	storesSearchMax   = 10
)

// storesBelow finds default stores (.orchestrator/orchstat.duckdb) in dir
// and the folders a few levels below it, skipping other hidden folders,
// node_modules and vendor; it returns their paths relative to dir (as the
// user would type them), sorted, at most storesSearchMax of them.
func storesBelow(dir string) []string {
	var found []string
	visited := 0
	level := []string{dir}
	for depth := 0; depth <= storesSearchDepth && len(level) > 0; depth++ {
		var next []string
		for _, d := range level {
			if visited++; visited > storesSearchDirs {
				break
			}
			if db := filepath.Join(d, ".orchestrator", "orchstat.duckdb"); isFile(db) {
				found = append(found, db)
			}
			entries, err := os.ReadDir(d)
			if err != nil {
				continue
			}
			for _, e := range entries {
				n := e.Name()
				if !e.IsDir() || strings.HasPrefix(n, ".") || n == "node_modules" || n == "vendor" {
					continue
				}
				next = append(next, filepath.Join(d, n))
			}
		}
		level = next
	}
	sort.Strings(found)
	if len(found) > storesSearchMax {
		found = found[:storesSearchMax]
	}
	return found
}

func isFile(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.Mode().IsRegular()
}

func (g *globals) open(ctx context.Context, path string, readOnly bool) (*query.Store, error) {
	return g.openWith(ctx, path, query.Options{ReadOnly: readOnly})
}

func (g *globals) openWith(ctx context.Context, path string, opts query.Options) (*query.Store, error) {
	if fi, err := os.Stat(path); err == nil && fi.IsDir() {
		return nil, fmt.Errorf("--db %s is a directory; name a file, such as %s", path, filepath.Join(path, "orchstat.duckdb"))
	}
	if abs, err := filepath.Abs(path); err == nil {
		g.io.report("store", abs)
	}
	if !opts.ReadOnly {
		if err := g.makeStoreDir(path); err != nil {
			return nil, err
		}
	}
	opts.LockTimeout = g.lockTimeout
	opts.Waiting = func(holder string) {
		if g.io.Quiet {
			return // cron mails whatever a quiet command prints
		}
		abs, _ := filepath.Abs(path)
		fmt.Fprintf(g.io.Err, "orchstat: waiting for %s, held by %s\n", abs, holder)
	}
	st, err := query.Open(ctx, path, opts)
	if err == nil && st.Recovered {
		fmt.Fprintf(g.io.Err, "orchstat: an earlier orchstat stopped while writing %s; its unfinished work was rolled back and will be read again\n", st.Path)
	}
	if err == nil && st.Reread > 0 {
		lacks := ""
		if opts.ReadOnly {
			lacks = "; this read lacks them"
		}
		fmt.Fprintf(g.io.Err, "orchstat: %s kept agents' tokens in an older form (cache tokens inside input, or 1-hour cache writes not apart): "+
			"the rows of its %d agents' files were set aside, to be read again by the next ingest%s\n",
			st.Path, st.Reread, lacks)
	}
	return st, err
}

// makeStoreDir creates the directories orchstat chooses itself, the
// .orchestrator folder of a default store and the data folder of agents'
// stores; a directory named by --db or ORCHSTAT_DB must exist, so a typo
// does not leave a tree behind.
func (g *globals) makeStoreDir(path string) error {
	dir := filepath.Dir(path)
	if isDir(dir) {
		return nil
	}
	if g.db == "" && filepath.Base(dir) == ".orchestrator" {
		if err := os.Mkdir(dir, 0o755); err != nil && !os.IsExist(err) {
			return fmt.Errorf("creating %s: %w", dir, err)
		}
		return nil
	}
	if g.db == "" && filepath.Base(dir) == "orchstat" {
		// The data folder of agents' stores (agentStore), made as XDG
		// asks: the folder itself 0700.
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return fmt.Errorf("creating %s: %w", dir, err)
		}
		return nil
	}
	return fmt.Errorf("cannot create the store %s: directory %s does not exist (orchstat creates no directory for --db)", path, dir)
}

func newVersionCmd(io *IO) *cobra.Command {
	return &cobra.Command{
		Use:     "version",
		Short:   "Print orchstat's version",
		Example: "  orchstat version",
		Args:    usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, args []string) error {
			engine, err := query.EngineVersion(cmd.Context())
			if err != nil {
				return err
			}
			fmt.Fprintf(io.Out, "orchstat %s (DuckDB %s, duckdb-go %s)\n", version, engine, moduleVersion("github.com/duckdb/duckdb-go/v2"))
			return nil
		},
	}
}

// moduleVersion is the version of module path linked into this binary.
func moduleVersion(path string) string {
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, m := range bi.Deps {
			if m.Path == path {
				if m.Replace != nil {
					m = m.Replace
				}
				return m.Version
			}
		}
	}
	return "(unknown)"
}

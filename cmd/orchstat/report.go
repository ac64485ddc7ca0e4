package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/orchstat/orchstat"
	"github.com/orchstat/orchstat/ingest"
	"github.com/orchstat/orchstat/model/reports"
	"github.com/orchstat/orchstat/query"
	"github.com/orchstat/orchstat/query/lake"
	"github.com/orchstat/orchstat/reports/render"
	"github.com/orchstat/orchstat/rules/alerting"
)

type reportOptions struct {
	g *globals
	ingestFirst
	Since    string
	Until    string
	Runs     []string
	Provider string
	Format   string
	Rules    string
	Output   string
	Prices   string
	// By groups agents' calls (one of reports.UsageBy) instead of the
	// whole report; Timezone is the zone its days are cut in.
	By       string
	Timezone string
	// Compare is --compare; Sections --section; ASCII --ascii.
	Compare  string
	Sections []string
	ASCII    bool
	// reach, when set, is what of a lake the report reads, wider than its
	// window (see lakeReach).
	reach *query.LakeOptions
}

func newReportCmd(g *globals, runF func(context.Context, *reportOptions) error) *cobra.Command {
	o := &reportOptions{g: g}
	cmd := &cobra.Command{
		Use:   "report [PATH...]",
		Short: "Report what needs attention, what changed, and every system's retry, failure and cost figures",
		Long: `Ingest any new lines under PATH (unless --no-ingest), then report. The
first screen is a summary: the window and what it is compared with
(--compare), the alert rules firing or pending at the window's end exactly as
check --at sees them, one line per system (orchestrator runs, other systems'
runs, agents' calls) with its count, failure rate, retry rate and cost, each
with its change against the previous window, and a daily sparkline, and the
models, sessions, runs or stages behind most of the retries, failures and
cost. The details follow, only where there is data (--section all prints
every section, --section NAME,... some): every metric (see docs/metrics.md)
with the counts behind it, marked where it crosses a threshold of the alert
rules, breakdowns by provider and model and by day, the worst runs, stop,
escalation and judge reasons, candidate validity, other systems' runs and
stages, agents' calls by model, and the factory audit. One line says what
was left out for want of data; JSON and CSV keep every field.

--compare previous (the default) compares with the window of equal length
just before (a window without --since starts at the first data, so has
none); --compare SINCE..UNTIL with another; --compare none with nothing. A
rate's change is shown when both windows have the samples its alert rule
asks for, marked ▲ or ▼ when its 95% interval excludes zero and ~ when it
does not. --ascii (or a locale that is not UTF-8) draws in ASCII.

The report covers the runs found under the PATHs named, even when the store
holds more; with no PATH, or --all, the whole store. Its first line names the
store and the scope, and how many of the store's runs it left out. A PATH
with nothing to read is an error (exit 1) every time, and leaves the store
as it was. PATH may be any folder above the data: see orchstat ingest.

--since and --until take a duration back from now (30m, 24h, 7d) or a date
(2026-11-01, or RFC 3339). A run is in the window when its first event is;
runs with no recorded time (factory run summaries) are left out of any time
filter and counted in the overview. --provider matches in any case, and its
request metrics count that provider's requests only. Alert rules are checked
against the report's own numbers: their window and for fields apply to
alerting, not here.

--by day, week, month, session or model shows agents' calls (Claude Code,
Codex, OpenTelemetry) instead: per period, session or model, and per model
within each, their calls, input, cache read, cache write and output tokens,
cost, retries and failures, and the cost of their failed attempts, with a
total. Days, weeks (from Monday) and months are cut at midnight in
--timezone (an IANA name; default the local zone), --since and --until
select calls by their own time (a date is midnight in --timezone), and
models without a price are named. See docs/reports.md.

A call's cost is the cost its record states, else its tokens priced from
the built-in table and --prices FILE (LiteLLM's format; its entries win):
see docs/prices.md. A model without a price is named, and its calls are
left out of the cost, never counted as $0.

On a terminal, tables fit its width (rates as 28.1%, long cells wrapped or
cut, wide tables turned or split); --wide prints them whole, as they are
printed to a pipe or a file.

Exit status 1 means the report is printed but some file could not be read
(stderr names it).`,
		Example: `  orchstat report
  orchstat report --since 7d --provider anthropic
  orchstat report --no-ingest --format json > report.json
  orchstat report testdata/runs --format markdown
  orchstat report ~/.claude --by day
  orchstat report ~/.codex --by session --since 7d --timezone Europe/Paris
  orchstat report --by model --prices model_prices_and_context_window.json`,
		RunE: func(cmd *cobra.Command, args []string) error {
			o.Paths = args
			if _, err := render.ParsePageFormat(o.Format); err != nil {
				return usageError{err}
			}
			if o.By != "" && !slices.Contains(reports.UsageBy, o.By) {
				return usageError{fmt.Errorf("--by %q: give one of %s", o.By, strings.Join(reports.UsageBy, ", "))}
			}
			if _, err := render.ParseSections(o.Sections); err != nil {
				return usageError{err}
			}
			if o.Timezone != "" && o.By == "" {
				return usageError{fmt.Errorf("--timezone cuts --by's days: give --by too")}
			}
			if runF != nil {
				return runF(cmd.Context(), o)
			}
			return reportRun(cmd.Context(), o)
		},
	}
	f := cmd.Flags()
	o.ingestFirst.flags(cmd, "report on the store as it is, without ingesting first")
	o.ingestFirst.lakeFlag(cmd)
	addFilterFlags(cmd, &o.Since, &o.Until, &o.Runs, &o.Provider)
	f.StringVarP(&o.Format, "format", "f", "table", "output format: table, markdown, json, csv or html (one page with charts; see -o)")
	f.StringVar(&o.Rules, "rules", "", "alert rules whose thresholds are marked (default: the built-in alerts.yaml)")
	addOutputFlag(cmd, &o.Output)
	addWideFlag(cmd, g.io)
	addPricesFlag(cmd, &o.Prices)
	f.StringVar(&o.By, "by", "", "show agents' calls, tokens and cost by day, week, month, session or model instead of the whole report")
	f.StringVar(&o.Timezone, "timezone", "", "with --by: the IANA time zone days are cut in (default: the local zone)")
	f.StringVar(&o.Compare, "compare", "previous", "what the summary's changes are against: previous (the window of equal length just before), none, or SINCE..UNTIL")
	f.StringSliceVar(&o.Sections, "section", nil, "print these sections only (summary, metrics, by_day, ...; all prints every one, with data or not)")
	f.BoolVar(&o.ASCII, "ascii", false, "draw the summary's sparklines and marks in ASCII (the default in a locale that is not UTF-8)")
	return cmd
}

func addFilterFlags(cmd *cobra.Command, since, until *string, runs *[]string, provider *string) {
	f := cmd.Flags()
	f.StringVar(since, "since", "", "only runs that started at or after this duration ago or date")
	f.StringVar(until, "until", "", "only runs that started before this duration ago or date")
	f.StringArrayVar(runs, "run", nil, "only this run id (repeatable)")
	f.StringVar(provider, "provider", "", "only runs that used this provider (any case); request figures count its requests only")
}

// filter builds a query.Filter from the flag values.
func buildFilter(now time.Time, since, until string, runs []string, provider string) (query.Filter, error) {
	f := query.Filter{Runs: runs, Provider: provider}
	var err error
	if since != "" {
		if f.Since, err = parseWhen(now, since); err != nil {
			return f, usageError{fmt.Errorf("--since: %w", err)}
		}
	}
	if until != "" {
		if f.Until, err = parseWhen(now, until); err != nil {
			return f, usageError{fmt.Errorf("--until: %w", err)}
		}
	}
	// An empty window is a mistake (the bounds swapped, most likely), not a
	// question whose answer is zero runs.
	if f.Since != nil && f.Until != nil && !f.Since.Before(*f.Until) {
		return f, usageError{fmt.Errorf("--since %s is not before --until %s: no run can start in that window",
			f.Since.Format(time.RFC3339), f.Until.Format(time.RFC3339))}
	}
	return f, nil
}

var daysRe = regexp.MustCompile(`^(\d+)d$`)

// parseWhen reads "24h"/"7d" as that long before now, or a date.
func parseWhen(now time.Time, s string) (*time.Time, error) {
	var t time.Time
	if m := daysRe.FindStringSubmatch(s); m != nil {
		n, _ := strconv.Atoi(m[1])
		t = now.AddDate(0, 0, -n)
	} else if d, err := time.ParseDuration(s); err == nil {
		t = now.Add(-d)
	} else if d, err := time.Parse("2006-01-02", s); err == nil {
		t = d
	} else if d, err := time.Parse(time.RFC3339Nano, s); err == nil {
		t = d
	} else {
		return nil, fmt.Errorf("%q is neither a duration (30m, 24h, 7d) nor a date (2026-11-01 or RFC 3339)", s)
	}
	t = t.UTC()
	return &t, nil
}

// loadRules reads --rules, or the rules built into the binary.
func loadRules(path string) (*alerting.File, error) {
	if path == "" {
		return alerting.Parse("alerts.yaml (built in)", orchstat.DefaultAlerts)
	}
	return alerting.Load(path)
}

// ingestFirst is what report, check, simulate and recommend share: PATH
// arguments to ingest before they read the store, the scope they cover,
// and the flags around that.
type ingestFirst struct {
	Paths []string
	// All covers the whole store even when PATHs are named.
	All       bool
	NoIngest  bool
	Quiet     bool
	StdinName string
	Tuning    tuning
	// Lake, when set, is read instead of the store (see lakeFlag), within
	// Window when the command has a time filter.
	Lake   string
	Window query.LakeOptions
	// lakeName is the lake's location as the lake names itself, once read.
	lakeName string
}

// lakeFlag adds --lake, for the commands that can read a lake.
func (i *ingestFirst) lakeFlag(cmd *cobra.Command) {
	cmd.Flags().StringVar(&i.Lake, "lake", "", "read this Parquet lake (a directory, or s3://bucket/prefix) instead of the store; see docs/lake.md")
}

// openLake loads the lake into a store in memory.
func (i *ingestFirst) openLake(ctx context.Context, g *globals) (*query.Store, error) {
	if len(i.Paths) > 0 {
		return nil, usageError{fmt.Errorf("--lake reads the runners' exports; PATH arguments name local files: give one or the other")}
	}
	lk, err := lake.Open(ctx, i.Lake, g.deps.lake)
	if err != nil {
		return nil, err
	}
	i.lakeName = lk.Location()
	o := i.Window
	o.LockTimeout = g.lockTimeout
	// Without a cache folder the lake is read whole, into memory.
	if o.Replica, err = lake.ReplicaPath(g.deps.lake, lk.Key()); err != nil {
		fmt.Fprintf(g.io.Err, "orchstat: %v; reading the whole lake into memory\n", err)
	}
	st, read, err := query.OpenLake(ctx, lk, o)
	warnAll(g.io.Err, read.Warnings)
	return st, err
}

func (i *ingestFirst) flags(cmd *cobra.Command, noIngestHelp string) {
	cmd.Flags().BoolVar(&i.NoIngest, "no-ingest", false, noIngestHelp)
	cmd.Flags().BoolVar(&i.All, "all", false, "cover every run in the store, not only the runs found under the PATHs named")
	addIngestFlags(cmd, &i.Quiet, &i.StdinName, &i.Tuning)
}

// scopePaths are the paths whose runs the command covers, as the store
// names them; nil means the whole store (no PATH, or --all).
func (i *ingestFirst) scopePaths() []string {
	if i.All || len(i.Paths) == 0 {
		return nil
	}
	out := make([]string, 0, len(i.Paths))
	for _, p := range i.Paths {
		out = append(out, ingest.ScopePaths(p, i.StdinName)...)
	}
	return out
}

// scopeOf counts what the command's scope covers in st, and returns the
// paths its queries filter on: none when the scope leaves no run out, as
// filtering by path then changes nothing and costs a join on every query.
// shown is false when no one will read the counts (check --quiet), which
// spares the whole store's count.
func (i *ingestFirst) scopeOf(ctx context.Context, st *query.Store, shown bool) (reports.Scope, []string, error) {
	named := i.scopePaths()
	if len(named) == 0 && !shown {
		return reports.Scope{Paths: []string{}}, nil, nil
	}
	sc, err := st.ScopeOf(ctx, named)
	if err != nil {
		return sc, nil, err
	}
	if err := missingPaths(ctx, st, named); err != nil {
		return sc, nil, err
	}
	if sc.RunsLeftOut == 0 {
		return sc, nil, nil
	}
	return sc, sc.Paths, nil
}

// missingPaths fails for a named path that is not on disk and under which
// the store holds no run: a mistyped path, which without --no-ingest
// fails to ingest. Runs whose files were since removed are still the
// store's to report.
func missingPaths(ctx context.Context, st *query.Store, named []string) error {
	for _, p := range named {
		if strings.HasPrefix(p, "<stdin:") {
			continue
		}
		if _, err := os.Stat(p); err == nil || !errors.Is(err, fs.ErrNotExist) {
			continue
		}
		sc, err := st.ScopeOf(ctx, []string{p})
		if err != nil {
			return err
		}
		if sc.RunsInStore-sc.RunsLeftOut == 0 {
			return fmt.Errorf("%s: no such file or directory, and the store holds no run under it", p)
		}
	}
	return nil
}

// narrow limits f to the runs under the named PATHs, and warns of filters
// (a run ID, a provider) that match nothing; it returns the scope to show.
func (i *ingestFirst) narrow(ctx context.Context, g *globals, st *query.Store, f *query.Filter) (reports.Scope, error) {
	scope, paths, err := i.scopeOf(ctx, st, true)
	if err != nil {
		return scope, err
	}
	scope.Lake = i.lakeName
	f.Paths = paths
	return scope, warnUnmatched(ctx, g.io.Err, st, *f)
}

// open ingests first unless told not to, and returns the store and whether
// some file could not be read. The store is read-only unless write is set
// or an ingest runs. Named PATHs with nothing to read are an error, and
// no store is created for them.
func (i *ingestFirst) open(ctx context.Context, g *globals, write bool) (*query.Store, bool, error) {
	if i.Lake != "" {
		st, err := i.openLake(ctx, g)
		return st, false, err
	}
	paths := i.Paths
	if i.NoIngest {
		st, err := g.open(ctx, g.dbPath(paths), !write)
		return st, false, err
	}
	if err := checkFormat(i.Tuning.Format); err != nil {
		return nil, false, err
	}
	if len(paths) == 0 {
		runs := defaultRuns()
		if _, err := os.Stat(runs); err != nil {
			db := g.dbPath(nil)
			if _, derr := os.Stat(db); derr == nil {
				// No runs here, but a store exists: use it as it is.
				st, err := g.open(ctx, db, !write)
				return st, false, err
			}
			return nil, false, fmt.Errorf("no runs at %s and no store at %s: name the data to read (a runs folder, a run folder or a file), or pass --db", runs, db)
		}
		paths = []string{runs}
	}
	if err := checkPaths(paths); err != nil {
		return nil, false, err
	}
	db := g.dbPath(paths)
	found, err := somethingToRead(g, db, paths, i.Tuning, i.Quiet)
	if err != nil {
		return nil, false, err
	}
	st, err := g.open(ctx, db, false)
	if err != nil {
		return nil, false, err
	}
	res, err := doIngest(ctx, g, st, paths, found, i.Quiet, i.StdinName, i.Tuning)
	if err == nil && nothingFound(paths, res) {
		err = nothingToRead(paths, i.Tuning.Format, "the store is unchanged")
	}
	if err != nil {
		st.Close()
		return nil, false, err
	}
	return st, len(res.Errors) > 0, nil
}

func reportRun(ctx context.Context, o *reportOptions) error {
	if o.By != "" {
		return usageRun(ctx, o)
	}
	format, _ := render.ParsePageFormat(o.Format)
	now := o.g.io.Now().UTC()
	f, err := buildFilter(now, o.Since, o.Until, o.Runs, o.Provider)
	if err != nil {
		return err
	}
	rf, err := loadRules(o.Rules)
	if err != nil {
		return err
	}
	cmp, err := parseCompare(now, o.Compare)
	if err != nil {
		return err
	}
	sections, _ := render.ParseSections(o.Sections)
	reach := lakeReach(f, cmp, rf, now)
	o.reach = &reach
	st, scope, unread, err := o.openPriced(ctx, &f)
	if err != nil {
		return err
	}
	defer st.Close()
	r, err := st.ReportConcurrently(ctx, f)
	if err != nil {
		return err
	}
	r.GeneratedAt = now
	r.Database = o.g.dbPath(o.Paths)
	if o.Lake != "" {
		r.Database = "lake " + o.lakeName
	}
	r.Scope = scope
	if r.Thresholds, err = thresholds(o.g.io, rf, r.Metrics); err != nil {
		return err
	}
	if r.Summary, err = summarise(ctx, st, f, r, rf, scope, cmp, now); err != nil {
		return err
	}
	ropts := render.Options{Sections: sections, ASCII: o.ASCII || !utf8Locale(os.Getenv)}
	err = withOutput(o.g.io, o.Output, func(io *IO) error {
		ropts.Width = io.OutWidth
		return render.RenderReport(io.Out, r, format, ropts)
	})
	if err != nil {
		return err
	}
	if unread {
		// The report is printed, but cron should still learn that some
		// files were not read (named above on stderr).
		return silentError{exitError}
	}
	return nil
}

// openPriced is what report and report --by do before they read: the
// prices, the store or lake (ingesting first, within f's window), and f
// narrowed to the scope. unread says some file could not be read.
func (o *reportOptions) openPriced(ctx context.Context, f *query.Filter) (st *query.Store, scope reports.Scope, unread bool, err error) {
	table, err := loadPrices(o.g.io, o.Prices)
	if err != nil {
		return nil, scope, false, err
	}
	o.Window = query.LakeOptions{Since: f.Since, Until: f.Until}
	if o.reach != nil {
		o.Window = *o.reach
	}
	if st, unread, err = o.ingestFirst.open(ctx, o.g, false); err != nil {
		return nil, scope, false, err
	}
	st.UsePrices(table)
	if scope, err = o.narrow(ctx, o.g, st, f); err != nil {
		st.Close()
		return nil, scope, false, err
	}
	return st, scope, unread, nil
}

// thresholds checks every rule over a plain METRICS.md metric (no `by`,
// no custom SQL) against the report's overall numbers.
func thresholds(io *IO, rf *alerting.File, m reports.Metrics) ([]reports.Threshold, error) {
	out := []reports.Threshold{}
	for _, r := range rf.Rules {
		if len(r.By) > 0 || r.SQL != "" || r.Window.Runs > 0 {
			// Not a plain metric over the report's scope: split by labels,
			// its own query, or about the last N runs only (a cascade).
			continue
		}
		v, ok := m[r.Metric]
		switch {
		case !ok:
			fmt.Fprintf(io.Err, "orchstat: %s: rule %q: %q is not a metric orchstat reports (see docs/metrics.md); not marked\n", rf.Path, r.Name, r.Metric)
			continue
		case r.Threshold == nil:
			fmt.Fprintf(io.Err, "orchstat: %s: rule %q has no threshold; not marked\n", rf.Path, r.Name)
			continue
		}
		crossed, err := r.Holds(alerting.Sample{Value: v.Value, Numerator: v.Numerator, Denominator: v.Denominator})
		if err != nil {
			return nil, err
		}
		out = append(out, reports.Threshold{Metric: r.Metric, Rule: r.Name, Severity: r.Severity,
			Threshold: *r.Threshold, Condition: r.Condition, Value: v.Value, Crossed: crossed})
	}
	return out, nil
}

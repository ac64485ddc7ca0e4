package main

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/orchstat/orchstat/model/devices"
	"github.com/orchstat/orchstat/model/reports"
	"github.com/orchstat/orchstat/query"
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
	// Devices are --device NAME=PATH: the user's names for the folders
	// their agents' records were read from (see model/devices).
	Devices []string
	// WeekReset is --week-reset: a time the plan's weekly limit reset.
	WeekReset string
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

--by day, week, month, session, model, device or project shows agents' calls
(Claude Code, Codex, OpenTelemetry) instead: per period, session, model,
device (where the records were read: a lake's runner, else the agent's
folder, such as ~/.claude or ~/sync/workstation/.claude; --device
NAME=PATH names one) or project (the working folder the calls ran in), and
per model within each, their calls, input, cache read, cache write and output tokens,
cost, retries and failures, and the cost of their failed attempts, with a
total. Days, weeks (from Monday) and months are cut at midnight in
--timezone (an IANA name; default the local zone), --since and --until
select calls by their own time (a date is midnight in --timezone), and
models without a price are named. A call seen on two devices (a synced
~/.claude read beside the local one, a session two runners exported) or
twice on one is counted once, and the report says how many were. See
docs/reports.md.

--by block shows Claude Code's 5-hour billing blocks exactly as ccusage's
blocks report cuts them (the first call's hour, five hours, a new block
after them or after five idle hours, the gaps between), each with its
calls, tokens, cost and models, the active block's burn rate and its
projected use at its end, the week before now, and the plan's rate-limit
figures (used percentage, reset time) where records carry them (Codex
rollouts). Its times are in --timezone; --since and --until select blocks
by their start. Claude's weekly limit resets at a time the records do not
carry: --week-reset gives one (Claude's settings show it), and the week
is then the one it repeats into, with its use projected to its end.

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
  orchstat report ~/.claude --by block --since 1d
  orchstat report ~/.claude ~/sync/workstation/.claude --by device --device laptop=~/.claude --device workstation=~/sync/workstation/.claude
  orchstat report --lake /mnt/orchstat-lake --by project
  orchstat report --by model --prices model_prices_and_context_window.json`,
		RunE: func(cmd *cobra.Command, args []string) error {
			o.Paths = args
			if _, err := render.ParsePageFormat(o.Format); err != nil {
				return usageError{err}
			}
			if o.By != "" && o.By != byBlock && !slices.Contains(reports.UsageBy, o.By) {
				return usageError{fmt.Errorf("--by %q: give one of %s", o.By, strings.Join(append(slices.Clone(reports.UsageBy), byBlock), ", "))}
			}
			if _, err := render.ParseSections(o.Sections); err != nil {
				return usageError{err}
			}
			if o.WeekReset != "" && o.By != byBlock {
				return usageError{fmt.Errorf("--week-reset anchors --by block's week: give --by block too")}
			}
			if o.Timezone != "" && o.By == "" {
				return usageError{fmt.Errorf("--timezone cuts --by's days: give --by too")}
			}
			if len(o.Devices) > 0 && o.By == "" {
				return usageError{fmt.Errorf("--device names --by's devices: give --by too")}
			}
			if len(o.Devices) > 0 && o.By == byBlock {
				// A plan's blocks are one account's, whatever machine the
				// calls were read on: --by block has no devices to name.
				return usageError{fmt.Errorf("--device names --by's devices; --by block cuts one plan's blocks over every device")}
			}
			for _, d := range o.Devices {
				if _, err := devices.ParseNamed(d); err != nil {
					return usageError{fmt.Errorf("--device %v", err)}
				}
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
	f.StringVar(&o.By, "by", "", "show agents' calls, tokens and cost by day, week, month, session, model, device or project, or Claude Code's 5-hour billing blocks (block), instead of the whole report")
	f.StringVar(&o.Timezone, "timezone", "", "with --by: the IANA time zone days are cut in (default: the local zone)")
	f.StringArrayVar(&o.Devices, "device", nil, "with --by: name a device, NAME=PATH: the calls read from files under PATH are that device's (laptop=~/.claude; in a lake, RUNNER:PATH); repeatable")
	f.StringVar(&o.WeekReset, "week-reset", "", "with --by block: a time your plan's weekly limit reset (RFC 3339, or a date at midnight in --timezone); the week is the one it repeats into, projected to its end (default: the 7 days to now)")
	f.StringVar(&o.Compare, "compare", "previous", "what the summary's changes are against: previous (the window of equal length just before), none, or SINCE..UNTIL")
	f.StringSliceVar(&o.Sections, "section", nil, "print these sections only (summary, metrics, by_day, ...; all prints every one, with data or not)")
	f.BoolVar(&o.ASCII, "ascii", false, "draw the summary's sparklines and marks in ASCII (the default in a locale that is not UTF-8)")
	return cmd
}

func reportRun(ctx context.Context, o *reportOptions) error {
	if o.By == byBlock {
		return blocksRun(ctx, o)
	}
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

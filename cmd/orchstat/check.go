package main

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/orchstat/orchstat/model/alerts"
	"github.com/orchstat/orchstat/model/records/prices"
	"github.com/orchstat/orchstat/model/reports"
	"github.com/orchstat/orchstat/query"
	"github.com/orchstat/orchstat/reports/render"
	"github.com/orchstat/orchstat/rules/alerting"
	"github.com/orchstat/orchstat/rules/check"
	"github.com/orchstat/orchstat/rules/notify"
	"github.com/orchstat/orchstat/rules/retry"
)

// check speaks the monitoring-plugin convention (see check.OK).
const (
	checkOK       = check.OK
	checkWarning  = check.Warning
	checkCritical = check.Critical
	checkUnknown  = check.Unknown
)

// checkOptions are check's flags and what it takes from outside.
type checkOptions struct {
	g *globals
	ingestFirst
	Format   string
	Rules    string
	Textfile string
	// At is --at: evaluate the rules at this past time, as a look.
	At string
	// Prices is --prices; prices is the table it makes, which every store
	// the check reads prices its calls with.
	Prices string
	prices *prices.Table

	IO *IO
	// Open opens a store for writing, as a check keeps its state in it;
	// NewSender makes the notification sender.
	Open      func(ctx context.Context, path string) (check.Store, error)
	NewSender func(now func() time.Time) *notify.Sender
}

func newCheckCmd(g *globals, runF func(context.Context, *checkOptions) error) *cobra.Command {
	o := &checkOptions{g: g, IO: g.io, NewSender: g.deps.newSender,
		Open: func(ctx context.Context, path string) (check.Store, error) {
			st, err := g.open(ctx, path, false)
			if err != nil {
				return nil, err
			}
			return query.NewCheckStore(st), nil
		}}
	cmd := &cobra.Command{
		Use:   "check [PATH...]",
		Short: "Evaluate the alert rules, keeping alert state between runs (for cron)",
		Long: `Ingest any new lines (unless --no-ingest), evaluate every rule of the rule
file over its window, and print every rule with its state and value. Alert
state is kept in the store, so a rule's for and keep_firing_for span cron
runs: an alert is pending until its condition has held long enough, then
firing, and resolved once it stops holding (after keep_firing_for). A rule
whose data has no samples reports no data and keeps its alerts as they are
rather than resolving them.

With PATHs, the rules see only the runs found under them; when that leaves
some of the store's runs out, the alerts carry a scope label naming the
PATHs, so their state is kept apart from a whole-store check's. With no
PATH (or --all), the whole store. The first line of a table names the store
and the scope; JSON has database and scope. A PATH with nothing to read is
UNKNOWN (exit 3).

Every rule is listed, inactive ones too, with its value, its threshold and
the counts behind the value, so you see how close a rule is to firing.
Tables show rates as percentages (28.1%) and counts as integers; JSON and
CSV keep full precision. At a terminal the table fits its width (labels
follow the rule's name, long cells wrap or are cut with "…"); --wide
prints every column in full, as output to a pipe or a file always is.

--quiet prints nothing while no alert fires; when one does, it prints a
status line and one line per firing alert, for cron to mail:

  CRITICAL - 1 alert firing
  run_failure_cascade 3 >= 3 (active since 2026-11-21T12:00:00Z)

--quiet does not change --format json or csv, which are always printed.

A rule with no data in its window says when the latest run started, and a
label set past its threshold but short of the samples its condition asks
for says so (33.3% (1/3) > 30%, needs ≥ 5) below the table.

--at TIME evaluates the rules as they would have been at TIME (RFC 3339,
a date such as 2025-11-05, or a duration ago such as 36h or 7d): every
window ends at TIME, and only the runs that started before it count. It is
a look, not a round of cron: alert state is neither read nor saved and
nothing is notified, so an alert starts from inactive and a rule with for
shows pending at most. rules backtest runs the state machine over the
recorded history instead. --at cannot be used with --textfile.

Exit status follows the monitoring-plugin convention: 0 nothing firing,
1 a warning alert firing, 2 a critical alert firing, 3 unknown (bad rules,
an unreadable store, ...).`,
		Example: `  # Every 5 minutes from cron
  */5 * * * * cd /repo && orchstat check --quiet

  orchstat check --rules team-alerts.yaml --format json

  # The rules over runs recorded a while ago, as they were at their end
  orchstat check testdata/runs --at 2025-11-05T19:06:00Z`,
		RunE: func(cmd *cobra.Command, args []string) error {
			o.Paths = args
			if _, err := render.ParseFormat(o.Format); err != nil {
				return usageError{err}
			}
			if _, err := o.at(); err != nil {
				return err
			}
			if runF != nil {
				return runF(cmd.Context(), o)
			}
			return checkRun(cmd.Context(), o)
		},
	}
	f := cmd.Flags()
	o.ingestFirst.flags(cmd, "evaluate the store as it is, without ingesting first")
	o.ingestFirst.lakeFlag(cmd)
	f.StringVarP(&o.Format, "format", "f", "table", "output format: table, markdown, json or csv")
	f.StringVar(&o.Rules, "rules", "", "rule file (default: the built-in alerts.yaml)")
	f.StringVar(&o.Textfile, "textfile", "", "also write the evaluated metrics and alert states here, for node_exporter's textfile collector")
	addPricesFlag(cmd, &o.Prices)
	f.StringVar(&o.At, "at", "", "evaluate at this past time (RFC 3339, a date, or a duration ago) without reading or saving alert state or notifying")
	f.Lookup("quiet").Usage = "print nothing unless an alert fires, then a status line and one line per firing alert (and no ingest progress)"
	addWideFlag(cmd, g.io)
	return cmd
}

// at is --at as a time, nil without it. A time that is not in the past
// is a usage error, as is --at with --textfile: node_exporter would take
// the look for the present.
func (o *checkOptions) at() (*time.Time, error) {
	if o.At == "" {
		return nil, nil
	}
	now := o.IO.Now().UTC()
	t, err := parseWhen(now, o.At)
	if err != nil {
		return nil, usageError{fmt.Errorf("--at: %w", err)}
	}
	if !t.Before(now) {
		return nil, usageError{fmt.Errorf("--at %s is not in the past (now is %s)", t.Format(time.RFC3339), now.Format(time.RFC3339))}
	}
	if o.Textfile != "" {
		return nil, usageError{fmt.Errorf("--at is a look at a past time: it writes no --textfile")}
	}
	return t, nil
}

// checkRun wraps evaluate so that every failure is "unknown" (3).
func checkRun(ctx context.Context, o *checkOptions) error {
	code, err := evaluate(ctx, o)
	if err != nil {
		fmt.Fprintf(o.IO.Err, "orchstat: UNKNOWN: %v\n", err)
		return silentError{checkUnknown}
	}
	if code != checkOK {
		return silentError{code}
	}
	return nil
}

func evaluate(ctx context.Context, o *checkOptions) (int, error) {
	format, _ := render.ParseFormat(o.Format)
	now := o.IO.Now().UTC()
	rf, err := loadRules(o.Rules)
	if err != nil {
		return 0, err
	}
	if o.prices, err = loadPrices(o.IO, o.Prices); err != nil {
		return 0, err
	}
	at, err := o.at()
	if err != nil {
		return 0, err
	}
	if at != nil {
		return look(ctx, o, rf, format, *at)
	}
	if o.Lake != "" {
		return evaluateLake(ctx, o, rf, format, now)
	}
	opts := checkRound(o, rf, now)
	res, scope, err := checkStore(ctx, o, format, opts)
	if err != nil {
		return 0, err
	}
	if err := check.Deliver(ctx, opts, &res); err != nil {
		return 0, err
	}
	return res.Code, finishCheck(o, res, now, check.NewReport(res.DB, scope, res, now, false, rf), format)
}

// checkRound is what a round of check hands check.Run and check.Deliver,
// over the store or a lake alike: the rules, the instant, and the way to
// the receivers.
func checkRound(o *checkOptions, rf *alerting.File, now time.Time) check.Options {
	return check.Options{Open: o.Open, Lock: lockDeliveries, Rules: rf, Now: now, Clock: o.IO.Now, Sender: o.NewSender(o.IO.Now),
		LockTimeout: o.g.lockTimeout, Warn: func(msg string) { fmt.Fprintf(o.IO.Err, "orchstat: %s\n", msg) }}
}

// checkStore ingests, evaluates the rules over the store and saves the
// alerts. It closes the store as it returns, before anything is
// delivered, so that no reader waits on a slow receiver.
func checkStore(ctx context.Context, o *checkOptions, format render.Format, opts check.Options) (check.Result, reports.Scope, error) {
	// check always writes (its alert state), so the store opens read-write.
	st, unread, err := o.ingestFirst.open(ctx, o.g, true)
	if err != nil {
		return check.Result{}, reports.Scope{}, err
	}
	defer st.Close()
	st.UsePrices(o.prices)
	if unread {
		return check.Result{}, reports.Scope{}, fmt.Errorf("some files could not be read (named above)")
	}
	// --quiet prints tables as status lines, which do not show the scope.
	shown := !o.Quiet || format == render.FormatJSON || format == render.FormatCSV
	scope, paths, err := o.scopeOf(ctx, st, shown)
	if err != nil {
		return check.Result{}, reports.Scope{}, err
	}
	opts.Store, opts.Paths, opts.Scope = query.NewCheckStore(st), paths, scopeLabel(scope)
	res, err := check.Run(ctx, opts)
	return res, scope, err
}

// look is check --at: the rules evaluated at a past time over the store
// (or the lake) as it was then, saving and sending nothing.
func look(ctx context.Context, o *checkOptions, rf *alerting.File, format render.Format, at time.Time) (int, error) {
	var st *query.Store
	var scope reports.Scope
	var paths []string
	var err error
	db := ""
	if o.Lake != "" {
		o.Window = rulesWindow(rf, at)
		if o.Window.Since != nil {
			until := at // the runs that started before at
			o.Window.Until = &until
		}
		if st, err = o.openLake(ctx, o.g); err != nil {
			return 0, err
		}
		defer st.Close()
		st.UsePrices(o.prices)
		if scope, err = st.ScopeOf(ctx, nil); err != nil {
			return 0, err
		}
		scope.Lake = o.lakeName
		db = "lake " + o.lakeName
	} else {
		var unread bool
		if st, unread, err = o.ingestFirst.open(ctx, o.g, false); err != nil {
			return 0, err
		}
		defer st.Close()
		st.UsePrices(o.prices)
		if unread {
			return 0, fmt.Errorf("some files could not be read (named above)")
		}
		shown := !o.Quiet || format == render.FormatJSON || format == render.FormatCSV
		if scope, paths, err = o.scopeOf(ctx, st, shown); err != nil {
			return 0, err
		}
		db = st.Path
	}
	res, err := check.Look(ctx, query.NewCheckStore(st), rf, at, paths, scopeLabel(scope))
	if err != nil {
		return 0, err
	}
	for _, f := range res.Failures {
		fmt.Fprintf(o.IO.Err, "orchstat: rule %s: %v\n", f.Rule, f.Err)
	}
	return res.Code, render.RenderCheck(o.IO.Out, check.NewReport(db, scope, res, at, true, rf), format, o.IO.OutWidth, o.Quiet)
}

// finishCheck writes the textfile, if asked, and prints the check.
func finishCheck(o *checkOptions, res check.Result, now time.Time, rep alerts.CheckReport, format render.Format) error {
	if o.Textfile != "" {
		if err := writeCheckTextfile(o.Textfile, res, now); err != nil {
			return err
		}
	}
	return render.RenderCheck(o.IO.Out, rep, format, o.IO.OutWidth, o.Quiet)
}

// evaluateLake checks a lake's rows. The alerts and the notifications
// they queue are kept in the store (--db), under the scope "lake
// LOCATION", so a later check knows how long an alert has been pending and
// what was sent, and a check of the store's own runs keeps its alerts.
func evaluateLake(ctx context.Context, o *checkOptions, rf *alerting.File, format render.Format, now time.Time) (int, error) {
	o.Window = rulesWindow(rf, now)
	opts := checkRound(o, rf, now)
	res, runs, err := checkLake(ctx, o, opts)
	if err != nil {
		return 0, err
	}
	if err := check.Deliver(ctx, opts, &res); err != nil {
		return 0, err
	}
	return res.Code, finishCheck(o, res, now, check.NewReport("lake "+o.lakeName, runs, res, now, false, rf), format)
}

// checkLake evaluates the rules over the lake and saves the alerts in the
// store, closing both as it returns, before anything is delivered.
func checkLake(ctx context.Context, o *checkOptions, opts check.Options) (check.Result, reports.Scope, error) {
	data, err := o.openLake(ctx, o.g)
	if err != nil {
		return check.Result{}, reports.Scope{}, err
	}
	defer data.Close()
	data.UsePrices(o.prices)
	st, err := o.g.open(ctx, o.g.dbPath(nil), false)
	if err != nil {
		return check.Result{}, reports.Scope{}, err
	}
	defer st.Close()
	runs, err := data.ScopeOf(ctx, nil)
	if err != nil {
		return check.Result{}, reports.Scope{}, err
	}
	runs.Lake = o.lakeName
	opts.Store, opts.Data, opts.Scope = query.NewCheckStore(st), query.NewCheckStore(data), "lake "+o.lakeName
	res, err := check.Run(ctx, opts)
	return res, runs, err
}

// rulesWindow is the time window every rule's runs start in, so a check
// reads only the lake partitions they are in: from the longest window
// back. A rule over the last N runs may need any run, and a rule's own SQL
// any table, so then it is all.
func rulesWindow(rf *alerting.File, now time.Time) query.LakeOptions {
	var longest time.Duration
	for _, r := range rf.Rules {
		if r.SQL != "" {
			// A rule's own SQL may read any table, over any time.
			return query.LakeOptions{All: true}
		}
		if r.Window.Duration <= 0 {
			return query.LakeOptions{}
		}
		longest = max(longest, r.Window.Duration)
	}
	if longest == 0 {
		return query.LakeOptions{}
	}
	since := now.Add(-longest)
	return query.LakeOptions{Since: &since}
}

// writeCheckTextfile writes the check's metrics and alert states for
// node_exporter's textfile collector.
func writeCheckTextfile(path string, res check.Result, now time.Time) error {
	prom := make([]render.PromSample, 0, len(res.Gauges)+3)
	for _, g := range res.Gauges {
		prom = append(prom, render.PromSample{Name: g.Name, Help: g.Help, Labels: g.Labels, Value: g.Value})
	}
	prom = append(prom,
		render.PromSample{Name: "notifications_queued", Help: "Notifications not yet delivered, kept for the next check.", Value: float64(res.Kept)},
		render.PromSample{Name: "check_timestamp_seconds", Help: "When orchstat check last evaluated the rules.", Value: float64(now.UnixMilli()) / 1000},
		render.PromSample{Name: "check_status", Help: "orchstat check's exit status: 0 OK, 1 warning, 2 critical, 3 unknown (a rule failed).", Value: float64(res.Code)})
	return render.WriteTextfile(path, prom)
}

// scopeLabel is the scope label of a check's alerts: its paths when they
// leave some of the store's runs out, else none, as a check of everything
// there is is the whole store's.
func scopeLabel(s reports.Scope) string {
	if s.RunsLeftOut == 0 {
		return ""
	}
	return strings.Join(s.Paths, ",")
}

// lockDeliveries is the store's delivery lock, waiting between tries with
// the retry core's one wait.
func lockDeliveries(ctx context.Context, db string, wait time.Duration) (func(), error) {
	return query.LockDeliveries(ctx, db, wait, retry.Sleep)
}

package main

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/orchstat/orchstat/model/alerts"
	"github.com/orchstat/orchstat/query"
	"github.com/orchstat/orchstat/reports/render"
	"github.com/orchstat/orchstat/rules/alerting"
	"github.com/orchstat/orchstat/rules/check"
)

// maxBacktestPoints caps a backtest's evaluations: each reads the store
// once per window the rules use.
const maxBacktestPoints = 10000

// backtestOptions are rules backtest's flags and what it takes from
// outside.
type backtestOptions struct {
	g *globals
	ingestFirst
	Format         string
	Rules          string
	From, To, Step string
	IO             *IO
}

func newRulesBacktestCmd(g *globals, runF func(context.Context, *backtestOptions) error) *cobra.Command {
	o := &backtestOptions{g: g, IO: g.io}
	cmd := &cobra.Command{
		Use:   "backtest [PATH...]",
		Short: "Evaluate the alert rules over the recorded history, as cron would have",
		Long: `Evaluate every rule of the rule file at each step from --from to --to, as
check would have had it run from cron at each step, and print when each
alert would have fired and resolved and how many notifications it would have
sent. Tune thresholds this way before turning cron on.

Each evaluation is check's: the rules' windows end at the step (only runs
that started before it count), and alert state goes from one step to the
next as it does between checks (pending, firing after for, kept firing for
keep_firing_for, resolved), but in memory: the store's alert state is
neither read nor written, and nothing is sent. Notifications are planned as
check plans them, with the route's group_by and repeat_interval; sent counts
the changes and repeats check would have queued (a notification grouping
several rules counts for each), not Alertmanager's periodic refreshes.

--from and --to default to the first and the last run's start, on the
step's grid (the last step is after the last run); they take RFC 3339, a
date such as 2025-11-05, or a duration ago such as 7d. --step defaults to
the shortest of 5m, 15m, 1h, 3h, 6h, 12h, 1d and 7d that gives at most 200
evaluations: 1h for a few days of runs, 1d for half a year. A rule's for
counted in checks (for: 2) counts steps, so at 1h for: 2 fires an hour after
the condition first holds; --step 5m matches a check every 5 minutes. A
rule with its own sql reads the store as it is now, so it is skipped.

With PATHs, the rules see only the runs found under them, as check's do.
Tables fit a terminal's width (--wide prints them whole); JSON and CSV keep
full precision.

Exit status: 0 when every rule was evaluated (whatever fired), 1 when a rule
failed or the store could not be read, 2 on usage errors.`,
		Example: `  # The built-in rules over the bundled runs, every hour of them
  orchstat rules backtest testdata/runs

  # A team's rules over the last month, as a check every 15 minutes
  orchstat rules backtest --rules team-alerts.yaml --from 30d --step 15m`,
		RunE: func(cmd *cobra.Command, args []string) error {
			o.Paths = args
			if _, err := render.ParseFormat(o.Format); err != nil {
				return usageError{err}
			}
			if runF != nil {
				return runF(cmd.Context(), o)
			}
			return backtestRun(cmd.Context(), o)
		},
	}
	f := cmd.Flags()
	o.ingestFirst.flags(cmd, "backtest the store as it is, without ingesting first")
	o.ingestFirst.lakeFlag(cmd)
	f.StringVarP(&o.Format, "format", "f", "table", "output format: table, markdown, json or csv")
	f.StringVar(&o.Rules, "rules", "", "rule file (default: the built-in alerts.yaml)")
	f.StringVar(&o.From, "from", "", "first evaluation (default: the first run's start, on the step's grid)")
	f.StringVar(&o.To, "to", "", "last evaluation (default: the step after the last run's start)")
	f.StringVar(&o.Step, "step", "", "time between evaluations, such as 5m, 1h or 1d (default: at most 200 evaluations)")
	f.Lookup("quiet").Usage = "print no ingest progress"
	addWideFlag(cmd, g.io)
	return cmd
}

// parseStep reads --step: a Go duration or a number of days (1d).
func parseStep(s string) (time.Duration, error) {
	d, err := alerting.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("--step: %q is not a duration (5m, 1h, 1d)", s)
	}
	if d <= 0 {
		return 0, fmt.Errorf("--step: %q is not a positive duration", s)
	}
	return d, nil
}

// backtestSpan is the backtest's instants from the flags and the data's
// span (first and last run's start, nil without dated runs).
func backtestSpan(o *backtestOptions, now time.Time, first, last *time.Time) (times []time.Time, step time.Duration, err error) {
	var from, to *time.Time
	if o.From != "" {
		if from, err = parseWhen(now, o.From); err != nil {
			return nil, 0, usageError{fmt.Errorf("--from: %w", err)}
		}
	}
	if o.To != "" {
		if to, err = parseWhen(now, o.To); err != nil {
			return nil, 0, usageError{fmt.Errorf("--to: %w", err)}
		}
	}
	if o.Step != "" {
		if step, err = parseStep(o.Step); err != nil {
			return nil, 0, usageError{err}
		}
	}
	if (from == nil || to == nil) && first == nil {
		return nil, 0, fmt.Errorf("no run with a start time to backtest over: ingest some, or give --from and --to")
	}
	lo, hi := from, to
	if lo == nil {
		lo = first
	}
	if hi == nil {
		hi = last
	}
	if step == 0 {
		step = check.DefaultStep(*lo, *hi)
	}
	if from == nil {
		t := first.Truncate(step)
		from = &t
	}
	if to == nil {
		t := last.Truncate(step).Add(step)
		to = &t
	}
	if !from.Before(*to) {
		return nil, 0, usageError{fmt.Errorf("--from %s is not before --to %s", from.Format(time.RFC3339), to.Format(time.RFC3339))}
	}
	times, ok := check.BacktestTimes(*from, *to, step, maxBacktestPoints)
	if !ok {
		return nil, 0, usageError{fmt.Errorf("--step %s from %s to %s is more than %d evaluations: take a longer step or a shorter span",
			alerts.DurationText(step), from.Format(time.RFC3339), to.Format(time.RFC3339), maxBacktestPoints)}
	}
	return times, step, nil
}

func backtestRun(ctx context.Context, o *backtestOptions) error {
	format, _ := render.ParseFormat(o.Format)
	now := o.IO.Now().UTC()
	rf, err := loadRules(o.Rules)
	if err != nil {
		return err
	}
	st, unread, err := o.ingestFirst.open(ctx, o.g, false)
	if err != nil {
		return err
	}
	defer st.Close()
	scope, paths, err := o.scopeOf(ctx, st, true)
	if err != nil {
		return err
	}
	db := st.Path
	if o.Lake != "" {
		scope.Lake = o.lakeName
		db = "lake " + o.lakeName
	}
	starts, err := st.RunStarts(ctx, paths)
	if err != nil {
		return err
	}
	var first, last *time.Time
	if len(starts) > 0 {
		first, last = &starts[0], &starts[len(starts)-1]
	}
	longest := longestWindow(rf)
	var times []time.Time
	var step time.Duration
	skipped := 0
	if o.From == "" && o.To == "" && o.Step == "" && len(starts) > 0 {
		// The data's own times: an instant an hour after each run and
		// after it leaves the window, not a grid of mostly empty steps.
		times, _ = check.DataTimes(starts, longest, maxBacktestPoints/5)
	}
	if times == nil {
		if times, step, err = backtestSpan(o, now, first, last); err != nil {
			return err
		}
		if o.Step == "" {
			// A step of the user's own is evaluated whole; the default
			// grid leaves out the instants no run's data reaches.
			times, skipped = check.WithData(times, starts, longest)
		}
		if len(times) == 0 {
			return fmt.Errorf("no run started in the rules' windows from %s to %s: nothing to backtest", first, last)
		}
	}
	data := query.NewCheckStore(st)
	bt, err := check.RunBacktest(ctx, check.BacktestOptions{Rules: rf, Times: times, Scope: scopeLabel(scope),
		Sampler: func(at time.Time) alerting.Sampler {
			s := check.NewSampler(data, at)
			s.Paths = paths
			s.Past = true
			return s
		}})
	if err != nil {
		return err
	}
	rep := alerts.BacktestReport{Database: db, Scope: scope, RuleFile: rf.Path,
		From: times[0].UTC(), To: times[len(times)-1].UTC(), Step: stepName(step), StepSeconds: step.Seconds(), Skipped: skipped,
		Evaluations: bt.Evaluations, Receivers: bt.Receivers, Notifications: bt.Notifications, Rules: bt.Rules, Longest: longest}
	if err := render.RenderBacktest(o.IO.Out, rep, format, o.IO.OutWidth); err != nil {
		return err
	}
	failed := false
	for _, r := range bt.Rules {
		if r.Failed > 0 {
			fmt.Fprintf(o.IO.Err, "orchstat: rule %s failed at %d of %d evaluations; the first: %s\n", r.Rule, r.Failed, bt.Evaluations, r.Error)
			failed = true
		}
	}
	if failed || unread {
		return silentError{exitError}
	}
	return nil
}

// longestWindow is the longest time window of the rules; 0 when every
// rule looks at the last N runs.
func longestWindow(rf *alerting.File) time.Duration {
	var d time.Duration
	for _, r := range rf.Rules {
		d = max(d, r.Window.Duration)
	}
	return d
}

// stepName is the step as the JSON names it: "data" for the data's own
// times (step 0, check.DataTimes).
func stepName(step time.Duration) string {
	if step == 0 {
		return "data"
	}
	return alerts.DurationText(step)
}

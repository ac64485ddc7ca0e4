package main

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/orchstat/orchstat/query"
	"github.com/orchstat/orchstat/reports"
	"github.com/orchstat/orchstat/reports/render"
	"github.com/orchstat/orchstat/rules"
	"github.com/orchstat/orchstat/rules/check"
	"github.com/orchstat/orchstat/rules/notify"
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

	IO *IO
	// Open opens a store for writing; NewSender makes the notification
	// sender.
	Open      func(ctx context.Context, path string) (*query.Store, error)
	NewSender func(now func() time.Time) *notify.Sender
}

func newCheckCmd(g *globals, runF func(context.Context, *checkOptions) error) *cobra.Command {
	o := &checkOptions{g: g, IO: g.io, NewSender: g.deps.newSender,
		Open: func(ctx context.Context, path string) (*query.Store, error) { return g.open(ctx, path, false) }}
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

Exit status follows the monitoring-plugin convention: 0 nothing firing,
1 a warning alert firing, 2 a critical alert firing, 3 unknown (bad rules,
an unreadable store, ...).`,
		Example: `  # Every 5 minutes from cron
  */5 * * * * cd /repo && orchstat check --quiet

  orchstat check --rules team-alerts.yaml --format json`,
		RunE: func(cmd *cobra.Command, args []string) error {
			o.Paths = args
			if _, err := render.ParseFormat(o.Format); err != nil {
				return usageError{err}
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
	f.Lookup("quiet").Usage = "print nothing unless an alert fires, then a status line and one line per firing alert (and no ingest progress)"
	addWideFlag(cmd, g.io)
	return cmd
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
	if o.Lake != "" {
		return evaluateLake(ctx, o, rf, format, now)
	}
	// check always writes (its alert state), so the store opens read-write.
	st, unread, err := o.ingestFirst.open(ctx, o.g, true)
	if err != nil {
		return 0, err
	}
	if unread {
		st.Close()
		return 0, fmt.Errorf("some files could not be read (named above)")
	}
	// --quiet prints tables as status lines, which do not show the scope.
	shown := !o.Quiet || format == render.FormatJSON || format == render.FormatCSV
	scope, paths, err := o.scopeOf(ctx, st, shown)
	if err != nil {
		st.Close()
		return 0, err
	}
	res, err := check.Run(ctx, check.Options{Store: st, Open: o.Open, Rules: rf, Now: now, Clock: o.IO.Now,
		Paths: paths, Scope: scopeLabel(scope), Sender: o.NewSender(o.IO.Now), LockTimeout: o.g.lockTimeout,
		Warn: func(msg string) { fmt.Fprintf(o.IO.Err, "orchstat: %s\n", msg) }})
	if err != nil {
		return 0, err
	}
	return res.Code, finishCheck(o, res, now, checkPrint{db: res.DB, scope: scope, rows: res.Rows, sent: res.Sent, code: res.Code}, format)
}

// finishCheck writes the textfile, if asked, and prints the check.
func finishCheck(o *checkOptions, res check.Result, now time.Time, p checkPrint, format render.Format) error {
	if o.Textfile != "" {
		if err := writeCheckTextfile(o.Textfile, res, now); err != nil {
			return err
		}
	}
	return renderCheck(o.IO, p, format, o.Quiet)
}

// evaluateLake checks a lake's rows. The alerts and the notifications
// they queue are kept in the store (--db), under the scope "lake
// LOCATION", so a later check knows how long an alert has been pending and
// what was sent, and a check of the store's own runs keeps its alerts.
func evaluateLake(ctx context.Context, o *checkOptions, rf *rules.File, format render.Format, now time.Time) (int, error) {
	o.Window = rulesWindow(rf, now)
	data, err := o.openLake(ctx, o.g)
	if err != nil {
		return 0, err
	}
	st, err := o.g.open(ctx, o.g.dbPath(nil), false)
	if err != nil {
		data.Close()
		return 0, err
	}
	scope := "lake " + o.lakeName
	runs, err := data.ScopeOf(ctx, nil)
	if err != nil {
		data.Close()
		st.Close()
		return 0, err
	}
	runs.Lake = o.lakeName
	res, err := check.Run(ctx, check.Options{Store: st, Data: data, Open: o.Open, Rules: rf, Now: now, Clock: o.IO.Now,
		Scope: scope, Sender: o.NewSender(o.IO.Now), LockTimeout: o.g.lockTimeout,
		Warn: func(msg string) { fmt.Fprintf(o.IO.Err, "orchstat: %s\n", msg) }})
	if err != nil {
		return 0, err
	}
	return res.Code, finishCheck(o, res, now, checkPrint{db: scope, scope: runs, rows: res.Rows, sent: res.Sent, code: res.Code}, format)
}

// rulesWindow is the time window every rule's runs start in, so a check
// reads only the lake partitions they are in: from the longest window
// back. A rule over the last N runs may need any run, and a rule's own SQL
// any table, so then it is all.
func rulesWindow(rf *rules.File, now time.Time) query.LakeOptions {
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

// checkPrint is what check prints.
type checkPrint struct {
	db    string
	scope reports.Scope
	rows  []check.Row
	sent  []check.Sent
	code  int
}

// reading is a row's value against its threshold as a person reads it:
// "28.1% > 20%", or "numerator 3 >= 3" when the condition compares the
// numerator.
func reading(r check.Row) string {
	v := render.MetricText(r.Metric, r.Value)
	if r.Threshold == nil {
		return v
	}
	t := render.ThresholdShort(r.Metric, r.Condition, *r.Threshold)
	for _, part := range []struct {
		name string
		v    *float64
	}{{"numerator", r.Numerator}, {"denominator", r.Denominator}} {
		if rest, ok := strings.CutPrefix(t, part.name+" "); ok {
			return part.name + " " + render.MetricText("count", part.v) + " " + rest
		}
	}
	if !strings.ContainsAny(t, "<>=") {
		return v + " (threshold " + t + ")" // no comparison to show
	}
	return v + " " + t
}

// counts is the numerator and denominator behind a ratio: "45/152".
func counts(r check.Row) string {
	if r.Denominator == nil {
		return ""
	}
	return render.MetricText("count", r.Numerator) + "/" + render.MetricText("count", r.Denominator)
}

func renderCheck(io *IO, out checkPrint, f render.Format, quiet bool) error {
	rows, sent, code := out.rows, out.sent, out.code
	if f == render.FormatJSON {
		if rows == nil {
			rows = []check.Row{}
		}
		if sent == nil {
			sent = []check.Sent{}
		}
		b, err := render.MarshalJSON(map[string]any{"status": check.StatusNames[code], "exit_code": code, "database": out.db,
			"scope": out.scope, "alerts": rows, "notifications": sent})
		if err != nil {
			return err
		}
		_, err = io.Out.Write(b)
		return err
	}
	if quiet && f != render.FormatCSV {
		return renderQuiet(io, rows, code)
	}
	t := checkTable(rows, code, io.OutWidth)
	if f == render.FormatCSV {
		t = checkCSV(rows, code)
	} else {
		fmt.Fprintln(io.Out, render.ScopeText(out.db, out.scope, io.OutWidth))
	}
	if err := render.RenderTable(io.Out, t, f); err != nil {
		return err
	}
	// CSV holds one table; its readers get failures on stderr.
	if len(sent) == 0 || f == render.FormatCSV {
		return nil
	}
	nt := reports.Table{Title: "Notifications", Columns: []string{"receiver", "status", "reason", "group", "alerts", "attempts", "delivered", "error"},
		Width: io.OutWidth}
	for _, n := range sent {
		nt.Rows = append(nt.Rows, []any{n.Receiver, n.Status, n.Reason, n.Group, n.Alerts, n.Attempts, n.Delivered, n.Error})
	}
	fmt.Fprintln(io.Out)
	return render.RenderTable(io.Out, nt, f)
}

// checkTable lays the rows out for a person. width > 0 is a terminal's:
// the labels join the rule's name, the state shows this check's change,
// and the counts join the value, so the table has few columns to fit.
// Otherwise every field has its column.
func checkTable(rows []check.Row, code int, width int) reports.Table {
	t := reports.Table{Title: "orchstat check: " + check.StatusNames[code], Width: width}
	if width > 0 {
		t.Columns = []string{"rule", "state", "value", "threshold", "since"}
		for _, r := range rows {
			state := r.State
			if r.Changed != "" {
				state = r.Changed
			}
			if r.NoData && r.State != "no data" {
				state += " (no data)"
			}
			value := render.MetricText(r.Metric, r.Value)
			if c := counts(r); c != "" {
				value += " (" + c + ")"
			}
			var since any
			if r.ActiveSince != nil {
				since = r.ActiveSince.UTC().Format("2006-01-02 15:04")
			}
			// A space before the labels lets a narrow column wrap there.
			t.Rows = append(t.Rows, []any{strings.TrimSpace(r.Rule + " " + check.LabelText(r.Labels)), state, value, thresholdCell(r), since})
		}
		return t
	}
	t.Columns = []string{"rule", "severity", "state", "labels", "value", "threshold", "numerator", "denominator", "active_since", "changed"}
	for _, r := range rows {
		var labels []string
		for k, v := range r.Labels {
			labels = append(labels, k+"="+v)
		}
		sort.Strings(labels)
		state := r.State
		if r.NoData && state != "no data" {
			state += " (no data)"
		}
		var since any
		if r.ActiveSince != nil {
			since = *r.ActiveSince
		}
		t.Rows = append(t.Rows, []any{r.Rule, r.Severity, state, strings.Join(labels, ","), render.MetricText(r.Metric, r.Value),
			thresholdCell(r), countCell(r.Numerator), countCell(r.Denominator), since, r.Changed})
	}
	return t
}

// checkCSV is the rows for programs: numbers at full precision, the
// condition as the rule file has it.
func checkCSV(rows []check.Row, code int) reports.Table {
	t := reports.Table{Title: "orchstat check: " + check.StatusNames[code],
		Columns: []string{"rule", "severity", "state", "labels", "metric", "value", "numerator", "denominator", "threshold", "condition", "active_since", "changed", "error"}}
	for _, r := range rows {
		var since any
		if r.ActiveSince != nil {
			since = *r.ActiveSince
		}
		t.Rows = append(t.Rows, []any{r.Rule, r.Severity, r.State, strings.TrimSuffix(strings.TrimPrefix(check.LabelText(r.Labels), "{"), "}"), r.Metric,
			r.Value, r.Numerator, r.Denominator, r.Threshold, r.Condition, since, r.Changed, r.Error})
	}
	return t
}

// thresholdCell is a rule's threshold as its comparison, "> 20%"; nil
// for a rule without one.
func thresholdCell(r check.Row) any {
	if r.Threshold == nil {
		return nil
	}
	return render.ThresholdShort(r.Metric, r.Condition, *r.Threshold)
}

// countCell is a numerator or denominator, a number so that it is
// right-aligned (a count prints without decimals); nil stays nil.
func countCell(v *float64) any {
	if v == nil {
		return nil
	}
	return *v
}

// renderQuiet is --quiet: nothing while nothing fires, else the
// monitoring-plugin status line and one line per firing alert, so cron
// mails only when there is something to act on.
func renderQuiet(io *IO, rows []check.Row, code int) error {
	var firing []check.Row
	for _, r := range rows {
		if r.State == rules.StateFiring.String() {
			firing = append(firing, r)
		}
	}
	if len(firing) == 0 {
		return nil
	}
	var b strings.Builder
	noun := "alerts"
	if len(firing) == 1 {
		noun = "alert"
	}
	fmt.Fprintf(&b, "%s - %d %s firing\n", check.StatusNames[code], len(firing), noun)
	for _, r := range firing {
		line := r.Rule + check.LabelText(r.Labels) + " " + reading(r)
		if r.ActiveSince != nil {
			line += " (active since " + r.ActiveSince.UTC().Format(time.RFC3339) + ")"
		}
		b.WriteString(render.EscapeControls(line) + "\n")
	}
	_, err := fmt.Fprint(io.Out, b.String())
	return err
}

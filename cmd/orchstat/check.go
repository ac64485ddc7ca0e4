package main

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/orchstat/orchstat/query"
	"github.com/orchstat/orchstat/reports"
	"github.com/orchstat/orchstat/reports/render"
	"github.com/orchstat/orchstat/rules"
	"github.com/orchstat/orchstat/rules/notify"
)

// check speaks the monitoring-plugin convention, so cron wrappers and
// Nagios-style checkers can branch on it.
const (
	checkOK       = 0
	checkWarning  = 1
	checkCritical = 2
	checkUnknown  = 3
)

type checkOptions struct {
	g *globals
	ingestFirst
	Format   string
	Rules    string
	Textfile string
}

func newCheckCmd(g *globals, runF func(context.Context, *checkOptions) error) *cobra.Command {
	o := &checkOptions{g: g}
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
		fmt.Fprintf(o.g.io.Err, "orchstat: UNKNOWN: %v\n", err)
		return silentError{checkUnknown}
	}
	if code != checkOK {
		return silentError{code}
	}
	return nil
}

func evaluate(ctx context.Context, o *checkOptions) (int, error) {
	format, _ := render.ParseFormat(o.Format)
	now := o.g.io.Now().UTC()
	rf, err := loadRules(o.Rules)
	if err != nil {
		return 0, err
	}
	// check always writes (its alert state), so the store opens read-write.
	st, unread, err := o.ingestFirst.open(ctx, o.g, true)
	if err != nil {
		return 0, err
	}
	defer func() {
		if st != nil {
			st.Close()
		}
	}()
	if unread {
		return 0, fmt.Errorf("some files could not be read (named above)")
	}
	prev, err := query.LoadAlerts(ctx, st)
	if err != nil {
		return 0, err
	}
	// --quiet prints tables as status lines, which do not show the scope.
	shown := !o.Quiet || format == render.FormatJSON || format == render.FormatCSV
	scope, paths, err := o.scopeOf(ctx, st, shown)
	if err != nil {
		return 0, err
	}
	prev, others := splitScope(prev, scopeLabel(scope))
	ev := evalRules(ctx, st, rf, prev, now, paths, scopeLabel(scope))
	// Alerts of other scopes are neither evaluated nor resolved here; they
	// are kept as they are.
	ev.alerts = append(ev.alerts, others...)
	for _, f := range ev.failures {
		fmt.Fprintf(o.g.io.Err, "orchstat: rule %s: %v\n", f.rule, f.err)
	}
	rows, prom, code := ev.rows, ev.prom, ev.code
	groups, err := st.LoadNotifyGroups(ctx)
	if err != nil {
		return 0, err
	}
	queue, refresh := notify.Plan(rf.Route, rf.Receivers, ev.notify, groups, now)
	if err := query.SaveCheck(ctx, st, ev.alerts, queue, groups, now); err != nil {
		return 0, err
	}
	pending, err := st.CountPending(ctx)
	if err != nil {
		return 0, err
	}
	// Receivers can take as long as their timeouts, so the store is let go
	// before delivering: nobody waits on a slow webhook to read or write it.
	db := st.Path
	st.Close()
	st = nil
	var sent []notifyRow
	kept := pending
	if pending > 0 || len(refresh) > 0 {
		if sent, kept, err = deliver(ctx, o, db, rf, refresh, now); err != nil {
			return 0, err
		}
	}
	if o.Textfile != "" {
		prom = append(prom,
			render.PromSample{Name: "notifications_queued", Help: "Notifications not yet delivered, kept for the next check.", Value: float64(kept)},
			render.PromSample{Name: "check_timestamp_seconds", Help: "When orchstat check last evaluated the rules.", Value: float64(now.UnixMilli()) / 1000},
			render.PromSample{Name: "check_status", Help: "orchstat check's exit status: 0 OK, 1 warning, 2 critical, 3 unknown (a rule failed).", Value: float64(code)})
		if err := render.WriteTextfile(o.Textfile, prom); err != nil {
			return 0, err
		}
	}
	return code, renderCheck(o.g.io, checkPrint{db: db, scope: scope, rows: rows, sent: sent, code: code}, format, o.Quiet)
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

// splitScope parts the stored alerts into this check's scope's (whose
// scope label is scope, "" for the whole store) and the others'.
func splitScope(prev map[string][]rules.Alert, scope string) (mine map[string][]rules.Alert, others []rules.Alert) {
	mine = map[string][]rules.Alert{}
	for rule, alerts := range prev {
		for _, a := range alerts {
			if a.Labels["scope"] == scope {
				mine[rule] = append(mine[rule], a)
			} else {
				others = append(others, a)
			}
		}
	}
	return mine, others
}

// checkPrint is what check prints.
type checkPrint struct {
	db    string
	scope reports.Scope
	rows  []checkRow
	sent  []notifyRow
	code  int
}

// newSender makes the notification sender; tests replace it to fix the
// clock, randomness and sleeps.
var newSender = func(now func() time.Time) *notify.Sender {
	s := notify.NewSender("orchstat/" + version)
	s.Now = now
	return s
}

// deliver sends the queued notifications and this check's Alertmanager
// refreshes, and returns how each went, with the number still queued.
// It holds no lock on the store while receivers answer: as one
// delivering check at a time, it reads the queue, lets the store go, and
// journals each outcome as it comes (see query.FoldDeliveries), so a
// check killed mid-delivery never has an acknowledged notification sent
// again. Failures are reported on stderr, with no secrets.
func deliver(ctx context.Context, o *checkOptions, db string, rf *rules.File, refresh []notify.Notification, now time.Time) ([]notifyRow, int, error) {
	release, err := query.LockDeliveries(ctx, db, o.g.lockTimeout)
	if err != nil {
		return nil, 0, err
	}
	defer release()
	st, err := o.g.open(ctx, db, false)
	if err != nil {
		return nil, 0, err
	}
	err = query.FoldDeliveries(ctx, st, now)
	var pending []query.Queued
	if err == nil {
		pending, err = st.PendingNotifications(ctx)
	}
	st.Close()
	if err != nil {
		return nil, 0, err
	}
	items := make([]notify.Item, 0, len(pending)+len(refresh))
	queuedAt := map[int64]time.Time{}
	for _, p := range pending {
		items = append(items, notify.Item{ID: p.ID, Receiver: p.Receiver, Reason: p.Reason, Message: p.Message})
		queuedAt[p.ID] = p.QueuedAt
	}
	for _, n := range refresh {
		items = append(items, notify.Item{Receiver: n.Receiver, Reason: n.Reason, Message: n.Message})
	}
	if len(items) == 0 {
		return nil, 0, nil
	}
	journal, err := query.OpenDeliveryJournal(db)
	if err != nil {
		return nil, 0, err
	}
	var journalErr error
	results := newSender(o.g.io.Now).Flush(ctx, rf.Receivers, items, func(r notify.Result) {
		if r.ID == 0 || journalErr != nil {
			return
		}
		d := query.Delivery{ID: r.ID, Attempts: r.Attempts, At: o.g.io.Now().UTC()}
		if r.Err != nil {
			d.Err = r.Err.Error()
		}
		journalErr = journal.Record(d)
	})
	journal.Close()
	var rows []notifyRow
	kept := 0
	for _, r := range results {
		row := notifyRow{Receiver: r.Receiver, Status: r.Message.Status, Reason: r.Reason, Group: r.Message.GroupKey,
			Alerts: len(r.Message.Alerts), Attempts: r.Attempts, Delivered: r.Err == nil}
		if t, ok := queuedAt[r.ID]; ok && t.Before(now.Truncate(time.Microsecond)) {
			row.QueuedAt = &t
		}
		if r.Err != nil {
			row.Error = r.Err.Error()
			what := "kept for the next check"
			if r.ID == 0 {
				what = "not sent; the next check sends it again"
			} else {
				kept++
			}
			fmt.Fprintf(o.g.io.Err, "orchstat: notification (%s, %s) %s: %v\n", r.Message.Status, r.Message.GroupKey, what, r.Err)
		}
		rows = append(rows, row)
	}
	if journalErr != nil {
		return rows, kept, journalErr
	}
	st, err = o.g.open(ctx, db, false)
	if err != nil {
		return rows, kept, fmt.Errorf("%w (the deliveries are journaled; the next check records them)", err)
	}
	defer st.Close()
	return rows, kept, query.FoldDeliveries(ctx, st, now)
}

// notifyRow is one notification check delivered or tried to.
type notifyRow struct {
	Receiver  string     `json:"receiver"`
	Status    string     `json:"status"` // the message's: firing or resolved
	Reason    string     `json:"reason"` // change, repeat or refresh
	Group     string     `json:"group"`
	Alerts    int        `json:"alerts"`
	Attempts  int        `json:"attempts"`
	Delivered bool       `json:"delivered"`
	Error     string     `json:"error,omitempty"`
	QueuedAt  *time.Time `json:"queued_at,omitempty"` // set for notifications queued by an earlier check
}

// ruleSamples turns one evaluated sample into gauges labelled with the rule,
// its metric and the sample's labels; values that do not exist are left out.
func ruleSamples(r *rules.Rule, s rules.Sample) []render.PromSample {
	metric := r.Metric
	if r.SQL != "" {
		metric = "sql"
	}
	labels := map[string]string{"rule": r.Name, "metric": metric}
	for k, v := range s.Labels {
		labels[k] = v
	}
	var out []render.PromSample
	for _, g := range []struct {
		name, help string
		v          *float64
	}{
		{"rule_value", "The value of a rule's metric over its window.", s.Value},
		{"rule_numerator", "The numerator behind a ratio rule's value.", s.Numerator},
		{"rule_denominator", "The denominator behind a ratio rule's value.", s.Denominator},
	} {
		if g.v != nil {
			out = append(out, render.PromSample{Name: g.name, Help: g.help, Labels: labels, Value: *g.v})
		}
	}
	return out
}

// checkRow is one alert, one label set whose condition does not hold
// (inactive), or one rule without data, as check prints it. Every rule
// has at least one row, so a reader sees how close each is to firing.
type checkRow struct {
	Rule        string            `json:"rule"`
	Severity    string            `json:"severity"`
	State       string            `json:"state"` // inactive, pending, firing, resolved, no data or error
	Labels      map[string]string `json:"labels,omitempty"`
	Metric      string            `json:"metric"` // the rule's metric; "sql" for a rule with its own query
	Value       *float64          `json:"value"`
	Numerator   *float64          `json:"numerator,omitempty"`
	Denominator *float64          `json:"denominator,omitempty"`
	Threshold   *float64          `json:"threshold"`
	Condition   string            `json:"condition"`
	ActiveSince *time.Time        `json:"active_since,omitempty"`
	Changed     string            `json:"changed,omitempty"` // this check's transition, as from→to
	NoData      bool              `json:"no_data,omitempty"`
	Error       string            `json:"error,omitempty"` // the rule could not be evaluated or annotated
}

var statusNames = map[int]string{checkOK: "OK", checkWarning: "WARNING", checkCritical: "CRITICAL", checkUnknown: "UNKNOWN"}

// labelText is a label set as Prometheus writes one, {a="x",b="y"},
// sorted by name; empty for no labels.
func labelText(labels map[string]string) string {
	if len(labels) == 0 {
		return ""
	}
	var parts []string
	for k, v := range labels {
		parts = append(parts, k+"="+strconv.Quote(v))
	}
	sort.Strings(parts)
	return "{" + strings.Join(parts, ",") + "}"
}

// reading is a row's value against its threshold as a person reads it:
// "28.1% > 20%", or "numerator 3 >= 3" when the condition compares the
// numerator.
func (r checkRow) reading() string {
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
func (r checkRow) counts() string {
	if r.Denominator == nil {
		return ""
	}
	return render.MetricText("count", r.Numerator) + "/" + render.MetricText("count", r.Denominator)
}

func renderCheck(io *IO, out checkPrint, f render.Format, quiet bool) error {
	rows, sent, code := out.rows, out.sent, out.code
	if f == render.FormatJSON {
		if rows == nil {
			rows = []checkRow{}
		}
		if sent == nil {
			sent = []notifyRow{}
		}
		b, err := render.MarshalJSON(map[string]any{"status": statusNames[code], "exit_code": code, "database": out.db,
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
func checkTable(rows []checkRow, code int, width int) reports.Table {
	t := reports.Table{Title: "orchstat check: " + statusNames[code], Width: width}
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
			if c := r.counts(); c != "" {
				value += " (" + c + ")"
			}
			var since any
			if r.ActiveSince != nil {
				since = r.ActiveSince.UTC().Format("2006-01-02 15:04")
			}
			// A space before the labels lets a narrow column wrap there.
			t.Rows = append(t.Rows, []any{strings.TrimSpace(r.Rule + " " + labelText(r.Labels)), state, value, thresholdCell(r), since})
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
func checkCSV(rows []checkRow, code int) reports.Table {
	t := reports.Table{Title: "orchstat check: " + statusNames[code],
		Columns: []string{"rule", "severity", "state", "labels", "metric", "value", "numerator", "denominator", "threshold", "condition", "active_since", "changed", "error"}}
	for _, r := range rows {
		var since any
		if r.ActiveSince != nil {
			since = *r.ActiveSince
		}
		t.Rows = append(t.Rows, []any{r.Rule, r.Severity, r.State, strings.TrimSuffix(strings.TrimPrefix(labelText(r.Labels), "{"), "}"), r.Metric,
			r.Value, r.Numerator, r.Denominator, r.Threshold, r.Condition, since, r.Changed, r.Error})
	}
	return t
}

// thresholdCell is a rule's threshold as its comparison, "> 20%"; nil
// for a rule without one.
func thresholdCell(r checkRow) any {
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
func renderQuiet(io *IO, rows []checkRow, code int) error {
	var firing []checkRow
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
	fmt.Fprintf(&b, "%s - %d %s firing\n", statusNames[code], len(firing), noun)
	for _, r := range firing {
		line := r.Rule + labelText(r.Labels) + " " + r.reading()
		if r.ActiveSince != nil {
			line += " (active since " + r.ActiveSince.UTC().Format(time.RFC3339) + ")"
		}
		b.WriteString(render.EscapeControls(line) + "\n")
	}
	_, err := fmt.Fprint(io.Out, b.String())
	return err
}

// evaluation is one evaluation of every rule.
type evaluation struct {
	alerts   []rules.Alert
	rows     []checkRow
	prom     []render.PromSample
	code     int // the exit status it calls for
	notify   []notify.Evaluated
	failures []ruleFailure
}

// ruleFailure is a rule that could not be evaluated, or whose annotations
// could not be rendered.
type ruleFailure struct {
	rule string
	err  error
}

// evalRules evaluates every rule at now, advancing the alerts of the last
// evaluation. It reads the store and nothing else.
//
// A rule's failure is that rule's: the other rules are evaluated, shown
// and notified as usual. A rule whose samples or condition fail keeps its
// alerts as they were; one whose annotations fail still advances its
// alerts and notifies, with the error in place of its annotations, so a
// firing alert is never hidden by a typo in its template. The exit status
// is CRITICAL when a critical alert fires, else UNKNOWN when a rule
// failed, else WARNING or OK.
// evalRules evaluates every rule over the runs found under paths (the
// whole store when empty), labelling each alert scope=label when label is
// set (see scopeLabel), so a scoped check's alerts are other alerts than
// the whole store's, with their own state.
func evalRules(ctx context.Context, st *query.Store, rf *rules.File, prev map[string][]rules.Alert, now time.Time, paths []string, label string) evaluation {
	var ev evaluation
	code := checkOK
	var all []rules.Alert
	var rows []checkRow
	var prom []render.PromSample
	sampler := query.NewSampler(st, now)
	sampler.Paths = paths
	fail := func(r *rules.Rule, err error) {
		ev.failures = append(ev.failures, ruleFailure{rule: r.Name, err: err})
	}
	for _, r := range rf.Rules {
		samples, obs, noData, err := observe(ctx, sampler, r, label)
		if err != nil {
			fail(r, err)
			all = append(all, prev[r.Name]...)
			row := ruleRow(r, "error")
			row.Error = err.Error()
			rows = append(rows, row)
			continue
		}
		for _, s := range samples {
			prom = append(prom, ruleSamples(r, s)...)
		}
		spec := rules.Spec{Rule: r.Name, For: r.For, KeepFiringFor: r.KeepFiringFor}
		next, changes := rules.Eval(spec, prev[r.Name], obs, noData, now)
		all = append(all, next...)
		changed := map[string]rules.Transition{}
		for _, c := range changes {
			changed[c.Alert.Fingerprint] = c
		}
		if noData {
			rows = append(rows, ruleRow(r, "no data"))
		}
		annotateFailed := false
		for _, a := range next {
			row := ruleRow(r, a.State.String())
			row.Labels, row.Value, row.Numerator, row.Denominator, row.NoData = a.Labels, a.Value, a.Numerator, a.Denominator, a.NoData
			if !a.ActiveAt.IsZero() {
				t := a.ActiveAt
				row.ActiveSince = &t
			}
			c, ok := changed[a.Fingerprint]
			if ok {
				row.Changed = c.From.String() + "→" + c.To.String()
			}
			if a.State == rules.StateFiring || a.State == rules.StateResolved {
				ann, err := r.Annotate(rules.Sample{Value: a.Value, Numerator: a.Numerator, Denominator: a.Denominator, Labels: a.Labels})
				if err != nil {
					if !annotateFailed {
						fail(r, err)
						annotateFailed = true
					}
					row.Error = err.Error()
					ann = map[string]string{"annotation_error": err.Error()}
				}
				ev.notify = append(ev.notify, notify.Evaluated{Rule: r, Alert: a, Annotations: ann,
					Changed: ok && (c.To == rules.StateResolved || c.From != rules.StateFiring)})
			}
			rows = append(rows, row)
			if a.State != rules.StateInactive {
				l := map[string]string{"alertname": r.Name, "alertstate": a.State.String(), "severity": r.Severity}
				for k, v := range a.Labels {
					l[k] = v
				}
				prom = append(prom, render.PromSample{Name: "alerts", Help: "Alerts that are pending, firing or recently resolved, one series each (value 1).", Labels: l, Value: 1})
			}
			if a.State == rules.StateFiring {
				switch r.Severity {
				case "critical":
					code = max(code, checkCritical)
				case "warning":
					code = max(code, checkWarning)
				}
			}
		}
		if !noData {
			rows = append(rows, inactiveRows(r, obs, next, changed)...)
		}
	}
	if len(ev.failures) > 0 && code != checkCritical {
		code = checkUnknown
	}
	ev.alerts, ev.rows, ev.prom, ev.code = all, rows, prom, code
	return ev
}

// ruleRow is a row of rule r in state, with what every row of it shows.
func ruleRow(r *rules.Rule, state string) checkRow {
	metric := r.Metric
	if r.SQL != "" {
		metric = "sql"
	}
	return checkRow{Rule: r.Name, Severity: r.Severity, State: state, Metric: metric, Threshold: r.Threshold, Condition: r.Condition}
}

// inactiveRows are the label sets of r's observations that have no alert:
// their condition does not hold, and rules.Eval keeps no state for them.
// They are listed with their values so a reader sees how close they are
// to firing; a label set seen twice is listed once, with a value if any.
// A pending alert that stopped holding shows its change (pending→inactive).
func inactiveRows(r *rules.Rule, obs []rules.Observation, alerts []rules.Alert, changed map[string]rules.Transition) []checkRow {
	active := map[string]bool{}
	for _, a := range alerts {
		active[a.Fingerprint] = true
	}
	seen := map[string]int{}
	var rows []checkRow
	for _, o := range obs {
		fp := rules.Fingerprint(r.Name, o.Sample.Labels)
		if active[fp] {
			continue
		}
		row := ruleRow(r, rules.StateInactive.String())
		row.Labels, row.Value, row.Numerator, row.Denominator = o.Sample.Labels, o.Sample.Value, o.Sample.Numerator, o.Sample.Denominator
		row.NoData = o.Sample.Value == nil
		if c, ok := changed[fp]; ok {
			row.Changed = c.From.String() + "→" + c.To.String()
		}
		if i, ok := seen[fp]; ok {
			if rows[i].Value == nil && row.Value != nil {
				rows[i] = row
			}
			continue
		}
		seen[fp] = len(rows)
		rows = append(rows, row)
	}
	sort.SliceStable(rows, func(i, j int) bool { return labelText(rows[i].Labels) < labelText(rows[j].Labels) })
	return rows
}

// observe takes a rule's samples and decides where its condition holds.
func observe(ctx context.Context, sampler *query.Sampler, r *rules.Rule, scope string) (samples []rules.Sample, obs []rules.Observation, noData bool, err error) {
	samples, err = sampler.Samples(ctx, r)
	if err != nil {
		return nil, nil, false, err
	}
	noData = true
	for i, s := range samples {
		if scope != "" {
			labels := map[string]string{"scope": scope}
			for k, v := range s.Labels {
				labels[k] = v
			}
			s.Labels = labels
			samples[i] = s
		}
		holds, err := r.Holds(s)
		if err != nil {
			return nil, nil, false, err
		}
		noData = noData && s.Value == nil
		obs = append(obs, rules.Observation{Sample: s, Holds: holds})
	}
	return samples, obs, noData, nil
}

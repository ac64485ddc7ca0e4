package render

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/orchstat/orchstat/model/alerts"
	"github.com/orchstat/orchstat/model/reports"
)

// backtestWhen says at which instants the backtest evaluated.
func backtestWhen(r alerts.BacktestReport) string {
	if r.StepSeconds == 0 {
		return "at the data's own times (the hour after each run started, and after it left the rules' longest window, " +
			alerts.DurationText(r.Longest) + ")"
	}
	s := "every " + r.Step
	if r.Skipped > 0 {
		s += fmt.Sprintf(", leaving out %d instants with no run in the rules' windows", r.Skipped)
	}
	return s
}

// firedLine summarises what would have fired: each rule's alerts, the
// first and the last.
func firedLine(bt alerts.BacktestReport) string {
	var parts []string
	for _, r := range bt.Rules {
		if len(r.Alerts) == 0 {
			continue
		}
		first, last := r.Alerts[0].FiredAt, r.Alerts[len(r.Alerts)-1].FiredAt
		part := fmt.Sprintf("%s %s (%s)", r.Rule, timesText(len(r.Alerts)), first.UTC().Format(time.RFC3339))
		if len(r.Alerts) > 1 {
			part = fmt.Sprintf("%s %s (first %s, last %s)", r.Rule, timesText(len(r.Alerts)),
				first.UTC().Format(time.RFC3339), last.UTC().Format(time.RFC3339))
		}
		parts = append(parts, part)
	}
	if len(parts) == 0 {
		return fmt.Sprintf("Nothing would have fired in %d evaluations.", bt.Evaluations)
	}
	return "Would have fired: " + strings.Join(parts, "; ") + "."
}

// RenderBacktest writes rules backtest's outcome in format f, width
// columns wide (0: any): what would have fired, a row per rule and one per
// alert that would have fired, and what the counts mean.
func RenderBacktest(w io.Writer, bt alerts.BacktestReport, f Format, width int) error {
	if f == FormatJSON {
		b, err := MarshalJSON(bt)
		if err != nil {
			return err
		}
		_, err = w.Write(b)
		return err
	}
	if f == FormatCSV {
		return RenderTable(w, backtestCSV(bt), f)
	}
	fmt.Fprintln(w, ScopeText(bt.Database, bt.Scope, width))
	fmt.Fprint(w, wrapWords(fmt.Sprintf("The rules of %s from %s to %s, %s: %d evaluations as check would have made them, "+
		"with alert state in memory; nothing was saved or sent.", bt.RuleFile, bt.From.UTC().Format(time.RFC3339),
		bt.To.UTC().Format(time.RFC3339), backtestWhen(bt), bt.Evaluations), width))
	fmt.Fprint(w, wrapWords(firedLine(bt), width))
	fmt.Fprintln(w)
	if err := RenderTable(w, backtestRulesTable(bt, width), f); err != nil {
		return err
	}
	fmt.Fprintln(w)
	if err := RenderTable(w, backtestAlertsTable(bt, width), f); err != nil {
		return err
	}
	fmt.Fprintln(w)
	note := fmt.Sprintf("held: evaluations at which the condition held; short: those at which a value was past "+
		"the threshold but short of the samples the condition asks for; blips: alerts pending that never fired. "+
		"A rule's for counted in checks counts evaluations, here %s.", backtestWhen(bt))
	if bt.Receivers {
		note += " sent: the notifications check would have queued (changes, and repeats after repeat_interval)."
	} else {
		note += " The rule file has no receivers, so nothing would have been sent."
	}
	fmt.Fprint(w, wrapWords(note, width))
	return nil
}

// backtestRulesTable is one row per rule: how often it fired, blipped,
// held and had no data, and what it would have sent.
func backtestRulesTable(bt alerts.BacktestReport, width int) reports.Table {
	t := reports.Table{Title: "Rules", Width: width}
	if width > 0 {
		t.Columns = []string{"rule", "fired", "blips", "held", "short", "no data", "sent"}
	} else {
		t.Columns = []string{"rule", "severity", "threshold", "fired", "blips", "held", "short", "no_data", "skipped", "failed", "sent"}
	}
	for _, r := range bt.Rules {
		held := fmt.Sprintf("%d/%d", r.Held, bt.Evaluations)
		if width > 0 {
			t.Rows = append(t.Rows, []any{r.Rule, len(r.Alerts), r.Blips, held, r.Short, r.NoData, r.Notifications})
			continue
		}
		var threshold any
		if r.Threshold != nil {
			threshold = ThresholdShort(r.Metric, r.Condition, *r.Threshold)
		}
		t.Rows = append(t.Rows, []any{r.Rule, r.Severity, threshold, len(r.Alerts), r.Blips, held, r.Short, r.NoData, r.Skipped, r.Failed, r.Notifications})
	}
	return t
}

// backtestAlertsTable is one row per alert that would have fired.
func backtestAlertsTable(bt alerts.BacktestReport, width int) reports.Table {
	t := reports.Table{Title: "Alerts that would have fired", Width: width}
	if width > 0 {
		t.Columns = []string{"rule", "fired", "resolved", "value", "sent"}
	} else {
		t.Columns = []string{"rule", "labels", "active_since", "fired", "resolved", "value", "numerator", "denominator", "sent"}
	}
	// At a terminal, times within the year the title names are month,
	// day and time, so the table fits 80 columns.
	layout := "2006-01-02 15:04"
	if bt.From.UTC().Year() == bt.To.UTC().Year() {
		layout = "01-02 15:04"
	}
	stamp := func(tm time.Time) any {
		if width > 0 {
			return tm.UTC().Format(layout)
		}
		return tm.UTC()
	}
	for _, r := range bt.Rules {
		for _, a := range r.Alerts {
			var resolved any = "still firing"
			if a.ResolvedAt != nil {
				resolved = stamp(*a.ResolvedAt)
			}
			row := alerts.CheckRow{Metric: r.Metric, Value: a.Value, Numerator: a.Numerator, Denominator: a.Denominator}
			if width > 0 {
				value := MetricText(r.Metric, a.Value)
				if c := counts(row); c != "" {
					value += " (" + c + ")"
				}
				t.Rows = append(t.Rows, []any{strings.TrimSpace(r.Rule + " " + alerts.LabelText(a.Labels)), stamp(a.FiredAt), resolved, value, a.Notifications})
				continue
			}
			t.Rows = append(t.Rows, []any{r.Rule, strings.Trim(alerts.LabelText(a.Labels), "{}"), stamp(a.ActiveAt), stamp(a.FiredAt), resolved,
				MetricText(r.Metric, a.Value), countCell(a.Numerator), countCell(a.Denominator), a.Notifications})
		}
	}
	if len(t.Rows) == 0 {
		t.Rows = append(t.Rows, []any{"(none)"})
		for range t.Columns[1:] {
			t.Rows[0] = append(t.Rows[0], "")
		}
	}
	return t
}

// backtestCSV is one row per alert that would have fired, and one per
// rule that never fired, at full precision.
func backtestCSV(bt alerts.BacktestReport) reports.Table {
	t := reports.Table{Title: "rules backtest", Columns: []string{"rule", "severity", "held", "short", "no_data", "blips", "rule_notifications",
		"labels", "active_since", "fired", "resolved", "value", "numerator", "denominator", "notifications"}}
	for _, r := range bt.Rules {
		lead := []any{r.Rule, r.Severity, r.Held, r.Short, r.NoData, r.Blips, r.Notifications}
		if len(r.Alerts) == 0 {
			t.Rows = append(t.Rows, append(lead, nil, nil, nil, nil, nil, nil, nil, nil))
			continue
		}
		for _, a := range r.Alerts {
			var resolved any
			if a.ResolvedAt != nil {
				resolved = a.ResolvedAt.UTC()
			}
			t.Rows = append(t.Rows, append(append([]any{}, lead...), strings.Trim(alerts.LabelText(a.Labels), "{}"), a.ActiveAt.UTC(), a.FiredAt.UTC(), resolved,
				a.Value, a.Numerator, a.Denominator, a.Notifications))
		}
	}
	return t
}

func timesText(n int) string {
	if n == 1 {
		return "once"
	}
	return fmt.Sprintf("%d times", n)
}

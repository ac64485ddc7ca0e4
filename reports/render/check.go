package render

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/orchstat/orchstat/model/alerts"
	"github.com/orchstat/orchstat/model/reports"
)

// reading is a row's value against its threshold as a person reads it:
// "28.1% > 20%", or "numerator 3 >= 3" when the condition compares the
// numerator.
func reading(r alerts.CheckRow) string {
	v := MetricText(r.Metric, r.Value)
	if r.Threshold == nil {
		return v
	}
	t := ThresholdShort(r.Metric, r.Condition, *r.Threshold)
	for _, part := range []struct {
		name string
		v    *float64
	}{{"numerator", r.Numerator}, {"denominator", r.Denominator}} {
		if rest, ok := strings.CutPrefix(t, part.name+" "); ok {
			return part.name + " " + MetricText("count", part.v) + " " + rest
		}
	}
	if !strings.ContainsAny(t, "<>=") {
		return v + " (threshold " + t + ")" // no comparison to show
	}
	return v + " " + t
}

// counts is the numerator and denominator behind a ratio: "45/152".
func counts(r alerts.CheckRow) string {
	if r.Denominator == nil {
		return ""
	}
	return MetricText("count", r.Numerator) + "/" + MetricText("count", r.Denominator)
}

// RenderCheck writes a check in format f, width columns wide (0: any):
// every rule with its state and value, the notes on rules past their
// threshold or without data, and the notifications sent. quiet is check
// --quiet: a table is then a status line and one line per firing alert,
// or nothing while nothing fires. The notes are set on r's rows, which
// JSON prints too.
func RenderCheck(w io.Writer, r alerts.CheckReport, f Format, width int, quiet bool) error {
	rows, sent := r.Alerts, r.Notifications
	addNotes(rows, r)
	if f == FormatJSON {
		b, err := MarshalJSON(r)
		if err != nil {
			return err
		}
		_, err = w.Write(b)
		return err
	}
	if quiet && f != FormatCSV {
		return renderQuiet(w, rows, r.Status)
	}
	t := checkTable(rows, r.Status, width)
	if r.Look {
		t.Title = "orchstat check at " + r.At.UTC().Format(time.RFC3339) + ": " + r.Status
	}
	if f == FormatCSV {
		t = checkCSV(rows, r.Status)
	} else {
		fmt.Fprintln(w, ScopeText(r.Database, r.Scope, width))
		if r.Look {
			fmt.Fprint(w, wrapWords("A look at "+r.At.UTC().Format(time.RFC3339)+", not a round of cron: no alert state "+
				"was read or saved and nothing was notified. Each alert starts from inactive, so a rule with `for` "+
				"is pending at most; rules backtest shows when it would have fired.", width))
		}
	}
	if err := RenderTable(w, t, f); err != nil {
		return err
	}
	// CSV holds one table; its readers get notes in the note column and
	// failures on stderr.
	if f == FormatCSV {
		return nil
	}
	if notes := noteLines(rows); len(notes) > 0 {
		fmt.Fprintln(w)
		for _, n := range notes {
			fmt.Fprint(w, wrapWords(n, width))
		}
	}
	if len(sent) == 0 {
		return nil
	}
	nt := reports.Table{Title: "Notifications", Columns: []string{"receiver", "status", "reason", "group", "alerts", "attempts", "delivered", "error"},
		Width: width}
	for _, n := range sent {
		nt.Rows = append(nt.Rows, []any{n.Receiver, n.Status, n.Reason, n.Group, n.Alerts, n.Attempts, n.Delivered, n.Error})
	}
	fmt.Fprintln(w)
	return RenderTable(w, nt, f)
}

// addNotes sets each row's note: why a label set past its threshold is
// inactive, and, for a rule without data, when the latest data is and
// how to look at it.
func addNotes(rows []alerts.CheckRow, out alerts.CheckReport) {
	for i := range rows {
		r := &rows[i]
		switch {
		case r.Note != "":
		case r.NeedsSamples != "":
			r.Note = MetricText(r.Metric, r.Value)
			if c := counts(*r); c != "" {
				r.Note += " (" + c + ")"
			}
			if t := thresholdCell(*r); t != nil {
				r.Note += " " + t.(string)
			}
			r.Note += ", needs " + r.NeedsSamples
		case r.NoPriceCalls != nil && *r.NoPriceCalls > 0:
			r.Note = noPriceNote(*r.NoPriceCalls)
		case r.State == "no data":
			r.Note = noDataNote(out.Windows[r.Rule], out)
		}
	}
}

// noPriceNote says that a cost rule's value leaves out calls whose
// model has no price, so that a sum over some calls is not read as all.
func noPriceNote(n float64) string {
	s := "s"
	if int(n) == 1 {
		s = ""
	}
	return fmt.Sprintf("%d call%s without a price left out of the cost (their model is in no price table: see docs/prices.md, --prices)",
		int64(n), s)
}

// noDataNote says of a rule without data where the data is: "nothing in
// the last 24h; the latest run started 2025-11-05T18:40:12Z: try check
// --at 2025-11-05T18:41:00Z, or rules backtest", or, when runs started in
// the window but none holds what the rule counts, that.
func noDataNote(w alerts.RuleWindow, out alerts.CheckReport) string {
	window := "its window"
	var start time.Time // the window's start, when it is a duration
	if w.Duration > 0 {
		window = "the last " + alerts.DurationText(w.Duration)
		if out.Look {
			window = "the " + alerts.DurationText(w.Duration) + " before " + out.At.UTC().Format(time.RFC3339)
		}
		start = out.At.Add(-w.Duration)
	} else if w.Runs > 0 {
		// The last N runs are there whenever a run is: none of them has
		// what the rule counts.
		return fmt.Sprintf("no data in the last %d runs: they have none of what the rule counts", w.Runs)
	}
	if out.LatestData == nil {
		return "no data in " + window + "; no run has a start time"
	}
	latest := out.LatestData.UTC()
	at := latest.Format(time.RFC3339)
	switch {
	case !start.IsZero() && latest.Before(start):
		next := latest.Truncate(time.Minute).Add(time.Minute)
		return "nothing in " + window + "; the latest run started " + at + ": try check --at " + next.Format(time.RFC3339) + ", or rules backtest"
	case out.Look && !latest.Before(out.At):
		return "nothing in " + window + "; the latest run started " + at + ", after this look: try a later --at, or rules backtest"
	}
	// Runs started in the window, but none holds what the rule counts:
	// say so, rather than "no data" beside a latest run inside it.
	return "none of what the rule counts in " + window + ", though runs started there (the latest " + at +
		"): they are of other kinds, or outside the rule's filter"
}

// noteLines are the rows' notes for under the table, "rule: note", rules
// with the same note on one line.
func noteLines(rows []alerts.CheckRow) []string {
	var order []string
	names := map[string][]string{}
	for _, r := range rows {
		if r.Note == "" {
			continue
		}
		name := r.Rule + alerts.LabelText(r.Labels)
		if _, ok := names[r.Note]; !ok {
			order = append(order, r.Note)
		}
		names[r.Note] = append(names[r.Note], name)
	}
	out := make([]string, 0, len(order))
	for _, n := range order {
		out = append(out, EscapeControls(strings.Join(names[n], ", ")+": "+n))
	}
	return out
}

// wrapWords breaks s into lines at spaces to fit width (no wrapping when
// width is 0), ending with a newline. It counts runes and never splits a
// word, as check's notes always have been; wrapText (fit.go) counts
// display width and breaks long words, and would change those lines.
func wrapWords(s string, width int) string {
	if width <= 0 {
		return s + "\n"
	}
	var b strings.Builder
	line := 0
	for i, w := range strings.Fields(s) {
		n := utf8.RuneCountInString(w)
		if i > 0 && line+1+n > width {
			b.WriteString("\n")
			line = 0
		} else if i > 0 {
			b.WriteString(" ")
			line++
		}
		b.WriteString(w)
		line += n
	}
	return b.String() + "\n"
}

// checkTable lays the rows out for a person. width > 0 is a terminal's:
// the labels join the rule's name, the state shows this check's change,
// and the counts join the value, so the table has few columns to fit.
// Otherwise every field has its column.
func checkTable(rows []alerts.CheckRow, status string, width int) reports.Table {
	t := reports.Table{Title: "orchstat check: " + status, Width: width}
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
			value := MetricText(r.Metric, r.Value)
			if c := counts(r); c != "" {
				value += " (" + c + ")"
			}
			var since any
			if r.ActiveSince != nil {
				since = r.ActiveSince.UTC().Format("2006-01-02 15:04")
			}
			// A space before the labels lets a narrow column wrap there.
			t.Rows = append(t.Rows, []any{strings.TrimSpace(r.Rule + " " + alerts.LabelText(r.Labels)), state, value, thresholdCell(r), since})
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
		t.Rows = append(t.Rows, []any{r.Rule, r.Severity, state, strings.Join(labels, ","), MetricText(r.Metric, r.Value),
			thresholdCell(r), countCell(r.Numerator), countCell(r.Denominator), since, r.Changed})
	}
	return t
}

// checkCSV is the rows for programs: numbers at full precision, the
// condition as the rule file has it.
func checkCSV(rows []alerts.CheckRow, status string) reports.Table {
	t := reports.Table{Title: "orchstat check: " + status,
		Columns: []string{"rule", "severity", "state", "labels", "metric", "value", "numerator", "denominator", "threshold", "condition", "active_since", "changed", "error", "note"}}
	for _, r := range rows {
		var since any
		if r.ActiveSince != nil {
			since = *r.ActiveSince
		}
		t.Rows = append(t.Rows, []any{r.Rule, r.Severity, r.State, strings.TrimSuffix(strings.TrimPrefix(alerts.LabelText(r.Labels), "{"), "}"), r.Metric,
			r.Value, r.Numerator, r.Denominator, r.Threshold, r.Condition, since, r.Changed, r.Error, r.Note})
	}
	return t
}

// thresholdCell is a rule's threshold as its comparison, "> 20%"; nil
// for a rule without one.
func thresholdCell(r alerts.CheckRow) any {
	if r.Threshold == nil {
		return nil
	}
	return ThresholdShort(r.Metric, r.Condition, *r.Threshold)
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
func renderQuiet(w io.Writer, rows []alerts.CheckRow, status string) error {
	var firing []alerts.CheckRow
	for _, r := range rows {
		if r.State == alerts.StateFiring {
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
	fmt.Fprintf(&b, "%s - %d %s firing\n", status, len(firing), noun)
	for _, r := range firing {
		line := r.Rule + alerts.LabelText(r.Labels) + " " + reading(r)
		if r.ActiveSince != nil {
			line += " (active since " + r.ActiveSince.UTC().Format(time.RFC3339) + ")"
		}
		b.WriteString(EscapeControls(line) + "\n")
	}
	_, err := fmt.Fprint(w, b.String())
	return err
}

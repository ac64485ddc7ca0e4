package main

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/orchstat/orchstat/model/reports"
	"github.com/orchstat/orchstat/query"
	"github.com/orchstat/orchstat/reports/summary"
	"github.com/orchstat/orchstat/rules/alerting"
	"github.com/orchstat/orchstat/rules/check"
)

// compareSpec is --compare: previous, none, or SINCE..UNTIL.
type compareSpec struct {
	none       bool
	since, end *time.Time // an explicit window
}

func parseCompare(now time.Time, s string) (compareSpec, error) {
	switch s {
	case "", "previous":
		return compareSpec{}, nil
	case "none":
		return compareSpec{none: true}, nil
	}
	a, b, ok := strings.Cut(s, "..")
	if !ok {
		return compareSpec{}, usageError{fmt.Errorf("--compare %q: give previous, none, or SINCE..UNTIL (7d..0d, 2026-11-01..2026-11-08)", s)}
	}
	since, err := parseWhen(now, a)
	if err != nil {
		return compareSpec{}, usageError{fmt.Errorf("--compare: %w", err)}
	}
	until, err := parseWhen(now, b)
	if err != nil {
		return compareSpec{}, usageError{fmt.Errorf("--compare: %w", err)}
	}
	if !since.Before(*until) {
		return compareSpec{}, usageError{fmt.Errorf("--compare %s: its start is not before its end", s)}
	}
	return compareSpec{since: since, end: until}, nil
}

// windowEnd is the report window's end: --until, else now.
func windowEnd(f query.Filter, now time.Time) time.Time {
	if f.Until != nil {
		return *f.Until
	}
	return now
}

// comparePeriod is the window the summary compares with: the one named,
// else the one of equal length just before the report's; nil under
// --compare none, or when the report's window has no start (it starts
// at the first data, so nothing comes before it).
func comparePeriod(f query.Filter, cmp compareSpec, now time.Time) *reports.Period {
	switch {
	case cmp.none:
		return nil
	case cmp.since != nil:
		return &reports.Period{Since: cmp.since, Until: *cmp.end}
	case f.Since == nil:
		return nil
	}
	s := f.Since.Add(-windowEnd(f, now).Sub(*f.Since))
	return &reports.Period{Since: &s, Until: *f.Since}
}

// lakeReach is what of a lake a report reads: its window, the window it
// compares with, and the rules' windows at each one's end (the summary
// evaluates them there), or the whole lake when any of these is
// unbounded (a rule over the last N runs).
func lakeReach(f query.Filter, cmp compareSpec, rf *alerting.File, now time.Time) query.LakeOptions {
	end := windowEnd(f, now)
	since, until := f.Since, end
	widen := func(o query.LakeOptions) bool {
		if o.All || o.Since == nil {
			return false
		}
		if since == nil || o.Since.Before(*since) {
			since = o.Since
		}
		return true
	}
	if f.Since == nil || !widen(rulesWindow(rf, end)) {
		return query.LakeOptions{}
	}
	if p := comparePeriod(f, cmp, now); p != nil {
		if !widen(query.LakeOptions{Since: p.Since}) || !widen(rulesWindow(rf, p.Until)) {
			return query.LakeOptions{}
		}
		if p.Until.After(until) {
			until = p.Until
		}
	}
	if f.Until == nil {
		return query.LakeOptions{Since: since}
	}
	return query.LakeOptions{Since: since, Until: &until}
}

// summarise builds the report's first screen: the rules at the window's
// end by check's own evaluator (check.Look, as check --at), the report of
// the window to compare with, the systems' days and the sessions.
func summarise(ctx context.Context, st *query.Store, f query.Filter, r *reports.Report, rf *alerting.File, scope reports.Scope, cmp compareSpec, now time.Time) (*reports.Summary, error) {
	in := summary.Input{Now: r, MinSamples: minSamples(rf)}
	until := windowEnd(f, now)
	in.Window = reports.Period{Since: f.Since, Until: until}
	var prev query.Filter
	in.Previous = comparePeriod(f, cmp, now)
	switch {
	case cmp.none:
		in.CompareNote = "not compared (--compare none)"
	case in.Previous == nil && firstData(r) == nil:
		in.CompareNote = "nothing in scope to compare"
	case in.Previous == nil:
		in.CompareNote = "no earlier window to compare (--since 7d compares a week with the one before)"
	}
	if in.Previous != nil {
		prev = f
		prev.Since, prev.Until = in.Previous.Since, &in.Previous.Until
		var err error
		if in.Prev, err = st.ReportConcurrently(ctx, prev); err != nil {
			return nil, err
		}
		if in.Prev.Overview.Runs == 0 {
			in.CompareNote = "nothing in scope then"
		}
	}
	var err error
	if in.Daily, err = st.SummaryDaily(ctx, f); err != nil {
		return nil, err
	}
	if in.Sessions, in.SessionKeys, err = st.SessionCalls(ctx, f); err != nil {
		return nil, err
	}
	look, err := check.Look(ctx, query.NewCheckStore(st), rf, until, f.Paths, scopeLabel(scope))
	if err != nil {
		return nil, err
	}
	in.Attention = reports.Attention{At: until, Rules: len(rf.Rules)}
	in.Rows = attentionRows(look.Rows)
	for _, fl := range look.Failures {
		in.Attention.Failed = append(in.Attention.Failed, reports.AttentionFail{Rule: fl.Rule, Error: fl.Err.Error()})
	}
	in.Attention.Note = attentionNote(f)
	// Where the data is, when the rules' windows hold none of it: a run
	// inside them means the rules without data count other things.
	if longest := longestWindow(rf); look.Latest != nil && longest > 0 && look.Latest.Before(until.Add(-longest)) {
		in.Attention.LatestData = look.Latest
	}
	if in.Previous != nil && needsAttention(in.Rows) {
		// The rules at the previous window's end give the alerts their
		// change; with nothing firing or pending there is nothing to
		// change, and the look is spared.
		pl, err := check.Look(ctx, query.NewCheckStore(st), rf, in.Previous.Until, f.Paths, scopeLabel(scope))
		if err != nil {
			return nil, err
		}
		in.PrevRows = attentionRows(pl.Rows)
	}
	return summary.Build(in), nil
}

// attentionNote says that the rules see every provider and run in scope
// when the report was filtered.
func attentionNote(f query.Filter) string {
	if f.Provider != "" || len(f.Runs) > 0 {
		return "the rules see every provider and run in scope, as check does, not only the report's filter"
	}
	return ""
}

func needsAttention(rows []reports.AttentionRow) bool {
	for _, r := range rows {
		if r.State == "firing" || r.State == "pending" {
			return true
		}
	}
	return false
}

func attentionRows(rows []check.Row) []reports.AttentionRow {
	out := make([]reports.AttentionRow, 0, len(rows))
	for _, r := range rows {
		out = append(out, reports.AttentionRow{Rule: r.Rule, Severity: r.Severity, State: r.State, Labels: r.Labels,
			Metric: r.Metric, Value: r.Value, Numerator: r.Numerator, Denominator: r.Denominator,
			Threshold: r.Threshold, Condition: r.Condition})
	}
	return out
}

// minSamples is, by metric, the largest minimum-samples guard of the
// rules on it.
func minSamples(rf *alerting.File) map[string]float64 {
	out := map[string]float64{}
	for _, r := range rf.Rules {
		if n, ok := r.MinSamples(); ok && n > out[r.Metric] {
			out[r.Metric] = n
		}
	}
	return out
}

// firstData is the earliest start of a run in the report, of any system.
func firstData(r *reports.Report) *time.Time {
	first := r.Overview.FirstEvent
	for _, s := range r.Systems.BySystem {
		if s.FirstRun != nil && (first == nil || s.FirstRun.Before(*first)) {
			first = s.FirstRun
		}
	}
	return first
}

// utf8Locale reports whether the locale's character set is UTF-8, by the
// first of LC_ALL, LC_CTYPE and LANG that is set, as setlocale reads
// them. With none set it is taken as UTF-8: terminals are, and orchstat
// prints UTF-8 text (names, the scope line's dash) regardless.
func utf8Locale(getenv func(string) string) bool {
	for _, k := range []string{"LC_ALL", "LC_CTYPE", "LANG"} {
		if v := getenv(k); v != "" {
			v = strings.ToLower(v)
			return strings.Contains(v, "utf-8") || strings.Contains(v, "utf8")
		}
	}
	return true
}

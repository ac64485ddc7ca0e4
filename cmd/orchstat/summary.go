package main

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/orchstat/orchstat/model/reports"
	"github.com/orchstat/orchstat/query"
	"github.com/orchstat/orchstat/reports/summary"
	"github.com/orchstat/orchstat/rules"
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

// summarise builds the report's first screen: the rules at the window's
// end by check's own evaluator (check.Look, as check --at), the report of
// the window to compare with, the systems' days and the sessions.
func summarise(ctx context.Context, st *query.Store, f query.Filter, r *reports.Report, rf *rules.File, scope reports.Scope, cmp compareSpec, now time.Time) (*reports.Summary, error) {
	in := summary.Input{Now: r, MinSamples: minSamples(rf)}
	until := now
	if f.Until != nil {
		until = *f.Until
	}
	in.Window = reports.Period{Since: f.Since, Until: until}
	var prev query.Filter
	switch {
	case cmp.none:
		in.CompareNote = "not compared (--compare none)"
	case cmp.since != nil:
		in.Previous = &reports.Period{Since: cmp.since, Until: *cmp.end}
	case f.Since == nil:
		if firstData(r) == nil {
			in.CompareNote = "nothing in scope to compare"
			break
		}
		in.CompareNote = "no earlier window to compare (--since 7d compares a week with the one before)"
	default:
		length := until.Sub(*f.Since)
		s := f.Since.Add(-length)
		in.Previous = &reports.Period{Since: &s, Until: *f.Since}
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
	if look.Latest != nil && look.Latest.Before(until) {
		in.Attention.LatestData = look.Latest
	}
	if in.Previous != nil {
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
func minSamples(rf *rules.File) map[string]float64 {
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

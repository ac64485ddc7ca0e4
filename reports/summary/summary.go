// Package summary builds the report's first screen (reports.Summary) from
// a report of the window, a report of the window before it, the rules'
// evaluation at each window's end and the systems' days. It reads no
// store and evaluates no rule: the command hands it what the store and
// check's evaluator answered, so the summary cannot disagree with them.
package summary

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/orchstat/orchstat/model/reports"
)

// Input is what a summary is built from.
type Input struct {
	Now *reports.Report
	// Prev is the report of the previous window; nil under --compare
	// none.
	Prev     *reports.Report
	Window   reports.Period
	Previous *reports.Period
	// CompareNote says why nothing is compared, when Previous is set but
	// holds no data, or Prev is nil.
	CompareNote string
	// Daily is the record systems' and agents' days in the window (the
	// orchestrator's are Now's by-day breakdown).
	Daily map[string][]reports.DayPoint
	// Sessions are the agents' sessions in the window with their calls,
	// SessionKeys their ids.
	Sessions    []reports.CallRow
	SessionKeys []string
	// Attention is the rules' evaluation at the window's end, every row
	// (Build keeps the firing and pending ones); PrevRows the same at the
	// previous window's end.
	Attention reports.Attention
	Rows      []reports.AttentionRow
	PrevRows  []reports.AttentionRow
	// MinSamples is, by metric, the samples a rate needs in both windows
	// for its change to be shown: the largest guard of the rules on that
	// metric, else DefaultMinSamples.
	MinSamples map[string]float64
}

// DefaultMinSamples is the samples a rate no rule guards needs in each
// window for its change to be shown: the built-in rules' usual guard.
const DefaultMinSamples = 20

// Build builds the summary.
func Build(in Input) *reports.Summary {
	s := &reports.Summary{Window: in.Window, Previous: in.Previous, CompareNote: in.CompareNote}
	s.Window.Days = days(in)
	s.Attention = attention(in)
	s.Systems = systems(in, s.Window.Days)
	s.Where = where(in)
	return s
}

// days are the whole UTC days of the window: from Since's day (or the
// first day with data) to the day before Until, or its day when Until
// is past midnight.
func days(in Input) []string {
	var first time.Time
	if in.Window.Since != nil {
		first = in.Window.Since.UTC()
	} else {
		var earliest string
		for _, d := range in.Now.Breakdowns.ByDay {
			if earliest == "" || d.Day < earliest {
				earliest = d.Day
			}
		}
		for _, pts := range in.Daily {
			for _, p := range pts {
				if earliest == "" || p.Day < earliest {
					earliest = p.Day
				}
			}
		}
		if earliest == "" {
			return nil
		}
		first, _ = time.Parse(time.DateOnly, earliest)
	}
	last := in.Window.Until.UTC().Add(-time.Microsecond)
	var out []string
	for d := first.Truncate(24 * time.Hour); !d.After(last); d = d.AddDate(0, 0, 1) {
		out = append(out, d.Format(time.DateOnly))
	}
	return out
}

func attention(in Input) reports.Attention {
	a := in.Attention
	a.Counts = map[string]int{}
	a.Alerts = []reports.AttentionRow{}
	for _, r := range in.Rows {
		a.Counts[r.State]++
		if r.State != "firing" && r.State != "pending" {
			continue
		}
		if in.Previous != nil {
			r.Change = ruleChange(in, r)
		}
		a.Alerts = append(a.Alerts, r)
	}
	// Firing first, critical before warning, then by rule.
	slices.SortStableFunc(a.Alerts, func(x, y reports.AttentionRow) int {
		return cmp.Or(cmp.Compare(stateRank(x.State), stateRank(y.State)),
			cmp.Compare(severityRank(x.Severity), severityRank(y.Severity)), cmp.Compare(x.Rule, y.Rule))
	})
	return a
}

func stateRank(s string) int {
	if s == "firing" {
		return 0
	}
	return 1
}

func severityRank(s string) int {
	switch s {
	case "critical":
		return 0
	case "warning":
		return 1
	}
	return 2
}

// ruleChange is an alert's change against the same rule and labels at
// the previous window's end.
func ruleChange(in Input, r reports.AttentionRow) *reports.Change {
	for _, p := range in.PrevRows {
		if p.Rule != r.Rule || !sameLabels(p.Labels, r.Labels) {
			continue
		}
		if r.Denominator != nil && p.Denominator != nil && r.Numerator != nil && p.Numerator != nil {
			c := rateChange(*r.Numerator, *r.Denominator, *p.Numerator, *p.Denominator, minSamples(in, r.Metric), isShare(r.Metric, *r.Numerator, *r.Denominator))
			return &c
		}
		c := valueChange(r.Value, p.Value)
		return &c
	}
	return &reports.Change{Reason: "no value at the previous window's end"}
}

// isShare reports whether a ratio is a share (a proportion, whose change
// has Newcombe's interval) rather than an average, such as repair
// iterations per loop.
func isShare(metric string, num, den float64) bool {
	return num <= den && !reports.AverageMetric(metric)
}

func sameLabels(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

func minSamples(in Input, metric string) float64 {
	if n, ok := in.MinSamples[metric]; ok {
		return n
	}
	return DefaultMinSamples
}

// rateChange is the change of a rate from num0/den0 (then) to num/den
// (now), shown only when both windows have min samples. For a share it
// carries the difference's 95% interval (Newcombe's method 10, from
// Wilson's score intervals), and is significant when the interval
// excludes zero; an average has no interval and is never marked as a
// rise or a fall.
func rateChange(num, den, num0, den0, min float64, share bool) reports.Change {
	c := reports.Change{PreviousNumerator: &num0, PreviousDenominator: &den0}
	if den0 > 0 {
		p0 := num0 / den0
		c.Previous = &p0
	}
	switch {
	case den0 < min && den < min:
		c.Reason = fmt.Sprintf("fewer than %s samples in either window (%s now, %s before)", countStr(min), countStr(den), countStr(den0))
		return c
	case den0 < min:
		c.Reason = fmt.Sprintf("fewer than %s samples in the previous window (%s)", countStr(min), countStr(den0))
		return c
	case den < min:
		c.Reason = fmt.Sprintf("fewer than %s samples in this window (%s)", countStr(min), countStr(den))
		return c
	}
	p, p0 := num/den, num0/den0
	d := p - p0
	c.Delta = &d
	if !share {
		c.Reason = "an average: no interval"
		return c
	}
	lo, hi := newcombe(num, den, num0, den0)
	c.Low, c.High = &lo, &hi
	c.Significant = lo > 0 || hi < 0
	return c
}

// valueChange is the change of a total (a count or a sum): what happened,
// not an estimate, so it has no interval and is significant whenever it
// is not zero.
func valueChange(now, then *float64) reports.Change {
	c := reports.Change{Previous: then}
	switch {
	case now == nil && then == nil:
		c.Reason = "no value in either window"
	case then == nil:
		c.Reason = "no value in the previous window"
	case now == nil:
		c.Reason = "no value in this window"
	default:
		d := *now - *then
		c.Delta = &d
		c.Significant = d != 0
	}
	return c
}

// newcombe is the 95% interval of p1 - p2 for proportions x1/n1 and
// x2/n2 by Newcombe's hybrid score method (Statistics in Medicine 17,
// 1998, method 10), which keeps its coverage near 95% for small counts
// and rates near 0 or 1, where the Wald interval does not.
func newcombe(x1, n1, x2, n2 float64) (lo, hi float64) {
	p1, p2 := x1/n1, x2/n2
	l1, u1 := wilson(x1, n1)
	l2, u2 := wilson(x2, n2)
	d := p1 - p2
	lo = d - math.Sqrt((p1-l1)*(p1-l1)+(u2-p2)*(u2-p2))
	hi = d + math.Sqrt((u1-p1)*(u1-p1)+(p2-l2)*(p2-l2))
	return lo, hi
}

// z is the standard normal's 97.5th percentile.
const z = 1.959963984540054

// wilson is the 95% Wilson score interval of the proportion x/n.
func wilson(x, n float64) (lo, hi float64) {
	p := x / n
	den := 1 + z*z/n
	mid := (p + z*z/(2*n)) / den
	half := z * math.Sqrt(p*(1-p)/n+z*z/(4*n*n)) / den
	return math.Max(0, mid-half), math.Min(1, mid+half)
}

func countStr(v float64) string {
	if v == math.Trunc(v) {
		return fmt.Sprintf("%.0f", v)
	}
	return fmt.Sprintf("%g", v)
}

// Package promrules turns an orchstat rule file into Prometheus recording
// and alerting rules over the counters `orchstat metrics` exports
// (reports.Counters): a ratio metric over a window becomes the ratio of
// its counts' increases, summed over runners, and an alert rule's
// condition the comparison of that ratio, with its minimum-samples guard
// over the denominator's increase. What Prometheus cannot express (a
// window of the last N runs, a rule's own SQL, a condition beyond
// comparisons joined by "and") is named, with why, rather than dropped.
package promrules

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/orchstat/orchstat/model/reports"
	"github.com/orchstat/orchstat/rules/alerting"
)

// Options are the export's choices.
type Options struct {
	// Source names the rule file in the output's head.
	Source string
	// Interval is the rule groups' evaluation interval; an orchstat `for`
	// of N checks becomes a Prometheus `for` of N-1 intervals.
	Interval time.Duration
	// Windows are recorded for every ratio metric besides the rule file's
	// own windows.
	Windows []time.Duration
}

// Skipped is a rule the export leaves out, and why.
type Skipped struct {
	Rule, Why string
}

// Recording is one recording rule.
type Recording struct {
	Record, Expr string
}

// Alerting is one alerting rule, translated.
type Alerting struct {
	Alert, Expr string
	For         time.Duration
	// ForNote says how an orchstat `for` of checks was turned into time.
	ForNote       string
	KeepFiringFor time.Duration
	Labels        map[string]string
	Annotations   map[string]string
}

// Export is a rule file as Prometheus rules.
type Export struct {
	Source    string
	Interval  time.Duration
	Recording []Recording
	Alerting  []Alerting
	Skipped   []Skipped
}

// series is a metric over a window, aggregated by some labels.
type series struct {
	spec   reports.MetricSpec
	by     []string
	window time.Duration
}

// New translates f's rules.
func New(f *alerting.File, o Options) (*Export, error) {
	if o.Interval <= 0 {
		return nil, fmt.Errorf("the evaluation interval must be positive, not %s", o.Interval)
	}
	e := &Export{Source: o.Source, Interval: o.Interval}
	windows := slices.Clone(o.Windows)
	for _, r := range f.Rules {
		if r.Window.Duration > 0 && !slices.Contains(windows, r.Window.Duration) {
			windows = append(windows, r.Window.Duration)
		}
	}
	slices.Sort(windows)
	recorded := map[string]bool{}
	record := func(s series) string {
		name := recordName(s)
		if !recorded[name] {
			recorded[name] = true
			e.Recording = append(e.Recording, Recording{Record: name, Expr: valueExpr(s)})
		}
		return name
	}
	for _, spec := range reports.Catalog {
		if !spec.Kind.Ratio() {
			continue
		}
		for _, w := range windows {
			record(series{spec: spec, window: w})
			if len(spec.Labels) > 0 {
				record(series{spec: spec, by: spec.Labels, window: w})
			}
		}
	}
	for _, r := range f.Rules {
		a, why := alertOf(r, o.Interval, record)
		if why != "" {
			e.Skipped = append(e.Skipped, Skipped{Rule: r.Name, Why: why})
			continue
		}
		e.Alerting = append(e.Alerting, a)
	}
	return e, nil
}

// alertOf translates one rule, or says why it cannot be.
func alertOf(r *alerting.Rule, interval time.Duration, record func(series) string) (Alerting, string) {
	switch {
	case r.SQL != "":
		return Alerting{}, "an sql: rule reads the store with its own query, which no counter carries"
	case r.Window.Runs > 0:
		return Alerting{}, fmt.Sprintf("its window is the last %d runs; Prometheus's windows are spans of time, and counters do not know which runs were last", r.Window.Runs)
	case r.Window.Duration <= 0:
		return Alerting{}, "it has no window: it reads the scope of the command that runs it, which has no counterpart over counters"
	}
	spec, ok := reports.Spec(r.Metric)
	if !ok {
		return Alerting{}, fmt.Sprintf("metric %q is not in the catalog", r.Metric)
	}
	s := series{spec: spec, by: r.By, window: r.Window.Duration}
	value := "(" + valueExpr(s) + ")"
	if spec.Kind.Ratio() {
		value = record(s)
	}
	cond, why := condition(r.Condition, r.Threshold, s, value)
	if why != "" {
		return Alerting{}, why
	}
	a := Alerting{Alert: r.Name, Expr: cond, KeepFiringFor: r.KeepFiringFor, Labels: map[string]string{"severity": r.Severity}}
	for k, v := range r.Labels {
		a.Labels[k] = v
	}
	switch {
	case r.For.Duration > 0:
		a.For = r.For.Duration
	case r.For.Checks > 1:
		a.For = time.Duration(r.For.Checks-1) * interval
		a.ForNote = fmt.Sprintf("for: %d checks, as %d × the %s evaluation interval", r.For.Checks, r.For.Checks-1, promDuration(interval))
	}
	if len(r.Annotations) > 0 {
		a.Annotations = map[string]string{}
		for k, v := range r.Annotations {
			t, why := annotation(v, r.Threshold, s)
			if why != "" {
				return Alerting{}, fmt.Sprintf("annotation %s: %s", k, why)
			}
			a.Annotations[k] = t
		}
	}
	return a, ""
}

// counter is the sample name of a family's count.
func counter(f reports.Family, count string) string {
	c, ok := reports.CounterOf(f, count)
	if !ok {
		return "orchstat_unknown_" + count + "_total"
	}
	return c.Name + "_total"
}

// increase is the increase of a count over s's window, summed over the
// runners and whatever labels s does not keep.
func increase(s series, count string) string {
	return fmt.Sprintf("sum%s (increase(%s[%s]))", byClause(s.by), counter(s.spec.Family, count), promDuration(s.window))
}

func byClause(by []string) string {
	if len(by) == 0 {
		return ""
	}
	return " by (" + strings.Join(by, ", ") + ")"
}

// valueExpr is a metric's value over s: a ratio of increases, with no
// value where the denominator did not increase (a ratio over nothing has
// none, as in the report), or a count's increase.
func valueExpr(s series) string {
	if s.spec.Kind.Ratio() {
		return increase(s, s.spec.Num) + " / (" + increase(s, s.spec.Den) + " > 0)"
	}
	return increase(s, s.spec.Num)
}

// recordName follows Prometheus's level:metric:operations: the labels
// kept (fleet for none), the metric, the operation and the window.
func recordName(s series) string {
	level := "fleet"
	if len(s.by) > 0 {
		level = strings.Join(s.by, "_")
	}
	op := "increase"
	if s.spec.Kind.Ratio() {
		op = "ratio"
	}
	return level + ":orchstat_" + s.spec.Name + ":" + op + promDuration(s.window)
}

// promDuration writes d as PromQL does: 24h, 5m, 30s.
func promDuration(d time.Duration) string {
	switch {
	case d%time.Hour == 0:
		return fmt.Sprintf("%dh", d/time.Hour)
	case d%time.Minute == 0:
		return fmt.Sprintf("%dm", d/time.Minute)
	case d%time.Second == 0:
		return fmt.Sprintf("%ds", d/time.Second)
	}
	return fmt.Sprintf("%dms", d/time.Millisecond)
}

// sortedKeys are m's keys in order.
func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

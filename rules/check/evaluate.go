// Package check evaluates alert rules as `orchstat check` and `orchstat
// rules test` do: Evaluate advances the alerts of every rule one
// evaluation, from samples a alerting.Sampler takes, and Run then Deliver
// are a whole check of a store, from its saved alert state to delivered
// notifications.
package check

import (
	"context"
	"errors"
	"sort"
	"time"

	"github.com/orchstat/orchstat/model/alerts"
	"github.com/orchstat/orchstat/rules/alerting"
	"github.com/orchstat/orchstat/rules/notify"
)

// A check's exit status, in the monitoring-plugin convention, so cron
// wrappers and Nagios-style checkers can branch on it.
const (
	OK       = 0
	Warning  = 1
	Critical = 2
	Unknown  = 3
)

// StatusNames are the statuses' names, as the status line prints them.
var StatusNames = map[int]string{OK: "OK", Warning: "WARNING", Critical: "CRITICAL", Unknown: "UNKNOWN"}

// Evaluation is one evaluation of every rule.
type Evaluation struct {
	Alerts   []alerting.Alert
	Rows     []Row
	Gauges   []Gauge
	Code     int // the exit status it calls for
	Notify   []notify.Evaluated
	Failures []Failure
}

// Failure is a rule that could not be evaluated, or whose annotations
// could not be rendered.
type Failure struct {
	Rule string
	Err  error
}

// Gauge is one sample of the metrics a check exports for Prometheus
// (check --textfile).
type Gauge struct {
	Name, Help string
	Labels     map[string]string
	Value      float64
}

// ErrNotAtTime is a sampler's answer for a rule it cannot evaluate at the
// instant asked: a rule with its own SQL reads the store as it is, so it
// has no value at a past time. Evaluate skips such a rule, keeping its
// alerts as they were, and it is not a failure.
var ErrNotAtTime = errors.New("a rule with its own sql reads the store as it is now, not at another time")

// StateSkipped is the state of a rule that was not evaluated (see
// ErrNotAtTime).
const StateSkipped = "skipped"

// Evaluate evaluates every rule of rf at now, advancing the alerts of the
// last evaluation (prev, by rule). It reads samples and nothing else.
// When scope is set, every alert is labelled scope=scope, so a check of
// some runs has other alerts than the whole store's, with their own
// state.
//
// A rule's failure is that rule's: the other rules are evaluated, shown
// and notified as usual. A rule whose samples or condition fail keeps its
// alerts as they were; one whose annotations fail still advances its
// alerts and notifies, with the error in place of its annotations, so a
// firing alert is never hidden by a typo in its template. The exit status
// is Critical when a critical alert fires, else Unknown when a rule
// failed, else Warning or OK.
func Evaluate(ctx context.Context, s alerting.Sampler, rf *alerting.File, prev map[string][]alerting.Alert, now time.Time, scope string) Evaluation {
	var ev Evaluation
	code := OK
	for _, r := range rf.Rules {
		samples, obs, noData, err := observe(ctx, s, r, scope)
		if errors.Is(err, ErrNotAtTime) {
			ev.Alerts = append(ev.Alerts, prev[r.Name]...)
			row := ruleRow(r, StateSkipped)
			row.Note = ErrNotAtTime.Error()
			ev.Rows = append(ev.Rows, row)
			continue
		}
		if err != nil {
			ev.Failures = append(ev.Failures, Failure{Rule: r.Name, Err: err})
			ev.Alerts = append(ev.Alerts, prev[r.Name]...)
			row := ruleRow(r, "error")
			row.Error = err.Error()
			ev.Rows = append(ev.Rows, row)
			continue
		}
		for _, s := range samples {
			ev.Gauges = append(ev.Gauges, ruleGauges(r, s)...)
		}
		spec := alerting.Spec{Rule: r.Name, For: r.For, KeepFiringFor: r.KeepFiringFor}
		next, changes := alerting.Eval(spec, prev[r.Name], obs, noData, now)
		ev.Alerts = append(ev.Alerts, next...)
		changed := map[string]alerting.Transition{}
		for _, c := range changes {
			changed[c.Alert.Fingerprint] = c
		}
		if noData {
			row := ruleRow(r, "no data")
			row.NoData = true
			ev.Rows = append(ev.Rows, row)
		}
		code = max(code, ev.addAlerts(r, next, changed))
		if !noData {
			ev.Rows = append(ev.Rows, inactiveRows(r, obs, next, changed)...)
		}
	}
	if len(ev.Failures) > 0 && code != Critical {
		code = Unknown
	}
	ev.Code = code
	return ev
}

// addAlerts adds rule r's alerts after this evaluation (changed holds
// their transitions by fingerprint) to the rows, the gauges and the
// alerts to notify, and returns the exit status they call for.
func (ev *Evaluation) addAlerts(r *alerting.Rule, next []alerting.Alert, changed map[string]alerting.Transition) int {
	code := OK
	annotateFailed := false
	for _, a := range next {
		row := ruleRow(r, a.State.String())
		row.Labels, row.Value, row.Numerator, row.Denominator, row.NoData = a.Labels, a.Value, a.Numerator, a.Denominator, a.NoData
		row.NoPriceCalls = a.NoPrice
		if !a.ActiveAt.IsZero() {
			t := a.ActiveAt
			row.ActiveSince = &t
		}
		c, ok := changed[a.Fingerprint]
		if ok {
			row.Changed = c.From.String() + "→" + c.To.String()
		}
		if a.State == alerting.StateFiring || a.State == alerting.StateResolved {
			ann, err := r.Annotate(alerting.Sample{Value: a.Value, Numerator: a.Numerator, Denominator: a.Denominator, NoPrice: a.NoPrice, Labels: a.Labels})
			if err != nil {
				if !annotateFailed {
					ev.Failures = append(ev.Failures, Failure{Rule: r.Name, Err: err})
					annotateFailed = true
				}
				row.Error = err.Error()
				ann = map[string]string{"annotation_error": err.Error()}
			}
			ev.Notify = append(ev.Notify, notify.Evaluated{Rule: r, Alert: a, Annotations: ann,
				Changed: ok && (c.To == alerting.StateResolved || c.From != alerting.StateFiring)})
		}
		ev.Rows = append(ev.Rows, row)
		if a.State != alerting.StateInactive {
			l := map[string]string{"alertname": r.Name, "alertstate": a.State.String(), "severity": r.Severity}
			for k, v := range a.Labels {
				l[k] = v
			}
			ev.Gauges = append(ev.Gauges, Gauge{Name: "alerts", Help: "Alerts that are pending, firing or recently resolved, one series each (value 1).", Labels: l, Value: 1})
		}
		if a.State == alerting.StateFiring {
			switch r.Severity {
			case "critical":
				code = max(code, Critical)
			case "warning":
				code = max(code, Warning)
			}
		}
	}
	return code
}

// observe takes a rule's samples and decides where its condition holds.
func observe(ctx context.Context, sampler alerting.Sampler, r *alerting.Rule, scope string) (samples []alerting.Sample, obs []alerting.Observation, noData bool, err error) {
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
		obs = append(obs, alerting.Observation{Sample: s, Holds: holds})
	}
	return samples, obs, noData, nil
}

// metricOf is a rule's metric as rows and gauges name it: "sql" for a
// rule with its own query.
func metricOf(r *alerting.Rule) string {
	if r.SQL != "" {
		return "sql"
	}
	return r.Metric
}

// ruleRow is a row of rule r in state, with what every row of it shows.
func ruleRow(r *alerting.Rule, state string) Row {
	return Row{Rule: r.Name, Severity: r.Severity, State: state, Metric: metricOf(r), Threshold: r.Threshold, Condition: r.Condition}
}

// ruleGauges turns one evaluated sample into gauges labelled with the
// rule, its metric and the sample's labels; values that do not exist are
// left out.
func ruleGauges(r *alerting.Rule, s alerting.Sample) []Gauge {
	labels := map[string]string{"rule": r.Name, "metric": metricOf(r)}
	for k, v := range s.Labels {
		labels[k] = v
	}
	var out []Gauge
	for _, g := range []struct {
		name, help string
		v          *float64
	}{
		{"rule_value", "The value of a rule's metric over its window.", s.Value},
		{"rule_numerator", "The numerator behind a ratio rule's value.", s.Numerator},
		{"rule_denominator", "The denominator behind a ratio rule's value.", s.Denominator},
		{"rule_no_price_calls", "The calls a cost rule's value leaves out because their model has no price.", s.NoPrice},
	} {
		if g.v != nil {
			out = append(out, Gauge{Name: g.name, Help: g.help, Labels: labels, Value: *g.v})
		}
	}
	return out
}

// inactiveRows are the label sets of r's observations that have no alert:
// their condition does not hold, and alerting.Eval keeps no state for them.
// They are listed with their values so a reader sees how close they are
// to firing; a label set seen twice is listed once, with a value if any.
// A pending alert that stopped holding shows its change (pending→inactive).
func inactiveRows(r *alerting.Rule, obs []alerting.Observation, ruleAlerts []alerting.Alert, changed map[string]alerting.Transition) []Row {
	active := map[string]bool{}
	for _, a := range ruleAlerts {
		active[a.Fingerprint] = true
	}
	seen := map[string]int{}
	var rows []Row
	for _, o := range obs {
		fp := alerting.Fingerprint(r.Name, o.Sample.Labels)
		if active[fp] {
			continue
		}
		row := ruleRow(r, alerting.StateInactive.String())
		row.Labels, row.Value, row.Numerator, row.Denominator = o.Sample.Labels, o.Sample.Value, o.Sample.Numerator, o.Sample.Denominator
		row.NoPriceCalls = o.Sample.NoPrice
		row.NoData = o.Sample.Value == nil
		row.NeedsSamples, _ = r.ShortOfSamples(o.Sample)
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
	sort.SliceStable(rows, func(i, j int) bool { return alerts.LabelText(rows[i].Labels) < alerts.LabelText(rows[j].Labels) })
	return rows
}

package check

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/orchstat/orchstat/rules/alerting"
	"github.com/orchstat/orchstat/rules/notify"
)

// BacktestOptions are what a backtest needs: the rules, the data as it
// was at each instant, and the instants.
type BacktestOptions struct {
	Rules *alerting.File
	// Sampler reads the data as it was at an instant: windows that end
	// there (see StoreSampler.Past).
	Sampler func(at time.Time) alerting.Sampler
	// Times are the instants to evaluate at, in order.
	Times []time.Time
	// Scope labels the alerts, as a check's (see Evaluate).
	Scope string
}

// Backtest is the rules' history over a span of time: what check would
// have done had it run at each instant.
type Backtest struct {
	Evaluations int            `json:"evaluations"`
	Rules       []RuleBacktest `json:"rules"`
	// Notifications is how many notifications check would have queued,
	// a notification grouping several rules' alerts counted once.
	Notifications int `json:"notifications"`
	// Receivers says whether the rule file has receivers to notify.
	Receivers bool `json:"receivers"`
}

// RunBacktest evaluates the rules at each of o.Times with Evaluate, from
// no alerts, carrying the alerts from one evaluation to the next in
// memory as check carries them in the store, and plans each evaluation's
// notifications as check does (repeat_interval, group_by), sending none.
// Nothing is read or written but what the samplers read.
func RunBacktest(ctx context.Context, o BacktestOptions) (Backtest, error) {
	bt := Backtest{Receivers: o.Rules.Route != nil && len(o.Rules.Receivers) > 0}
	index := map[string]int{}
	for i, r := range o.Rules.Rules {
		index[r.Name] = i
		bt.Rules = append(bt.Rules, RuleBacktest{Rule: r.Name, Severity: r.Severity, Metric: metricOf(r),
			Threshold: r.Threshold, Condition: r.Condition, Alerts: []Incident{}})
	}
	tally := backtestTally{bt: &bt, rules: o.Rules.Rules, index: index, open: map[string]incidentRef{}}
	prev := map[string][]alerting.Alert{}
	groups := map[string]time.Time{}
	for _, at := range o.Times {
		if err := ctx.Err(); err != nil {
			return bt, err
		}
		ev := Evaluate(ctx, o.Sampler(at), o.Rules, prev, at, o.Scope)
		bt.Evaluations++
		prev = map[string][]alerting.Alert{}
		for _, a := range ev.Alerts {
			prev[a.Rule] = append(prev[a.Rule], a)
		}
		tally.incidents(ev.Alerts, at)
		tally.rows(ev.Rows, at)
		queue, _ := notify.Plan(o.Rules.Route, o.Rules.Receivers, ev.Notify, groups, at)
		tally.notifications(queue)
	}
	return bt, nil
}

// backtestTally adds one evaluation after another to a Backtest.
type backtestTally struct {
	bt    *Backtest
	rules []*alerting.Rule
	// index is each rule's place in rules and bt.Rules, by its name.
	index map[string]int
	// open is each firing alert's incident, by its notification
	// fingerprint (as notify's messages carry it).
	open map[string]incidentRef
}

// incidentRef is an incident: its rule's place and its own among the
// rule's Alerts.
type incidentRef struct{ rule, n int }

// incidents opens an incident for each alert that fired at at, and
// closes the open one of each alert resolved at at.
func (t *backtestTally) incidents(alerts []alerting.Alert, at time.Time) {
	for _, a := range alerts {
		i, ok := t.index[a.Rule]
		if !ok {
			continue
		}
		r, rb := t.rules[i], &t.bt.Rules[i]
		key := alerting.Fingerprint(r.Name, notify.Labels(r, a))
		switch {
		case a.State == alerting.StateFiring && a.FiredAt.Equal(at):
			rb.Alerts = append(rb.Alerts, Incident{Labels: a.Labels, ActiveAt: a.ActiveAt, FiredAt: a.FiredAt,
				Value: a.Value, Numerator: a.Numerator, Denominator: a.Denominator, NoPriceCalls: a.NoPrice})
			t.open[key] = incidentRef{i, len(rb.Alerts) - 1}
		case a.State == alerting.StateResolved && a.ResolvedAt.Equal(at):
			if x, ok := t.open[key]; ok && x.rule == i {
				rt := a.ResolvedAt
				rb.Alerts[x.n].ResolvedAt = &rt
			}
		}
	}
}

// rows counts, per rule, the evaluation at at's rows: no data, skipped,
// failed (keeping the first error), held, short of samples, blips.
func (t *backtestTally) rows(rows []Row, at time.Time) {
	held, short := map[string]bool{}, map[string]bool{}
	for _, row := range rows {
		i, ok := t.index[row.Rule]
		if !ok {
			continue
		}
		rb := &t.bt.Rules[i]
		switch row.State {
		case "no data":
			rb.NoData++
		case StateSkipped:
			rb.Skipped++
		case "error":
			rb.Failed++
			if rb.Error == "" {
				rb.Error = fmt.Sprintf("%s: %s", at.UTC().Format(time.RFC3339), row.Error)
			}
		case alerting.StatePending.String(), alerting.StateFiring.String():
			if !row.NoData && !held[row.Rule] {
				held[row.Rule] = true
				rb.Held++
			}
		}
		if row.NeedsSamples != "" && !short[row.Rule] {
			short[row.Rule] = true
			rb.Short++
		}
		if row.Changed == "pending→inactive" {
			rb.Blips++
		}
	}
}

// notifications counts the notifications queued, in all, per rule (once
// per notification) and per incident.
func (t *backtestTally) notifications(queue []notify.Notification) {
	t.bt.Notifications += len(queue)
	for _, n := range queue {
		counted := map[int]bool{}
		for _, a := range n.Message.Alerts {
			i, ok := t.index[a.Labels["alertname"]]
			if !ok {
				continue
			}
			if !counted[i] {
				counted[i] = true
				t.bt.Rules[i].Notifications++
			}
			if x, ok := t.open[a.Fingerprint]; ok && x.rule == i {
				t.bt.Rules[i].Alerts[x.n].Notifications++
			}
		}
	}
}

// BacktestSteps are the usual steps of a backtest, the shortest first;
// DefaultStep picks from them.
var BacktestSteps = []time.Duration{5 * time.Minute, 15 * time.Minute, time.Hour,
	3 * time.Hour, 6 * time.Hour, 12 * time.Hour, 24 * time.Hour, 7 * 24 * time.Hour}

// MaxDefaultPoints is how many evaluations the default step gives at most.
const MaxDefaultPoints = 200

// DefaultStep is the shortest of BacktestSteps that evaluates the span
// from..to at most MaxDefaultPoints times: an hour for a few days of
// data, a day for half a year.
func DefaultStep(from, to time.Time) time.Duration {
	span := to.Sub(from)
	for _, s := range BacktestSteps {
		if span/s < MaxDefaultPoints {
			return s
		}
	}
	return BacktestSteps[len(BacktestSteps)-1]
}

// BacktestTimes are from, from+step, ... up to to, at most limit of them
// (false when there would be more).
func BacktestTimes(from, to time.Time, step time.Duration, limit int) ([]time.Time, bool) {
	if step <= 0 || to.Before(from) {
		return nil, true
	}
	if int64(to.Sub(from)/step) >= int64(limit) {
		return nil, false
	}
	var out []time.Time
	for t := from; !t.After(to); t = t.Add(step) {
		out = append(out, t)
	}
	return out, true
}

// DataTimes are the instants a backtest evaluates at by default: the
// hour after each run started (a window ending there holds it) and the
// hour after it left the longest window (so an alert it raised
// resolves), in order and once each; ok is false when there would be
// more than limit of them, when a fixed step serves better.
func DataTimes(starts []time.Time, longest time.Duration, limit int) (times []time.Time, ok bool) {
	seen := map[time.Time]bool{}
	add := func(t time.Time) {
		t = t.Truncate(time.Hour).Add(time.Hour)
		if !seen[t] {
			seen[t] = true
			times = append(times, t)
		}
	}
	for _, s := range starts {
		add(s)
		if longest > 0 {
			add(s.Add(longest))
		}
		if len(times) > limit {
			return nil, false
		}
	}
	slices.SortFunc(times, func(a, b time.Time) int { return a.Compare(b) })
	return times, true
}

// WithData keeps of times those whose window of length longest, ending
// there, holds a run start, and the first after each stretch of them, so
// that an alert resolves as check would see it; it returns how many were
// dropped. A rule over the last N runs (longest 0) sees data wherever a
// run started before: nothing is dropped after the first run.
func WithData(times, starts []time.Time, longest time.Duration) (kept []time.Time, dropped int) {
	prevKept := false
	for _, at := range times {
		i, _ := slices.BinarySearchFunc(starts, at, func(s, t time.Time) int { return s.Compare(t) })
		var has bool
		if longest <= 0 {
			has = i > 0
		} else {
			j, _ := slices.BinarySearchFunc(starts, at.Add(-longest), func(s, t time.Time) int { return s.Compare(t) })
			has = i > j
		}
		if has || prevKept {
			kept = append(kept, at)
		} else {
			dropped++
		}
		prevKept = has
	}
	return kept, dropped
}

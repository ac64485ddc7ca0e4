package summary

import (
	"cmp"
	"slices"
	"strings"

	"github.com/orchstat/orchstat/model/reports"
)

// Orchestrator is the summary's name for the orchestrator's traces.
const Orchestrator = "orchestrator"

// RunFailureRate names the orchestrator's failed runs over its runs, a
// figure only the summary shows (the catalog has failed_runs, a count).
const RunFailureRate = "run_failure_rate"

// figures are one system's headline figures in one window, before
// changes.
type figures struct {
	unit                       string
	count, fail, retry, cost   reports.Figure
	present                    bool
	countMetric, failM, retryM string
}

// systemFigures reads each system's figures from a report.
func systemFigures(r *reports.Report) map[string]figures {
	out := map[string]figures{}
	if r == nil {
		return out
	}
	if runs := r.Metrics["runs"]; runs.Value != nil && *runs.Value > 0 {
		failed := r.Metrics["failed_runs"]
		f := figures{unit: "runs", present: true,
			count: reports.Figure{Metric: "runs", Value: runs.Value},
			retry: metricFigure("provider_retry_rate", r.Metrics["provider_retry_rate"]),
			cost:  reports.Figure{},
		}
		f.fail = reports.Figure{Metric: RunFailureRate, Numerator: failed.Value, Denominator: runs.Value}
		if failed.Value != nil {
			v := *failed.Value / *runs.Value
			f.fail.Value = &v
		}
		out[Orchestrator] = f
	}
	costs := map[string]*float64{}
	for _, st := range r.Systems.Stages {
		if st.CostUSD != nil {
			c := costs[st.System]
			if c == nil {
				c = new(float64)
				costs[st.System] = c
			}
			*c += *st.CostUSD
		}
	}
	for _, s := range r.Systems.BySystem {
		n := float64(s.Runs)
		f := figures{unit: "runs", present: true,
			count: reports.Figure{Metric: "record_runs", Value: &n},
			fail:  metricFigure("record_failure_rate", s.Metrics["record_failure_rate"]),
			retry: metricFigure("record_retry_rate", s.Metrics["record_retry_rate"]),
		}
		if c := costs[s.System]; c != nil {
			f.cost = reports.Figure{Metric: "cost_usd", Value: c}
		}
		out[s.System] = f
	}
	for _, c := range r.Calls.BySystem {
		n := float64(c.Calls)
		out[c.System] = figures{unit: "calls", present: true,
			count: reports.Figure{Metric: "calls", Value: &n},
			fail:  metricFigure("call_failure_rate", c.Metrics["call_failure_rate"]),
			retry: metricFigure("call_retry_rate", c.Metrics["call_retry_rate"]),
			cost:  reports.Figure{Metric: "call_cost_usd", Value: c.CostUSD},
		}
	}
	return out
}

func metricFigure(name string, m reports.Metric) reports.Figure {
	return reports.Figure{Metric: name, Value: m.Value, Numerator: m.Numerator, Denominator: m.Denominator}
}

// systems is one summary per system with data in either window, in
// SystemOrder.
func systems(in Input, days []string) []reports.SystemSummary {
	now, prev := systemFigures(in.Now), systemFigures(in.Prev)
	var names []string
	for n := range now {
		names = append(names, n)
	}
	for n := range prev {
		if _, ok := now[n]; !ok {
			names = append(names, n)
		}
	}
	slices.SortFunc(names, func(a, b string) int {
		return cmp.Or(cmp.Compare(order(a), order(b)), cmp.Compare(a, b))
	})
	out := []reports.SystemSummary{}
	for _, n := range names {
		f, p := now[n], prev[n]
		if !f.present {
			// Present before, gone now: its figures are zeros now, which
			// is the news.
			f = figures{unit: p.unit, count: reports.Figure{Metric: p.count.Metric, Value: new(float64)},
				fail: reports.Figure{Metric: p.fail.Metric}, retry: reports.Figure{Metric: p.retry.Metric},
				cost: reports.Figure{Metric: p.cost.Metric}}
			if p.cost.Value != nil {
				f.cost.Value = new(float64)
			}
		}
		if in.Prev != nil && !p.present {
			// New in this window: it had nothing before, which is a
			// count and a cost of zero, and rates over no samples.
			p = figures{count: reports.Figure{Metric: f.count.Metric, Value: new(float64)},
				fail: reports.Figure{Metric: f.fail.Metric}, retry: reports.Figure{Metric: f.retry.Metric},
				cost: reports.Figure{Metric: f.cost.Metric}}
			if f.cost.Value != nil {
				p.cost.Value = new(float64)
			}
		}
		s := reports.SystemSummary{System: n, Unit: f.unit, Count: f.count, FailureRate: f.fail, RetryRate: f.retry, Cost: f.cost}
		if in.Prev != nil {
			s.Count.Change = change(in, f.count, p.count)
			s.FailureRate.Change = change(in, f.fail, p.fail)
			s.RetryRate.Change = change(in, f.retry, p.retry)
			if f.cost.Metric != "" || p.cost.Metric != "" {
				s.Cost.Change = change(in, f.cost, p.cost)
			}
		}
		s.Daily = daily(in, n, days)
		out = append(out, s)
	}
	return out
}

func order(system string) int {
	if i := slices.Index(reports.SystemOrder, system); i >= 0 {
		return i
	}
	return len(reports.SystemOrder)
}

// change is a figure's change: a rate's when it has a denominator in
// either window, else a total's.
func change(in Input, now, then reports.Figure) *reports.Change {
	if now.Denominator != nil || then.Denominator != nil {
		num, den := deref(now.Numerator), deref(now.Denominator)
		num0, den0 := deref(then.Numerator), deref(then.Denominator)
		c := rateChange(num, den, num0, den0, minSamples(in, now.Metric), true)
		return &c
	}
	c := valueChange(now.Value, then.Value)
	return &c
}

func deref(v *float64) float64 {
	if v == nil {
		return 0
	}
	return *v
}

// daily is a system's points, one per day of days.
func daily(in Input, system string, days []string) []reports.DayPoint {
	by := map[string]reports.DayPoint{}
	if system == Orchestrator {
		for _, d := range in.Now.Breakdowns.ByDay {
			p := reports.DayPoint{Day: d.Day}
			p.Count = int64(deref(d.Metrics["runs"].Value))
			p.Failed = int64(deref(d.Metrics["failed_runs"].Value))
			p.Retried = int64(deref(d.Metrics["provider_retry_rate"].Numerator))
			by[d.Day] = p
		}
	} else {
		for _, p := range in.Daily[system] {
			by[p.Day] = p
		}
	}
	out := make([]reports.DayPoint, len(days))
	for i, d := range days {
		p := by[d]
		p.Day = d
		out[i] = p
	}
	return out
}

// whereTop is how many keys each kind of "where" names at most.
const whereTop = 2

// where names, for retries, failures and cost, the keys behind most of
// each: agents' models and sessions, the orchestrator's providers and
// runs, the other systems' stages. Each key's share is of its own kind's
// total in the same unit, so shares never mix calls with requests.
func where(in Input) []reports.WhereRow {
	r := in.Now
	var out []reports.WhereRow
	add := func(what, kind, unit string, rows []reports.WhereRow) {
		var total float64
		for _, w := range rows {
			total += w.Value
		}
		if total == 0 {
			return
		}
		slices.SortStableFunc(rows, func(a, b reports.WhereRow) int {
			return cmp.Or(cmp.Compare(b.Value, a.Value), cmp.Compare(a.Key, b.Key))
		})
		for i, w := range rows {
			if i == whereTop || w.Value == 0 {
				break
			}
			w.What, w.Kind, w.Unit, w.Total, w.Share = what, kind, unit, total, w.Value/total
			out = append(out, w)
		}
	}
	var retried, failed, cost, sRetried, sFailed, sCost, pRetried, pFailed, runRetries, stageFailed []reports.WhereRow
	for _, c := range r.Calls.ByModel {
		key := modelKey(c.Provider, c.Model)
		retried = append(retried, reports.WhereRow{Key: key, System: c.System, Value: float64(c.Retried)})
		failed = append(failed, reports.WhereRow{Key: key, System: c.System, Value: float64(c.Failed)})
		cost = append(cost, reports.WhereRow{Key: key, System: c.System, Value: deref(c.CostUSD)})
	}
	for i, c := range in.Sessions {
		key := in.SessionKeys[i]
		sRetried = append(sRetried, reports.WhereRow{Key: key, System: c.System, Value: float64(c.Retried)})
		sFailed = append(sFailed, reports.WhereRow{Key: key, System: c.System, Value: float64(c.Failed)})
		sCost = append(sCost, reports.WhereRow{Key: key, System: c.System, Value: deref(c.CostUSD)})
	}
	for _, p := range r.Breakdowns.ByProvider {
		key := modelKey(&p.Provider, p.Model)
		pRetried = append(pRetried, reports.WhereRow{Key: key, System: Orchestrator, Value: float64(p.Retried)})
		pFailed = append(pFailed, reports.WhereRow{Key: key, System: Orchestrator, Value: float64(p.Failed)})
	}
	for _, w := range r.Breakdowns.WorstByRetries {
		runRetries = append(runRetries, reports.WhereRow{Key: w.RunID, System: Orchestrator, Value: w.ProviderRetries})
	}
	for _, s := range r.Systems.StageFailures {
		stageFailed = append(stageFailed, reports.WhereRow{Key: s.Stage, System: s.System, Value: float64(s.Failures)})
	}
	add("retries", "model", "retried calls", retried)
	add("retries", "session", "retried calls", sRetried)
	add("retries", "model", "retried requests", pRetried)
	if total := deref(r.Metrics["provider_retries_total"].Value); total > 0 {
		// The worst runs are the top ones only: their share is of every
		// run's retries.
		for i, w := range runRetries {
			if i == whereTop || w.Value == 0 {
				break
			}
			w.What, w.Kind, w.Unit, w.Total, w.Share = "retries", "run", "retries", total, w.Value/total
			out = append(out, w)
		}
	}
	add("failures", "model", "failed calls", failed)
	add("failures", "session", "failed calls", sFailed)
	add("failures", "model", "failed requests", pFailed)
	add("failures", "stage", "failed attempts", stageFailed)
	add("cost_usd", "model", "USD", cost)
	add("cost_usd", "session", "USD", sCost)
	return topPerWhat(out)
}

// topPerWhat keeps, for each of retries, failures and cost, the whereTop
// keys with the largest shares, whatever their kind: the first screen
// has room for a few lines, and a model behind 73% of the cost says more
// than the second session.
func topPerWhat(rows []reports.WhereRow) []reports.WhereRow {
	out := []reports.WhereRow{}
	for _, what := range []string{"retries", "failures", "cost_usd"} {
		var these []reports.WhereRow
		for _, w := range rows {
			if w.What == what {
				these = append(these, w)
			}
		}
		slices.SortStableFunc(these, func(a, b reports.WhereRow) int { return cmp.Compare(b.Share, a.Share) })
		out = append(out, these[:min(whereTop, len(these))]...)
	}
	return out
}

func modelKey(provider, model *string) string {
	var parts []string
	if provider != nil && *provider != "" {
		parts = append(parts, *provider)
	}
	if model != nil && *model != "" {
		// Bedrock's ids carry their provider already.
		m := *model
		if len(parts) == 1 && strings.HasPrefix(m, parts[0]+"/") {
			parts = nil
		}
		parts = append(parts, m)
	}
	if len(parts) == 0 {
		return "(no model)"
	}
	return strings.Join(parts, "/")
}

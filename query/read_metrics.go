package query

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/orchstat/orchstat/model/records"
	"github.com/orchstat/orchstat/model/reports"
	"github.com/orchstat/orchstat/model/rows"
)

// Filter selects runs. METRICS.md scopes every metric to the selected runs,
// and a run's events all count once the run is selected, but for the
// provider filter's request-level metrics (see Provider).
type Filter struct {
	// A run is in the window when its earliest event is >= Since and < Until.
	// A record run with no recorded time is in no window: it is counted in
	// the overview as undated instead.
	Since, Until *time.Time
	Runs         []string
	// Provider selects runs that requested or selected this provider, in
	// any case ("Anthropic" is "anthropic"). Request-level metrics
	// (provider_*, the by-provider breakdown) then count only this
	// provider's requests: the runs also made other providers' requests,
	// and "anthropic's retry rate" must not include openai's. Run-level
	// metrics cover the selected runs whole.
	Provider string
	// Paths, when set, keeps only the runs found in files at or under
	// these absolute paths (see ScopeOf).
	Paths []string
	// Last keeps only the Last selected runs to start, when above 0:
	// alert rules' "last N runs" windows. Orchestrator runs and each other
	// system's runs (record runs) are counted on their own.
	Last int
	// figures is set when the store keeps every run's figures
	// (run_figures): the scope and the metrics read them. Unset, the
	// scope reads run_spans and the metrics compute the scope's figures
	// from the events (figuresCTE). The store sets it (Store.scoped).
	figures bool
}

// scoped is f reading the store's per-run figures when it keeps them.
func (s *Store) scoped(f Filter) Filter {
	f.figures = s.figures
	return f
}

// figuresCTE renders, after the CTE s of the selected runs, the figures
// of those runs computed from the events, named as the tables a store
// keeps them in; nothing when the store keeps them (f.figures).
func (f Filter) figuresCTE() string {
	if f.figures {
		return ""
	}
	in := "run_id IN (SELECT run_id FROM s)"
	out := ",\nrun_figures AS MATERIALIZED (" + RunFiguresSQL(in) + ")"
	if f.Provider != "" {
		out += ",\nrun_provider_figures AS MATERIALIZED (" + RunProviderFiguresSQL(in) + ")"
	}
	return out
}

// window renders the conditions on a run's start and id that every scope
// shares: orchestrator runs' and other systems' runs alike.
func (f Filter) window() ([]string, []any) {
	var where []string
	var args []any
	// Event times have microsecond precision, so bounds do too.
	if f.Since != nil {
		where = append(where, "start >= ?")
		args = append(args, f.Since.UTC().Truncate(time.Microsecond))
	}
	if f.Until != nil {
		where = append(where, "start < ?")
		args = append(args, f.Until.UTC().Truncate(time.Microsecond))
	}
	if len(f.Runs) > 0 {
		ph := strings.TrimSuffix(strings.Repeat("?,", len(f.Runs)), ",")
		where = append(where, "run_id IN ("+ph+")")
		for _, r := range f.Runs {
			args = append(args, r)
		}
	}
	if len(f.Paths) > 0 {
		runs, a := scopedRuns(f.Paths)
		where = append(where, "run_id IN ("+runs+")")
		args = append(args, a...)
	}
	return where, args
}

// scope renders the CTE "s(run_id, start, grp)" of selected runs and its
// arguments. group is a SQL expression over start.
func (f Filter) scope(group string) (string, []any) { return f.scopeAs("s", group) }

// scopeAs is scope with the CTE named name.
func (f Filter) scopeAs(name, group string) (string, []any) {
	where, args := f.window()
	if f.Provider != "" {
		where = append(where, `run_id IN (
			SELECT run_id FROM provider_request_starts WHERE lower(provider) = lower(?)
			UNION SELECT run_id FROM provider_request_finishes WHERE lower(provider) = lower(?)
			UNION SELECT run_id FROM provider_selections WHERE lower(provider_id) = lower(?))`)
		args = append(args, f.Provider, f.Provider, f.Provider)
	}
	cond := ""
	if len(where) > 0 {
		cond = "WHERE " + strings.Join(where, " AND ")
	}
	// The metrics read s many times; a "last N" s is materialized so the
	// sort over every run is done once, not once per read.
	mat := ""
	if f.Last > 0 {
		mat = "MATERIALIZED "
	}
	runs := "(SELECT run_id, min(first_ts) AS start FROM run_spans GROUP BY run_id)"
	if f.figures {
		runs = "run_figures"
	}
	return fmt.Sprintf(`%s AS %s(
		SELECT run_id, start, %s AS grp FROM %s %s%s)`,
		name, mat, group, runs, cond, f.limit()), args
}

// requests renders the condition on a provider request (col is its
// provider column) that request-level metrics add: under a provider filter,
// only that provider's requests count.
func (f Filter) requests(col string) (string, []any) {
	if f.Provider == "" {
		return "true", nil
	}
	return "lower(" + col + ") = lower(?)", []any{f.Provider}
}

// limit renders Last.
func (f Filter) limit() string {
	if f.Last <= 0 {
		return ""
	}
	return fmt.Sprintf(" ORDER BY start DESC, run_id DESC LIMIT %d", f.Last)
}

// metricsSQL computes every METRICS.md metric per group of selected runs,
// folding the runs' figures as reports.GroupCounts declares; requests,
// under a provider filter, is the condition on the provider of a row of
// run_provider_figures (alias p) whose requests count, and empty
// otherwise.
func metricsSQL(requests string) string {
	var all, prov, out []string
	for _, g := range reports.GroupCounts {
		all = append(all, "("+g.DuckDBFold("f.")+")::DOUBLE AS "+g.Name)
		if requests != "" && requestCount(g) {
			prov = append(prov, "("+g.DuckDBFold("p.")+")::DOUBLE AS "+g.Name)
			out = append(out, "coalesce(pr."+g.Name+", 0) AS "+g.Name)
		} else {
			out = append(out, "m."+g.Name)
		}
	}
	q := `,
m AS (SELECT s.grp, ` + strings.Join(all, ", ") + ` FROM s JOIN run_figures f USING (run_id) GROUP BY s.grp)`
	from := "FROM m"
	if len(prov) > 0 {
		q += `,
pr AS (SELECT s.grp, ` + strings.Join(prov, ", ") + ` FROM s JOIN run_provider_figures p USING (run_id) WHERE ` + requests + ` GROUP BY s.grp)`
		from += " LEFT JOIN pr USING (grp)"
	}
	// Each column is a count the catalog (model/reports/catalog.go) names
	// as a metric's Num or Den.
	return q + `
SELECT m.grp, ` + strings.Join(out, ", ") + ` ` + from + ` ORDER BY m.grp`
}

// requestCount reports whether a group count folds provider requests'
// counts alone, which a provider filter restricts to that provider.
func requestCount(g reports.GroupCount) bool {
	if g.Fold != reports.SumRuns {
		return false
	}
	for _, n := range g.Of {
		if c, _ := reports.RunCountOf(n); !c.ByProvider {
			return false
		}
	}
	return true
}

func count(v float64) reports.Metric { return reports.Metric{Value: &v} }

func ratio(num, den float64) reports.Metric {
	m := reports.Metric{Numerator: &num, Denominator: &den}
	if den != 0 {
		v := num / den
		m.Value = &v
	}
	return m
}

// querier is satisfied by *sql.Conn and *sql.DB.
type querier interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}

// metricsBy computes the metrics for each group of the filtered runs.
func metricsBy(ctx context.Context, q querier, f Filter, group string) ([]string, map[string]reports.Metrics, error) {
	cte, args := f.scope(group)
	return metricsIn(ctx, q, f, cte, args)
}

// metricsIn computes the metrics for each group of cte, which renders s
// (see scope), with its arguments args.
func metricsIn(ctx context.Context, q querier, f Filter, cte string, args []any) ([]string, map[string]reports.Metrics, error) {
	cond, cargs := "", []any(nil)
	if f.Provider != "" {
		cond, cargs = f.requests("p.provider")
	}
	rs, err := q.QueryContext(ctx, "WITH "+cte+f.figuresCTE()+metricsSQL(cond), append(args, cargs...)...)
	if err != nil {
		return nil, nil, fmt.Errorf("computing metrics: %w", err)
	}
	defer rs.Close()
	return groupMetrics(rs, reports.FamilyTrace, "computing metrics")
}

// groupMetrics reads a family's query, whose rows are a group's key and
// then the counts its catalog entries name, by column name, into each
// group's metrics, in the query's order of groups.
func groupMetrics(rs *sql.Rows, family reports.Family, what string) ([]string, map[string]reports.Metrics, error) {
	cols, err := rs.Columns()
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", what, err)
	}
	for i, c := range cols {
		if slices.Index(cols, c) != i {
			// Two counts of one name: a missing alias would make a metric
			// read the wrong one.
			return nil, nil, fmt.Errorf("%s: the query names two columns %q", what, c)
		}
	}
	var keys []string
	out := map[string]reports.Metrics{}
	for rs.Next() {
		var grp string
		vals := make([]sql.NullFloat64, len(cols)-1)
		dest := []any{&grp}
		for i := range vals {
			dest = append(dest, &vals[i])
		}
		if err := rs.Scan(dest...); err != nil {
			return nil, nil, fmt.Errorf("%s: %w", what, err)
		}
		counts := map[string]*float64{}
		for i, v := range vals {
			counts[cols[i+1]] = floatPtr(v)
		}
		keys = append(keys, grp)
		out[grp] = reports.MetricsOf(family, counts)
	}
	return keys, out, rs.Err()
}

// EmptyMetrics is the metric set of an empty scope.
func EmptyMetrics() reports.Metrics {
	m := reports.Metrics{}
	for _, s := range reports.Catalog {
		m[s.Name] = s.Of(nil)
	}
	return m
}

// Metrics computes the METRICS.md metrics over the filtered runs.
func (s *Store) Metrics(ctx context.Context, f Filter) (reports.Metrics, error) {
	f = s.scoped(f)
	all, err := traceMetrics(ctx, s.conn, f)
	if err != nil {
		return nil, err
	}
	if err := recordMetrics(ctx, s.conn, f, all); err != nil {
		return nil, err
	}
	return all, nil
}

// traceMetrics computes the orchestrator traces' metrics over f; a store
// with no trace runs skips the query, as recordMetrics does for records.
func traceMetrics(ctx context.Context, q querier, f Filter) (reports.Metrics, error) {
	var n int64
	if err := eachRow(ctx, q, "looking for runs", `SELECT count(*) FROM (SELECT 1 FROM run_spans LIMIT 1)`, nil,
		func(rs *sql.Rows) error { return rs.Scan(&n) }); err != nil || n == 0 {
		return EmptyMetrics(), err
	}
	_, m, err := metricsBy(ctx, q, f, "'all'")
	if err != nil {
		return nil, err
	}
	return overall(m), nil
}

// overall is the "all" group of metricsIn's groups, or empty metrics
// when no run is in it.
func overall(m map[string]reports.Metrics) reports.Metrics {
	if all, ok := m["all"]; ok {
		return all
	}
	return EmptyMetrics()
}

// Report computes the whole report for the filtered runs.
func (s *Store) Report(ctx context.Context, f Filter) (*reports.Report, error) {
	if err := s.priced(ctx); err != nil {
		return nil, err
	}
	r, parts := reportParts(s.scoped(f))
	for _, p := range parts {
		if err := p(ctx, s.conn); err != nil {
			return nil, err
		}
	}
	return r, nil
}

// part is a share of a report's queries. A report's parts fill separate
// fields of it and read nothing another part writes, so they can run in
// any order, at once on separate connections (see ReportConcurrently).
type part func(context.Context, querier) error

// reportParts returns the report to fill and the parts that fill it, the
// costliest first, so that run at once they finish together.
func reportParts(f Filter) (*reports.Report, []part) {
	r := &reports.Report{Filters: reports.Filters{Since: f.Since, Until: f.Until, Runs: f.Runs}}
	if f.Provider != "" {
		p := f.Provider
		r.Filters.Provider = &p
	}
	b := &r.Breakdowns
	return r, []part{
		func(ctx context.Context, q querier) error { return overviewAndWorst(ctx, q, f, r) },
		func(ctx context.Context, q querier) error { return allAndByDay(ctx, q, f, r) },
		func(ctx context.Context, q querier) error { return reasons(ctx, q, f, b) },
		func(ctx context.Context, q querier) error { return byProvider(ctx, q, f, b) },
		func(ctx context.Context, q querier) error { return candidateValidity(ctx, q, f, b) },
		func(ctx context.Context, q querier) error { return systemsAndAudit(ctx, q, f, r) },
		func(ctx context.Context, q querier) error { return callsSection(ctx, q, f, &r.Calls) },
	}
}

// allAndByDay computes the metrics over all the filtered runs and by day
// in one query, which reads each table once: every run is in two groups,
// "all" and its day (never "all").
func allAndByDay(ctx context.Context, q querier, f Filter, r *reports.Report) error {
	days, args := f.scopeAs("d", "strftime(start, '%Y-%m-%d')")
	keys, m, err := metricsIn(ctx, q, f, days+`,
		s AS (SELECT run_id, start, unnest(['all', grp]) AS grp FROM d)`, args)
	if err != nil {
		return err
	}
	r.Metrics = overall(m)
	if err := recordMetrics(ctx, q, f, r.Metrics); err != nil {
		return err
	}
	if err := callMetrics(ctx, q, f, r.Metrics); err != nil {
		return err
	}
	r.Breakdowns.ByDay = []reports.DayRow{}
	for _, d := range keys {
		if d != "all" {
			r.Breakdowns.ByDay = append(r.Breakdowns.ByDay, reports.DayRow{Day: d, Metrics: m[d]})
		}
	}
	return nil
}

// systemsAndAudit fills the systems section, and the factory audit when
// the factory is one of them.
func systemsAndAudit(ctx context.Context, q querier, f Filter, r *reports.Report) error {
	if err := systems(ctx, q, f, &r.Systems); err != nil {
		return err
	}
	for _, s := range r.Systems.BySystem {
		if s.System == records.Factory {
			var err error
			if r.FactoryAudit, err = factoryAudit(ctx, q, f); err != nil {
				return err
			}
		}
	}
	return nil
}

func utcPtr(t sql.NullTime) *time.Time {
	if !t.Valid {
		return nil
	}
	u := t.Time.UTC()
	return &u
}

// WorstRuns is how many runs each worst-runs list shows.
const WorstRuns = 10

// withScope runs query after the CTE of f's runs, scanning each row;
// errors are prefixed with what.
func withScope(ctx context.Context, q querier, f Filter, what, query string, scan func(*sql.Rows) error) error {
	cte, args := f.scope("''")
	return eachRow(ctx, q, what, "WITH "+cte+" "+query, args, scan)
}

func byProvider(ctx context.Context, q querier, f Filter, b *reports.Breakdowns) error {
	cte, args := f.scope("''")
	b.ByProvider = []reports.ProviderRow{}
	cond, cargs := f.requests("p.provider")
	return eachRow(ctx, q, "computing breakdowns", "WITH "+cte+` SELECT coalesce(p.provider, ''), p.model, count(*),
			count(*) FILTER (WHERE p.retries > 0), count(*) FILTER (WHERE p.success = false),
			coalesce(sum(p.retries), 0), avg(p.duration_ms)
		FROM provider_requests p JOIN s USING (run_id) WHERE `+cond+`
		GROUP BY ALL ORDER BY 1, 2 NULLS FIRST`, append(slices.Clone(args), cargs...), func(rs *sql.Rows) error {
		var r reports.ProviderRow
		var model sql.NullString
		var avg sql.NullFloat64
		if err := rs.Scan(&r.Provider, &model, &r.Requests, &r.Retried, &r.Failed, &r.RetriesTotal, &avg); err != nil {
			return err
		}
		if model.Valid {
			r.Model = &model.String
		}
		if avg.Valid {
			r.AvgDuration = &avg.Float64
		}
		r.RetryRate = ratio(float64(r.Retried), float64(r.Requests))
		r.FailureRate = ratio(float64(r.Failed), float64(r.Requests))
		b.ByProvider = append(b.ByProvider, r)
		return nil
	})
}

// runsSQL renders the query behind the overview and the worst-run lists,
// from the runs' figures, which hold the runs view's columns they show. Each row holds the overview, then a run of a list (0:
// by retries, 1: by iterations) and its place n in that list, in order;
// a scope with no such run has one row, whose list is NULL.
func runsSQL() string {
	top := fmt.Sprint(WorstRuns)
	return `, w AS MATERIALIZED (
			SELECT r.run_id, r.started_at, r.status, r.requests AS provider_requests, r.request_retries AS provider_retries,
				r.repair_max_iteration AS repair_iterations, r.escalated, r.stop_reason, r.start AS first_event_at,
				r.last_event_at, r.events
			FROM run_figures r JOIN s USING (run_id)),
		-- The orchestrator's runs: exec's traces are exec's runs, counted
		-- with the other systems' record runs.
		o AS (
			SELECT count(*),
			  count(*) FILTER (WHERE status = 'success'),
			  count(*) FILTER (WHERE status = 'failure'),
			  count(*) FILTER (WHERE status = 'cancelled'),
			  count(*) FILTER (WHERE status = 'unfinished'),
			  count(*) FILTER (WHERE status NOT IN ('success', 'failure', 'cancelled', 'unfinished')),
			  (SELECT min(first_event_at) FROM w), (SELECT max(last_event_at) FROM w),
			  (SELECT coalesce(sum(events), 0)::BIGINT FROM w)
			FROM w WHERE run_id NOT IN (SELECT run_id FROM record_runs WHERE system = '` + records.Exec + `')),
		-- run_id makes each list's order total.
		l AS (
			SELECT 0 AS list, row_number() OVER (ORDER BY provider_retries DESC, provider_requests DESC, run_id) AS n, *
			FROM w WHERE provider_retries > 0 QUALIFY n <= ` + top + `
			UNION ALL
			SELECT 1, row_number() OVER (ORDER BY repair_iterations DESC, run_id) AS n, *
			FROM w WHERE repair_iterations IS NOT NULL QUALIFY n <= ` + top + `),
		-- The listed runs' traces, found for them alone: as a subquery per
		-- row, DuckDB joined every run's spans to every file's states,
		-- most of the overview's time at 30,000 runs. file_states, not the
		-- files view: a file's path and kind are the same in all its
		-- states, and the view would rank every state.
		lt AS (
			SELECT t.run_id, arg_min(f.path, f.file_id) AS trace
			FROM (SELECT DISTINCT run_id, file_id FROM run_spans WHERE run_id IN (SELECT run_id FROM l)) t
			JOIN file_states f USING (file_id) WHERE f.kind = 'trace' GROUP BY t.run_id)
		SELECT o.*, l.list, l.run_id, l.started_at, l.status, l.provider_requests, l.provider_retries,
		  l.repair_iterations, l.escalated, l.stop_reason, lt.trace
		FROM o LEFT JOIN l ON true LEFT JOIN lt ON lt.run_id = l.run_id ORDER BY l.list, l.n`
}

// overviewAndWorst fills the overview and the worst-run lists.
func overviewAndWorst(ctx context.Context, q querier, f Filter, r *reports.Report) error {
	o, b := &r.Overview, &r.Breakdowns
	b.WorstByRetries, b.WorstByIterations = []reports.RunRow{}, []reports.RunRow{}
	var orchestrator reports.SystemRuns
	err := withScope(ctx, q, f, "computing the overview and worst runs", f.figuresCTE()+runsSQL(), func(rs *sql.Rows) error {
		var first, last, started sql.NullTime
		var list, requests sql.NullInt64
		var id, status, stop, trace sql.NullString
		var retries, iters sql.NullFloat64
		var escalated sql.NullBool
		orch := reports.SystemRuns{System: "orchestrator"}
		if err := rs.Scan(&orch.Runs, &orch.Success, &orch.Failure, &orch.Cancelled, &orch.Unfinished, &orch.OtherStatus,
			&first, &last, &o.Events,
			&list, &id, &started, &status, &requests, &retries, &iters, &escalated, &stop, &trace); err != nil {
			return err
		}
		orchestrator = orch
		o.FirstEvent, o.LastEvent = utcPtr(first), utcPtr(last)
		if !list.Valid {
			return nil
		}
		run := reports.RunRow{RunID: id.String, StartedAt: started.Time.UTC(), Status: status.String,
			ProviderRequests: requests.Int64, ProviderRetries: retries.Float64, Escalated: escalated.Bool,
			Trace: rows.ReadString(trace.String)}
		if iters.Valid {
			run.RepairIterations = &iters.Float64
		}
		if stop.Valid {
			run.StopReason = &stop.String
		}
		if list.Int64 == 0 {
			b.WorstByRetries = append(b.WorstByRetries, run)
		} else {
			b.WorstByIterations = append(b.WorstByIterations, run)
		}
		return nil
	})
	if err != nil {
		return err
	}
	if o.Undated, o.QueuedTasks, err = recordCounts(ctx, q, f); err != nil {
		return err
	}
	if o.Quarantined, err = quarantinedIn(ctx, q, f.Paths); err != nil {
		return err
	}
	recs, err := recordRunsBySystem(ctx, q, f)
	if err != nil {
		return err
	}
	o.RunsBySystem = bySystem(append([]reports.SystemRuns{orchestrator}, recs...))
	for _, sr := range o.RunsBySystem {
		o.Runs += sr.Runs
		o.Success += sr.Success
		o.Failure += sr.Failure
		o.Cancelled += sr.Cancelled
		o.Unfinished += sr.Unfinished
		o.OtherStatus += sr.OtherStatus
	}
	return nil
}

// reasons counts the stop, escalation and judge reasons.
func reasons(ctx context.Context, q querier, f Filter, b *reports.Breakdowns) error {
	counts := func(query string) ([]reports.CountRow, error) {
		out := []reports.CountRow{}
		err := withScope(ctx, q, f, "computing breakdowns", query+" GROUP BY 1 ORDER BY 2 DESC, 1", func(rs *sql.Rows) error {
			var c reports.CountRow
			if err := rs.Scan(&c.Key, &c.Count, &c.Runs); err != nil {
				return err
			}
			out = append(out, c)
			return nil
		})
		return out, err
	}
	var err error
	if b.StopReasons, err = counts(`SELECT coalesce(e.reason, '(none)'), count(*), count(DISTINCT run_id)
		FROM run_events e JOIN s USING (run_id) WHERE e.type = 'RunStopped'`); err != nil {
		return err
	}
	if b.EscalationReasons, err = counts(`SELECT coalesce(e.reason, '(none)') || ' (' || coalesce(e.from_level, '?') || '→' || coalesce(e.to_level, '?') || ')',
		count(*), count(DISTINCT run_id) FROM escalations e JOIN s USING (run_id)`); err != nil {
		return err
	}
	if b.JudgeReasons, err = counts(`SELECT coalesce(j.reason, '(none)'), count(*), count(DISTINCT run_id)
		FROM judge_calls j JOIN s USING (run_id) WHERE j.type = 'JudgeInvoked'`); err != nil {
		return err
	}
	return repairIterations(ctx, q, f, b)
}

// repairIterations counts the runs of each number of repair iterations,
// as the runs view counts a run's: its highest RepairAttempted iteration.
func repairIterations(ctx context.Context, q querier, f Filter, b *reports.Breakdowns) error {
	b.RepairIterations = []reports.CountRow{}
	return withScope(ctx, q, f, "computing breakdowns", f.figuresCTE()+` SELECT it, count(*) FROM (
		  SELECT r.repair_max_iteration AS it FROM run_figures r JOIN s USING (run_id))
		WHERE it IS NOT NULL GROUP BY 1 ORDER BY 1`, func(rs *sql.Rows) error {
		var it float64
		c := reports.CountRow{}
		if err := rs.Scan(&it, &c.Count); err != nil {
			return err
		}
		c.Key, c.Runs = strconv.FormatFloat(it, 'g', -1, 64), c.Count
		b.RepairIterations = append(b.RepairIterations, c)
		return nil
	})
}

func candidateValidity(ctx context.Context, q querier, f Filter, b *reports.Breakdowns) error {
	b.CandidateValidity = []reports.ValidityRow{}
	return withScope(ctx, q, f, "computing breakdowns", `SELECT coalesce(c.provider_id, '(none)'), count(*), count(*) FILTER (WHERE c.valid = true)
		FROM l3_candidates c JOIN s USING (run_id) GROUP BY 1 ORDER BY 1`, func(rs *sql.Rows) error {
		var v reports.ValidityRow
		if err := rs.Scan(&v.ProviderID, &v.Candidates, &v.Valid); err != nil {
			return err
		}
		v.Rate = ratio(float64(v.Valid), float64(v.Candidates))
		b.CandidateValidity = append(b.CandidateValidity, v)
		return nil
	})
}

// eachRow runs query and scans each row, errors prefixed with what.
func eachRow(ctx context.Context, q querier, what, query string, args []any, scan func(*sql.Rows) error) error {
	rs, err := q.QueryContext(ctx, query, args...)
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	defer rs.Close()
	for rs.Next() {
		if err := scan(rs); err != nil {
			return fmt.Errorf("%s: %w", what, err)
		}
	}
	return rs.Err()
}

// KnownProviders lists the providers a provider filter can name: those
// requested or selected in the store's traces, sorted, once each.
func (s *Store) KnownProviders(ctx context.Context) ([]string, error) {
	return strings1(ctx, s.conn, "listing providers", `SELECT DISTINCT p FROM (
		SELECT provider AS p FROM provider_request_starts
		UNION ALL SELECT provider FROM provider_request_finishes
		UNION ALL SELECT provider_id FROM provider_selections) WHERE p IS NOT NULL AND p <> '' ORDER BY p`)
}

// KnownRuns lists the run ids a run filter can name: orchestrator runs and
// other systems' runs (queued tasks included, as the overview counts them
// under a run filter), sorted, once each.
func (s *Store) KnownRuns(ctx context.Context) ([]string, error) {
	return strings1(ctx, s.conn, "listing runs", `SELECT DISTINCT run_id FROM (
		SELECT run_id FROM run_spans UNION ALL SELECT run_id FROM record_runs) WHERE run_id IS NOT NULL ORDER BY run_id`)
}

// strings1 reads a query's one string column.
func strings1(ctx context.Context, q querier, what, query string) ([]string, error) {
	out := []string{}
	err := eachRow(ctx, q, what, query, nil, func(rs *sql.Rows) error {
		var s string
		if err := rs.Scan(&s); err != nil {
			return err
		}
		out = append(out, s)
		return nil
	})
	return out, err
}

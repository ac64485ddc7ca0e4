package query

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/orchstat/orchstat/model/alerts"
	"github.com/orchstat/orchstat/model/reports"
)

// AlertState is where `orchstat check` keeps alerts between cron runs, so
// `for`, `keep_firing_for` and resolution span checks.
var AlertState = Table{"alert_state", "alerts as of the last check", cols(
	"rule VARCHAR, fingerprint VARCHAR, labels VARCHAR, state VARCHAR, active_at TIMESTAMP, fired_at TIMESTAMP, " +
		"resolved_at TIMESTAMP, last_eval_at TIMESTAMP, keep_firing_since TIMESTAMP, checks INTEGER, " +
		"value DOUBLE, numerator DOUBLE, denominator DOUBLE, no_data BOOLEAN")}

// The store reads series for alert rules and keeps their alerts, but does
// not know the rules: it hands out plain rows and series (model/alerts),
// and the check (rules/check) turns them into the rules' samples and
// alerts. So the rules' evaluation and the store can change apart.

// CheckStore is the store as alert rules read it and as `orchstat check`
// keeps its alerts and notifications in it (rules/check's Store). Its
// windows are the rules' (alerts.Window), not a report's Filter.
type CheckStore struct{ st *Store }

// NewCheckStore is st as a check reads and keeps it. Closing it closes st.
func NewCheckStore(st *Store) *CheckStore { return &CheckStore{st: st} }

// Path is the store's file.
func (c *CheckStore) Path() string { return c.st.Path }

func (c *CheckStore) Close() error { return c.st.Close() }

// filterOf is the runs a rule's window selects, as the read models take them.
func filterOf(w alerts.Window) Filter {
	return Filter{Since: w.Since, Until: w.Until, Last: w.Last, Paths: w.Paths}
}

// WindowMetrics computes the metrics of the runs w selects; see Store.WindowMetrics.
func (c *CheckStore) WindowMetrics(ctx context.Context, w alerts.Window, records bool) (reports.Metrics, error) {
	return c.st.WindowMetrics(ctx, filterOf(w), records)
}

// CallSeries splits a call metric of the runs w selects; see Store.CallSeries.
func (c *CheckStore) CallSeries(ctx context.Context, w alerts.Window, metric string, by []string) ([]alerts.Series, error) {
	return c.st.CallSeries(ctx, filterOf(w), metric, by)
}

// DataSpan is when the first and the last run under paths started; see Store.DataSpan.
func (c *CheckStore) DataSpan(ctx context.Context, paths []string) (first, last *time.Time, err error) {
	return c.st.DataSpan(ctx, paths)
}

// requestLabelSQL renders each label the catalog lets a provider request
// metric be split by (reports.MetricSpec.Labels).
var requestLabelSQL = map[string]string{"provider": "coalesce(p.provider, '')", "model": "p.model"}

// WindowMetrics computes the metrics of the runs f selects: the records'
// and agents' calls' metrics when records is set, else the traces'.
func (st *Store) WindowMetrics(ctx context.Context, f Filter, records bool) (reports.Metrics, error) {
	q := st.conn
	if !records {
		return traceMetrics(ctx, q, st.scoped(f))
	}
	m := reports.Metrics{}
	if err := st.priced(ctx); err != nil {
		return nil, err
	}
	if err := recordMetrics(ctx, q, f, m); err != nil {
		return nil, err
	}
	return m, callMetrics(ctx, q, f, m)
}

// ProviderSeries splits a provider request metric of the runs w selects
// by the labels by names (provider and/or model): the catalog's metrics
// made of the counts the query below names, as the trace metrics' are.
func (c *CheckStore) ProviderSeries(ctx context.Context, w alerts.Window, metric string, by []string) ([]alerts.Series, error) {
	spec, _ := reports.Spec(metric)
	for _, l := range by {
		if !slices.Contains(spec.Labels, l) || spec.Family != reports.FamilyTrace {
			return nil, fmt.Errorf("%s cannot be split by %q", metric, l)
		}
	}
	groups, err := providerCounts(ctx, c.st.conn, filterOf(w), by)
	if err != nil {
		return nil, err
	}
	out := make([]alerts.Series, 0, len(groups))
	for _, g := range groups {
		out = append(out, alerts.Series{Labels: g.Labels, Metric: spec.Of(g.Counts)})
	}
	return out, nil
}

// providerCounts counts the provider requests of the runs f selects, per
// group of the labels by names (requestLabelSQL's), in the labels' order.
func providerCounts(ctx context.Context, q querier, f Filter, by []string) ([]reports.CounterGroup, error) {
	var exprs, names []string
	for _, l := range by {
		e, ok := requestLabelSQL[l]
		if !ok {
			return nil, fmt.Errorf("provider requests cannot be split by %q", l)
		}
		exprs, names = append(exprs, e), append(names, l)
	}
	cte, args := f.scope("''")
	cond, cargs := f.requests("p.provider")
	rs, err := q.QueryContext(ctx, "WITH "+cte+`
		SELECT `+strings.Join(append(exprs, ""), ", ")+`count(*) AS requests, count(*) FILTER (WHERE p.retries > 0) AS requests_retried,
		  count(*) FILTER (WHERE p.success = false) AS requests_failed, coalesce(sum(p.retries), 0) AS request_retries
		FROM provider_requests p JOIN s USING (run_id) WHERE `+cond+` GROUP BY ALL ORDER BY ALL`, append(args, cargs...)...)
	if err != nil {
		return nil, err
	}
	defer rs.Close()
	cols, err := rs.Columns()
	if err != nil {
		return nil, err
	}
	var out []reports.CounterGroup
	for rs.Next() {
		labels := make([]sql.NullString, len(names))
		vals := make([]float64, len(cols)-len(names))
		dest := make([]any, 0, len(cols))
		for i := range labels {
			dest = append(dest, &labels[i])
		}
		for i := range vals {
			dest = append(dest, &vals[i])
		}
		if err := rs.Scan(dest...); err != nil {
			return nil, err
		}
		g := reports.CounterGroup{Family: reports.FamilyTrace, Labels: map[string]string{}, Counts: map[string]*float64{}}
		for i, l := range labels {
			g.Labels[names[i]] = l.String
		}
		for i := range vals {
			g.Counts[cols[len(names)+i]] = &vals[i]
		}
		out = append(out, g)
	}
	return out, rs.Err()
}

// HasRecords reports whether the store holds any system's records.
func (c *CheckStore) HasRecords(ctx context.Context) (bool, error) { return hasRecords(ctx, c.st.conn) }

// SystemSeries splits a record metric of the runs w selects by system,
// in the systems' order.
func (c *CheckStore) SystemSeries(ctx context.Context, w alerts.Window, metric string) ([]alerts.Series, error) {
	keys, by, err := recordMetricsBy(ctx, c.st.conn, filterOf(w), "system")
	if err != nil {
		return nil, err
	}
	out := make([]alerts.Series, 0, len(keys))
	for _, k := range keys {
		out = append(out, alerts.Series{Labels: map[string]string{"system": k}, Metric: by[k][metric]})
	}
	return out, nil
}

// SQLSeries runs a rule's own read-only query: a value column, optional
// numerator and denominator columns, and any other columns as labels.
func (cs *CheckStore) SQLSeries(ctx context.Context, query string) ([]alerts.Series, error) {
	st, q := cs.st, cs.st.conn
	// A rule may read priced_calls.
	if err := st.priced(ctx); err != nil {
		return nil, err
	}
	if err := checkReadOnly(ctx, q, query); err != nil {
		return nil, err
	}
	t, err := queryTable(ctx, q, "", query)
	if err != nil {
		return nil, err
	}
	var out []alerts.Series
	for _, row := range t.Rows {
		s := alerts.Series{Labels: map[string]string{}}
		for i, c := range t.Columns {
			switch c {
			case "value":
				s.Value = asFloat(row[i])
			case "numerator":
				s.Numerator = asFloat(row[i])
			case "denominator":
				s.Denominator = asFloat(row[i])
			default:
				if row[i] != nil {
					s.Labels[c] = fmt.Sprint(row[i])
				}
			}
		}
		out = append(out, s)
	}
	return out, nil
}

func asFloat(v any) *float64 {
	var f float64
	switch x := v.(type) {
	case float64:
		f = x
	case float32:
		f = float64(x)
	case int64:
		f = float64(x)
	case int32:
		f = float64(x)
	case int:
		f = float64(x)
	default:
		return nil
	}
	return &f
}

// LoadAlerts reads the alerts saved by the last check, by rule and
// fingerprint.
func (c *CheckStore) LoadAlerts(ctx context.Context) ([]alerts.Alert, error) {
	rs, err := c.st.conn.QueryContext(ctx, `SELECT rule, fingerprint, labels, state, active_at, fired_at, resolved_at,
		last_eval_at, keep_firing_since, checks, value, numerator, denominator, no_data FROM alert_state ORDER BY rule, fingerprint`)
	if err != nil {
		return nil, fmt.Errorf("reading alert state: %w", err)
	}
	defer rs.Close()
	var out []alerts.Alert
	for rs.Next() {
		var a alerts.Alert
		var labels string
		var active, fired, resolved, last, keep sql.NullTime
		var value, num, den sql.NullFloat64
		if err := rs.Scan(&a.Rule, &a.Fingerprint, &labels, &a.State, &active, &fired, &resolved, &last, &keep,
			&a.Checks, &value, &num, &den, &a.NoData); err != nil {
			return nil, fmt.Errorf("reading alert state: %w", err)
		}
		if err := json.Unmarshal([]byte(labels), &a.Labels); err != nil {
			return nil, fmt.Errorf("reading alert state: %w", err)
		}
		a.ActiveAt, a.FiredAt, a.ResolvedAt, a.LastEvalAt, a.KeepFiringSince = tOf(active), tOf(fired), tOf(resolved), tOf(last), tOf(keep)
		a.Value, a.Numerator, a.Denominator = fOf(value), fOf(num), fOf(den)
		out = append(out, a)
	}
	return out, rs.Err()
}

// saveAlerts replaces the saved alerts, inside the caller's transaction.
func saveAlerts(ctx context.Context, st *Store, rows []alerts.Alert) error {
	if _, err := st.conn.ExecContext(ctx, "DELETE FROM alert_state"); err != nil {
		return err
	}
	for _, a := range rows {
		labels, _ := json.Marshal(a.Labels)
		if _, err := st.conn.ExecContext(ctx, `INSERT INTO alert_state VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			a.Rule, a.Fingerprint, string(labels), a.State, tArg(a.ActiveAt), tArg(a.FiredAt), tArg(a.ResolvedAt),
			tArg(a.LastEvalAt), tArg(a.KeepFiringSince), a.Checks, fArg(a.Value), fArg(a.Numerator), fArg(a.Denominator), a.NoData); err != nil {
			return err
		}
	}
	return nil
}

func tOf(t sql.NullTime) time.Time {
	if !t.Valid {
		return time.Time{}
	}
	return t.Time.UTC()
}

func fOf(f sql.NullFloat64) *float64 {
	if !f.Valid {
		return nil
	}
	return &f.Float64
}

func tArg(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return t.UTC()
}

func fArg(f *float64) any {
	if f == nil {
		return nil
	}
	return *f
}

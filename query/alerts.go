package query

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/orchstat/orchstat/reports"
	"github.com/orchstat/orchstat/rules"
)

// AlertState is where `orchstat check` keeps alerts between cron runs, so
// `for`, `keep_firing_for` and resolution span checks.
var AlertState = Table{"alert_state", "alerts as of the last check", cols(
	"rule VARCHAR, fingerprint VARCHAR, labels VARCHAR, state VARCHAR, active_at TIMESTAMP, fired_at TIMESTAMP, " +
		"resolved_at TIMESTAMP, last_eval_at TIMESTAMP, keep_firing_since TIMESTAMP, checks INTEGER, " +
		"value DOUBLE, numerator DOUBLE, denominator DOUBLE, no_data BOOLEAN")}

// providerLabels are the labels a provider_* metric can be split by.
var providerLabels = map[string]string{"provider": "coalesce(p.provider, '')", "model": "p.model"}

// Sampler computes rules' samples at one instant. Rules over the same
// window share one computation of the metrics, which is most of a check's
// time on a large store.
type Sampler struct {
	// Paths, when set, keeps every rule's window to the runs found under
	// them (check PATH...).
	Paths   []string
	q       querier
	now     time.Time
	metrics map[sampleKey]reports.Metrics
}

// sampleKey is what one computation of metrics serves: the rules over a
// window whose metrics are the traces', or the records'. Computing only
// the family a rule names halves a check over a store of one kind.
type sampleKey struct {
	window  rules.Window
	records bool
}

// NewSampler returns a Sampler reading st as of now.
func NewSampler(st *Store, now time.Time) *Sampler {
	return &Sampler{q: st.conn, now: now, metrics: map[sampleKey]reports.Metrics{}}
}

// Samples computes a rule's metric over its window, one sample per label
// set. An empty result means no data.
func (s *Sampler) Samples(ctx context.Context, r *rules.Rule) ([]rules.Sample, error) {
	q := s.q
	if r.SQL != "" {
		// The rule's own query chooses its data; window does not apply.
		return sqlSamples(ctx, q, r.SQL)
	}
	key := sampleKey{r.Window, reports.RecordMetric(r.Metric)}
	m, cached := s.metrics[key]
	if !cached || len(r.By) > 0 {
		f, err := windowFilter(ctx, q, r.Window, s.now)
		if err != nil {
			return nil, err
		}
		f.Paths = s.Paths
		if len(r.By) > 0 && reports.RecordMetric(r.Metric) {
			return systemSamples(ctx, q, r, f)
		}
		if len(r.By) > 0 {
			return providerSamples(ctx, q, r, f)
		}
		if key.records {
			m = reports.Metrics{}
			err = recordMetrics(ctx, q, f, m)
		} else {
			m, err = traceMetrics(ctx, q, f)
		}
		if err != nil {
			return nil, err
		}
		s.metrics[key] = m
	}
	v, ok := m[r.Metric]
	if !ok {
		return nil, fmt.Errorf("rule %q: unknown metric %q", r.Name, r.Metric)
	}
	return []rules.Sample{{Value: v.Value, Numerator: v.Numerator, Denominator: v.Denominator, Labels: map[string]string{}}}, nil
}

// windowFilter turns a rule's window into the runs it covers: those that
// started in the last Duration, or the last Runs runs to start.
func windowFilter(ctx context.Context, q querier, w rules.Window, now time.Time) (Filter, error) {
	var f Filter
	switch {
	case w.Duration > 0:
		since := now.Add(-w.Duration)
		f.Since = &since
	case w.Runs > 0:
		f.Last = w.Runs
	}
	return f, nil
}

// providerSamples splits a provider_* metric by provider and/or model.
func providerSamples(ctx context.Context, q querier, r *rules.Rule, f Filter) ([]rules.Sample, error) {
	var exprs, names []string
	for _, l := range r.By {
		e, ok := providerLabels[l]
		if !ok || !strings.HasPrefix(r.Metric, "provider_") {
			return nil, fmt.Errorf("rule %q: %s cannot be split by %q", r.Name, r.Metric, l)
		}
		exprs, names = append(exprs, e), append(names, l)
	}
	cte, args := f.scope("''")
	cond, cargs := f.requests("p.provider")
	rs, err := q.QueryContext(ctx, "WITH "+cte+`
		SELECT `+strings.Join(exprs, ", ")+`, count(*), count(*) FILTER (WHERE p.retries > 0),
		  count(*) FILTER (WHERE p.success = false), coalesce(sum(p.retries), 0)
		FROM provider_requests p JOIN s USING (run_id) WHERE `+cond+` GROUP BY ALL ORDER BY ALL`, append(args, cargs...)...)
	if err != nil {
		return nil, fmt.Errorf("rule %q: %w", r.Name, err)
	}
	defer rs.Close()
	var out []rules.Sample
	for rs.Next() {
		labels := make([]sql.NullString, len(names))
		dest := make([]any, 0, len(names)+4)
		for i := range labels {
			dest = append(dest, &labels[i])
		}
		var n, retried, failed, total float64
		dest = append(dest, &n, &retried, &failed, &total)
		if err := rs.Scan(dest...); err != nil {
			return nil, err
		}
		s := rules.Sample{Labels: map[string]string{}}
		for i, l := range labels {
			s.Labels[names[i]] = l.String
		}
		var m = map[string]func() (float64, float64, bool){
			"provider_requests":      func() (float64, float64, bool) { return n, 0, false },
			"provider_retries_total": func() (float64, float64, bool) { return total, 0, false },
			"provider_retry_rate":    func() (float64, float64, bool) { return retried, n, true },
			"provider_failure_rate":  func() (float64, float64, bool) { return failed, n, true },
		}[r.Metric]
		if m == nil {
			return nil, fmt.Errorf("rule %q: %s cannot be split by provider", r.Name, r.Metric)
		}
		num, den, isRatio := m()
		v := count(num)
		if isRatio {
			v = ratio(num, den)
		}
		s.Value, s.Numerator, s.Denominator = v.Value, v.Numerator, v.Denominator
		out = append(out, s)
	}
	return out, rs.Err()
}

// sqlSamples runs a rule's own read-only query: a value column, optional
// numerator and denominator columns, and any other columns as labels.
func sqlSamples(ctx context.Context, q querier, query string) ([]rules.Sample, error) {
	if err := checkReadOnly(ctx, q, query); err != nil {
		return nil, err
	}
	t, err := queryTable(ctx, q, "", query)
	if err != nil {
		return nil, err
	}
	var out []rules.Sample
	for _, row := range t.Rows {
		s := rules.Sample{Labels: map[string]string{}}
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

// LoadAlerts reads the alerts saved by the last check, by rule.
func LoadAlerts(ctx context.Context, st *Store) (map[string][]rules.Alert, error) {
	rs, err := st.conn.QueryContext(ctx, `SELECT rule, fingerprint, labels, state, active_at, fired_at, resolved_at,
		last_eval_at, keep_firing_since, checks, value, numerator, denominator, no_data FROM alert_state ORDER BY rule, fingerprint`)
	if err != nil {
		return nil, fmt.Errorf("reading alert state: %w", err)
	}
	defer rs.Close()
	out := map[string][]rules.Alert{}
	for rs.Next() {
		var a rules.Alert
		var labels, state string
		var active, fired, resolved, last, keep sql.NullTime
		var value, num, den sql.NullFloat64
		if err := rs.Scan(&a.Rule, &a.Fingerprint, &labels, &state, &active, &fired, &resolved, &last, &keep,
			&a.Checks, &value, &num, &den, &a.NoData); err != nil {
			return nil, fmt.Errorf("reading alert state: %w", err)
		}
		if err := json.Unmarshal([]byte(labels), &a.Labels); err != nil {
			return nil, fmt.Errorf("reading alert state: %w", err)
		}
		if err := a.State.UnmarshalText([]byte(state)); err != nil {
			return nil, fmt.Errorf("reading alert state: %w", err)
		}
		a.ActiveAt, a.FiredAt, a.ResolvedAt, a.LastEvalAt, a.KeepFiringSince = tOf(active), tOf(fired), tOf(resolved), tOf(last), tOf(keep)
		a.Value, a.Numerator, a.Denominator = fOf(value), fOf(num), fOf(den)
		out[a.Rule] = append(out[a.Rule], a)
	}
	return out, rs.Err()
}

// saveAlerts replaces the saved alerts, inside the caller's transaction.
func saveAlerts(ctx context.Context, st *Store, alerts []rules.Alert) error {
	if _, err := st.conn.ExecContext(ctx, "DELETE FROM alert_state"); err != nil {
		return err
	}
	for _, a := range alerts {
		labels, _ := json.Marshal(a.Labels)
		state, err := a.State.MarshalText()
		if err != nil {
			return err
		}
		if _, err := st.conn.ExecContext(ctx, `INSERT INTO alert_state VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			a.Rule, a.Fingerprint, string(labels), string(state), tArg(a.ActiveAt), tArg(a.FiredAt), tArg(a.ResolvedAt),
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

// systemSamples splits a record metric by system.
func systemSamples(ctx context.Context, q querier, r *rules.Rule, f Filter) ([]rules.Sample, error) {
	if len(r.By) != 1 || r.By[0] != "system" {
		return nil, fmt.Errorf("rule %q: %s can be split by system only", r.Name, r.Metric)
	}
	if ok, err := hasRecords(ctx, q); err != nil || !ok {
		return nil, err // no system, no sample: no data
	}
	keys, by, err := recordMetricsBy(ctx, q, f, "system")
	if err != nil {
		return nil, fmt.Errorf("rule %q: %w", r.Name, err)
	}
	out := make([]rules.Sample, 0, len(keys))
	for _, k := range keys {
		m := by[k][r.Metric]
		out = append(out, rules.Sample{Value: m.Value, Numerator: m.Numerator, Denominator: m.Denominator,
			Labels: map[string]string{"system": k}})
	}
	return out, nil
}

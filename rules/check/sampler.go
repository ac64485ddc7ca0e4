package check

import (
	"cmp"
	"context"
	"fmt"
	"time"

	"github.com/orchstat/orchstat/model/alerts"
	"github.com/orchstat/orchstat/model/reports"
	"github.com/orchstat/orchstat/rules/alerting"
)

// StoreSampler is the alerting.Sampler of a check: it reads the rules'
// metrics from the store as of one instant. Rules over the same window
// share one computation of the metrics, which is most of a check's time
// on a large store.
type StoreSampler struct {
	// Paths, when set, keeps every rule's window to the runs found under
	// them (check PATH...).
	Paths []string
	// Past makes the windows end at the sampler's instant: runs that
	// start at or after it are left out, as a look at a past time (check
	// --at) and a backtest need. A rule with its own SQL then cannot be
	// evaluated (ErrNotAtTime). A check at the present leaves it unset,
	// so a run whose clock is ahead is not missed.
	Past    bool
	st      Data
	now     time.Time
	metrics map[sampleKey]reports.Metrics
}

// sampleKey is what one computation of metrics serves: the rules over a
// window whose metrics are the traces', or the records'. Computing only
// the family a rule names halves a check over a store of one kind.
type sampleKey struct {
	window  alerting.Window
	records bool
}

// NewSampler returns a sampler reading st as of now.
func NewSampler(st Data, now time.Time) *StoreSampler {
	return &StoreSampler{st: st, now: now, metrics: map[sampleKey]reports.Metrics{}}
}

// Samples computes a rule's metric over its window, one sample per label
// set. An empty result means no data.
func (s *StoreSampler) Samples(ctx context.Context, r *alerting.Rule) ([]alerting.Sample, error) {
	if r.SQL != "" {
		if s.Past {
			return nil, ErrNotAtTime
		}
		// The rule's own query chooses its data; window does not apply.
		// It is bounded: a query that runs on would hold the store's lock,
		// and every cron round after it would give up waiting.
		limit := cmp.Or(r.Timeout, alerting.DefaultSQLTimeout)
		qctx, cancel := context.WithTimeout(ctx, limit)
		defer cancel()
		series, err := s.st.SQLSeries(qctx, r.SQL)
		if err != nil && ctx.Err() == nil && qctx.Err() == context.DeadlineExceeded {
			return nil, fmt.Errorf("its sql query ran past its timeout of %v (set timeout: on the rule to allow more)", limit)
		}
		return samplesOf(series), err
	}
	f := windowFilter(r.Window, s.now)
	f.Paths = s.Paths
	if s.Past {
		// The runs that started before now, as report --until now has.
		until := s.now
		f.Until = &until
	}
	if len(r.By) > 0 {
		return s.split(ctx, r, f)
	}
	key := sampleKey{r.Window, reports.RecordMetric(r.Metric) || reports.CallMetric(r.Metric)}
	m, cached := s.metrics[key]
	if !cached {
		var err error
		if m, err = s.st.WindowMetrics(ctx, f, key.records); err != nil {
			return nil, err
		}
		s.metrics[key] = m
	}
	v, ok := m[r.Metric]
	if !ok {
		return nil, fmt.Errorf("rule %q: unknown metric %q", r.Name, r.Metric)
	}
	return []alerting.Sample{{Value: v.Value, Numerator: v.Numerator, Denominator: v.Denominator, NoPrice: v.NoPrice, Labels: map[string]string{}}}, nil
}

// split computes a rule's metric split by its labels: a call metric by
// system, provider and/or model, a record metric by
// system, a provider_* metric by provider and/or model.
func (s *StoreSampler) split(ctx context.Context, r *alerting.Rule, f alerts.Window) ([]alerting.Sample, error) {
	if reports.CallMetric(r.Metric) {
		series, err := s.st.CallSeries(ctx, f, r.Metric, r.By)
		if err != nil {
			return nil, fmt.Errorf("rule %q: %w", r.Name, err)
		}
		return samplesOf(series), nil
	}
	if !reports.RecordMetric(r.Metric) {
		series, err := s.st.ProviderSeries(ctx, f, r.Metric, r.By)
		if err != nil {
			return nil, fmt.Errorf("rule %q: %w", r.Name, err)
		}
		return samplesOf(series), nil
	}
	if len(r.By) != 1 || r.By[0] != "system" {
		return nil, fmt.Errorf("rule %q: %s can be split by system only", r.Name, r.Metric)
	}
	if ok, err := s.st.HasRecords(ctx); err != nil || !ok {
		return nil, err // no system, no sample: no data
	}
	series, err := s.st.SystemSeries(ctx, f, r.Metric)
	if err != nil {
		return nil, fmt.Errorf("rule %q: %w", r.Name, err)
	}
	return samplesOf(series), nil
}

// windowFilter turns a rule's window into the runs it covers: those that
// started in the last Duration, or the last Runs runs to start.
func windowFilter(w alerting.Window, now time.Time) alerts.Window {
	var f alerts.Window
	switch {
	case w.Duration > 0:
		since := now.Add(-w.Duration)
		f.Since = &since
	case w.Runs > 0:
		f.Last = w.Runs
	}
	return f
}

func samplesOf(series []alerts.Series) []alerting.Sample {
	var out []alerting.Sample
	for _, s := range series {
		out = append(out, alerting.Sample{Value: s.Value, Numerator: s.Numerator, Denominator: s.Denominator, NoPrice: s.NoPrice, Labels: s.Labels})
	}
	return out
}

package query_test

import (
	"context"
	"math"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/orchstat/orchstat/model/records/prices"
	"github.com/orchstat/orchstat/model/reports"
	"github.com/orchstat/orchstat/query"
)

// TestCallSums checks the call metrics that sum cost and tokens against
// values worked out by hand, per model and over all calls, at the
// built-in prices per million tokens:
//
//	gpt-4o:            input $2.50, cache read $1.25, output $10
//	claude-sonnet-4-5: input $3, cache read $0.30, cache write $3.75,
//	                   output $15 (prompts under 200k tokens)
//
// and at a price table of the user's (--prices) for a model the built-in
// one does not know: acme-coder-1, input $1, output $2.
func TestCallSums(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st, err := query.Open(ctx, filepath.Join(t.TempDir(), "sums.duckdb"), query.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	day := time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC)
	writePricedCalls(ctx, t, st, []pricedCall{
		// 1000×2.5 + 2000×1.25 + 500×10 = $0.01; failed 4000×2.5 + 100×10 = $0.011.
		{"gpt-4o", "openai", 1000, 2000, -1, 500, -1, 4000, 100, -1, 2, day},
		// 100×3 + 10000×0.3 + 2000×3.75 + 300×15 = $0.0153.
		{"claude-sonnet-4-5", "anthropic", 100, 10000, 2000, 300, -1, -1, -1, -1, 1, day},
		// A recorded cost is the cost: $0.50.
		{"claude-sonnet-4-5", "anthropic", 10, 0, 0, 10, 0.5, -1, -1, -1, 1, day},
		// No price: left out of the sums, and counted.
		{"acme-coder-1", "acme", 1000, -1, -1, 100, -1, 500, -1, -1, 2, day},
		// No tokens: nothing to price, and no call without a price.
		{"acme-coder-1", "acme", -1, -1, -1, -1, -1, -1, -1, -1, 1, day},
	})

	type want struct {
		cost, failed                 *float64
		costUnpriced, failedUnpriced float64
		input, read, write, output   *float64
	}
	f := func(v float64) *float64 { return &v }
	byModel := map[string]want{
		"gpt-4o":            {f(0.01), f(0.011), 0, 0, f(1000), f(2000), nil, f(500)},
		"claude-sonnet-4-5": {f(0.5153), nil, 0, 0, f(110), f(10000), f(2000), f(310)},
		"acme-coder-1":      {nil, nil, 1, 1, f(1000), nil, nil, f(100)},
	}
	all := want{f(0.5253), f(0.011), 1, 1, f(2110), f(12000), f(2000), f(910)}

	check := func(t *testing.T, name string, m reports.Metrics, w want) {
		t.Helper()
		for _, c := range []struct {
			metric   string
			value    *float64
			unpriced *float64
		}{
			{"call_cost_usd", w.cost, &w.costUnpriced},
			{"failed_attempt_cost_usd", w.failed, &w.failedUnpriced},
			{"call_input_tokens", w.input, nil},
			{"call_cache_read_tokens", w.read, nil},
			{"call_cache_write_tokens", w.write, nil},
			{"call_output_tokens", w.output, nil},
		} {
			got := m[c.metric]
			if !sameFloat(got.Value, c.value) {
				t.Errorf("%s: %s = %v, want %v", name, c.metric, showSum(got.Value), showSum(c.value))
			}
			if !sameFloat(got.NoPrice, c.unpriced) {
				t.Errorf("%s: %s leaves out %v calls without a price, want %v", name, c.metric, showSum(got.NoPrice), showSum(c.unpriced))
			}
		}
	}

	series := func(t *testing.T, st *query.Store, f query.Filter, metric string) map[string]reports.Metric {
		t.Helper()
		ss, err := st.CallSeries(ctx, f, metric, []string{"model"})
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]reports.Metric{}
		for _, s := range ss {
			out[s.Labels["model"]] = s.Metric
		}
		return out
	}
	bySeries := func(t *testing.T, st *query.Store) map[string]reports.Metrics {
		out := map[string]reports.Metrics{}
		for _, metric := range []string{"call_cost_usd", "failed_attempt_cost_usd", "call_input_tokens",
			"call_cache_read_tokens", "call_cache_write_tokens", "call_output_tokens"} {
			for model, m := range series(t, st, query.Filter{}, metric) {
				if out[model] == nil {
					out[model] = reports.Metrics{}
				}
				out[model][metric] = m
			}
		}
		return out
	}

	t.Run("by model", func(t *testing.T) {
		got := bySeries(t, st)
		if len(got) != len(byModel) {
			t.Errorf("%d models, want %d: %v", len(got), len(byModel), got)
		}
		for model, w := range byModel {
			check(t, model, got[model], w)
		}
	})
	t.Run("all calls", func(t *testing.T) {
		m, err := st.WindowMetrics(ctx, query.Filter{}, true)
		if err != nil {
			t.Fatal(err)
		}
		check(t, "all", m, all)
	})
	t.Run("window", func(t *testing.T) {
		// A window that starts after the calls' run has none of them: no
		// sample, so a rule has no data rather than $0.
		since := day.Add(time.Hour)
		if got := series(t, st, query.Filter{Since: &since}, "call_cost_usd"); len(got) != 0 {
			t.Errorf("a window after every call: %v, want no series", got)
		}
	})
	t.Run("prices file", func(t *testing.T) {
		mine, err := prices.Load(strings.NewReader(`{"acme-coder-1": {"input_cost_per_token": 1e-6, "output_cost_per_token": 2e-6}}`), "mine.json")
		if err != nil {
			t.Fatal(err)
		}
		st.UsePrices(prices.Builtin().Extend(mine))
		defer st.UsePrices(nil)
		got := bySeries(t, st)
		// 1000×1 + 100×2 = $0.0012; failed 500×1 = $0.0005.
		check(t, "acme-coder-1 at the user's price", got["acme-coder-1"], want{f(0.0012), f(0.0005), 0, 0, f(1000), nil, nil, f(100)})
		check(t, "gpt-4o beside it", got["gpt-4o"], byModel["gpt-4o"])
	})
}

func sameFloat(got, want *float64) bool {
	if got == nil || want == nil {
		return got == want
	}
	return math.Abs(*got-*want) <= 1e-12*math.Max(1, math.Abs(*want))
}

func showSum(v *float64) any {
	if v == nil {
		return "none"
	}
	return *v
}

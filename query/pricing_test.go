package query_test

import (
	"context"
	"math"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/orchstat/orchstat/model/records/prices"
	"github.com/orchstat/orchstat/query"
)

// pricedCall is a calls row for the pricing tests; a negative token
// count is NULL.
type pricedCall struct {
	model, provider                 string
	input, read, write, output      float64
	cost                            float64 // recorded; negative: none
	failedIn, failedOut, failedCost float64
	attempts                        int
	ts                              time.Time
}

func nullable(v float64) any {
	if v < 0 {
		return nil
	}
	return v
}

func writePricedCalls(ctx context.Context, t *testing.T, st *query.Store, calls []pricedCall) {
	t.Helper()
	tx, err := st.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := tx.Exec(ctx, `INSERT INTO record_runs (file_id, system, run_id, started_at, status) VALUES (1, 'claude-code', 's1', ?, 'success')`,
		calls[0].ts); err != nil {
		t.Fatal(err)
	}
	for i, c := range calls {
		var attempts any
		if c.attempts > 0 {
			attempts = c.attempts
		}
		if err := tx.Exec(ctx, `INSERT INTO calls (file_id, system, run_id, session, call_id, line, ts, provider, model, success, attempts,
			input_tokens, cache_read_tokens, cache_write_tokens, output_tokens, cost_usd, failed_input_tokens, failed_output_tokens, failed_cost_usd)
			VALUES (1, 'claude-code', 's1', 's1', ?, ?, ?, ?, ?, true, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			"c"+string(rune('a'+i)), i+1, c.ts, c.provider, c.model, attempts,
			nullable(c.input), nullable(c.read), nullable(c.write), nullable(c.output), nullable(c.cost),
			nullable(c.failedIn), nullable(c.failedOut), nullable(c.failedCost)); err != nil {
			t.Fatal(err)
		}
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
}

// TestPricedCalls checks priced_calls' cost against prices.Price.Cost,
// the pure package's own arithmetic, call by call: long-context tiers
// chosen per request, a recorded cost kept and said to be, a model
// without a price NULL and named, never $0; and that a read-only store
// (orchstat sql, report --no-ingest) prices too.
func TestPricedCalls(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "p.duckdb")
	st, err := query.Open(ctx, path, query.Options{})
	if err != nil {
		t.Fatal(err)
	}
	day := time.Date(2026, 2, 23, 10, 0, 0, 0, time.UTC)
	calls := []pricedCall{
		// Under and over Sonnet 4.5's 200k tier; the threshold itself is
		// not over it.
		{"claude-sonnet-4-5-20250929", "anthropic", 1000, 50000, 2000, 800, -1, -1, -1, -1, 1, day},
		{"claude-sonnet-4-5-20250929", "anthropic", 10, 190000, 20000, 900, -1, -1, -1, -1, 1, day},
		{"claude-sonnet-4-5-20250929", "anthropic", 0, 200000, 0, 5, -1, -1, -1, -1, 1, day},
		// A recorded cost is kept as recorded.
		{"claude-sonnet-4-5-20250929", "anthropic", 1000, 0, 0, 100, 0.5, -1, -1, -1, 1, day},
		// Failed attempts' tokens are priced apart.
		{"gpt-4o", "openai", 300, -1, -1, 20, -1, 600, 40, -1, 3, day},
		// No price: NULL, named.
		{"claude-sonnet-4-7", "anthropic", 1000, 0, 0, 100, -1, -1, -1, -1, 1, day},
		// No tokens: nothing to price, and not "no price".
		{"claude-sonnet-4-7", "anthropic", -1, -1, -1, -1, -1, -1, -1, -1, 1, day},
	}
	writePricedCalls(ctx, t, st, calls)
	st.Close()

	st, err = query.Open(ctx, path, query.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	// The report first: `orchstat sql` locks the connection's settings,
	// which the report sets.
	r, err := st.ReportConcurrently(ctx, query.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	for _, row := range r.Calls.ByModel {
		if *row.Model == "claude-sonnet-4-7" && (row.NoPriceCalls != 1 || row.CostUSD != nil) {
			t.Errorf("unpriced model: %d no-price calls, cost %v; want 1 and none", row.NoPriceCalls, row.CostUSD)
		}
		if *row.Model == "gpt-4o" && (row.CostUSD == nil || row.FailedCostUSD == nil) {
			t.Errorf("gpt-4o: cost %v, failed cost %v; want both priced", row.CostUSD, row.FailedCostUSD)
		}
	}

	tbl, err := st.ReadOnly(ctx, `SELECT cost_usd, cost_source, failed_cost_usd, failed_cost_source, price_model, no_price
		FROM priced_calls ORDER BY line`)
	if err != nil {
		t.Fatal(err)
	}
	table := prices.Builtin()
	for i, c := range calls {
		row := tbl.Rows[i]
		wantCost, wantSource, wantNoPrice := any(nil), any(nil), false
		price, key, found := table.Lookup(c.model, c.provider)
		switch {
		case c.cost >= 0:
			wantCost, wantSource = c.cost, "record"
		case c.input < 0:
		case found:
			wantCost, wantSource = price.Cost(prices.Usage{Input: c.input, CacheRead: max(c.read, 0), CacheWrite: max(c.write, 0), Output: c.output}), "price"
		default:
			wantNoPrice = true
		}
		if !near(row[0], wantCost) || row[1] != wantSource {
			t.Errorf("call %d (%s): cost %v from %v, want %v from %v", i, c.model, row[0], row[1], wantCost, wantSource)
		}
		if row[5] != wantNoPrice {
			t.Errorf("call %d (%s): no_price %v, want %v", i, c.model, row[5], wantNoPrice)
		}
		if found && row[4] != key {
			t.Errorf("call %d: price_model %v, want %s", i, row[4], key)
		}
		wantFailed := any(nil)
		if c.failedIn >= 0 {
			wantFailed = price.Cost(prices.Usage{Input: c.failedIn / float64(c.attempts-1), Output: c.failedOut / float64(c.attempts-1)}) * float64(c.attempts-1)
		}
		if !near(row[2], wantFailed) {
			t.Errorf("call %d: failed cost %v, want %v", i, row[2], wantFailed)
		}
	}
	// The tier applies to the whole request: the second call costs more
	// than its tokens at the base price.
	base := 10*3e-6 + 190000*3e-7 + 20000*3.75e-6 + 900*1.5e-5
	if got := tbl.Rows[1][0].(float64); got <= base {
		t.Errorf("a 210k prompt cost %v, not above its base price %v", got, base)
	}

	// A user's table wins over the built-in one.
	mine, err := prices.Load(strings.NewReader(`{"gpt-4o": {"input_cost_per_token": 1, "output_cost_per_token": 2}}`), "mine.json")
	if err != nil {
		t.Fatal(err)
	}
	st.Close()
	again, err := query.Open(ctx, path, query.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer again.Close()
	again.UsePrices(prices.Builtin().Extend(mine))
	tbl, err = again.ReadOnly(ctx, `SELECT cost_usd FROM priced_calls WHERE model = 'gpt-4o'`)
	if err != nil {
		t.Fatal(err)
	}
	if !near(tbl.Rows[0][0], 340.0) {
		t.Errorf("gpt-4o at the user's price: %v, want 340", tbl.Rows[0][0])
	}
}

func near(got, want any) bool {
	if got == nil || want == nil {
		return got == want
	}
	g, ok1 := got.(float64)
	w, ok2 := want.(float64)
	return ok1 && ok2 && math.Abs(g-w) <= 1e-12*math.Max(1, math.Abs(w))
}

// TestCallUsage checks the usage view's days in a time zone: a call at
// 23:30 UTC belongs to the next day in Paris, and a window selects calls
// by their own time.
func TestCallUsage(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st, err := query.Open(ctx, filepath.Join(t.TempDir(), "u.duckdb"), query.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	d := time.Date(2026, 2, 23, 23, 30, 0, 0, time.UTC)
	writePricedCalls(ctx, t, st, []pricedCall{
		{"claude-sonnet-4-5", "anthropic", 100, 0, 0, 10, -1, -1, -1, -1, 2, d.Add(-2 * time.Hour)},
		{"claude-sonnet-4-5", "anthropic", 100, 0, 0, 10, -1, -1, -1, -1, 1, d},
		{"mystery-1", "", 100, 0, 0, 10, -1, -1, -1, -1, 1, d},
	})
	paris, err := time.LoadLocation("Europe/Paris")
	if err != nil {
		t.Skip("no time zone database:", err)
	}
	for _, tc := range []struct {
		by    string
		loc   *time.Location
		since *time.Time
		keys  []string
		calls []int64
	}{
		{"day", time.UTC, nil, []string{"2026-02-23"}, []int64{3}},
		{"day", paris, nil, []string{"2026-02-23", "2026-02-24"}, []int64{1, 2}},
		{"day", paris, &d, []string{"2026-02-24"}, []int64{2}},
		{"week", paris, nil, []string{"2026-02-23"}, []int64{3}},
		{"month", paris, nil, []string{"2026-02"}, []int64{3}},
		{"model", paris, nil, []string{"claude-sonnet-4-5", "mystery-1"}, []int64{2, 1}},
		{"session", paris, nil, []string{"s1"}, []int64{3}},
	} {
		t.Run(tc.by+"/"+tc.loc.String(), func(t *testing.T) {
			u, err := st.CallUsage(ctx, query.Filter{Since: tc.since}, tc.by, tc.loc)
			if err != nil {
				t.Fatal(err)
			}
			var keys []string
			var calls []int64
			for _, r := range u.Rows {
				keys, calls = append(keys, r.Key), append(calls, r.Calls)
			}
			if strings.Join(keys, ",") != strings.Join(tc.keys, ",") || len(calls) != len(tc.calls) {
				t.Fatalf("rows %v of %v calls, want %v of %v", keys, calls, tc.keys, tc.calls)
			}
			for i := range calls {
				if calls[i] != tc.calls[i] {
					t.Errorf("row %s: %d calls, want %d", keys[i], calls[i], tc.calls[i])
				}
			}
			if len(u.NoPrice) != 1 || u.NoPrice[0].Model != "mystery-1" {
				t.Errorf("no price: %+v, want mystery-1 named", u.NoPrice)
			}
			if u.Total.Retried != 1 && tc.since == nil {
				t.Errorf("retried %d, want 1", u.Total.Retried)
			}
		})
	}
}

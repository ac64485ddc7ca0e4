package query

import (
	"context"
	"database/sql"
	"fmt"
	"strings"

	"github.com/orchstat/orchstat/model/records/prices"
)

// Calls are priced when they are read, not when they are stored, so that
// a new price table (--prices, or a newer orchstat's) applies to what the
// store already holds. Go looks each distinct model up in the table (the
// name matching is the prices package's); DuckDB does the arithmetic, in
// the temporary view priced_calls that every calls figure reads.
//
// Temporary tables and views belong to one DuckDB connection, so the
// statements that make them are kept and run again on each connection a
// query takes (see ReportConcurrently); an ingest invalidates them, as it
// may bring models the table was not looked up for.

// UsePrices sets the table the store's calls are priced with; nil means
// the built-in one. It takes effect at the next query.
func (s *Store) UsePrices(t *prices.Table) {
	s.priceTable = t
	s.priceSetup, s.pricedOn = nil, false
}

// stmt is a statement with its arguments.
type stmt struct {
	q    string
	args []any
}

// pricedCallsView makes priced_calls from calls and call_prices (see
// pricingStatements for what each column means).
const pricedCallsView = `CREATE OR REPLACE TEMP VIEW priced_calls AS
SELECT * EXCLUDE (pc_, pfc_, tok_, ftok_) REPLACE (
    coalesce(cost_usd, pc_) AS cost_usd,
    coalesce(failed_cost_usd, pfc_) AS failed_cost_usd),
  CASE WHEN cost_usd IS NOT NULL THEN 'record' WHEN pc_ IS NOT NULL THEN 'price' END AS cost_source,
  CASE WHEN failed_cost_usd IS NOT NULL THEN 'record' WHEN pfc_ IS NOT NULL THEN 'price' END AS failed_cost_source,
  price_model IS NULL AND ((cost_usd IS NULL AND tok_) OR (failed_cost_usd IS NULL AND ftok_)) AS no_price
FROM (
  SELECT c.*, p.price_key AS price_model,
    CASE WHEN p.price_key IS NOT NULL AND %[1]s THEN %[2]s END AS pc_,
    CASE WHEN p.price_key IS NOT NULL AND %[3]s THEN %[4]s END AS pfc_,
    %[1]s AS tok_, %[3]s AS ftok_
  FROM calls c LEFT JOIN call_prices p
    ON p.model IS NOT DISTINCT FROM c.model AND p.provider IS NOT DISTINCT FROM c.provider)`

// priceKinds are a price's per-token prices, as call_prices' columns.
var priceKinds = []string{"input", "output", "cache_read", "cache_write", "cache_write_1h"}

func kindsOf(p prices.Price) []any {
	return []any{p.Input, p.Output, p.CacheRead, p.CacheWrite, p.CacheWrite1h}
}

func tierKindsOf(t prices.Tier) []any {
	return []any{t.Above, t.Input, t.Output, t.CacheRead, t.CacheWrite, t.CacheWrite1h}
}

// pricingStatements are the statements that make call_prices, one row per
// model and provider of the calls that has a price, and priced_calls:
// calls with
//   - cost_usd: the recorded cost when the record states one, else the
//     tokens priced by the table, else NULL;
//   - cost_source: 'record', 'price' or NULL;
//   - failed_cost_usd and failed_cost_source: the same for the failed
//     attempts' tokens;
//   - price_model: the table's key the model's price was found under;
//   - no_price: the call has tokens to price, no recorded cost, and its
//     model no price. Such a call's cost is NULL, never 0.
func (s *Store) pricingStatements(ctx context.Context) ([]stmt, error) {
	table := s.priceTable
	if table == nil {
		table = prices.Builtin()
	}
	models, tiers, err := s.pricedModels(ctx, table)
	if err != nil {
		return nil, err
	}
	view, err := s.pricedCallsStatement(ctx, tiers)
	if err != nil {
		return nil, err
	}
	return append(callPricesStatements(models, tiers), view), nil
}

// pricedModel is a model and provider of the calls, with the key table
// found its price under.
type pricedModel struct {
	model, provider sql.NullString
	key             string
	price           prices.Price
}

// pricedModels lists the models and providers of the calls that table
// prices, and the most tiers one of their prices has.
func (s *Store) pricedModels(ctx context.Context, table *prices.Table) ([]pricedModel, int, error) {
	type pair struct{ model, provider sql.NullString }
	var pairs []pair
	err := eachRow(ctx, s.conn, "listing the calls' models", `SELECT DISTINCT model, provider FROM calls`, nil,
		func(rs *sql.Rows) error {
			var p pair
			if err := rs.Scan(&p.model, &p.provider); err != nil {
				return err
			}
			pairs = append(pairs, p)
			return nil
		})
	if err != nil {
		return nil, 0, err
	}
	var rows []pricedModel
	tiers := 0
	for _, p := range pairs {
		if !p.model.Valid {
			continue
		}
		price, key, ok := table.Lookup(p.model.String, p.provider.String)
		if !ok {
			continue
		}
		rows = append(rows, pricedModel{p.model, p.provider, key, price})
		tiers = max(tiers, len(price.Tiers))
	}
	return rows, tiers, nil
}

// callPricesStatements make call_prices, with columns for tiers tiers,
// and fill it with rows.
func callPricesStatements(rows []pricedModel, tiers int) []stmt {
	var cols []string
	cols = append(cols, "model VARCHAR", "provider VARCHAR", "price_key VARCHAR")
	for _, k := range priceKinds {
		cols = append(cols, k+" DOUBLE")
	}
	for i := 1; i <= tiers; i++ {
		cols = append(cols, fmt.Sprintf("t%d_above DOUBLE", i))
		for _, k := range priceKinds {
			cols = append(cols, fmt.Sprintf("t%d_%s DOUBLE", i, k))
		}
	}
	out := []stmt{{q: "CREATE OR REPLACE TEMP TABLE call_prices (" + strings.Join(cols, ", ") + ")"}}
	marks := strings.TrimSuffix(strings.Repeat("?, ", len(cols)), ", ")
	for _, r := range rows {
		args := []any{r.model, r.provider, r.key}
		args = append(args, kindsOf(r.price)...)
		for i := range tiers {
			if i < len(r.price.Tiers) {
				args = append(args, tierKindsOf(r.price.Tiers[i])...)
			} else {
				args = append(args, nil, nil, nil, nil, nil, nil)
			}
		}
		out = append(out, stmt{q: "INSERT INTO call_prices VALUES (" + marks + ")", args: args})
	}
	return out
}

// pricedCallsStatement makes the priced_calls view over call_prices with
// tiers tiers.
func (s *Store) pricedCallsStatement(ctx context.Context, tiers int) (stmt, error) {
	oneHour := "0"
	has1h, err := hasColumn(ctx, s.conn, "calls", "cache_write_1h_tokens")
	if err != nil {
		return stmt{}, err
	}
	if has1h {
		oneHour = "least(greatest(coalesce(c.cache_write_1h_tokens, 0), 0), greatest(coalesce(c.cache_write_tokens, 0), 0))"
	}
	prompt := "(coalesce(c.input_tokens, 0) + coalesce(c.cache_read_tokens, 0) + coalesce(c.cache_write_tokens, 0))"
	cost := fmt.Sprintf("coalesce(c.input_tokens, 0) * %s + coalesce(c.cache_read_tokens, 0) * %s"+
		" + (coalesce(c.cache_write_tokens, 0) - %s) * %s + %s * %s + coalesce(c.output_tokens, 0) * %s",
		tierPick(prompt, "input", tiers), tierPick(prompt, "cache_read", tiers),
		oneHour, tierPick(prompt, "cache_write", tiers), oneHour, tierPick(prompt, "cache_write_1h", tiers),
		tierPick(prompt, "output", tiers))
	// A call's failed attempts record their input whole, and their count
	// is the call's attempts but one: the tier is chosen on one attempt's
	// share of it, as each attempt was billed on its own prompt.
	failedPrompt := "(c.failed_input_tokens / greatest(coalesce(c.attempts, 2) - 1, 1))"
	failedCost := fmt.Sprintf("coalesce(c.failed_input_tokens, 0) * %s + coalesce(c.failed_output_tokens, 0) * %s",
		tierPick(failedPrompt, "input", tiers), tierPick(failedPrompt, "output", tiers))
	tok := "(c.input_tokens IS NOT NULL OR c.cache_read_tokens IS NOT NULL OR c.cache_write_tokens IS NOT NULL OR c.output_tokens IS NOT NULL)"
	ftok := "(c.failed_input_tokens IS NOT NULL OR c.failed_output_tokens IS NOT NULL)"
	return stmt{q: fmt.Sprintf(pricedCallsView, tok, cost, ftok, failedCost)}, nil
}

// tierPick is the price of kind for a request of prompt tokens: the
// highest tier it is strictly above, else the base price. A missing tier
// (NULL threshold) never applies.
func tierPick(prompt, kind string, tiers int) string {
	if tiers == 0 {
		return "p." + kind
	}
	var b strings.Builder
	b.WriteString("CASE")
	for i := tiers; i >= 1; i-- {
		fmt.Fprintf(&b, " WHEN %s > p.t%d_above THEN p.t%d_%s", prompt, i, i, kind)
	}
	fmt.Fprintf(&b, " ELSE p.%s END", kind)
	return b.String()
}

// hasColumn says whether a table of the store has a column.
func hasColumn(ctx context.Context, q querier, table, column string) (bool, error) {
	var n int64
	// pragma_table_info reads one table; duckdb_columns() binds every view
	// of the store, a visible share of a report's time.
	err := eachRow(ctx, q, "reading the schema", `SELECT count(*) FROM pragma_table_info(`+quoteSQL(table)+`) WHERE name = ?`, []any{column},
		func(rs *sql.Rows) error { return rs.Scan(&n) })
	return n > 0, err
}

// pricing returns the statements that make priced_calls, building them
// the first time after the table was set or the store written.
func (s *Store) pricing(ctx context.Context) ([]stmt, error) {
	if s.priceSetup != nil {
		return s.priceSetup, nil
	}
	stmts, err := s.pricingStatements(ctx)
	if err != nil {
		return nil, err
	}
	s.priceSetup = stmts
	return stmts, nil
}

// execer runs statements: a connection.
type execer interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
}

// applyPricing makes priced_calls on a connection.
func applyPricing(ctx context.Context, q execer, stmts []stmt) error {
	for _, st := range stmts {
		if _, err := q.ExecContext(ctx, st.q, st.args...); err != nil {
			return fmt.Errorf("pricing the calls: %w", cleanDuckErr(err))
		}
	}
	return nil
}

// priced makes priced_calls on the store's own connection, unless it is
// there and current.
func (s *Store) priced(ctx context.Context) error {
	if s.pricedOn && s.priceSetup != nil {
		return nil
	}
	stmts, err := s.pricing(ctx)
	if err != nil {
		return err
	}
	if err := applyPricing(ctx, s.conn, stmts); err != nil {
		return err
	}
	s.pricedOn = true
	return nil
}

// Priced makes the view priced_calls on the store's connection, for
// `orchstat sql` and check's sql: rules to read.
func (s *Store) Priced(ctx context.Context) error { return s.priced(ctx) }

// NoPrice are the models of the calls that have tokens to price but no
// recorded cost and no price in the table, with how many calls each.
type NoPrice struct {
	Provider, Model string
	Calls           int64
}

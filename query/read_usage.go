package query

import (
	"cmp"
	"context"
	"database/sql"
	"fmt"
	"slices"
	"time"

	"github.com/orchstat/orchstat/model/reports"
)

// noTime is the period of calls without a recorded time.
const noTime = "(no time)"

// CallUsage groups the calls f selects by by (one of reports.UsageBy):
// days, weeks and months are cut at midnight in loc. Unlike the report's
// other figures, f's time window selects calls by their own time, not by
// their run's start, as a day's usage must hold that day's calls of a
// session begun the day before; a call with no time is then left out.
//
// The calls are read one by one and summed here, so that days follow
// Go's time zone database whatever DuckDB was built with.
func (s *Store) CallUsage(ctx context.Context, f Filter, by string, loc *time.Location) (*reports.Usage, error) {
	if !slices.Contains(reports.UsageBy, by) {
		return nil, fmt.Errorf("cannot group calls by %q (only by day, week, month, session or model)", by)
	}
	u := &reports.Usage{By: by, Timezone: loc.String(), Rows: []reports.UsageRow{}, NoPrice: []reports.NoPriceModel{},
		Total: reports.UsageRow{Key: "total"}}
	if ok, err := hasCalls(ctx, s.conn); err != nil || !ok {
		u.Total.Models = []reports.UsageRow{}
		return u, err
	}
	if err := s.priced(ctx); err != nil {
		return nil, err
	}
	runs := f
	runs.Since, runs.Until = nil, nil
	cte, args := runs.callScope("''")
	where := "true"
	if f.Since != nil {
		where += " AND ts >= ?"
		args = append(args, f.Since.UTC())
	}
	if f.Until != nil {
		where += " AND ts < ?"
		args = append(args, f.Until.UTC())
	}
	q := "WITH " + cte + `
SELECT ts, coalesce(session, run_id, ''), coalesce(provider, ''), coalesce(model, ''), success, attempts,
  input_tokens, cache_read_tokens, cache_write_tokens, output_tokens, reasoning_tokens,
  cost_usd, cost_source, failed_cost_usd, coalesce(no_price, false)
FROM cs WHERE ` + where + ` ORDER BY ts NULLS LAST, system, session, line`
	rows := map[string]*reports.UsageRow{}
	models := map[string]map[[2]string]*reports.UsageRow{}
	totalModels := map[[2]string]*reports.UsageRow{}
	noPrice := map[[2]string]int64{}
	err := eachRow(ctx, s.conn, "grouping agents' calls", q, args, func(rs *sql.Rows) error {
		var c usageCall
		if err := rs.Scan(&c.ts, &c.session, &c.provider, &c.model, &c.success, &c.attempts,
			&c.input, &c.read, &c.write, &c.output, &c.reasoning, &c.cost, &c.costSource, &c.failedCost, &c.noPrice); err != nil {
			return err
		}
		var key string
		if by == "session" {
			key = c.session
		} else if by == "model" {
			key = c.model
		} else if !c.ts.Valid {
			key = noTime
			u.Undated++
		} else {
			key = periodOf(c.ts.Time.In(loc), by)
		}
		r := rows[key]
		if r == nil {
			r = &reports.UsageRow{Key: key}
			rows[key] = r
			models[key] = map[[2]string]*reports.UsageRow{}
		}
		m := [2]string{c.provider, c.model}
		mr := models[key][m]
		if mr == nil {
			mr = &reports.UsageRow{Key: key, Provider: c.provider, Model: c.model}
			models[key][m] = mr
		}
		tm := totalModels[m]
		if tm == nil {
			tm = &reports.UsageRow{Key: "total", Provider: c.provider, Model: c.model}
			totalModels[m] = tm
		}
		for _, row := range []*reports.UsageRow{r, mr, &u.Total, tm} {
			c.addTo(row)
		}
		if c.noPrice {
			noPrice[m]++
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	for key, r := range rows {
		r.Models = sortedModels(models[key])
		u.Rows = append(u.Rows, *r)
	}
	u.Total.Models = sortedModels(totalModels)
	slices.SortFunc(u.Rows, func(a, b reports.UsageRow) int {
		if (a.Key == noTime) != (b.Key == noTime) {
			return boolOrder(a.Key == noTime, b.Key == noTime)
		}
		if by == "session" {
			if c := compareTimes(a.First, b.First); c != 0 {
				return c
			}
		}
		return cmp.Compare(a.Key, b.Key)
	})
	for m, n := range noPrice {
		u.NoPrice = append(u.NoPrice, reports.NoPriceModel{Provider: m[0], Model: m[1], Calls: n})
	}
	slices.SortFunc(u.NoPrice, func(a, b reports.NoPriceModel) int {
		return cmp.Or(cmp.Compare(a.Model, b.Model), cmp.Compare(a.Provider, b.Provider))
	})
	return u, nil
}

// usageCall is one call as CallUsage reads it.
type usageCall struct {
	ts                                          sql.NullTime
	session, provider, model                    string
	success                                     sql.NullBool
	attempts                                    sql.NullInt64
	input, read, write, output, reasoning, cost sql.NullFloat64
	costSource                                  sql.NullString
	failedCost                                  sql.NullFloat64
	noPrice                                     bool
}

func (c usageCall) addTo(r *reports.UsageRow) {
	r.Calls++
	if c.ts.Valid {
		t := c.ts.Time.UTC()
		if r.First == nil || t.Before(*r.First) {
			r.First = &t
		}
		if r.Last == nil || t.After(*r.Last) {
			l := t
			r.Last = &l
		}
	}
	if c.success.Valid && !c.success.Bool {
		r.Failed++
	}
	if c.attempts.Valid {
		r.WithAttempts++
		r.Attempts += c.attempts.Int64
		if c.attempts.Int64 > 1 {
			r.Retried++
		}
	}
	addTo(&r.InputTokens, c.input)
	addTo(&r.CacheReadTokens, c.read)
	addTo(&r.CacheWriteTokens, c.write)
	addTo(&r.OutputTokens, c.output)
	addTo(&r.ReasoningTokens, c.reasoning)
	addTo(&r.CostUSD, c.cost)
	addTo(&r.FailedCostUSD, c.failedCost)
	switch c.costSource.String {
	case "record":
		r.CostFromRecord++
	case "price":
		r.CostFromPrice++
	}
	if c.noPrice {
		r.NoPriceCalls++
	}
}

// addTo adds v to a sum that stays nil until some value is added.
func addTo(sum **float64, v sql.NullFloat64) {
	if !v.Valid {
		return
	}
	if *sum == nil {
		*sum = new(float64)
	}
	**sum += v.Float64
}

// periodOf is the day, week (its Monday) or month of a local time.
func periodOf(t time.Time, by string) string {
	switch by {
	case "week":
		d := time.Date(t.Year(), t.Month(), t.Day(), 12, 0, 0, 0, time.UTC)
		return d.AddDate(0, 0, -((int(d.Weekday()) + 6) % 7)).Format("2006-01-02")
	case "month":
		return t.Format("2006-01")
	}
	return t.Format("2006-01-02")
}

func sortedModels(m map[[2]string]*reports.UsageRow) []reports.UsageRow {
	out := make([]reports.UsageRow, 0, len(m))
	for _, r := range m {
		out = append(out, *r)
	}
	slices.SortFunc(out, func(a, b reports.UsageRow) int {
		return cmp.Or(cmp.Compare(a.Model, b.Model), cmp.Compare(a.Provider, b.Provider))
	})
	return out
}

// compareTimes orders times, nil last.
func compareTimes(a, b *time.Time) int {
	switch {
	case a == nil && b == nil:
		return 0
	case a == nil:
		return 1
	case b == nil:
		return -1
	}
	return a.Compare(*b)
}

// boolOrder puts false before true.
func boolOrder(a, b bool) int {
	switch {
	case a == b:
		return 0
	case a:
		return 1
	}
	return -1
}

package query

import (
	"cmp"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/orchstat/orchstat/model/reports"
)

// blockSystem is the system whose calls billing blocks hold: Claude
// Code's plans count use in 5-hour blocks; other agents' calls are
// another provider's plan and are named as left out.
const blockSystem = "claude-code"

// CallBlocks cuts the Claude Code calls f selects into 5-hour billing
// blocks as ccusage 18 does (reports.FoldBlocks), with now deciding the
// active block, and adds the plan's week (the one weekReset, a time the
// weekly limit reset, repeats into; nil: the seven days before now) and
// the rate-limit figures the records in scope carry.
//
// Blocks are cut from every call in scope whatever f's window, then a
// block is kept when its start is in the window (ccusage's --since and
// --until do the same), so a window never moves a block's boundaries.
// As in ccusage, a block holds the calls whose lines record usage: the
// responses, and the calls that failed for good, whose error line Claude
// Code writes with a usage of zeros (orchstat keeps no tokens for them,
// so they count as none); other calls without usage (a line with none)
// are counted as left out. A failure "Claude AI usage limit reached|T"
// gives its block the time the limit resets, as ccusage reads it.
func (s *Store) CallBlocks(ctx context.Context, f Filter, now time.Time, loc *time.Location, weekReset *time.Time) (*reports.Blocks, error) {
	b := &reports.Blocks{Now: now.UTC(), Timezone: loc.String(), Rows: []reports.Block{}, RateLimits: []reports.RateLimit{},
		NoPrice: []reports.NoPriceModel{}, LeftOut: []reports.LeftOut{}}
	b.Week = reports.FoldWeek(nil, nil, now, loc, weekReset)
	if ok, err := hasCalls(ctx, s.conn); err != nil || !ok {
		return b, err
	}
	if err := s.priced(ctx); err != nil {
		return nil, err
	}
	runs := f
	runs.Since, runs.Until = nil, nil
	cte, args := runs.callScope("''")
	q := "WITH " + cte + `
SELECT system, ts, coalesce(model, ''), coalesce(provider, ''),
  input_tokens IS NOT NULL OR cache_read_tokens IS NOT NULL OR cache_write_tokens IS NOT NULL OR output_tokens IS NOT NULL
    OR coalesce(success = false, false), coalesce(error, ''),
  coalesce(input_tokens, 0), coalesce(cache_read_tokens, 0), coalesce(cache_write_tokens, 0), coalesce(output_tokens, 0),
  cost_usd, coalesce(no_price, false)
FROM cs ORDER BY ts NULLS LAST, system, session, line`
	var calls []reports.BlockCall
	var limits []reports.RateLimit
	other := map[string]int64{}
	var undated, noTokens int64
	noPrice := map[[2]string]int64{}
	err := eachRow(ctx, s.conn, "reading Claude Code's calls for billing blocks", q, args, func(rs *sql.Rows) error {
		var system, model, provider, errText string
		var ts sql.NullTime
		var tokens, np bool // np: the call is counted in no_price
		var c reports.BlockCall
		var cost sql.NullFloat64
		if err := rs.Scan(&system, &ts, &model, &provider, &tokens, &errText, &c.Input, &c.CacheRead, &c.CacheWrite, &c.Output, &cost, &np); err != nil {
			return err
		}
		switch {
		case system != blockSystem:
			other[system]++
			return nil
		case !ts.Valid:
			undated++
			return nil
		case !tokens:
			noTokens++
			return nil
		}
		c.TS, c.Model = ts.Time.UTC(), model
		if at := usageLimitReset(errText); at != nil {
			c.LimitResetsAt = at
			limits = append(limits, reports.RateLimit{System: blockSystem, Window: "limit reached", UsedPercent: 100,
				ResetsAt: at, ObservedAt: c.TS})
		}
		if cost.Valid {
			v := cost.Float64
			c.Cost = &v
		} else if tokens := c.Input + c.CacheRead + c.CacheWrite + c.Output; tokens > 0 || np {
			// Tokens without a cost: the model has no price (np), never $0.
			noPrice[[2]string{provider, model}]++
		} else {
			// A failure with no tokens costs nothing, priced or not.
			c.Cost = new(float64)
		}
		calls = append(calls, c)
		return nil
	})
	if err != nil {
		return nil, err
	}
	all := reports.FoldBlocks(calls, now, reports.BlockLength)
	b.Rows = keepBlocks(all, f.Since, f.Until)
	for i := range b.Rows {
		if b.Rows[i].Active {
			a := b.Rows[i]
			b.Active = &a
		}
	}
	b.Week = reports.FoldWeek(calls, all, now, loc, weekReset)
	for m, n := range noPrice {
		b.NoPrice = append(b.NoPrice, reports.NoPriceModel{Provider: m[0], Model: m[1], Calls: n})
	}
	slices.SortFunc(b.NoPrice, func(x, y reports.NoPriceModel) int {
		return cmp.Or(cmp.Compare(x.Model, y.Model), cmp.Compare(x.Provider, y.Provider))
	})
	if noTokens > 0 {
		b.LeftOut = append(b.LeftOut, reports.LeftOut{Calls: noTokens,
			Why: "Claude Code calls that record no usage: ccusage's blocks hold only lines with usage"})
	}
	if undated > 0 {
		b.LeftOut = append(b.LeftOut, reports.LeftOut{Calls: undated, Why: "Claude Code calls with no recorded time"})
	}
	systems := make([]string, 0, len(other))
	for sys := range other {
		systems = append(systems, sys)
	}
	slices.Sort(systems)
	for _, sys := range systems {
		b.LeftOut = append(b.LeftOut, reports.LeftOut{Calls: other[sys],
			Why: sys + " calls: billing blocks are Claude Code's 5-hour windows (its plan's own figures, when its records carry them, are under rate limits)"})
	}
	if b.RateLimits, err = s.rateLimits(ctx, runs, now); err != nil {
		return nil, err
	}
	// Claude Code's latest "usage limit reached" at or before now.
	var latest *reports.RateLimit
	for i, l := range limits {
		if !l.ObservedAt.After(now) && (latest == nil || l.ObservedAt.After(latest.ObservedAt)) {
			latest = &limits[i]
		}
	}
	if latest != nil {
		latest.ResetSince = !latest.ResetsAt.After(now)
		b.RateLimits = append([]reports.RateLimit{*latest}, b.RateLimits...)
	}
	return b, nil
}

// usageLimitReset is when the limit resets that a Claude Code failure's
// text "Claude AI usage limit reached|1757012400" (Unix seconds) names,
// as ccusage's getUsageLimitResetTime reads it; nil for any other text.
func usageLimitReset(text string) *time.Time {
	_, rest, ok := strings.Cut(text, "Claude AI usage limit reached")
	if !ok {
		return nil
	}
	_, digits, ok := strings.Cut(rest, "|")
	if !ok {
		return nil
	}
	end := 0
	for end < len(digits) && end < 12 && digits[end] >= '0' && digits[end] <= '9' {
		end++
	}
	n, err := strconv.ParseInt(digits[:end], 10, 64)
	if err != nil || n <= 0 {
		return nil
	}
	t := time.Unix(n, 0).UTC()
	return &t
}

// keepBlocks are the blocks whose start is in [since, until), with the
// gaps between two kept blocks.
func keepBlocks(all []reports.Block, since, until *time.Time) []reports.Block {
	in := func(b reports.Block) bool {
		return (since == nil || !b.Start.Before(*since)) && (until == nil || b.Start.Before(*until))
	}
	out := []reports.Block{}
	for i, b := range all {
		if b.Gap {
			if i > 0 && i+1 < len(all) && in(all[i-1]) && in(all[i+1]) {
				out = append(out, b)
			}
			continue
		}
		if in(b) {
			out = append(out, b)
		}
	}
	return out
}

// rateLimits are the latest plan figures of each window, from the Codex
// rollouts in scope (their run detail's rate_limits: see ingest/codex):
// per window (primary or secondary, and its length), the figures of the
// latest line that carries it, as of now: a figure observed after now (a report --until
// in the past, or a clock set back) is not yet known then.
func (s *Store) rateLimits(ctx context.Context, f Filter, now time.Time) ([]reports.RateLimit, error) {
	cte, args := f.recordScope("''")
	q := "WITH " + cte + `
SELECT r.system, r.run_id, r.detail FROM record_runs r JOIN rs USING (system, run_id)
WHERE r.system = 'codex' AND r.detail LIKE '%"rate_limits"%' ORDER BY r.run_id`
	// Keyed by name and length: plans put the week in primary or in
	// secondary, and two windows' figures are never one's.
	type key struct {
		name    string
		minutes int64
	}
	latest := map[key]reports.RateLimit{}
	err := eachRow(ctx, s.conn, "reading Codex's rate limits", q, args, func(rs *sql.Rows) error {
		var system, run string
		var detail sql.NullString
		if err := rs.Scan(&system, &run, &detail); err != nil {
			return err
		}
		var d struct {
			RateLimits *struct {
				Primary   *window `json:"primary"`
				Secondary *window `json:"secondary"`
			} `json:"rate_limits"`
		}
		if json.Unmarshal([]byte(detail.String), &d) != nil || d.RateLimits == nil {
			// Written by this version's ingest; a detail it cannot read is
			// an older store's, which carries no figures.
			return nil
		}
		for name, w := range map[string]*window{"primary": d.RateLimits.Primary, "secondary": d.RateLimits.Secondary} {
			if w == nil {
				continue
			}
			r := reports.RateLimit{System: system, Window: name, WindowMinutes: w.WindowMinutes, UsedPercent: w.UsedPercent,
				ResetsAt: w.ResetsAt, ObservedAt: w.ObservedAt.UTC(), Session: run}
			if r.ObservedAt.After(now) {
				continue
			}
			k := key{name, w.WindowMinutes}
			if old, ok := latest[k]; !ok || r.ObservedAt.After(old.ObservedAt) {
				latest[k] = r
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("rate limits: %w", err)
	}
	out := []reports.RateLimit{}
	for _, r := range latest {
		r.ResetSince = r.ResetsAt != nil && !r.ResetsAt.After(now)
		out = append(out, r)
	}
	slices.SortFunc(out, func(a, b reports.RateLimit) int {
		return cmp.Or(cmp.Compare(a.System, b.System), cmp.Compare(a.WindowMinutes, b.WindowMinutes), cmp.Compare(a.Window, b.Window))
	})
	return out, nil
}

// window is a rate-limit window as ingest/codex writes it in a run's
// detail.
type window struct {
	ObservedAt    time.Time  `json:"observed_at"`
	UsedPercent   float64    `json:"used_percent"`
	WindowMinutes int64      `json:"window_minutes"`
	ResetsAt      *time.Time `json:"resets_at"`
}

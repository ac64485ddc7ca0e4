package reports

import (
	"slices"
	"time"
)

// BlockLength is a Claude Code billing block: five hours, as Anthropic's
// plans count a session's use and as ccusage's `blocks` report cuts them.
const BlockLength = 5 * time.Hour

// WeekLength is the plan's weekly window. Claude's weekly limits reset
// every week at a time of each account's that the records do not carry:
// given one (--week-reset) the report's week is the one that time
// repeats into, else the seven days before now.
const WeekLength = 7 * 24 * time.Hour

// BlocksReport is what `orchstat report --by block` shows: Claude Code's
// calls in 5-hour billing blocks, the week's use, and the plan's
// rate-limit figures where records carry them.
type BlocksReport struct {
	GeneratedAt time.Time `json:"generated_at"`
	Database    string    `json:"database"`
	Scope       Scope     `json:"scope"`
	Filters     Filters   `json:"filters"`
	Blocks      Blocks    `json:"blocks"`
}

// Blocks are the billing blocks of the calls in scope, as ccusage 18's
// `blocks` defines them (see FoldBlocks), and the windows around now.
type Blocks struct {
	// Now is the time the report was made at: it decides which block is
	// active and what is projected.
	Now time.Time `json:"now"`
	// Timezone is the IANA zone the table shows times in (JSON is UTC).
	Timezone string `json:"timezone"`
	// Rows are the blocks and the gaps between them, oldest first.
	Rows []Block `json:"rows"`
	// Active is the block still open at Now, if any (also in Rows).
	Active *Block `json:"active"`
	// Week is the use of the plan's week: the one a known reset time
	// repeats into, else the seven days before Now.
	Week Window `json:"week"`
	// RateLimits are the plan's own figures, as the latest record of each
	// window gives them; [] when no record carries any.
	RateLimits []RateLimit `json:"rate_limits"`
	// NoPrice names the models whose calls have tokens and no price.
	NoPrice []NoPriceModel `json:"no_price"`
	// LeftOut are the calls in scope no block holds, each kind with why.
	LeftOut []LeftOut `json:"left_out"`
}

// LeftOut counts calls a view does not hold, with why.
type LeftOut struct {
	Calls int64  `json:"calls"`
	Why   string `json:"why"`
}

// Block is one billing block, or the gap between two.
type Block struct {
	// Start is the first call's time floored to the hour (UTC); End is
	// Start plus five hours. A gap starts five hours after the last call
	// before it and ends at the next call.
	Start time.Time `json:"start"`
	End   time.Time `json:"end"`
	// LastCall is the block's last call (ccusage's actualEndTime); nil in
	// a gap.
	LastCall *time.Time `json:"last_call"`
	Gap      bool       `json:"gap"`
	// Active: the block's end is after now, and its last call less than
	// five hours before now.
	Active bool  `json:"active"`
	Calls  int64 `json:"calls"`
	// Tokens as in UsageRow; TotalTokens is their sum, as ccusage's
	// totalTokens (input, output, cache writes and reads).
	InputTokens      float64 `json:"input_tokens"`
	CacheReadTokens  float64 `json:"cache_read_tokens"`
	CacheWriteTokens float64 `json:"cache_write_tokens"`
	OutputTokens     float64 `json:"output_tokens"`
	TotalTokens      float64 `json:"total_tokens"`
	// CostUSD sums the calls' cost; NoPriceCalls are left out of it.
	CostUSD      float64 `json:"cost_usd"`
	NoPriceCalls int64   `json:"no_price_calls"`
	// Models in order of first use.
	Models []string `json:"models"`
	// BurnRate is the block's use per hour between its first and last
	// call; nil in a gap and when they are at the same instant.
	BurnRate *BurnRate `json:"burn_rate"`
	// Projection is the active block's use at its end at that rate.
	Projection *Projection `json:"projection"`
	// UsageLimitResetsAt is when the plan's limit resets, as the block's
	// last "usage limit reached" failure states it (ccusage's
	// usageLimitResetTime); nil when none.
	UsageLimitResetsAt *time.Time `json:"usage_limit_resets_at"`
}

// BurnRate is use per hour.
type BurnRate struct {
	TokensPerHour float64 `json:"tokens_per_hour"`
	CostPerHour   float64 `json:"cost_usd_per_hour"`
}

// Projection is what a window will have used at its end if the burn
// rate holds.
type Projection struct {
	At               time.Time `json:"at"`
	TotalTokens      float64   `json:"total_tokens"`
	CostUSD          float64   `json:"cost_usd"`
	RemainingMinutes float64   `json:"remaining_minutes"`
}

// Window is the use of a plan window: a week.
type Window struct {
	// Since and Until bound the window: the week a reset time repeats
	// into (Until is its next reset, after now), or, Rolling, the seven
	// days to now.
	Since   time.Time `json:"since"`
	Until   time.Time `json:"until"`
	Rolling bool      `json:"rolling"`
	// Projection is the use at Until if the week's rate so far holds
	// (its use over the hours since Since); nil for a rolling week,
	// which has no end to project to.
	Projection   *Projection  `json:"projection"`
	Calls        int64        `json:"calls"`
	TotalTokens  float64      `json:"total_tokens"`
	CostUSD      float64      `json:"cost_usd"`
	NoPriceCalls int64        `json:"no_price_calls"`
	Blocks       int64        `json:"blocks"`
	BurnRate     *BurnRate    `json:"burn_rate"`
	Days         []WindowDay  `json:"days"`
	FirstCall    *time.Time   `json:"first_call"`
	LastCall     *time.Time   `json:"last_call"`
	ByModel      []ModelTotal `json:"by_model"`
}

// WindowDay is one day's use within a window.
type WindowDay struct {
	Day         string  `json:"day"`
	Calls       int64   `json:"calls"`
	TotalTokens float64 `json:"total_tokens"`
	CostUSD     float64 `json:"cost_usd"`
}

// ModelTotal is one model's use within a window.
type ModelTotal struct {
	Model       string  `json:"model"`
	Calls       int64   `json:"calls"`
	TotalTokens float64 `json:"total_tokens"`
	CostUSD     float64 `json:"cost_usd"`
}

// RateLimit is a plan window's use as the provider itself reported it in
// a record (Codex's token_count events): not computed by orchstat.
type RateLimit struct {
	System string `json:"system"`
	// Window names it: "primary" or "secondary", as the record does.
	Window        string  `json:"window"`
	WindowMinutes int64   `json:"window_minutes"`
	UsedPercent   float64 `json:"used_percent"`
	// ResetsAt is when the window resets: the record's resets_at, or its
	// time plus resets_in_seconds.
	ResetsAt *time.Time `json:"resets_at"`
	// ObservedAt is the time of the record that gave these figures.
	ObservedAt time.Time `json:"observed_at"`
	// ResetSince: ResetsAt is at or before now, so the window has reset
	// and the figure held until then only.
	ResetSince bool   `json:"reset_since"`
	Session    string `json:"session"`
}

// BlockCall is one call as FoldBlocks reads it.
type BlockCall struct {
	TS                                   time.Time
	Model                                string
	Input, CacheRead, CacheWrite, Output float64
	// Cost is nil when the call has no price.
	Cost *float64
	// LimitResetsAt is when the plan's limit resets, when the call is
	// Claude Code's "usage limit reached" failure that says so.
	LimitResetsAt *time.Time
}

func (c BlockCall) total() float64 { return c.Input + c.CacheRead + c.CacheWrite + c.Output }

// FoldBlocks cuts calls into billing blocks of length as ccusage 18's
// identifySessionBlocks does, so that both tools show the same blocks:
// calls in time order; a block starts at its first call's time floored
// to the UTC hour and lasts length; a call more than length after the
// block's start, or more than length after the call before it, starts a
// new block, and when it is the latter a gap block lies between them,
// from length after the last call to the new call. "More than": a call
// exactly length after the start stays in the block. A block is active
// when now is before its end and less than length after its last call.
// Burn rate and projection are ccusage's too: use over the minutes
// between the block's first and last call, projected to the block's end.
func FoldBlocks(calls []BlockCall, now time.Time, length time.Duration) []Block {
	calls = slices.Clone(calls)
	slices.SortStableFunc(calls, func(a, b BlockCall) int { return a.TS.Compare(b.TS) })
	var out []Block
	var cur []BlockCall
	var start time.Time
	for _, c := range calls {
		if len(cur) == 0 {
			start, cur = c.TS.UTC().Truncate(time.Hour), []BlockCall{c}
			continue
		}
		last := cur[len(cur)-1].TS
		sinceLast := c.TS.Sub(last)
		if c.TS.Sub(start) > length || sinceLast > length {
			out = append(out, block(start, cur, now, length))
			if sinceLast > length {
				out = append(out, Block{Start: last.Add(length).UTC(), End: c.TS.UTC(), Gap: true, Models: []string{}})
			}
			start, cur = c.TS.UTC().Truncate(time.Hour), []BlockCall{c}
			continue
		}
		cur = append(cur, c)
	}
	if len(cur) > 0 {
		out = append(out, block(start, cur, now, length))
	}
	return out
}

func block(start time.Time, calls []BlockCall, now time.Time, length time.Duration) Block {
	b := Block{Start: start, End: start.Add(length), Models: []string{}}
	first, last := calls[0].TS.UTC(), calls[len(calls)-1].TS.UTC()
	b.LastCall = &last
	b.Active = now.Sub(last) < length && now.Before(b.End)
	for _, c := range calls {
		b.Calls++
		b.InputTokens += c.Input
		b.CacheReadTokens += c.CacheRead
		b.CacheWriteTokens += c.CacheWrite
		b.OutputTokens += c.Output
		if c.Cost != nil {
			b.CostUSD += *c.Cost
		} else {
			b.NoPriceCalls++
		}
		if c.LimitResetsAt != nil {
			b.UsageLimitResetsAt = c.LimitResetsAt
		}
		if !slices.Contains(b.Models, c.Model) {
			b.Models = append(b.Models, c.Model)
		}
	}
	b.TotalTokens = b.InputTokens + b.CacheReadTokens + b.CacheWriteTokens + b.OutputTokens
	b.BurnRate = burnRate(b.TotalTokens, b.CostUSD, last.Sub(first))
	if b.Active && b.BurnRate != nil {
		b.Projection = project(b.TotalTokens, b.CostUSD, *b.BurnRate, now, b.End)
	}
	return b
}

// burnRate is use per hour over span; nil when span is not positive (a
// block of one call has no rate, as in ccusage).
func burnRate(tokens, cost float64, span time.Duration) *BurnRate {
	if span <= 0 {
		return nil
	}
	h := span.Hours()
	return &BurnRate{TokensPerHour: tokens / h, CostPerHour: cost / h}
}

// project is the use at end if rate holds from now.
func project(tokens, cost float64, rate BurnRate, now, end time.Time) *Projection {
	left := max(0, end.Sub(now).Hours())
	return &Projection{At: end, TotalTokens: tokens + rate.TokensPerHour*left,
		CostUSD: cost + rate.CostPerHour*left, RemainingMinutes: left * 60}
}

// FoldWeek is the use of the calls of a week up to now: by day in loc,
// by model, and its burn rate. With reset (any time the plan's weekly
// limit reset) the week is the one reset repeats into, with its rate over
// the hours since it began and the projected use at its end; without,
// the seven days before now, with its rate since its first call.
func FoldWeek(calls []BlockCall, blocks []Block, now time.Time, loc *time.Location, reset *time.Time) Window {
	w := Window{Since: now.Add(-WeekLength).UTC(), Until: now.UTC(), Rolling: true, Days: []WindowDay{}, ByModel: []ModelTotal{}}
	if reset != nil {
		n := now.Sub(*reset) / WeekLength
		if now.Before(*reset) {
			// A reset after now: the week before it is the one now is in.
			n = -((reset.Sub(now) + WeekLength - 1) / WeekLength)
		}
		w.Since = reset.Add(n * WeekLength).UTC()
		w.Until, w.Rolling = w.Since.Add(WeekLength), false
	}
	// Calls up to now count: a week's end after now has none yet.
	end := now.UTC()
	if w.Until.Before(end) {
		end = w.Until
	}
	days := map[string]*WindowDay{}
	models := map[string]*ModelTotal{}
	for _, c := range calls {
		if c.TS.Before(w.Since) || !c.TS.Before(end) {
			continue
		}
		t := c.TS.UTC()
		if w.FirstCall == nil || t.Before(*w.FirstCall) {
			w.FirstCall = &t
		}
		if w.LastCall == nil || t.After(*w.LastCall) {
			l := t
			w.LastCall = &l
		}
		w.Calls++
		w.TotalTokens += c.total()
		day := c.TS.In(loc).Format(time.DateOnly)
		d := days[day]
		if d == nil {
			d = &WindowDay{Day: day}
			days[day] = d
		}
		m := models[c.Model]
		if m == nil {
			m = &ModelTotal{Model: c.Model}
			models[c.Model] = m
		}
		d.Calls++
		m.Calls++
		d.TotalTokens += c.total()
		m.TotalTokens += c.total()
		if c.Cost != nil {
			w.CostUSD += *c.Cost
			d.CostUSD += *c.Cost
			m.CostUSD += *c.Cost
		} else {
			w.NoPriceCalls++
		}
	}
	for _, b := range blocks {
		if !b.Gap && b.LastCall != nil && !b.LastCall.Before(w.Since) {
			w.Blocks++
		}
	}
	switch {
	case !w.Rolling:
		w.BurnRate = burnRate(w.TotalTokens, w.CostUSD, end.Sub(w.Since))
		if w.BurnRate != nil {
			w.Projection = project(w.TotalTokens, w.CostUSD, *w.BurnRate, now, w.Until)
		}
	case w.FirstCall != nil:
		w.BurnRate = burnRate(w.TotalTokens, w.CostUSD, end.Sub(*w.FirstCall))
	}
	for _, d := range days {
		w.Days = append(w.Days, *d)
	}
	slices.SortFunc(w.Days, func(a, b WindowDay) int { return compareStrings(a.Day, b.Day) })
	for _, m := range models {
		w.ByModel = append(w.ByModel, *m)
	}
	slices.SortFunc(w.ByModel, func(a, b ModelTotal) int { return compareStrings(a.Model, b.Model) })
	return w
}

func compareStrings(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

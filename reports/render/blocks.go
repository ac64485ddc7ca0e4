package render

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/orchstat/orchstat/model/reports"
	"github.com/orchstat/orchstat/reports/render/chart"
)

// RenderBlocks writes `orchstat report --by block` in format f, tables
// fitted to width (0: in full). Table and Markdown show the lines above
// (scope, what is left out and why, the active block's burn rate and
// projection), the blocks, the week's days and the plan's rate limits as
// records carry them; CSV has every value; JSON the model; HTML the
// tables and a chart of the tokens per block.
func RenderBlocks(w io.Writer, r *reports.BlocksReport, f Format, width int) error {
	if r == nil {
		return errors.New("reports: nil blocks report")
	}
	loc := zoneOf(r.Blocks.Timezone)
	var buf bytes.Buffer
	var err error
	switch f {
	case FormatTable, FormatMarkdown:
		writeHeadLines(&buf, blocksLines(r, loc), f, width)
		err = writeGrids(&buf, grids(blocksSections(r, loc, width > 0)), f, width)
	case FormatJSON:
		err = writeJSON(&buf, jsonBlocks(r))
	case FormatCSV:
		err = writeCSV(&buf, blocksSections(r, loc, false))
	case FormatHTML:
		err = writeBlocksHTML(&buf, r, loc)
	default:
		_, err = ParseFormat(string(f))
	}
	if err != nil {
		return err
	}
	_, err = buf.WriteTo(w)
	return err
}

// zoneOf is the zone named name; UTC when Go does not know it (the
// model's zone came from Go, so only a hand-made model can miss).
func zoneOf(name string) *time.Location {
	if loc, err := time.LoadLocation(name); err == nil {
		return loc
	}
	return time.UTC
}

// blocksLines are the lines above the tables.
func blocksLines(r *reports.BlocksReport, loc *time.Location) []string {
	b := r.Blocks
	lines := []string{ScopeLine(r.Database, r.Scope)}
	what := fmt.Sprintf("Claude Code's 5-hour billing blocks as ccusage cuts them, at %s (%s)", clockText(b.Now, loc, true), b.Timezone)
	if r.Filters.Since != nil || r.Filters.Until != nil {
		what += ", blocks starting " + windowText(r.Filters)
	}
	lines = append(lines, what+"; cost as recorded, else priced from tokens (docs/prices.md)")
	for _, l := range b.LeftOut {
		lines = append(lines, fmt.Sprintf("Left out: %s, %s", plural(l.Calls, "call"), l.Why))
	}
	if len(b.NoPrice) > 0 {
		var names []string
		for _, m := range b.NoPrice {
			names = append(names, fmt.Sprintf("%s (%s)", m.Model, plural(m.Calls, "call")))
		}
		lines = append(lines, "No price for "+strings.Join(names, ", ")+": their cost is left out of every cost shown")
	}
	if a := b.Active; a != nil {
		l := fmt.Sprintf("Active block %s to %s: %s tokens, %s so far, %s left", clockText(a.Start, loc, true), clockText(a.End, loc, false),
			shortCount(&a.TotalTokens), costText(&a.CostUSD), minutesText(a.End.Sub(b.Now).Minutes()))
		if a.BurnRate != nil && a.Projection != nil {
			l += fmt.Sprintf("; burn rate %s tokens/h, %s/h; projected at its end: %s tokens, %s",
				shortCount(&a.BurnRate.TokensPerHour), costText(&a.BurnRate.CostPerHour),
				shortCount(&a.Projection.TotalTokens), costText(&a.Projection.CostUSD))
		} else {
			l += "; no burn rate yet (one call, or all at one instant)"
		}
		if a.UsageLimitResetsAt != nil {
			l += fmt.Sprintf("; Claude Code said its usage limit was reached, resetting at %s", clockText(*a.UsageLimitResetsAt, loc, true))
		}
		lines = append(lines, l)
	} else {
		lines = append(lines, "No active block: no Claude Code call in the last 5 hours")
	}
	lines = append(lines, weekLine(b.Week, loc))
	for _, rl := range b.RateLimits {
		if rl.ResetSince {
			lines = append(lines, "Rate limits marked * have reset since the record that states them: they held until their reset only")
			break
		}
	}
	if len(b.RateLimits) == 0 {
		lines = append(lines, "Rate limits: no record in scope carries the plan's own figures (Codex rollouts do, as read since orchstat kept them: `orchstat forget PATH` reads an older store's again; Claude Code's only say when a limit is reached)")
	}
	return lines
}

// weekLine says the week's use: its bounds, calls, blocks, tokens and
// cost, its rate, and for a week with an end its projected use there.
func weekLine(wk reports.Window, loc *time.Location) string {
	l := "The week (the 7 days to now; Claude's weekly limit resets at a time no record carries: --week-reset gives it): "
	if !wk.Rolling {
		l = fmt.Sprintf("The week %s to %s (from --week-reset): ", clockText(wk.Since, loc, true), clockText(wk.Until, loc, false))
	}
	l += fmt.Sprintf("%s in %s, %s tokens, %s", plural(wk.Calls, "call"), plural(wk.Blocks, "block"), shortCount(&wk.TotalTokens), costText(&wk.CostUSD))
	switch {
	case wk.BurnRate != nil && !wk.Rolling:
		l += fmt.Sprintf("; %s tokens/h, %s/h since it began", shortCount(&wk.BurnRate.TokensPerHour), costText(&wk.BurnRate.CostPerHour))
	case wk.BurnRate != nil:
		l += fmt.Sprintf("; %s tokens/h, %s/h since its first call", shortCount(&wk.BurnRate.TokensPerHour), costText(&wk.BurnRate.CostPerHour))
	}
	if p := wk.Projection; p != nil {
		l += fmt.Sprintf("; projected at its end: %s tokens, %s", shortCount(&p.TotalTokens), costText(&p.CostUSD))
	}
	return l
}

// clockText is t in loc: "2006-01-02 15:04", or without the year when
// full is false (a block's end, beside its start), so that a block's row
// fits 80 columns.
func clockText(t time.Time, loc *time.Location, full bool) string {
	if full {
		return t.In(loc).Format("2006-01-02 15:04")
	}
	return t.In(loc).Format("01-02 15:04")
}

// minutesText is a count of minutes as "3h 05m".
func minutesText(m float64) string {
	if m < 0 || math.IsNaN(m) {
		m = 0
	}
	n := int64(math.Round(m))
	return fmt.Sprintf("%dh %02dm", n/60, n%60)
}

// blockTokens shows a token count in full, or as 1.2M at a terminal.
func blockTokens(short bool) func(float64) string {
	if short {
		return func(v float64) string { return shortCount(&v) }
	}
	return countText
}

// blocksSections are the blocks, the week's days and models, and the
// rate limits.
func blocksSections(r *reports.BlocksReport, loc *time.Location, short bool) []section {
	b := r.Blocks
	tok := blockTokens(short)
	read, write := "cache_read", "cache_write"
	if short {
		read, write = "c.read", "c.write"
	}
	cost := func(v float64, noPrice int64) string {
		if noPrice > 0 && v == 0 {
			return "no price"
		}
		s := costText(&v)
		if noPrice > 0 {
			s += "+?"
		}
		return s
	}
	num := func(name string, get func(reports.Block) float64) column[reports.Block] {
		return column[reports.Block]{name: name, numeric: true,
			text:  func(x reports.Block) string { return tok(get(x)) },
			value: func(x reports.Block) any { return get(x) }}
	}
	costCol := column[reports.Block]{name: "cost", numeric: true, text: func(x reports.Block) string { return cost(x.CostUSD, x.NoPriceCalls) },
		value: func(x reports.Block) any { return x.CostUSD }}
	cols := []column[reports.Block]{
		keyCol("start", func(x reports.Block) string { return clockText(x.Start, loc, true) }),
		keyCol("end", func(x reports.Block) string { return clockText(x.End, loc, false) }),
		{name: "state", text: blockState, value: func(x reports.Block) any { return blockState(x) }},
		intCol("calls", func(x reports.Block) int64 { return x.Calls }),
	}
	if short {
		// At a terminal a block's line fits 80 columns: its tokens as one
		// total, its models on lines under it, the token kinds named as
		// left out (--wide shows them).
		cols = append(cols, num("tokens", func(x reports.Block) float64 { return x.TotalTokens }), costCol)
	} else {
		cols = append(cols,
			num("input", func(x reports.Block) float64 { return x.InputTokens }),
			num("output", func(x reports.Block) float64 { return x.OutputTokens }),
			num(read, func(x reports.Block) float64 { return x.CacheReadTokens }),
			num(write, func(x reports.Block) float64 { return x.CacheWriteTokens }),
			costCol,
			column[reports.Block]{name: "models", text: func(x reports.Block) string { return strings.Join(x.Models, ", ") },
				value: func(x reports.Block) any { return strings.Join(x.Models, " ") }})
	}
	blocks := rowTable[reports.Block]{name: "blocks", title: "Billing blocks (" + b.Timezone + ")",
		key:     func(x reports.Block) string { return timeText(x.Start) },
		columns: cols,
		more: func(x reports.Block) []field {
			f := []field{{"end", x.End}, {"last_call", x.LastCall}, {"total_tokens", x.TotalTokens}, {"no_price_calls", x.NoPriceCalls}}
			if x.UsageLimitResetsAt != nil {
				f = append(f, field{"usage_limit_resets_at", *x.UsageLimitResetsAt})
			}
			if x.BurnRate != nil {
				f = append(f, field{"tokens_per_hour", x.BurnRate.TokensPerHour}, field{"cost_usd_per_hour", x.BurnRate.CostPerHour})
			}
			if x.Projection != nil {
				f = append(f, field{"projected_total_tokens", x.Projection.TotalTokens}, field{"projected_cost_usd", x.Projection.CostUSD},
					field{"remaining_minutes", x.Projection.RemainingMinutes})
			}
			return f
		},
	}
	days := rowTable[reports.WindowDay]{name: "week_days", title: "The week by day (" + b.Timezone + ")",
		key: func(d reports.WindowDay) string { return d.Day },
		columns: []column[reports.WindowDay]{
			keyCol("day", func(d reports.WindowDay) string { return d.Day }),
			intCol("calls", func(d reports.WindowDay) int64 { return d.Calls }),
			numCol("tokens", func(d reports.WindowDay) float64 { return d.TotalTokens }, tok),
			numCol("cost", func(d reports.WindowDay) float64 { return d.CostUSD }, func(v float64) string { return costText(&v) }),
		}}
	limits := rowTable[reports.RateLimit]{name: "rate_limits", title: "Rate limits, as the records state them (the latest of each window)",
		key: func(l reports.RateLimit) string { return joinKey(l.System, l.Window) },
		columns: []column[reports.RateLimit]{
			keyCol("system", func(l reports.RateLimit) string { return l.System }),
			keyCol("window", func(l reports.RateLimit) string {
				return strings.TrimSpace(l.Window + " " + windowName(l.WindowMinutes))
			}),
			{name: "used", numeric: true, text: func(l reports.RateLimit) string {
				s := strconv.FormatFloat(l.UsedPercent, 'f', -1, 64) + "%"
				if l.ResetSince {
					s += "*"
				}
				return s
			}, value: func(l reports.RateLimit) any { return l.UsedPercent }},
			{name: "resets_at", text: func(l reports.RateLimit) string {
				if l.ResetsAt == nil {
					return "-"
				}
				return clockText(*l.ResetsAt, loc, true)
			}, value: func(l reports.RateLimit) any { return l.ResetsAt }},
			{name: "as_of", text: func(l reports.RateLimit) string { return clockText(l.ObservedAt, loc, true) },
				value: func(l reports.RateLimit) any { return l.ObservedAt }},
		},
		more: func(l reports.RateLimit) []field {
			return []field{{"window_minutes", l.WindowMinutes}, {"session", l.Session}, {"reset_since", l.ResetSince}}
		}}
	week := b.Week
	total := reports.WindowDay{Day: "total", Calls: week.Calls, TotalTokens: week.TotalTokens, CostUSD: week.CostUSD}
	bs := blocks.section(b.Rows)
	if short && bs.grid != nil {
		nestBlockModels(bs.grid, b.Rows)
		bs.grid.leftOut = []string{"input", "output", "cache_read", "cache_write"}
	}
	out := []section{bs, days.section(append(append([]reports.WindowDay{}, week.Days...), total))}
	lim := limits.section(b.RateLimits)
	if len(b.RateLimits) == 0 {
		lim.grid = nil
	}
	np := noPriceTable.section(b.NoPrice)
	if len(b.NoPrice) == 0 {
		np.grid = nil
	}
	out = append(out, lim, np, fieldsSection("week", "", weekFields(week), true))
	left := section{name: "left_out"}
	for _, l := range b.LeftOut {
		left.csv = append(left.csv, csvRow{l.Why, field{"calls", l.Calls}})
	}
	return append(out, left)
}

// weekFields are the week's figures beside its days, for the CSV (the
// table's line above says them).
func weekFields(w reports.Window) []field {
	f := []field{{"since", w.Since}, {"until", w.Until}, {"rolling", w.Rolling}, {"calls", w.Calls}, {"blocks", w.Blocks},
		{"total_tokens", w.TotalTokens}, {"cost_usd", w.CostUSD}, {"no_price_calls", w.NoPriceCalls}}
	if w.BurnRate != nil {
		f = append(f, field{"tokens_per_hour", w.BurnRate.TokensPerHour}, field{"cost_usd_per_hour", w.BurnRate.CostPerHour})
	}
	if p := w.Projection; p != nil {
		f = append(f, field{"projected_total_tokens", p.TotalTokens}, field{"projected_cost_usd", p.CostUSD},
			field{"remaining_minutes", p.RemainingMinutes})
	}
	return f
}

// blockModelWidth is what a block's model line under it may take at a
// terminal, which keeps the table within 80 columns; a longer model id
// loses its middle.
const blockModelWidth = 28

// nestBlockModels puts each block's models on "└ model" lines under it,
// whose rows are blocks' in order.
func nestBlockModels(g *grid, blocks []reports.Block) {
	var out [][]string
	for i, x := range blocks {
		out = append(out, g.rows[i])
		for _, m := range x.Models {
			cells := make([]string, len(g.columns))
			cells[0] = cut(nestMark+m, blockModelWidth)
			out = append(out, cells)
		}
	}
	g.rows = out
}

// blockState is "active", "gap" or "": what a block is at the report's
// time.
func blockState(b reports.Block) string {
	switch {
	case b.Gap:
		return "gap"
	case b.Active:
		return "ACTIVE"
	}
	return ""
}

// windowName names a rate-limit window by its length: "(5h)", "(7d)".
func windowName(minutes int64) string {
	switch {
	case minutes == 0:
		// Claude Code's "usage limit reached" names no window's length.
		return ""
	case minutes > 0 && minutes%1440 == 0:
		return fmt.Sprintf("(%dd)", minutes/1440)
	case minutes > 0 && minutes%60 == 0:
		return fmt.Sprintf("(%dh)", minutes/60)
	}
	return fmt.Sprintf("(%dm)", minutes)
}

// jsonBlocks is r for JSON: times UTC, lists [] rather than null.
func jsonBlocks(r *reports.BlocksReport) reports.BlocksReport {
	c := *r
	c.GeneratedAt = c.GeneratedAt.UTC()
	c.Filters.Since = utcPtr(c.Filters.Since)
	c.Filters.Until = utcPtr(c.Filters.Until)
	c.Blocks.Rows = nonNil(c.Blocks.Rows)
	c.Blocks.RateLimits = nonNil(c.Blocks.RateLimits)
	c.Blocks.NoPrice = nonNil(c.Blocks.NoPrice)
	c.Blocks.LeftOut = nonNil(c.Blocks.LeftOut)
	c.Blocks.Week.Days = nonNil(c.Blocks.Week.Days)
	c.Blocks.Week.ByModel = nonNil(c.Blocks.Week.ByModel)
	return c
}

// writeBlocksHTML writes the view as a page: the lines, the tables, and
// a chart of the tokens of each block.
func writeBlocksHTML(buf *bytes.Buffer, r *reports.BlocksReport, loc *time.Location) error {
	p := htmlPage{Title: "orchstat report: Claude Code's billing blocks"}
	for _, l := range blocksLines(r, loc) {
		p.Lines = append(p.Lines, escapeControls(l))
	}
	for _, s := range blocksSections(r, loc, false) {
		if s.grid == nil {
			continue
		}
		sec := htmlSection{ID: s.name, Title: escapeControls(s.grid.title)}
		if s.name == "blocks" {
			sec.Blocks = append(sec.Blocks, htmlBlock{Figures: []htmlFigure{blocksFigure(r.Blocks, loc)}})
		}
		sec.Blocks = append(sec.Blocks, htmlBlock{Table: gridTable(*s.grid)})
		p.Sections = append(p.Sections, sec)
	}
	return writeHTMLPage(buf, p)
}

// blocksFigure charts each block's tokens (gaps left out: they hold
// none), the first chart.MaxBars of them.
func blocksFigure(b reports.Blocks, loc *time.Location) htmlFigure {
	title := "Tokens per billing block"
	var cats []string
	var vals []float64
	t := &htmlTable{Head: []htmlHead{{Text: "block"}, {Text: "tokens", Numeric: true}, {Text: "cost", Numeric: true}}}
	for _, x := range b.Rows {
		if x.Gap {
			continue
		}
		k := clockText(x.Start, loc, true)
		cats, vals = append(cats, k), append(vals, x.TotalTokens)
		t.Rows = append(t.Rows, htmlRow{Cells: []htmlCell{{Text: escapeControls(k)}, {Text: countText(x.TotalTokens), Numeric: true},
			{Text: costText(&x.CostUSD), Numeric: true}}})
	}
	if len(cats) > chart.MaxBars {
		cats, vals = cats[:chart.MaxBars], vals[:chart.MaxBars]
		title += fmt.Sprintf(", first %d", chart.MaxBars)
	}
	if len(cats) == 0 {
		return htmlFigure{Caption: title, Empty: "No block: no Claude Code call with tokens in scope.", Table: t}
	}
	return figure(title, chart.Bars{Title: title, Categories: cats, Series: []chart.Series{{Name: "tokens", Values: vals}}, Horizontal: true}, t)
}

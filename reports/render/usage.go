package render

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"

	"github.com/olekukonko/tablewriter/pkg/twwidth"
	"github.com/orchstat/orchstat/model/reports"
	"github.com/orchstat/orchstat/reports/render/chart"
)

// RenderUsage writes `orchstat report --by`'s view in format f, tables
// fitted to width (0: in full). Table and markdown show, under the scope
// line, one row per period (or session, or model) and a total row, then
// each period's models, then the models without a price. At a terminal
// narrower than the whole table, tokens read as 1.2M and the columns
// least asked for go first (usageColumns), so a day's line fits 80
// columns. CSV has every value of every row, JSON the model, HTML the
// tables and a chart of the cost by period.
func RenderUsage(w io.Writer, r *reports.UsageReport, f Format, width int) error {
	if r == nil {
		return errors.New("reports: nil usage report")
	}
	var buf bytes.Buffer
	var err error
	switch f {
	case FormatTable, FormatMarkdown:
		err = writeUsageText(&buf, r, f, width)
	case FormatJSON:
		err = writeJSON(&buf, jsonUsage(r))
	case FormatCSV:
		err = writeCSV(&buf, usageSections(r, 0, false))
	case FormatHTML:
		err = writeUsageHTML(&buf, r)
	default:
		_, err = ParseFormat(string(f))
	}
	if err != nil {
		return err
	}
	_, err = buf.WriteTo(w)
	return err
}

// usageLines are the lines above the tables: the scope, what the view
// groups, and what its cost leaves out.
func usageLines(r *reports.UsageReport) []string {
	u := r.Usage
	lines := []string{ScopeLine(r.Database, r.Scope)}
	what := "Agents' calls by " + u.By
	if u.By == "day" || u.By == "week" || u.By == "month" {
		what += " (" + u.Timezone + ")"
	}
	if r.Filters.Since != nil || r.Filters.Until != nil {
		what += ", calls made " + windowText(r.Filters)
	}
	lines = append(lines, what+"; cost as recorded, else priced from tokens (docs/prices.md)")
	if len(u.NoPrice) > 0 {
		var names []string
		for _, m := range u.NoPrice {
			names = append(names, fmt.Sprintf("%s (%s)", m.Model, plural(m.Calls, "call")))
		}
		lines = append(lines, "No price for "+strings.Join(names, ", ")+": their cost is left out of every cost shown")
	}
	if u.Undated > 0 && (u.By == "day" || u.By == "week" || u.By == "month") {
		lines = append(lines, fmt.Sprintf("%s %s no recorded time: row %q", plural(u.Undated, "call"), have(u.Undated), "(no time)"))
	}
	return append(lines, copiesLines(u.Copies)...)
}

// copiesLines say what was counted once: a copy left out is never left
// out in silence.
func copiesLines(c reports.UsageCopies) []string {
	var parts []string
	if c.OnSeveralDevices > 0 {
		parts = append(parts, fmt.Sprintf("%s seen on two devices or more", plural(c.OnSeveralDevices, "call")))
	}
	if c.WithinOneDevice > 0 {
		parts = append(parts, fmt.Sprintf("%s copied within one device (a sub-agent's replay, a resumed session, a copied file)",
			plural(c.WithinOneDevice, "call")))
	}
	if len(parts) == 0 {
		return nil
	}
	return []string{fmt.Sprintf("%s: each counted once (%s left out)", strings.Join(parts, "; "), copiesText(c.LeftOut))}
}

func copiesText(n int64) string {
	if n == 1 {
		return "1 copy"
	}
	return strconv.FormatInt(n, 10) + " copies"
}

// devicesTable names each device and the folders that make it, so that
// a user sees which folder is which (--by device).
var devicesTable = rowTable[reports.UsageDevice]{
	name: "devices", title: "Devices (where the calls were read; --device NAME=PATH names one)",
	key: func(d reports.UsageDevice) string { return d.Name },
	columns: []column[reports.UsageDevice]{
		keyCol("device", func(d reports.UsageDevice) string { return d.Name }),
		textCol("read_from", func(d reports.UsageDevice) string { return strings.Join(d.Folders, ", ") }),
		intCol("calls", func(d reports.UsageDevice) int64 { return d.Calls }),
		intCol("also_on_other_devices", func(d reports.UsageDevice) int64 { return d.Shared }),
	},
}

// copyCount is one count of Usage.Copies, for the CSV.
type copyCount struct {
	key string
	n   int64
}

var copiesTable = rowTable[copyCount]{
	name: "copies",
	key:  func(c copyCount) string { return c.key },
	columns: []column[copyCount]{
		intCol("calls", func(c copyCount) int64 { return c.n }),
	},
}

func windowText(f reports.Filters) string {
	var parts []string
	if f.Since != nil {
		parts = append(parts, "from "+timeText(*f.Since))
	}
	if f.Until != nil {
		parts = append(parts, "before "+timeText(*f.Until))
	}
	return strings.Join(parts, " ")
}

func writeUsageText(buf *bytes.Buffer, r *reports.UsageReport, f Format, width int) error {
	writeHeadLines(buf, usageLines(r), f, width)
	return writeGrids(buf, grids(usageSections(r, width, true)), f, width)
}

// usageColumn is a column of the usage tables; drop orders the columns
// a narrow terminal leaves out, lowest first (0: always kept).
type usageColumn struct {
	column[reports.UsageRow]
	drop int
}

// usageColumns are the usage tables' columns after the key, tokens in
// full (width 0) or abbreviated under shorter cache headers (a terminal).
func usageColumns(short bool) []usageColumn {
	tok, read, write := countPtrText, "cache_read", "cache_write"
	if short {
		// "c.read" and "c.write" leave room for retried at 80 columns.
		tok, read, write = shortCount, "c.read", "c.write"
	}
	num := func(name string, get func(reports.UsageRow) *float64, show func(*float64) string, drop int) usageColumn {
		return usageColumn{numCol(name, get, show), drop}
	}
	i64 := func(name string, get func(reports.UsageRow) int64, drop int) usageColumn {
		return usageColumn{intCol(name, get), drop}
	}
	return []usageColumn{
		i64("calls", func(r reports.UsageRow) int64 { return r.Calls }, 0),
		num("input", func(r reports.UsageRow) *float64 { return r.InputTokens }, tok, 6),
		num(read, func(r reports.UsageRow) *float64 { return r.CacheReadTokens }, tok, 10),
		num(write, func(r reports.UsageRow) *float64 { return r.CacheWriteTokens }, tok, 5),
		num("output", func(r reports.UsageRow) *float64 { return r.OutputTokens }, tok, 7),
		num("reasoning", func(r reports.UsageRow) *float64 { return r.ReasoningTokens }, tok, 1),
		{column[reports.UsageRow]{name: "cost", numeric: true, text: usageCostText,
			value: func(r reports.UsageRow) any { return r.CostUSD }}, 0},
		i64("retried", func(r reports.UsageRow) int64 { return r.Retried }, 8),
		i64("attempts", func(r reports.UsageRow) int64 { return r.Attempts }, 2),
		i64("failed", func(r reports.UsageRow) int64 { return r.Failed }, 9),
		num("failed_cost", func(r reports.UsageRow) *float64 { return r.FailedCostUSD }, costText, 4),
		i64("no_price", func(r reports.UsageRow) int64 { return r.NoPriceCalls }, 3),
	}
}

// usageCostText is a row's cost, marked "+?" when some of its calls
// have no price, so that a partial sum never reads as complete.
func usageCostText(r reports.UsageRow) string {
	if r.NoPriceCalls == 0 {
		return costText(r.CostUSD)
	}
	if r.CostUSD == nil {
		return "no price"
	}
	return costText(r.CostUSD) + "+?"
}

// shortCount shows a token count as people skim one: 950, 12.3k, 1.2M.
func shortCount(v *float64) string {
	if v == nil {
		return "-"
	}
	x := *v
	for _, u := range []struct {
		div  float64
		unit string
	}{{1e9, "G"}, {1e6, "M"}, {1e3, "k"}} {
		if math.Abs(x) >= u.div {
			return strconv.FormatFloat(x/u.div, 'f', 1, 64) + u.unit
		}
	}
	return countText(x)
}

// usageTables are the view's two tables' descriptions with the columns
// that fit width: the main one (keyed by the period) and the one by
// model within a period; keyWidth is what the main table's key column
// (a session or model id, a nested "└ model") may take at a terminal
// (0: no limit).
func usageTables(r *reports.UsageReport, width int) (main, byModel rowTable[reports.UsageRow], keyWidth int) {
	by := r.Usage.By
	cols := usageColumns(width > 0)
	keep, keyWidth := fitUsage(r, cols, width)
	main = rowTable[reports.UsageRow]{name: "usage", title: "Agents' calls by " + by,
		key: func(u reports.UsageRow) string { return u.Key },
		columns: []column[reports.UsageRow]{keyCol(by, func(u reports.UsageRow) string {
			if keyWidth > 0 {
				// A model id or a session id keeps its ends.
				return cut(u.Key, keyWidth)
			}
			return u.Key
		})},
		more: usageMore}
	byModel = rowTable[reports.UsageRow]{name: "usage_by_model", title: "Agents' calls by " + by + " and model",
		key: func(u reports.UsageRow) string { return joinKey(u.Key, u.Provider, u.Model) },
		columns: []column[reports.UsageRow]{
			keyCol(by, func(u reports.UsageRow) string { return u.Key }),
			keyCol("model", func(u reports.UsageRow) string { return u.Model }),
		},
		more: usageMore}
	for i, c := range cols {
		if keep[i] {
			main.columns = append(main.columns, c.column)
			byModel.columns = append(byModel.columns, c.column)
		}
	}
	return main, byModel, keyWidth
}

// fitUsage chooses the columns a terminal width wide shows: all of them
// at width 0, else dropping by rank until the main table fits with its
// keys cut to usageKeyWidth and its nested models to nestedModelWidth.
// keyWidth is the room the key column then has, at least what those
// cuts leave (0 at width 0): what the columns leave spare goes to the
// keys, so that a model id is cut only as much as it must be.
func fitUsage(r *reports.UsageReport, cols []usageColumn, width int) (keep []bool, keyWidth int) {
	keep = make([]bool, len(cols))
	for i := range keep {
		keep[i] = true
	}
	if width <= 0 {
		return keep, 0
	}
	rows := append(append([]reports.UsageRow{}, r.Usage.Rows...), r.Usage.Total)
	// Rows of several models show each model's figures, which can be
	// wider than the row's own ($0.0002 under $2.49).
	valued := rows
	for _, u := range rows {
		if len(u.Models) > 1 {
			valued = append(valued, u.Models...)
		}
	}
	key := twwidth.Width(r.Usage.By)
	for _, u := range rows {
		key = max(key, min(twwidth.Width(u.Key), usageKeyWidth))
		for _, m := range u.Models {
			// Nested "└ model" rows, cut to nestedModelWidth.
			key = max(key, min(nestedModelWidth, 2+twwidth.Width(nestedLabel(r.Usage.By, u, m))))
		}
	}
	values := func() []int {
		var w []int
		for i, c := range cols {
			if !keep[i] {
				continue
			}
			cw := twwidth.Width(c.name)
			for _, u := range valued {
				cw = max(cw, twwidth.Width(c.text(u)))
			}
			w = append(w, cw)
		}
		return w
	}
	// A key column k wide adds k+3 to the values' table.
	room := func() int { return width - tableWidth(values()) - 3 }
	for rank := 1; room() < key; rank++ {
		dropped := false
		for i, c := range cols {
			if c.drop == rank {
				keep[i], dropped = false, true
			}
		}
		if !dropped && rank > len(cols) {
			break
		}
	}
	return keep, max(room(), key)
}

// nestedLabel names model row m under row u: the model, as provider/model
// when u holds the same model from two providers, or in the model view
// (whose rows are models already) the provider.
func nestedLabel(by string, u, m reports.UsageRow) string {
	if by == "model" {
		if m.Provider == "" {
			return "(no provider)"
		}
		return m.Provider
	}
	for _, o := range u.Models {
		if o.Model == m.Model && o.Provider != m.Provider && m.Provider != "" {
			return m.Provider + "/" + m.Model
		}
	}
	return m.Model
}

// nestModels puts each row's models under it in g, whose rows are
// rows' in order, their names cut to keyWidth (0: whole).
func nestModels(g *grid, t rowTable[reports.UsageRow], by string, rows []reports.UsageRow, keyWidth int) {
	var out [][]string
	for i, row := range rows {
		out = append(out, g.rows[i])
		for _, m := range row.Models {
			cells := make([]string, len(t.columns))
			label := nestedLabel(by, row, m)
			if keyWidth > 0 {
				label = cut(label, keyWidth-2)
			}
			cells[0] = nestMark + label
			if len(row.Models) > 1 {
				for j, c := range t.columns[1:] {
					cells[j+1] = c.text(m)
				}
			}
			out = append(out, cells)
		}
	}
	g.rows = out
}

// usageKeyWidth is the least room a row's key (a model id, a session id)
// keeps at a terminal while a column can be left out instead; a longer
// one loses its middle.
const usageKeyWidth = 28

// nestedModelWidth is the least room a nested "└ model" cell keeps at a
// terminal while a column can be left out instead: a longer model id
// loses its middle.
const nestedModelWidth = 24

// droppedUsage names the columns fitUsage leaves out at width, as --wide
// heads them (cache_write, not c.write).
func droppedUsage(r *reports.UsageReport, width int) []string {
	full := usageColumns(false)
	var out []string
	keep, _ := fitUsage(r, usageColumns(width > 0), width)
	for i, k := range keep {
		if !k {
			out = append(out, full[i].name)
		}
	}
	return out
}

// usageMore are a row's values the columns leave out, for the CSV.
func usageMore(u reports.UsageRow) []field {
	return []field{
		{"first_call", u.First}, {"last_call", u.Last}, {"with_attempts", u.WithAttempts},
		{"cost_from_record", u.CostFromRecord}, {"cost_from_price", u.CostFromPrice},
	}
}

var noPriceTable = rowTable[reports.NoPriceModel]{
	name: "no_price", title: "Models without a price (their calls' cost is left out)",
	key: func(m reports.NoPriceModel) string { return joinKey(m.Provider, m.Model) },
	columns: []column[reports.NoPriceModel]{
		keyCol("provider", func(m reports.NoPriceModel) string { return m.Provider }),
		keyCol("model", func(m reports.NoPriceModel) string { return m.Model }),
		intCol("calls", func(m reports.NoPriceModel) int64 { return m.Calls }),
	},
}

// usageSections are the view's sections: the groups with the total as
// their last row, the groups by model (left out of the tables in the
// model view, whose rows are models already, unless a model has several
// providers), and the models without a price.
//
// nested (table, Markdown and HTML) puts each period's models under it,
// as ccusage does, rather than in a table of their own: "└ model" rows
// with their figures when the period has several models, the name alone
// when it has one (its figures are the period's). The CSV keeps the
// table of its own.
func usageSections(r *reports.UsageReport, width int, nested bool) []section {
	u := r.Usage
	main, byModel, keyWidth := usageTables(r, width)
	rows := append(append([]reports.UsageRow{}, u.Rows...), u.Total)
	var models []reports.UsageRow
	split := u.By != "model"
	for _, row := range u.Rows {
		models = append(models, row.Models...)
		if len(row.Models) > 1 {
			split = true
		}
	}
	models = append(models, u.Total.Models...)
	out := []section{main.section(rows), byModel.section(models)}
	if !split || nested {
		out[1].grid = nil
	}
	if nested && split && out[0].grid != nil {
		nestModels(out[0].grid, main, u.By, rows, keyWidth)
	}
	if out[0].grid != nil {
		out[0].grid.leftOut = droppedUsage(r, width)
	}
	np := noPriceTable.section(u.NoPrice)
	if len(u.NoPrice) == 0 {
		np.grid = nil
	}
	out = append(out, np)
	if u.By == "device" {
		out = append(out, devicesTable.section(u.Devices))
	}
	if c := u.Copies; c != (reports.UsageCopies{}) {
		// The table's lines say it; the CSV has it as rows.
		out = append(out, copiesTable.section([]copyCount{{"on_several_devices", c.OnSeveralDevices},
			{"within_one_device", c.WithinOneDevice}, {"copies_left_out", c.LeftOut}}))
	}
	return out
}

// jsonUsage is r for JSON: lists [] rather than null, times UTC.
func jsonUsage(r *reports.UsageReport) reports.UsageReport {
	c := *r
	c.GeneratedAt = c.GeneratedAt.UTC()
	c.Filters.Since = utcPtr(c.Filters.Since)
	c.Filters.Until = utcPtr(c.Filters.Until)
	c.Usage.Rows = nonNil(c.Usage.Rows)
	c.Usage.NoPrice = nonNil(c.Usage.NoPrice)
	c.Usage.Devices = nonNil(c.Usage.Devices)
	c.Usage.Total.Models = nonNil(c.Usage.Total.Models)
	for i := range c.Usage.Rows {
		c.Usage.Rows[i].Models = nonNil(c.Usage.Rows[i].Models)
	}
	return c
}

// writeUsageHTML writes the view as a page: the tables, and in the main
// one's section a chart of the cost by period (or session, or model).
func writeUsageHTML(buf *bytes.Buffer, r *reports.UsageReport) error {
	p := htmlPage{Title: "orchstat report: agents' calls by " + r.Usage.By}
	for _, l := range usageLines(r) {
		p.Lines = append(p.Lines, escapeControls(l))
	}
	for _, s := range usageSections(r, 0, true) {
		if s.grid == nil {
			continue
		}
		sec := htmlSection{ID: s.name, Title: escapeControls(s.grid.title)}
		if s.name == "usage" {
			sec.Blocks = append(sec.Blocks, htmlBlock{Figures: usageFigures(r.Usage)})
		}
		sec.Blocks = append(sec.Blocks, htmlBlock{Table: gridTable(*s.grid)})
		p.Sections = append(p.Sections, sec)
	}
	return writeHTMLPage(buf, p)
}

// usageCostFigure charts the cost of each row: a line over periods, bars
// for sessions and models. A row whose calls have no price at all has no
// point; one with some unpriced calls is drawn at what is known, and its
// data table says "+?".
func usageCostFigure(u reports.Usage) htmlFigure {
	title := "Cost by " + u.By + " (USD)"
	var cats []string
	var vals []float64
	t := &htmlTable{Head: []htmlHead{{Text: u.By}, {Text: "cost", Numeric: true}, {Text: "calls without a price", Numeric: true}}}
	for _, r := range u.Rows {
		v := math.NaN()
		if r.CostUSD != nil {
			v = *r.CostUSD
		}
		cats, vals = append(cats, r.Key), append(vals, v)
		t.Rows = append(t.Rows, htmlRow{Cells: []htmlCell{{Text: escapeControls(r.Key)}, {Text: usageCostText(r), Numeric: true},
			{Text: itoa(r.NoPriceCalls), Numeric: true}}})
	}
	if u.By == "day" {
		// Every day of the span, so that days apart are drawn apart.
		rows := make([]reports.DayRow, len(cats))
		costs := map[string]float64{}
		for i, c := range cats {
			rows[i] = reports.DayRow{Day: c}
			costs[c] = vals[i]
		}
		if all := everyDay(rows); len(all) > len(rows) {
			cats, vals = nil, nil
			for _, d := range all {
				v, ok := costs[d.Day]
				if !ok {
					v = math.NaN()
				}
				cats, vals = append(cats, d.Day), append(vals, v)
			}
		}
	}
	series := []chart.Series{{Name: "cost (USD)", Values: vals}}
	switch u.By {
	case "day", "week", "month":
		return figure(title, chart.Line{Title: title, Categories: cats, XLabel: u.By + " (" + u.Timezone + ")", Series: series}, t)
	}
	if len(cats) > chart.MaxBars {
		cats, series[0].Values = cats[:chart.MaxBars], vals[:chart.MaxBars]
		title += fmt.Sprintf(", first %d", chart.MaxBars)
	}
	return figure(title, chart.Bars{Title: title, Categories: cats, Series: series, Horizontal: true}, t)
}

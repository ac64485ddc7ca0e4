package render

import (
	"bytes"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/orchstat/orchstat/model/reports"
	"github.com/orchstat/orchstat/model/simulated"
	"github.com/orchstat/orchstat/reports/render/chart"
)

// simulate --optimize: a line on how the search ran, the front as a
// table numbered from 1 with the baseline first, each number's settings
// below it, the pick (or what binds), and the policies set apart as
// beyond the evidence.

// optimizationTables are the front and, when there are any, the policies
// beyond the evidence.
func optimizationTables(opt *simulated.Optimization, width int) []reports.Table {
	hold := opt.HoldoutEpisodes > 0
	cols := []string{"#", "success", "attempts", "p95 (s)", "estimated"}
	if hold {
		cols = append(cols, "later success", "later attempts", "holds")
	}
	row := func(label string, c simulated.Candidate) []any {
		r := []any{label, figureText("success_rate", c.Search), figureText("attempts", c.Search),
			figureText("resolution_p95_seconds", c.Search), percentText(c.EstimatedShare)}
		if hold {
			if c.Holdout == nil {
				r = append(r, "-", "-", "")
			} else {
				kept := ""
				if c.Kept != nil {
					kept = map[bool]string{true: "yes", false: "no"}[*c.Kept]
				}
				r = append(r, figureText("success_rate", *c.Holdout), figureText("attempts", *c.Holdout), kept)
			}
		}
		return r
	}
	front := reports.Table{Title: "Pareto front of " + opt.System + " (the baseline first)", Columns: cols, Width: width}
	front.Rows = append(front.Rows, row("baseline", opt.Baseline))
	for i, c := range opt.Front {
		label := strconv.Itoa(i + 1)
		if i == opt.Pick {
			label += " (pick)"
		}
		front.Rows = append(front.Rows, row(label, c))
	}
	tables := []reports.Table{front}
	if len(opt.Beyond) > 0 {
		beyond := reports.Table{Title: "Beyond the evidence: never picked", Width: width,
			Columns: []string{"#", "success", "attempts", "estimated"}}
		for i, c := range opt.Beyond {
			beyond.Rows = append(beyond.Rows, []any{"b" + strconv.Itoa(i+1), figureText("success_rate", c.Search),
				figureText("attempts", c.Search), percentText(c.EstimatedShare)})
		}
		tables = append(tables, beyond)
	}
	return tables
}

// figureText is a figure of r as simulate's tables show it; with its
// interval only for success, which decides the pick, so that a row of the
// front stays one line at 80 columns.
func figureText(key string, r simulated.Result) string {
	f, _ := simulated.FigureOf(key)
	m := f.Of(r)
	if key != "success_rate" {
		m = simulated.Metric{Value: m.Value, Lo: m.Value, Hi: m.Value, Exact: true}
	}
	return f.Text(m, false, false)
}

// optimizationLines are above the tables: the answer first (the pick,
// its settings and its figures beside the baseline's, or what binds),
// then how the search ran and what it did not weigh.
func optimizationLines(opt *simulated.Optimization) []string {
	st := opt.Settings
	cons := strings.Join(st.Constraints, " and ")
	var pick string
	if opt.Pick >= 0 {
		c, b := opt.Front[opt.Pick], opt.Baseline
		pick = fmt.Sprintf("Pick: %d, the fewest attempts of the front that meets %s: %s. Success %s, attempts %s, p95 %s s, against the baseline's %s, %s and %s s.",
			opt.Pick+1, cons, strings.Join(c.Settings, " "),
			figureText("success_rate", c.Search), figureText("attempts", c.Search), figureText("resolution_p95_seconds", c.Search),
			figureText("success_rate", b.Search), figureText("attempts", b.Search), figureText("resolution_p95_seconds", b.Search))
		if p, bs := c.Search, b.Search; p.SuccessRate.Value == bs.SuccessRate.Value && p.Attempts.Value == bs.Attempts.Value && p.ResolutionP95.Value >= bs.ResolutionP95.Value {
			pick += " It does no better than the baseline here: the record gives no reason to change it."
		}
	} else {
		pick = "No pick: " + opt.NoPick + "."
	}
	held := "no holdout (--no-holdout)"
	if opt.HoldoutEpisodes > 0 {
		held = fmt.Sprintf("the front replayed on the newer %d (%.0f%%, \"later\" below)", opt.HoldoutEpisodes, 100*st.Holdout)
	}
	search := fmt.Sprintf("Searched %d policies on the older %d episodes of %s, %s; %d episode replays in all. Outcomes estimated beyond the record may be at most %.0f%% of a policy's to pick it; seed %d.",
		opt.Tried, opt.SearchEpisodes, opt.System, held, opt.Replays, 100*st.EvidenceBound, st.Seed)
	if b := opt.Baseline.Search; b.L2Loops > 0 || b.L3Runs > 0 {
		search += fmt.Sprintf(" Its %d L2 loops and %d runs with L3 steps are replayed but not weighed: the objectives are the provider requests' and calls'.", b.L2Loops, b.L3Runs)
	}
	return []string{pick, search}
}

// optimizationFooter numbers each policy's settings, under the tables.
func optimizationFooter(opt *simulated.Optimization) []string {
	var out []string
	for i, c := range opt.Front {
		out = append(out, fmt.Sprintf("%d: %s", i+1, strings.Join(c.Settings, " ")))
	}
	for i, c := range opt.Beyond {
		out = append(out, fmt.Sprintf("b%d: %s", i+1, strings.Join(c.Settings, " ")))
	}
	return out
}

// renderOptimization draws --optimize's search.
func renderOptimization(w io.Writer, opt *simulated.Optimization, f Format, width int) error {
	tables := optimizationTables(opt, width)
	if f == FormatCSV {
		for _, t := range tables {
			if err := RenderTable(w, t, f); err != nil {
				return err
			}
		}
		return nil
	}
	for _, l := range optimizationLines(opt) {
		fmt.Fprintln(w, WrapText(l, width))
	}
	fmt.Fprintln(w)
	for i, t := range tables {
		if i > 0 {
			fmt.Fprintln(w)
		}
		if err := RenderTable(w, t, f); err != nil {
			return err
		}
	}
	fmt.Fprintln(w)
	for _, l := range optimizationFooter(opt) {
		fmt.Fprintln(w, WrapText(l, width))
		if f == FormatMarkdown {
			fmt.Fprintln(w)
		}
	}
	return nil
}

// optimizationPage is --optimize's page: what the search did, the front
// as scatters (success against attempts, and against cost when the
// record has costs) with the baseline and the pick marked, each with its
// data, the front's table and what is beyond the evidence.
func optimizationPage(w io.Writer, sim *simulated.Simulation) error {
	opt := sim.Optimization
	lines := []string{escapeControls(simulationSummary(sim)), escapeControls(ScopeLine(sim.DB, sim.Scope))}
	for _, l := range optimizationLines(opt) {
		lines = append(lines, escapeControls(l))
	}
	page := htmlPage{Title: "orchstat simulate --optimize", Lines: lines}
	scatter := func(title, xlabel string, x func(simulated.Result) float64) htmlFigure {
		pt := func(r simulated.Result) *chart.XY { return &chart.XY{X: x(r), Y: r.SuccessRate.Value} }
		c := chart.Scatter{Title: title, XLabel: xlabel, YLabel: "success", YPercent: true, Baseline: pt(opt.Baseline.Search)}
		data := &htmlTable{Head: []htmlHead{{Text: "#"}, {Text: xlabel, Numeric: true}, {Text: "success", Numeric: true}}}
		addRow := func(label string, r simulated.Result) {
			data.Rows = append(data.Rows, htmlRow{Cells: []htmlCell{{Text: label},
				{Text: strconv.FormatFloat(x(r), 'g', 6, 64), Numeric: true}, {Text: percentText(r.SuccessRate.Value), Numeric: true}}})
		}
		addRow("baseline", opt.Baseline.Search)
		for i, f := range opt.Front {
			c.Points = append(c.Points, *pt(f.Search))
			label := strconv.Itoa(i + 1)
			if i == opt.Pick {
				c.Pick, label = pt(f.Search), label+" (pick)"
			}
			addRow(label, f.Search)
		}
		return figure(title, c, data)
	}
	figs := []htmlFigure{scatter("The front: success against attempts", "attempts", func(r simulated.Result) float64 { return r.Attempts.Value })}
	if opt.Baseline.Search.HasCost {
		figs = append(figs, scatter("The front: success against cost", "cost (USD)", func(r simulated.Result) float64 { return r.CostUSD.Value }))
	}
	tables := optimizationTables(opt, 0)
	front := htmlSection{ID: "front", Title: "Pareto front", Blocks: []htmlBlock{
		{Text: "The policies no other beats on success, attempts, cost and p95 at once, each with its 95% interval; the baseline is the record. \"Later\" is the newer episodes, kept out of the search."},
		{Figures: figs},
		{Table: gridTable(tableGrid(tables[0].Title, tables[0].Columns, tables[0].Rows, "-"))},
	}}
	for _, l := range optimizationFooter(opt) {
		front.Blocks = append(front.Blocks, htmlBlock{Text: escapeControls(l)})
	}
	page.Sections = append(page.Sections, front)
	if len(tables) > 1 {
		page.Sections = append(page.Sections, htmlSection{ID: "beyond", Title: "Beyond the evidence", Blocks: []htmlBlock{
			{Text: fmt.Sprintf("More than %.0f%% of these policies' outcomes are estimated beyond the record: shown, never picked.", 100*opt.Settings.EvidenceBound)},
			{Table: gridTable(tableGrid(tables[1].Title, tables[1].Columns, tables[1].Rows, "-"))},
		}})
	}
	var buf bytes.Buffer
	if err := writeHTMLPage(&buf, page); err != nil {
		return err
	}
	_, err := buf.WriteTo(w)
	return err
}

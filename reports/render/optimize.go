package render

import (
	"bytes"
	"fmt"
	"io"
	"math"
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
		r := []any{label, rateInterval(c.Search.SuccessRate), countText(c.Search.Attempts.Value),
			secondsText(c.Search.ResolutionP95.Value), percentText(c.EstimatedShare)}
		if hold {
			if c.Holdout == nil {
				r = append(r, "-", "-", "")
			} else {
				kept := ""
				if c.Kept != nil {
					kept = map[bool]string{true: "yes", false: "no"}[*c.Kept]
				}
				r = append(r, rateInterval(c.Holdout.SuccessRate), countText(c.Holdout.Attempts.Value), kept)
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
			beyond.Rows = append(beyond.Rows, []any{"b" + strconv.Itoa(i+1), rateInterval(c.Search.SuccessRate),
				countText(c.Search.Attempts.Value), percentText(c.EstimatedShare)})
		}
		tables = append(tables, beyond)
	}
	return tables
}

// rateInterval is a rate with its interval: "99.2% [98.6, 99.6]".
func rateInterval(m simulated.Metric) string {
	if math.IsNaN(m.Value) {
		return "-"
	}
	s := percentText(m.Value)
	if !m.Exact && m.Lo != m.Hi {
		s += " [" + strconv.FormatFloat(100*m.Lo, 'f', 1, 64) + ", " + strconv.FormatFloat(100*m.Hi, 'f', 1, 64) + "]"
	}
	return s
}

func secondsText(v float64) string {
	if math.IsNaN(v) {
		return "-"
	}
	return strconv.FormatFloat(v, 'f', 2, 64)
}

// optimizationLines are what the search did, above the tables.
func optimizationLines(opt *simulated.Optimization) []string {
	st := opt.Settings
	held := "no holdout (--no-holdout)"
	if opt.HoldoutEpisodes > 0 {
		held = fmt.Sprintf("the front replayed on the newer %d (%.0f%%, \"later\" below)", opt.HoldoutEpisodes, 100*st.Holdout)
	}
	return []string{
		fmt.Sprintf("Searched %d policies on the older %d episodes of %s, %s; %d episode replays in all. Outcomes estimated beyond the record may be at most %.0f%% of a policy's to pick it; seed %d.",
			opt.Tried, opt.SearchEpisodes, opt.System, held, opt.Replays, 100*st.EvidenceBound, st.Seed),
	}
}

// optimizationFooter numbers each policy's settings and says what the
// constraints picked.
func optimizationFooter(opt *simulated.Optimization) []string {
	var out []string
	for i, c := range opt.Front {
		out = append(out, fmt.Sprintf("%d: %s", i+1, strings.Join(c.Settings, " ")))
	}
	for i, c := range opt.Beyond {
		out = append(out, fmt.Sprintf("b%d: %s", i+1, strings.Join(c.Settings, " ")))
	}
	cons := strings.Join(opt.Settings.Constraints, " and ")
	if opt.Pick >= 0 {
		line := fmt.Sprintf("Pick: %d, the fewest attempts of the front that meets %s.", opt.Pick+1, cons)
		p, b := opt.Front[opt.Pick].Search, opt.Baseline.Search
		if p.SuccessRate.Value == b.SuccessRate.Value && p.Attempts.Value == b.Attempts.Value && p.ResolutionP95.Value >= b.ResolutionP95.Value {
			line += " It does no better than the baseline here: the record gives no reason to change it."
		}
		out = append(out, line)
	} else {
		out = append(out, "No pick: "+opt.NoPick+".")
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

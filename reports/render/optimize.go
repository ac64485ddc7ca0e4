package render

import (
	"bytes"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/orchstat/orchstat/model/reports"
	"github.com/orchstat/orchstat/model/simulated"
	"github.com/orchstat/orchstat/reports/render/chart"
)

// simulate --optimize: for each layer of the retry core searched, the
// answer first (the pick, or what binds), a line on how the search ran,
// the front as a table numbered from 1 with the baseline first, each
// number's settings below it, and the policies set apart as beyond the
// evidence.

// objectiveLabels are the columns' names for the objectives.
var objectiveLabels = map[string]string{
	"success_rate":           "success",
	"attempts":               "attempts",
	"cost_usd":               "cost ($)",
	"resolution_p95_seconds": "p95 (s)",
	"l2_success_rate":        "pass",
	"l2_iterations":          "iterations",
	"escalations":            "escalations",
	"diagnoses":              "diagnoses",
}

// objectiveLabel is an objective's column name, its key for one no label
// was given.
func objectiveLabel(key string) string {
	if l, ok := objectiveLabels[key]; ok {
		return l
	}
	return key
}

// optimizationTables are a layer's front and, when there are any, the
// policies beyond the evidence. The front's columns put first what
// decides the pick and whether it holds: success, attempts, the share
// estimated, and success on the later runs with whether the advantage
// holds; then the other objectives and the later attempts, which go first
// when the table is too wide (and are named so).
func optimizationTables(opt *simulated.Optimization, l *simulated.Layer, width int) []reports.Table {
	hold := l.HoldoutEpisodes > 0
	head, rest := l.Objectives[:min(2, len(l.Objectives))], l.Objectives[min(2, len(l.Objectives)):]
	cols := []string{"#"}
	for _, o := range head {
		cols = append(cols, objectiveLabel(o.Key))
	}
	cols = append(cols, "estimated")
	if hold {
		cols = append(cols, "later "+objectiveLabel(head[0].Key), "holds")
	}
	for _, o := range rest {
		cols = append(cols, objectiveLabel(o.Key))
	}
	if hold && len(head) > 1 {
		cols = append(cols, "later "+objectiveLabel(head[1].Key))
	}
	row := func(label string, c simulated.Candidate) []any {
		r := []any{label}
		for i, o := range head {
			r = append(r, figureText(o.Key, c.Search, i == 0))
		}
		r = append(r, percentText(c.EstimatedShare))
		if hold {
			if c.Holdout == nil {
				r = append(r, "-", "")
			} else {
				kept := ""
				if c.Kept != nil {
					kept = map[bool]string{true: "yes", false: "no"}[*c.Kept]
				}
				r = append(r, figureText(head[0].Key, *c.Holdout, true), kept)
			}
		}
		for _, o := range rest {
			r = append(r, figureText(o.Key, c.Search, false))
		}
		if hold && len(head) > 1 {
			if c.Holdout == nil {
				r = append(r, "-")
			} else {
				r = append(r, figureText(head[1].Key, *c.Holdout, false))
			}
		}
		return r
	}
	later := head
	front := reports.Table{Title: fmt.Sprintf("Pareto front of %s's %s (the baseline first)", opt.System, l.Name), Columns: cols, Width: width}
	front.Rows = append(front.Rows, row("baseline", l.Baseline))
	for i, c := range l.Front {
		label := strconv.Itoa(i + 1)
		if i == l.Pick {
			label += " (pick)"
		}
		front.Rows = append(front.Rows, row(label, c))
	}
	tables := []reports.Table{front}
	if len(l.Beyond) > 0 {
		beyond := reports.Table{Title: "Beyond the evidence: never picked", Width: width, Columns: []string{"#"}}
		for _, o := range later {
			beyond.Columns = append(beyond.Columns, objectiveLabel(o.Key))
		}
		beyond.Columns = append(beyond.Columns, "estimated")
		for i, c := range l.Beyond {
			r := []any{"b" + strconv.Itoa(i+1)}
			for k, o := range later {
				r = append(r, figureText(o.Key, c.Search, k == 0))
			}
			beyond.Rows = append(beyond.Rows, append(r, percentText(c.EstimatedShare)))
		}
		tables = append(tables, beyond)
	}
	return tables
}

// figureText is a figure of r as simulate's tables show it; with its
// interval only when withInterval, for success, which decides the pick,
// so that a row of the front stays one line at 80 columns.
func figureText(key string, r simulated.Result, withInterval bool) string {
	f, _ := simulated.FigureOf(key)
	m := f.Of(r)
	if !withInterval {
		m = simulated.Metric{Value: m.Value, Lo: m.Value, Hi: m.Value, Exact: true}
	}
	return f.Text(m, false, false)
}

// figuresText is r's objectives in words: "success 99.1% [96.4 to
// 100.0], attempts 146, p95 15.2 s".
func figuresText(l *simulated.Layer, r simulated.Result, withInterval bool) string {
	var parts []string
	for i, o := range l.Objectives {
		label, before, after := strings.Fields(objectiveLabel(o.Key))[0], "", ""
		switch o.Key {
		case "resolution_p95_seconds":
			after = " s"
		case "cost_usd":
			before = "$"
		}
		parts = append(parts, label+" "+before+figureText(o.Key, r, withInterval && i == 0)+after)
	}
	return strings.Join(parts, ", ")
}

// noBetter reports whether c is better than the baseline b in no
// objective.
func noBetter(l *simulated.Layer, c, b simulated.Result) bool {
	for _, o := range l.Objectives {
		v, w := simulated.ObjectiveValue(c, o.Key), simulated.ObjectiveValue(b, o.Key)
		if o.Higher && v > w || !o.Higher && v < w {
			return false
		}
	}
	return true
}

// optimizationLines are above a layer's tables: the answer first (the
// pick, its settings and its figures beside the baseline's, or what
// binds), then how the search ran.
func optimizationLines(opt *simulated.Optimization, l *simulated.Layer) []string {
	st := opt.Settings
	var pick string
	if l.Pick >= 0 {
		c, b := l.Front[l.Pick], l.Baseline
		var least []string
		for _, o := range l.Objectives[1:] {
			least = append(least, strings.Fields(objectiveLabel(o.Key))[0])
		}
		pick = fmt.Sprintf("%s of %s: pick %d, the policy of the front that meets %s with the least %s: %s. It makes %s; the baseline, %s.",
			capitalize(l.Name), opt.System, l.Pick+1, strings.Join(l.Constraints, " and "), strings.Join(least, ", then "),
			strings.Join(c.Settings, " "), figuresText(l, c.Search, true), figuresText(l, b.Search, false))
		if noBetter(l, c.Search, b.Search) {
			pick += " It does no better than the baseline here: the record gives no reason to change it."
		}
	} else {
		pick = fmt.Sprintf("%s of %s: no pick: %s.", capitalize(l.Name), opt.System, l.NoPick)
	}
	held := "no holdout (--no-holdout)"
	if l.HoldoutEpisodes > 0 {
		held = fmt.Sprintf("the front replayed on the newer %d (%.0f%%, \"later\" below)", l.HoldoutEpisodes,
			100*float64(l.HoldoutEpisodes)/float64(l.HoldoutEpisodes+l.SearchEpisodes))
		if l.HoldoutByTime {
			held += ", newest by time, as one run held most episodes: a run may be on both sides"
		}
	}
	search := fmt.Sprintf("Searched %d policies on the older %d episodes, %s; %d episode replays in all. Outcomes estimated beyond the record may be at most %.0f%% of a policy's to pick it; seed %d.",
		l.Tried, l.SearchEpisodes, held, l.Replays, 100*st.EvidenceBound, st.Seed)
	if slices.ContainsFunc(l.Objectives, func(o simulated.Objective) bool { return o.Key == "escalations" || o.Key == "diagnoses" }) {
		search += " Escalations and diagnoses count as steps paid for: what L3 would have fixed after them is not in the record."
	}
	return []string{pick, search}
}

func capitalize(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

// optimizationFooter numbers each policy's settings, under the tables.
func optimizationFooter(l *simulated.Layer) []string {
	var out []string
	for i, c := range l.Front {
		out = append(out, fmt.Sprintf("%d: %s", i+1, strings.Join(c.Settings, " ")))
	}
	for i, c := range l.Beyond {
		out = append(out, fmt.Sprintf("b%d: %s", i+1, strings.Join(c.Settings, " ")))
	}
	return out
}

// renderOptimization draws --optimize's search, a layer after another,
// then what was not searched (to errw with CSV, which holds tables only).
func renderOptimization(w, errw io.Writer, opt *simulated.Optimization, f Format, width int) error {
	for k := range opt.Layers {
		l := &opt.Layers[k]
		tables := optimizationTables(opt, l, width)
		if f == FormatCSV {
			for _, t := range tables {
				if err := RenderTable(w, t, f); err != nil {
					return err
				}
			}
			continue
		}
		if k > 0 {
			fmt.Fprintln(w)
		}
		for _, line := range optimizationLines(opt, l) {
			fmt.Fprintln(w, WrapText(line, width))
			if f == FormatMarkdown {
				fmt.Fprintln(w)
			}
		}
		if f != FormatMarkdown {
			fmt.Fprintln(w)
		}
		for i, t := range tables {
			if i > 0 {
				fmt.Fprintln(w)
			}
			if err := RenderTable(w, t, f); err != nil {
				return err
			}
		}
		fmt.Fprintln(w)
		for _, line := range optimizationFooter(l) {
			fmt.Fprintln(w, WrapText(line, width))
			if f == FormatMarkdown {
				fmt.Fprintln(w)
			}
		}
	}
	for _, n := range opt.Notes {
		if f == FormatCSV {
			fmt.Fprintf(errw, "orchstat: %s\n", EscapeControls(n))
			continue
		}
		fmt.Fprintln(w)
		fmt.Fprintln(w, WrapText(n, width))
	}
	return nil
}

// optimizationPage is --optimize's page: what the search did and, for
// each layer, the front as scatters (success against attempts, and
// against cost when the record has costs; loops that pass against
// iterations) with the baseline and the pick marked, each with its data,
// the front's table and what is beyond the evidence.
func optimizationPage(w io.Writer, sim *simulated.Simulation) error {
	opt := sim.Optimization
	page := htmlPage{Title: "orchstat simulate --optimize",
		Lines: []string{escapeControls(simulationSummary(sim)), escapeControls(ScopeLine(sim.DB, sim.Scope))}}
	for k := range opt.Layers {
		l := &opt.Layers[k]
		page.Lines = append(page.Lines, escapeControls(optimizationLines(opt, l)[0]))
	}
	for _, n := range opt.Notes {
		page.Lines = append(page.Lines, escapeControls(n))
	}
	for k := range opt.Layers {
		l := &opt.Layers[k]
		yKey := l.Objectives[0].Key
		yLabel := objectiveLabel(yKey)
		scatter := func(xKey string) htmlFigure {
			xLabel := objectiveLabel(xKey)
			title := fmt.Sprintf("The front: %s against %s", yLabel, xLabel)
			pt := func(r simulated.Result) *chart.XY {
				return &chart.XY{X: simulated.ObjectiveValue(r, xKey), Y: simulated.ObjectiveValue(r, yKey)}
			}
			c := chart.Scatter{Title: title, XLabel: xLabel, YLabel: yLabel, YPercent: true, Baseline: pt(l.Baseline.Search)}
			data := &htmlTable{Head: []htmlHead{{Text: "#"}, {Text: xLabel, Numeric: true}, {Text: yLabel, Numeric: true}}}
			addRow := func(label string, r simulated.Result) {
				p := pt(r)
				data.Rows = append(data.Rows, htmlRow{Cells: []htmlCell{{Text: label},
					{Text: strconv.FormatFloat(p.X, 'g', 6, 64), Numeric: true}, {Text: percentText(p.Y), Numeric: true}}})
			}
			addRow("baseline", l.Baseline.Search)
			for i, f := range l.Front {
				c.Points = append(c.Points, *pt(f.Search))
				label := strconv.Itoa(i + 1)
				if i == l.Pick {
					c.Pick, label = pt(f.Search), label+" (pick)"
				}
				addRow(label, f.Search)
			}
			return figure(title, c, data)
		}
		var figs []htmlFigure
		for _, o := range l.Objectives[1:] {
			// Against what success costs: attempts, cost, iterations.
			if o.Key == "attempts" || o.Key == "cost_usd" || o.Key == "l2_iterations" {
				figs = append(figs, scatter(o.Key))
			}
		}
		var names []string
		for _, o := range l.Objectives {
			names = append(names, objectiveLabel(o.Key))
		}
		tables := optimizationTables(opt, l, 0)
		lines := optimizationLines(opt, l)
		front := htmlSection{ID: fmt.Sprintf("front-%d", k+1), Title: "Pareto front: " + l.Name, Blocks: []htmlBlock{
			{Text: escapeControls(lines[0])},
			{Text: escapeControls(lines[1])},
			{Text: fmt.Sprintf("The policies no other beats on %s at once, each with its 95%% interval; the baseline is the record. \"Later\" is the newer runs, kept out of the search.", strings.Join(names, ", "))},
			{Figures: figs},
			{Table: gridTable(tableGrid(tables[0].Title, tables[0].Columns, tables[0].Rows, "-"))},
		}}
		for _, line := range optimizationFooter(l) {
			front.Blocks = append(front.Blocks, htmlBlock{Text: escapeControls(line)})
		}
		page.Sections = append(page.Sections, front)
		if len(tables) > 1 {
			page.Sections = append(page.Sections, htmlSection{ID: fmt.Sprintf("beyond-%d", k+1), Title: "Beyond the evidence: " + l.Name, Blocks: []htmlBlock{
				{Text: fmt.Sprintf("More than %.0f%% of these policies' outcomes are estimated beyond the record: shown, never picked.", 100*opt.Settings.EvidenceBound)},
				{Table: gridTable(tableGrid(tables[1].Title, tables[1].Columns, tables[1].Rows, "-"))},
			}})
		}
	}
	var buf bytes.Buffer
	if err := writeHTMLPage(&buf, page); err != nil {
		return err
	}
	_, err := buf.WriteTo(w)
	return err
}

package render

import (
	"bytes"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"

	"github.com/orchstat/orchstat/reports"
	"github.com/orchstat/orchstat/reports/render/chart"
	"github.com/orchstat/orchstat/rules/replay"
)

// SimulationPage is what `orchstat simulate --format html` shows: the
// baseline (the record) against each policy's replay.
type SimulationPage struct {
	DB       string
	Scope    reports.Scope
	Baseline replay.Result
	Policies []replay.Result
	// Verdicts are replay.Verdict's lines, one per policy.
	Verdicts []string
}

// simFigure is one figure of a replay, as simulate's table shows it.
type simFigure struct {
	kind    replay.Kind
	label   string
	key     string // the figure's JSON name in replay.Result
	get     func(replay.Result) replay.Metric
	percent bool
}

// The figures, in simulate's table's order; cost only when some episode
// recorded one, L2 and L3 only when the record has such episodes.
var (
	simRequestFigures = []simFigure{
		{replay.KindProvider, "success rate", "success_rate", func(r replay.Result) replay.Metric { return r.SuccessRate }, true},
		{replay.KindProvider, "attempts", "attempts", func(r replay.Result) replay.Metric { return r.Attempts }, false},
		{replay.KindProvider, "wasted attempts", "wasted_attempts", func(r replay.Result) replay.Metric { return r.Wasted }, false},
		{replay.KindProvider, "time in backoff (s)", "backoff_seconds", func(r replay.Result) replay.Metric { return r.BackoffSeconds }, false},
		{replay.KindProvider, "time to resolution p50 (s)", "resolution_p50_seconds", func(r replay.Result) replay.Metric { return r.ResolutionP50 }, false},
		{replay.KindProvider, "time to resolution p95 (s)", "resolution_p95_seconds", func(r replay.Result) replay.Metric { return r.ResolutionP95 }, false},
		{replay.KindProvider, "halts", "halts", func(r replay.Result) replay.Metric { return r.Halts }, false},
	}
	simCostFigure = simFigure{replay.KindProvider, "cost (USD, estimated)", "cost_usd", func(r replay.Result) replay.Metric { return r.CostUSD }, false}
	simL2Figures  = []simFigure{
		{replay.KindL2, "L2 loops that pass", "l2_success_rate", func(r replay.Result) replay.Metric { return r.L2SuccessRate }, true},
		{replay.KindL2, "L2 iterations", "l2_iterations", func(r replay.Result) replay.Metric { return r.L2Iterations }, false},
		{replay.KindL2, "escalations to L3", "escalations", func(r replay.Result) replay.Metric { return r.Escalations }, false},
		{replay.KindL2, "non-improving stops", "l2_non_improving_stops", func(r replay.Result) replay.Metric { return r.NonImproving }, false},
	}
	simL3Figure = simFigure{replay.KindL3, "L3 diagnoses", "diagnoses", func(r replay.Result) replay.Metric { return r.Diagnoses }, false}
)

// figures are the figures p shows.
func (p SimulationPage) figures() []simFigure {
	figs := append([]simFigure(nil), simRequestFigures...)
	if p.Baseline.HasCost {
		figs = append(figs, simCostFigure)
	}
	if p.Baseline.L2Loops > 0 {
		figs = append(figs, simL2Figures...)
	}
	if p.Baseline.L3Runs > 0 {
		figs = append(figs, simL3Figure)
	}
	return figs
}

// results are the baseline, then the policies.
func (p SimulationPage) results() []replay.Result {
	return append([]replay.Result{p.Baseline}, p.Policies...)
}

// simEstimated reports whether some of r's outcomes of kind are
// estimated; the baseline's never are (it is the record).
func simEstimated(r replay.Result, kind replay.Kind, baseline bool) bool {
	switch {
	case baseline:
		return false
	case kind == replay.KindProvider:
		return r.Estimated > 0
	case kind == replay.KindL2:
		return r.L2Estimated > 0
	}
	return false
}

// SimulationHTML writes p as one HTML page: the scope, the figures'
// table (as simulate's table, with the numbers contract's attributes),
// a chart per figure with its 95% intervals as error bars, and the
// verdicts. Nothing is written if rendering fails.
func SimulationHTML(w io.Writer, p SimulationPage) error {
	b := p.Baseline
	page := htmlPage{Title: "orchstat simulate", Lines: []string{
		escapeControls(ScopeLine(p.DB, p.Scope)),
		fmt.Sprintf("%d provider requests, %d L2 loops, %d runs with L3 steps; baseline reproduces %d of %d episodes; %d not reproduced; %d not checkable.",
			b.Episodes, b.L2Loops, b.L3Runs, b.Reproduced, b.Checked+b.NotCheckable, b.Checked-b.Reproduced, b.NotCheckable),
	}}
	page.Sections = []htmlSection{
		{ID: "figures", Title: "Baseline and policies", Blocks: []htmlBlock{
			{Text: "The baseline is the record, counted without interval. A policy's values are followed by their 95% interval over runs; " +
				"a figure with no interval is exact. \"est.\" marks a policy some of whose outcomes are estimated."},
			{Table: p.figureTable()},
		}},
		{ID: "charts", Title: "Charts", Blocks: []htmlBlock{
			{Text: "Points are the figures, bars their 95% intervals; a hollow point marked \"est.\" is estimated."},
			{Figures: p.charts()},
		}},
	}
	page.Sections = append(page.Sections, p.notes()...)
	var buf bytes.Buffer
	if err := writeHTMLPage(&buf, page); err != nil {
		return err
	}
	_, err := buf.WriteTo(w)
	return err
}

// figureTable is simulate's table: a row per figure, the baseline's
// value, then each policy's with its difference from the baseline; then
// how many outcomes are estimated.
func (p SimulationPage) figureTable() *htmlTable {
	res := p.results()
	t := &htmlTable{Head: []htmlHead{{Text: "figure"}, {Text: escapeControls(p.Baseline.Policy) + " (baseline: the record)", Numeric: true}}}
	for _, r := range p.Policies {
		t.Head = append(t.Head, htmlHead{Text: escapeControls(r.Policy), Numeric: true}, htmlHead{Text: "Δ " + escapeControls(r.Policy), Numeric: true})
	}
	figs := p.figures()
	for i, f := range figs {
		row := htmlRow{Cells: []htmlCell{{Text: f.label}}}
		for j, r := range res {
			m := f.get(r)
			row.Cells = append(row.Cells, htmlCell{Text: simText(m, f.percent, false, simEstimated(r, f.kind, j == 0)), Numeric: true, Data: []dataAttr{
				{"policy", r.Policy}, {"metric", f.key}, {"value", exactFloat(m.Value)}, {"low", exactFloat(m.Lo)}, {"high", exactFloat(m.Hi)},
			}})
			if j > 0 {
				row.Cells = append(row.Cells, htmlCell{Text: simText(r.Diff[f.key], f.percent, true, simEstimated(r, f.kind, false)), Numeric: true})
			}
		}
		t.Rows = append(t.Rows, row)
		if i+1 == len(figs) || figs[i+1].kind != f.kind {
			t.Rows = append(t.Rows, estimatedRow(res, f.kind)...)
		}
	}
	return t
}

// estimatedRow says how many outcomes of kind each result estimates, as
// simulate's table does after the kind's figures; L3 has none.
func estimatedRow(res []replay.Result, kind replay.Kind) []htmlRow {
	var label string
	var n func(replay.Result) (int, int)
	switch kind {
	case replay.KindProvider:
		label, n = "outcomes estimated", func(r replay.Result) (int, int) { return r.Estimated, r.Episodes }
	case replay.KindL2:
		label, n = "L2 outcomes estimated", func(r replay.Result) (int, int) { return r.L2Estimated, r.L2Loops }
	default:
		return nil
	}
	row := htmlRow{Cells: []htmlCell{{Text: label}}}
	for i, r := range res {
		est, total := n(r)
		row.Cells = append(row.Cells, htmlCell{Text: fmt.Sprintf("%d of %d", est, total), Numeric: true})
		if i > 0 {
			row.Cells = append(row.Cells, htmlCell{})
		}
	}
	return []htmlRow{row}
}

// simText is a figure as simulate's table shows it: its value, then its
// 95% interval unless exact, then "est." when estimated; a difference of
// rates is in points.
func simText(m replay.Metric, percent, diff, estimated bool) string {
	if math.IsNaN(m.Value) {
		return "-"
	}
	unit, scale, prec := "", 1.0, 1
	if percent {
		unit, scale = "%", 100
		if diff {
			unit = " pp"
		}
	}
	if math.Abs(m.Value*scale) < 10 {
		prec = 2
	}
	f := func(v float64) string { return strconv.FormatFloat(v*scale, 'f', prec, 64) }
	if m.Exact {
		return f(m.Value) + unit
	}
	s := f(m.Value) + unit + " [" + f(m.Lo) + "–" + f(m.Hi) + "]"
	if estimated {
		s += " est."
	}
	return s
}

// charts are a chart per figure: each result's value with its interval.
func (p SimulationPage) charts() []htmlFigure {
	res := p.results()
	var figs []htmlFigure
	for _, f := range p.figures() {
		c := chart.Intervals{Title: f.label, Percent: f.percent}
		t := &htmlTable{Head: []htmlHead{{Text: "policy"}, {Text: "value", Numeric: true}, {Text: "95% low", Numeric: true},
			{Text: "95% high", Numeric: true}, {Text: "estimated"}}}
		for j, r := range res {
			m, est := f.get(r), simEstimated(r, f.kind, j == 0)
			name := escapeControls(r.Policy)
			if j == 0 {
				name += " (baseline)"
			}
			c.Categories = append(c.Categories, name)
			c.Points = append(c.Points, chart.Interval{Value: m.Value, Low: m.Lo, High: m.Hi, Exact: m.Exact, Estimated: est})
			low, high := chart.ValueText(m.Lo, f.percent), chart.ValueText(m.Hi, f.percent)
			if m.Exact {
				low, high = "exact", "exact"
			}
			t.Rows = append(t.Rows, htmlRow{Cells: []htmlCell{{Text: name}, {Text: simText(replay.Metric{Value: m.Value, Exact: true}, f.percent, false, false), Numeric: true},
				{Text: low, Numeric: true}, {Text: high, Numeric: true}, {Text: estText(est)}}})
		}
		figs = append(figs, figure(strings.ToUpper(f.label[:1])+f.label[1:], c, t))
	}
	return figs
}

func estText(est bool) string {
	if est {
		return "est."
	}
	return ""
}

// notes are the verdicts, then the self-check's exceptions.
func (p SimulationPage) notes() []htmlSection {
	v := htmlSection{ID: "verdicts", Title: "Verdicts"}
	for _, s := range p.Verdicts {
		v.Blocks = append(v.Blocks, htmlBlock{Text: escapeControls(s)})
	}
	if len(p.Verdicts) == 0 {
		v.Blocks = []htmlBlock{{Text: "No policy to compare with the baseline."}}
	}
	b := p.Baseline
	out := []htmlSection{v}
	for _, n := range []struct {
		id, title string
		count     int
		list      []replay.Note
	}{
		{"not_reproduced", "Not reproduced by the baseline", b.Checked - b.Reproduced, b.Mismatches},
		{"not_checkable", "Not checkable", b.NotCheckable, b.Unchecked},
	} {
		if n.count == 0 {
			continue
		}
		caption := fmt.Sprintf("%d episodes", n.count)
		if len(n.list) < n.count {
			caption += fmt.Sprintf(", the first %d listed", len(n.list))
		}
		t := &htmlTable{Caption: caption, None: "None listed.", Head: []htmlHead{{Text: "episode"}, {Text: "reason"}}}
		for _, e := range n.list {
			t.Rows = append(t.Rows, htmlRow{Cells: []htmlCell{{Text: escapeControls(e.ID)}, {Text: escapeControls(e.Reason)}}})
		}
		out = append(out, htmlSection{ID: n.id, Title: n.title, Blocks: []htmlBlock{{Table: t}}})
	}
	return out
}

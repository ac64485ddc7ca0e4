package render

import (
	"bytes"
	"fmt"
	"io"
	"strings"

	"github.com/orchstat/orchstat/model/episode"
	"github.com/orchstat/orchstat/model/reports"
	"github.com/orchstat/orchstat/model/simulated"
	"github.com/orchstat/orchstat/reports/render/chart"
)

// SimulationPage is what `orchstat simulate --format html` shows: the
// baseline (the record) against each policy's replay.
type SimulationPage struct {
	DB    string
	Scope reports.Scope
	// Summary is simulate's first line: what is replayed against which
	// baseline, and what is left out and why.
	Summary  string
	Baseline simulated.Result
	Policies []simulated.Result
	// Verdicts are simulated.Verdict's lines, one per policy.
	Verdicts []string
}

// figures are the figures p shows, from the replay's catalog.
func (p SimulationPage) figures() []simulated.Figure { return simulated.Shown(p.Baseline) }

// results are the baseline, then the policies.
func (p SimulationPage) results() []simulated.Result {
	return append([]simulated.Result{p.Baseline}, p.Policies...)
}

// simEstimated reports whether some of r's outcomes of f's kind are
// estimated; the baseline's never are (it is the record).
func simEstimated(r simulated.Result, f simulated.Figure, baseline bool) bool {
	return !baseline && f.Estimated(r)
}

// SimulationHTML writes p as one HTML page: the scope, the verdicts in
// plain words, the figures' table (as simulate's table, with the numbers
// contract's attributes), a chart per figure with its 95% intervals as
// error bars, and what the baseline did not reproduce. Nothing is written
// if rendering fails.
func SimulationHTML(w io.Writer, p SimulationPage) error {
	b := p.Baseline
	var lines []string
	if p.Summary != "" {
		lines = append(lines, escapeControls(p.Summary))
	}
	page := htmlPage{Title: "orchstat simulate", Lines: append(lines,
		escapeControls(ScopeLine(p.DB, p.Scope)),
		fmt.Sprintf("%d provider requests, %d L2 loops, %d runs with L3 steps; baseline reproduces %d of %d episodes; %d not reproduced; %d not checkable.",
			b.Episodes, b.L2Loops, b.L3Runs, b.Reproduced, b.Checked+b.NotCheckable, b.Checked-b.Reproduced, b.NotCheckable),
	)}
	// The verdicts in plain words first: the answer, then its evidence.
	notes := p.notes()
	page.Sections = []htmlSection{
		notes[0],
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
	page.Sections = append(page.Sections, notes[1:]...)
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
		row := htmlRow{Cells: []htmlCell{{Text: f.Label}}}
		for j, r := range res {
			m := f.Of(r)
			row.Cells = append(row.Cells, htmlCell{Text: f.Text(m, false, simEstimated(r, f, j == 0)), Numeric: true, Data: []dataAttr{
				{"policy", r.Policy}, {"metric", f.Key}, {"value", exactFloat(m.Value)}, {"low", exactFloat(m.Lo)}, {"high", exactFloat(m.Hi)},
			}})
			if j > 0 {
				row.Cells = append(row.Cells, htmlCell{Text: f.Text(r.Diff[f.Key], true, simEstimated(r, f, false)), Numeric: true})
			}
		}
		t.Rows = append(t.Rows, row)
		if i+1 == len(figs) || figs[i+1].Kind != f.Kind {
			t.Rows = append(t.Rows, estimatedRow(res, f.Kind)...)
		}
	}
	return t
}

// estimatedRow says how many outcomes of kind each result estimates, as
// simulate's table does after the kind's figures; L3 has none.
func estimatedRow(res []simulated.Result, kind episode.Kind) []htmlRow {
	label, _, _, ok := simulated.EstimatedOf(res[0], kind)
	if !ok {
		return nil
	}
	row := htmlRow{Cells: []htmlCell{{Text: label}}}
	for i, r := range res {
		_, est, total, _ := simulated.EstimatedOf(r, kind)
		row.Cells = append(row.Cells, htmlCell{Text: fmt.Sprintf("%d of %d", est, total), Numeric: true})
		if i > 0 {
			row.Cells = append(row.Cells, htmlCell{})
		}
	}
	return []htmlRow{row}
}

// charts are a chart per figure: each result's value with its interval.
func (p SimulationPage) charts() []htmlFigure {
	res := p.results()
	var figs []htmlFigure
	for _, f := range p.figures() {
		percent := f.Unit == simulated.UnitRate
		c := chart.Intervals{Title: f.Label, Percent: percent}
		t := &htmlTable{Head: []htmlHead{{Text: "policy"}, {Text: "value", Numeric: true}, {Text: "95% low", Numeric: true},
			{Text: "95% high", Numeric: true}, {Text: "estimated"}}}
		for j, r := range res {
			m, est := f.Of(r), simEstimated(r, f, j == 0)
			name := escapeControls(r.Policy)
			if j == 0 {
				name += " (baseline)"
			}
			c.Categories = append(c.Categories, name)
			c.Points = append(c.Points, chart.Interval{Value: m.Value, Low: m.Lo, High: m.Hi, Exact: m.Exact, Estimated: est})
			low, high := chart.ValueText(m.Lo, percent), chart.ValueText(m.Hi, percent)
			if m.Exact {
				low, high = "exact", "exact"
			}
			t.Rows = append(t.Rows, htmlRow{Cells: []htmlCell{{Text: name}, {Text: f.Text(simulated.Metric{Value: m.Value, Exact: true}, false, false), Numeric: true},
				{Text: low, Numeric: true}, {Text: high, Numeric: true}, {Text: estText(est)}}})
		}
		figs = append(figs, figure(strings.ToUpper(f.Label[:1])+f.Label[1:], c, t))
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
		list      []simulated.Note
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

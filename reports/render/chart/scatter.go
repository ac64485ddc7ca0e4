package chart

import (
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/text"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// XY is a point of a scatter.
type XY struct{ X, Y float64 }

// Scatter draws points against two value axes: a Pareto front, with the
// baseline it is measured against and the point picked from it marked
// apart, each with its own shape and a label, so the chart reads in grey.
type Scatter struct {
	Title          string
	XLabel, YLabel string
	// YPercent labels the y axis in percent (values are shares).
	YPercent bool
	Points   []XY
	// Baseline and Pick, when set, are drawn apart and labelled.
	Baseline, Pick *XY
}

// scatterHeight is a scatter's height, in points.
const scatterHeight = 200

// SVG draws the chart; ErrNoData when no point has two finite values.
func (s Scatter) SVG() ([]byte, error) {
	var xs, ys []float64
	add := func(p XY) bool {
		if !finite(p.X) || !finite(p.Y) {
			return false
		}
		xs, ys = append(xs, p.X), append(ys, p.Y)
		return true
	}
	var front plotter.XYs
	for _, p := range s.Points {
		if add(p) {
			front = append(front, plotter.XY{X: p.X, Y: p.Y})
		}
	}
	if len(front) == 0 {
		return nil, ErrNoData
	}
	for _, p := range []*XY{s.Baseline, s.Pick} {
		if p != nil {
			add(*p)
		}
	}
	c := newPlot()
	c.X.Min, c.X.Max = spanRange(xs, false)
	c.Y.Min, c.Y.Max = spanRange(ys, s.YPercent)
	c.X.Tick.Marker, c.Y.Tick.Marker = valueTicks(false), valueTicks(s.YPercent)
	c.X.Label.Text, c.Y.Label.Text = s.XLabel, s.YLabel
	dots := &plotter.Scatter{XYs: front,
		GlyphStyle: draw.GlyphStyle{Color: seriesColour(0), Radius: vg.Points(2.5), Shape: draw.CircleGlyph{}}}
	c.Add(dots)
	c.addLegend("front", dots)
	// The baseline's label goes to the right of its mark and the pick's
	// above and to the left, so they stay apart when the two coincide.
	mark := func(p *XY, name string, shape draw.GlyphDrawer, colour int, radius float64, offset vg.Point) error {
		if p == nil || !finite(p.X) || !finite(p.Y) {
			return nil
		}
		xy := plotter.XYs{{X: p.X, Y: p.Y}}
		m := &plotter.Scatter{XYs: xy, GlyphStyle: draw.GlyphStyle{Color: seriesColour(colour), Radius: vg.Points(radius), Shape: shape}}
		c.Add(m)
		c.addLegend(name, m)
		l, err := plotter.NewLabels(plotter.XYLabels{XYs: xy, Labels: []string{name}})
		if err != nil {
			return err
		}
		for i := range l.TextStyle {
			l.TextStyle[i] = text.Style{Font: font.From(sans, legendFont), Handler: plot.DefaultTextHandler, Color: seriesColour(colour)}
		}
		l.Offset = offset
		c.Add(l)
		return nil
	}
	if err := mark(s.Baseline, "baseline", draw.BoxGlyph{}, 2, 3.5, vg.Point{X: vg.Points(6), Y: vg.Points(-3)}); err != nil {
		return nil, err
	}
	if err := mark(s.Pick, "pick", draw.RingGlyph{}, 1, 5, vg.Point{X: vg.Points(-22), Y: vg.Points(6)}); err != nil {
		return nil, err
	}
	return c.render(scatterHeight, s.Title)
}

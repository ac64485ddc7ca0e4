package chart

import (
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/text"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// Interval is a figure with its 95% interval. An exact figure has no
// interval and draws no bar; an estimated one (some of the outcomes
// behind it are estimated rather than read from the record) is a hollow
// marker labelled "est.", where the others are filled.
type Interval struct {
	Value, Low, High float64
	Exact, Estimated bool
}

// Intervals is one figure across categories (the baseline and each
// policy): a marker at each value with its interval as an error bar.
type Intervals struct {
	Title      string
	Categories []string
	Points     []Interval
	// Percent labels the value axis in percent (values are shares).
	Percent bool
}

// intervalHeight is an interval chart's height, in points.
const intervalHeight = 150

// SVG draws the chart; ErrNoData when no figure has a value.
func (c Intervals) SVG() ([]byte, error) {
	var all []float64
	for _, pt := range c.Points {
		if !finite(pt.Value) {
			continue
		}
		all = append(all, pt.Value)
		if !pt.Exact && finite(pt.Low) && finite(pt.High) {
			all = append(all, pt.Low, pt.High)
		}
	}
	if len(c.Points) == 0 || len(points(all, func(float64) bool { return true })) == 0 {
		return nil, ErrNoData
	}
	p := newPlot()
	p.Y.Min, p.Y.Max = spanRange(all, c.Percent)
	p.Y.Tick.Marker = valueTicks(c.Percent)
	p.X.Min, p.X.Max = -0.5, float64(len(c.Categories))-0.5
	p.X.Tick.Marker = categoryTicks(c.Categories, 8, false)
	p.X.Tick.Length, p.X.Width = 0, 0
	if err := c.addBars(p); err != nil {
		return nil, err
	}
	if err := c.addMarks(p); err != nil {
		return nil, err
	}
	return p.render(intervalHeight, c.Title)
}

// errorXYs are the points with an interval to draw.
type errorXYs struct {
	plotter.XYs
	plotter.YErrors
}

// addBars draws the intervals of the figures that have one.
func (c Intervals) addBars(p *canvas) error {
	var e errorXYs
	for i, pt := range c.Points {
		if pt.Exact || !finite(pt.Value) || !finite(pt.Low) || !finite(pt.High) {
			continue
		}
		e.XYs = append(e.XYs, plotter.XY{X: float64(i), Y: pt.Value})
		e.YErrors = append(e.YErrors, struct{ Low, High float64 }{pt.Value - pt.Low, pt.High - pt.Value})
	}
	if len(e.XYs) == 0 {
		return nil
	}
	bars, err := plotter.NewYErrorBars(e)
	if err != nil {
		return err
	}
	bars.LineStyle = draw.LineStyle{Color: seriesColour(0), Width: vg.Points(1)}
	bars.CapWidth = vg.Points(8)
	p.Add(bars)
	p.addLegend("95% interval", &plotter.Line{LineStyle: bars.LineStyle})
	return nil
}

// addMarks draws the figures: filled circles, hollow rings labelled
// "est." for the estimated ones.
func (c Intervals) addMarks(p *canvas) error {
	var exact, est plotter.XYs
	var labels []string
	for i, pt := range c.Points {
		if !finite(pt.Value) {
			continue
		}
		xy := plotter.XY{X: float64(i), Y: pt.Value}
		if pt.Estimated {
			est = append(est, xy)
			labels = append(labels, "est.")
		} else {
			exact = append(exact, xy)
		}
	}
	filled := &plotter.Scatter{XYs: exact,
		GlyphStyle: draw.GlyphStyle{Color: seriesColour(2), Radius: vg.Points(3), Shape: draw.CircleGlyph{}}}
	hollow := &plotter.Scatter{XYs: est,
		GlyphStyle: draw.GlyphStyle{Color: seriesColour(2), Radius: vg.Points(3.5), Shape: draw.RingGlyph{}}}
	if len(exact) > 0 {
		p.Add(filled)
		p.addLegend("figure", filled)
	}
	if len(est) == 0 {
		return nil
	}
	p.Add(hollow)
	p.addLegend("estimated (est.)", hollow)
	l, err := plotter.NewLabels(plotter.XYLabels{XYs: est, Labels: labels})
	if err != nil {
		return err
	}
	for i := range l.TextStyle {
		l.TextStyle[i] = text.Style{Font: font.From(sans, legendFont), Handler: plot.DefaultTextHandler, Color: seriesColour(2)}
	}
	l.Offset = vg.Point{X: vg.Points(5), Y: vg.Points(-3)}
	p.Add(l)
	return nil
}

package chart

import (
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// Threshold is an alert threshold drawn across a line chart.
type Threshold struct {
	Label string
	Value float64
	// Below is set when a value crosses the threshold by falling under
	// it; otherwise crossing is exceeding it.
	Below bool
}

// Crossed reports whether v crosses the threshold.
func (t Threshold) Crossed(v float64) bool {
	if t.Below {
		return v < t.Value
	}
	return v > t.Value
}

// thresholdDashes tell a chart's thresholds apart, and from series 0's
// solid line.
var thresholdDashes = [][]vg.Length{
	{vg.Points(6), vg.Points(3)},
	{vg.Points(2), vg.Points(2)},
}

// Line is series over ordered categories (days), each drawn as a line
// with a marker per value, a gap where a value is missing. Thresholds
// are dashed horizontal lines; a value that crosses one of them is marked
// with a filled triangle, a shape no series uses.
type Line struct {
	Title      string
	Categories []string
	Series     []Series
	Thresholds []Threshold
	// Percent labels the value axis in percent (values are shares).
	Percent bool
	// XLabel names the category axis ("day (UTC)").
	XLabel string
}

// Height of a line chart, in points.
const lineHeight = 170

// maxDayTicks is how many category labels fit under a line chart.
const maxDayTicks = 6

// SVG draws the chart; ErrNoData when no series has a value.
func (l Line) SVG() ([]byte, error) {
	var all []float64
	for _, s := range l.Series {
		all = append(all, s.Values...)
	}
	if len(points(all, func(float64) bool { return true })) == 0 {
		return nil, ErrNoData
	}
	for _, t := range l.Thresholds {
		all = append(all, t.Value)
	}
	p := newPlot()
	p.Y.Min, p.Y.Max = valueRange(all)
	p.Y.Tick.Marker = valueTicks(l.Percent)
	p.X.Min, p.X.Max = -0.5, float64(len(l.Categories))-0.5
	p.X.Tick.Marker = categoryTicks(l.Categories, maxDayTicks, false)
	p.X.Label.Text = l.XLabel
	// Thresholds are drawn under the series but listed after them.
	var lines []*plotter.Line
	for i, t := range l.Thresholds {
		line, err := l.addThreshold(p, i, t)
		if err != nil {
			return nil, err
		}
		lines = append(lines, line)
	}
	for i, s := range l.Series {
		if err := addSeries(p, i, s); err != nil {
			return nil, err
		}
	}
	for i, t := range l.Thresholds {
		p.addLegend(t.Label, lines[i])
	}
	l.addCrossings(p)
	return p.render(lineHeight, l.Title)
}

// addThreshold draws threshold i across the chart.
func (l Line) addThreshold(p *canvas, i int, t Threshold) (*plotter.Line, error) {
	line, err := plotter.NewLine(plotter.XYs{{X: p.X.Min, Y: t.Value}, {X: p.X.Max, Y: t.Value}})
	if err != nil {
		return nil, err
	}
	line.LineStyle = draw.LineStyle{Color: alertColour, Width: vg.Points(1), Dashes: thresholdDashes[i%len(thresholdDashes)]}
	p.Add(line)
	return line, nil
}

// addSeries draws series i: a line through each run of values, and a
// marker on each value (so a lone value between gaps still shows).
func addSeries(p *canvas, i int, s Series) error {
	legend := &plotter.Line{LineStyle: lineStyle(i)}
	var run plotter.XYs
	flush := func() error {
		if len(run) > 1 {
			line, err := plotter.NewLine(run)
			if err != nil {
				return err
			}
			line.LineStyle = lineStyle(i)
			p.Add(line)
		}
		run = nil
		return nil
	}
	for x, v := range s.Values {
		if !finite(v) {
			if err := flush(); err != nil {
				return err
			}
			continue
		}
		run = append(run, plotter.XY{X: float64(x), Y: v})
	}
	if err := flush(); err != nil {
		return err
	}
	marks := &plotter.Scatter{XYs: points(s.Values, func(float64) bool { return true }),
		GlyphStyle: draw.GlyphStyle{Color: seriesColour(i), Radius: vg.Points(2), Shape: seriesGlyph(i)}}
	p.Add(marks)
	if s.Name != "" {
		p.addLegend(s.Name, legend, marks)
	}
	return nil
}

// addCrossings marks every value that crosses a threshold.
func (l Line) addCrossings(p *canvas) {
	if len(l.Thresholds) == 0 {
		return
	}
	var xys plotter.XYs
	for _, s := range l.Series {
		xys = append(xys, points(s.Values, func(v float64) bool {
			for _, t := range l.Thresholds {
				if t.Crossed(v) {
					return true
				}
			}
			return false
		})...)
	}
	marks := &plotter.Scatter{XYs: xys,
		GlyphStyle: draw.GlyphStyle{Color: alertColour, Radius: vg.Points(4), Shape: draw.PyramidGlyph{}}}
	if len(xys) > 0 {
		p.Add(marks)
	}
	p.addLegend("crosses a threshold", marks)
}

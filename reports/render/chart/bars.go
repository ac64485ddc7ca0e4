package chart

import (
	"errors"
	"image/color"
	"slices"

	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// Bars is a bar chart of categories by series: one bar per category for
// a single series (counts, a histogram), a group of bars per category for
// several. Horizontal bars suit long category names (reasons, models);
// vertical ones suit short ordered ones (iteration counts).
type Bars struct {
	Title      string
	Categories []string
	Series     []Series
	Horizontal bool
	// Percent labels the value axis in percent (values are shares).
	Percent bool
	// XLabel names the category axis of vertical bars ("iterations").
	XLabel string
}

// MaxBars is the most categories a bar chart draws; callers cut longer
// lists (the data table keeps them all).
const MaxBars = 15

// SVG draws the chart; ErrNoData when there is no category or no value.
func (b Bars) SVG() ([]byte, error) {
	var all []float64
	for _, s := range b.Series {
		all = append(all, s.Values...)
	}
	if len(b.Categories) == 0 || len(points(all, func(float64) bool { return true })) == 0 {
		return nil, ErrNoData
	}
	if len(b.Categories) > MaxBars {
		return nil, errTooMany
	}
	p := newPlot()
	val, cat := &p.Y, &p.X
	if b.Horizontal {
		// The y axis grows upwards: reversed, the first category is on top.
		val, cat = &p.X, &p.Y
		b = b.reversed()
	}
	val.Min, val.Max = valueRange(all)
	val.Tick.Marker = valueTicks(b.Percent)
	cat.Min, cat.Max = -0.5, float64(len(b.Categories))-0.5
	cat.Tick.Marker = categoryTicks(b.Categories, MaxBars, b.Horizontal)
	cat.Tick.Length, cat.Width = 0, 0
	cat.Label.Text = b.XLabel
	if err := b.addBars(p); err != nil {
		return nil, err
	}
	return p.render(b.height(), b.Title)
}

// errTooMany is a caller's mistake: see MaxBars.
var errTooMany = errors.New("chart: more categories than MaxBars")

// height fits horizontal bars' categories, one line of text each at
// least, and gives vertical bars a line chart's height.
func (b Bars) height() vg.Length {
	if !b.Horizontal {
		return lineHeight
	}
	per := 12 + 6*len(b.Series)
	h := 36 + per*len(b.Categories)
	if len(b.Series) > 1 {
		h += 12 * len(b.Series) // the legend
	}
	return vg.Length(max(h, 80))
}

// addBars adds a bar chart per series, side by side within each
// category; missing values draw no bar.
func (b Bars) addBars(p *canvas) error {
	n := len(b.Series)
	band := vg.Points(float64(lineHeight-40) / float64(len(b.Categories)) * 0.7)
	if b.Horizontal {
		band = vg.Points(float64(6 + 6*n))
	}
	width := band / vg.Length(n)
	for i, s := range b.Series {
		vals := make(plotter.Values, len(b.Categories))
		for j := range vals {
			if j < len(s.Values) && finite(s.Values[j]) {
				vals[j] = s.Values[j]
			}
		}
		bars, err := plotter.NewBarChart(vals, width)
		if err != nil {
			return err
		}
		bars.Horizontal = b.Horizontal
		// A black outline separates bars on paper where fills are close.
		bars.Color = seriesColour(i)
		bars.LineStyle = draw.LineStyle{Color: color.Black, Width: vg.Points(0.5)}
		bars.Offset = -band/2 + width*vg.Length(i) + width/2
		if b.Horizontal {
			// Series 0 on top: the y axis grows upwards.
			bars.Offset = -bars.Offset
		}
		p.Add(bars)
		if n > 1 {
			p.addLegend(s.Name, bars)
		}
	}
	return nil
}

// reversed is b with its categories, and each series' values, in
// reverse order.
func (b Bars) reversed() Bars {
	b.Categories = slices.Clone(b.Categories)
	slices.Reverse(b.Categories)
	series := make([]Series, len(b.Series))
	for i, s := range b.Series {
		s.Values = slices.Clone(s.Values)
		for len(s.Values) < len(b.Categories) {
			s.Values = append(s.Values, nan)
		}
		slices.Reverse(s.Values)
		series[i] = s
	}
	b.Series = series
	return b
}

// Package chart draws small charts as inline SVG for orchstat's HTML
// pages, with gonum.org/v1/plot: a maintained pure-Go plotting library,
// so a page needs no script and no network to show them, and SVG stays
// small and prints sharply.
//
// Every chart is a fragment ready to sit in an HTML5 page: one <svg>
// element with a viewBox and width="100%" (it scales to its container),
// role="img", an aria-label and a <title>, and no XML prolog, namespace
// URL, font file or link: nothing that names anything outside the page.
// Text names fonts by family with generic fallbacks, which the browser
// resolves locally.
//
// Series are told apart by dash pattern and marker shape as well as by
// colour, and the colours differ in lightness, so a chart reads in
// greyscale and on paper. Output is deterministic: the same input gives
// the same bytes (no ids, no times), so pages can be kept as golden files.
package chart

import (
	"bytes"
	"errors"
	"fmt"
	"html"
	"image/color"
	"math"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgsvg"
)

// Width is every chart's width, in the viewBox's units (points). With
// the fonts below, text stays legible when a chart is scaled down to a
// 400-pixel window and is not huge on a wide one.
const Width = 320

// Series is one named series of values, one per category; NaN or an
// infinity marks a value the chart leaves out (the data table shows it).
type Series struct {
	Name   string
	Values []float64
}

// palette are the series' colours: the Okabe-Ito colour-blind-safe set,
// ordered so that neighbours differ in lightness (luma about 87, 162, 0
// and 151 of 255); dashes and glyphs, below, tell them apart in grey.
var palette = []color.RGBA{
	{0x00, 0x72, 0xb2, 0xff}, // blue
	{0xe6, 0x9f, 0x00, 0xff}, // orange
	{0x00, 0x00, 0x00, 0xff}, // black
	{0xcc, 0x79, 0xa7, 0xff}, // reddish purple
}

// alertColour draws thresholds and the points that cross them: vermillion,
// darker than orange in grey, and always with its own shape or dash.
var alertColour = color.RGBA{0xd5, 0x5e, 0x00, 0xff}

// dashes are the series' line patterns, in palette order.
var dashes = [][]vg.Length{
	nil,
	{vg.Points(5), vg.Points(2)},
	{vg.Points(1), vg.Points(2)},
	{vg.Points(6), vg.Points(2), vg.Points(1), vg.Points(2)},
}

// glyphs are the series' marker shapes, in palette order.
var glyphs = []draw.GlyphDrawer{
	draw.CircleGlyph{}, draw.BoxGlyph{}, draw.CrossGlyph{}, draw.PlusGlyph{},
}

func seriesColour(i int) color.Color     { return palette[i%len(palette)] }
func seriesDashes(i int) []vg.Length     { return dashes[i%len(dashes)] }
func seriesGlyph(i int) draw.GlyphDrawer { return glyphs[i%len(glyphs)] }

// sans is the face every text is measured and named in.
var sans = font.Font{Typeface: "Liberation", Variant: "Sans"}

// canvas is a plot with its legend, which is drawn above the plot
// rather than over its data.
type canvas struct {
	*plot.Plot
	legend []legendEntry
}

// legendEntry is one line of a legend: a name and how its marks look.
type legendEntry struct {
	name   string
	thumbs []plot.Thumbnailer
}

// newPlot is a plot with small sans-serif text and no title: the page's
// figcaption and the SVG's <title> name the chart.
func newPlot() *canvas {
	p := plot.New()
	for _, a := range []*plot.Axis{&p.X, &p.Y} {
		a.Label.TextStyle.Font = font.From(sans, tickFont)
		a.Tick.Label.Font = font.From(sans, tickFont)
	}
	return &canvas{Plot: p}
}

// addLegend adds a legend entry.
func (c *canvas) addLegend(name string, thumbs ...plot.Thumbnailer) {
	c.legend = append(c.legend, legendEntry{Label(name, 40), thumbs})
}

// Legend layout, in points: two columns when every name fits half the
// width.
const (
	legendLine  = 14 // an entry's text and legendPad
	legendPad   = 3
	legendThumb = 16
	legendFont  = 9
)

// tickFont is the size of the axes' text, in points: 10 pixels or more
// at any width from 400 pixels up.
const tickFont = 9

// legendColumns splits the legend into the columns it is drawn in.
func (c *canvas) legendColumns() [][]legendEntry {
	if len(c.legend) == 0 {
		return nil
	}
	sty := plot.NewLegend().TextStyle
	sty.Font = font.From(sans, legendFont)
	for _, e := range c.legend {
		if sty.Width(" "+e.name)+legendThumb > Width/2-8 || len(c.legend) == 1 {
			return [][]legendEntry{c.legend}
		}
	}
	half := (len(c.legend) + 1) / 2
	return [][]legendEntry{c.legend[:half], c.legend[half:]}
}

// drawLegend draws the legend's columns side by side in area.
func drawLegend(area draw.Canvas, cols [][]legendEntry) {
	for i, col := range cols {
		l := plot.NewLegend()
		l.TextStyle.Font = font.From(sans, legendFont)
		l.ThumbnailWidth = legendThumb
		l.Padding = legendPad
		l.Top, l.Left = true, true
		for _, e := range col {
			l.Add(e.name, e.thumbs...)
		}
		x := vg.Length(4 + i*Width/2)
		l.Draw(draw.Crop(area, x, 0, 0, -2))
	}
}

// nan marks a missing value.
var nan = math.NaN()

// finite reports whether v can be drawn.
func finite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }

// ErrNoData is returned for a chart with nothing to draw: the page says
// so in a line instead.
var ErrNoData = errors.New("chart: no value to draw")

// render draws p at Width×height, with its legend above, into an SVG
// fragment titled title.
func (c *canvas) render(height vg.Length, title string) ([]byte, error) {
	cols := c.legendColumns()
	var lh vg.Length
	for _, col := range cols {
		lh = max(lh, vg.Length(legendLine*len(col)+4))
	}
	svg := vgsvg.New(Width, height+lh)
	dc := draw.New(svg)
	// The top and rightmost ticks' labels reach beyond the plot: leave
	// them room.
	c.Draw(draw.Crop(dc, 0, -tickFont*1.5, 0, -lh-tickFont/2))
	drawLegend(draw.Crop(dc, 0, 0, height, 0), cols)
	var buf bytes.Buffer
	if _, err := svg.WriteTo(&buf); err != nil {
		return nil, err
	}
	return fragment(buf.Bytes(), Width, (height + lh).Points(), title)
}

// svgStart is vgsvg's root element with what precedes it: an XML prolog,
// a comment, fixed sizes in points and namespace URLs.
var svgStart = regexp.MustCompile(`(?s)\A.*?<svg\b[^>]*>`)

// textFont is how vgsvg styles each text: its face, spelled out, and
// its size. Only Liberation Sans at its defaults is drawn here, so the
// face is said once, on the root, where the texts inherit it.
var textFont = regexp.MustCompile(`font-family:Liberation Sans;font-variant:normal;font-weight:normal;font-style:normal;`)

// rootFont is the charts' face, with generic fallbacks so that a machine
// without Liberation Sans still draws the text in a similar one.
const rootFont = "Liberation Sans, Arial, Helvetica, sans-serif"

// fragment turns vgsvg's standalone document into an inline element:
// a root that scales (viewBox, width 100%), is an image to assistive
// technology, has a title, and names nothing outside the page (HTML's
// parser puts <svg> in the SVG namespace without xmlns). The face is
// named once, on the root (see textFont).
func fragment(doc []byte, w, h float64, title string) ([]byte, error) {
	loc := svgStart.FindIndex(doc)
	if loc == nil {
		return nil, errors.New("chart: vgsvg wrote no <svg> element")
	}
	t := html.EscapeString(Label(title, 300))
	var buf bytes.Buffer
	fmt.Fprintf(&buf, `<svg viewBox="0 0 %s %s" width="100%%" role="img" aria-label="%s" class="chart" font-family="%s">`+"\n<title>%s</title>\n",
		num(w), num(h), t, rootFont, t)
	body := textFont.ReplaceAll(doc[loc[1]:], nil)
	if bytes.Contains(body, []byte("font-family")) {
		return nil, errors.New("chart: text in a face other than Liberation Sans")
	}
	buf.Write(bytes.TrimLeft(body, "\n"))
	if bytes.Contains(buf.Bytes(), []byte("http")) || bytes.Contains(buf.Bytes(), []byte("url(")) {
		return nil, errors.New("chart: SVG names an outside resource")
	}
	return buf.Bytes(), nil
}

func num(v float64) string { return strconv.FormatFloat(v, 'g', 6, 64) }

// Label makes s fit a chart: control characters and invalid UTF-8 become
// U+FFFD (XML allows neither), and text longer than max runes is cut
// with an ellipsis. The data table beside a chart has the full text.
func Label(s string, max int) string {
	s = strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f || (r >= 0x80 && r <= 0x9f) {
			return utf8.RuneError
		}
		return r
	}, strings.ToValidUTF8(s, string(utf8.RuneError)))
	if utf8.RuneCountInString(s) <= max {
		return s
	}
	r := []rune(s)
	return string(r[:max-1]) + "…"
}

// labelWidth is the widest a category label is drawn, in points: 45% of
// the chart, room for the provider/model names and reasons orchstat
// charts (anthropic/claude-sonnet-4-5 is 120 points), with the bars
// keeping over half. A longer label is cut with an ellipsis to fit it.
const labelWidth = Width * 45 / 100

// categoryLabel is name as a category's label: Label's cleaning, and cut
// to width points of the ticks' font (not a count of runes, which
// cut "anthropic/claude-haiku-4-5" with room to spare).
func categoryLabel(name string, width vg.Length) string {
	s := Label(name, 300)
	sty := plot.NewLegend().TextStyle
	sty.Font = font.From(sans, tickFont)
	if sty.Width(s) <= width {
		return s
	}
	r := []rune(s)
	for len(r) > 1 && sty.Width(string(r)+"…") > width {
		r = r[:len(r)-1]
	}
	return string(r) + "…"
}

// valueTicks are plot's default ticks, labelled as percentages when
// percent is set (values are shares: 0.2 reads "20%").
func valueTicks(percent bool) plot.Ticker {
	return plot.TickerFunc(func(min, max float64) []plot.Tick {
		ticks := plot.DefaultTicks{}.Ticks(min, max)
		for i, t := range ticks {
			if t.Label == "" {
				continue
			}
			ticks[i].Label = ValueText(t.Value, percent)
		}
		return ticks
	})
}

// ValueText shows v as a chart's axis does: a share as a percentage,
// anything else with as few digits as it needs.
func ValueText(v float64, percent bool) string {
	if percent {
		return strconv.FormatFloat(v*100, 'g', 4, 64) + "%"
	}
	return strconv.FormatFloat(v, 'g', 6, 64)
}

// valueRange is the range a value axis must show: from 0 (or below, for
// negative values) to above the largest value, never empty.
func valueRange(values []float64) (lo, hi float64) {
	for _, v := range values {
		if finite(v) {
			lo, hi = math.Min(lo, v), math.Max(hi, v)
		}
	}
	if hi == lo {
		hi = lo + 1
	}
	return lo, hi + (hi-lo)*0.08
}

// spanRange is the range a value axis must show for points compared
// with each other (not bars, which start at 0): the values' span with a
// margin, never below 0 when no value is, never empty.
func spanRange(values []float64, percent bool) (lo, hi float64) {
	lo, hi = math.Inf(1), math.Inf(-1)
	for _, v := range values {
		if finite(v) {
			lo, hi = math.Min(lo, v), math.Max(hi, v)
		}
	}
	d := hi - lo
	if d == 0 {
		// One value: a span around it, of a whole unit when it is 0
		// (or a few points of a share).
		d = math.Abs(hi) * 0.2
		if d == 0 && percent {
			d = 0.05
		} else if d == 0 {
			d = 1
		}
	}
	floor := math.Inf(-1)
	if lo >= 0 {
		floor = 0
	}
	return math.Max(lo-d*0.2, floor), hi + d*0.2
}

// twoLines is name on up to two lines of at most width points, broken at
// a space, the second cut with an ellipsis if it must be.
func twoLines(name string, width vg.Length) string {
	s := Label(name, 300)
	sty := plot.NewLegend().TextStyle
	sty.Font = font.From(sans, tickFont)
	words := strings.Fields(s)
	first := ""
	for i, w := range words {
		next := strings.TrimSpace(first + " " + w)
		if sty.Width(next) > width {
			if i == 0 {
				return categoryLabel(s, width)
			}
			return first + "\n" + categoryLabel(strings.Join(words[i:], " "), width)
		}
		first = next
	}
	return first
}

// categoryTicks label categories 0..n-1, at most max of them evenly
// spaced (a month of days does not fit under a small chart). Labels
// along a vertical axis (a horizontal bar chart's) may take labelWidth;
// along the horizontal one, each only its share of the chart's width, so
// that neighbours do not run into each other.
func categoryTicks(names []string, max int, vertical bool) plot.ConstantTicks {
	step := 1
	if len(names) > max {
		step = (len(names) + max - 1) / max
	}
	width := vg.Length(labelWidth)
	if !vertical {
		// Short labels (dates) are spaced out until each fits whole: a
		// day cut to "2025-0…" names no day.
		sty := plot.NewLegend().TextStyle
		sty.Font = font.From(sans, tickFont)
		var widest vg.Length
		for _, n := range names {
			if w := sty.Width(Label(n, 300)); w > widest {
				widest = w
			}
		}
		for widest <= 90 && step < len(names) {
			shown := (len(names) + step - 1) / step
			if shown <= 2 || vg.Length((Width-40)/shown-6) >= widest {
				break
			}
			step++
		}
		shown := (len(names) + step - 1) / step
		// The value axis and its labels take about 40 points; a gap of
		// 6 keeps neighbours apart.
		width = min(width, vg.Length((Width-40)/shown-6))
	}
	var ticks plot.ConstantTicks
	for i, n := range names {
		label := ""
		if i%step == 0 {
			label = categoryLabel(n, width)
			if !vertical && strings.HasSuffix(label, "…") {
				// Under the chart there is room for a second line.
				label = twoLines(n, width)
			}
		}
		if label == "" && len(names) > 4*max {
			// A mark per category of a year of days is a solid band,
			// not a scale: only the labelled ones are drawn.
			continue
		}
		ticks = append(ticks, plot.Tick{Value: float64(i), Label: label})
	}
	return ticks
}

// lineStyle is series i's line.
func lineStyle(i int) draw.LineStyle {
	return draw.LineStyle{Color: seriesColour(i), Width: vg.Points(1.2), Dashes: seriesDashes(i)}
}

// points are the XYs of values at their category's index, skipping
// those that cannot be drawn.
func points(values []float64, keep func(float64) bool) plotter.XYs {
	var xys plotter.XYs
	for i, v := range values {
		if finite(v) && keep(v) {
			xys = append(xys, plotter.XY{X: float64(i), Y: v})
		}
	}
	return xys
}

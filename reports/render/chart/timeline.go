package chart

import (
	"errors"
	"image/color"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// Period is a stretch of whole days a bar of a Timeline covers: a day, a
// week or a month.
type Period struct {
	Start time.Time // midnight of its first day; only the date is read
	Days  int
}

// Timeline is sums over periods drawn as bars on a time axis: a period
// with nothing is no bar, and periods months apart are drawn months
// apart, where categories would draw them side by side. Several series
// are stacked, the first at the bottom (a day's calls by model).
type Timeline struct {
	Title   string
	Periods []Period
	// Series hold one value per period; NaN, infinities and values <= 0
	// draw nothing.
	Series []Series
	// XLabel names the time axis ("day (UTC)").
	XLabel string
}

// timelineHeight is a timeline's height, in points, a line chart's.
const timelineHeight = lineHeight

// SVG draws the chart; ErrNoData when no period has a value.
func (t Timeline) SVG() ([]byte, error) {
	if len(t.Periods) == 0 {
		return nil, ErrNoData
	}
	totals := make([]float64, len(t.Periods))
	some := false
	for _, s := range t.Series {
		if len(s.Values) != len(t.Periods) {
			return nil, errors.New("chart: a timeline series needs one value per period")
		}
		for i, v := range s.Values {
			if finite(v) && v > 0 {
				totals[i] += v
				some = true
			}
		}
	}
	if !some {
		return nil, ErrNoData
	}
	p := newPlot()
	first, last := dayNumber(t.Periods[0].Start), dayNumber(t.Periods[0].Start)+float64(t.Periods[0].Days)
	for _, pd := range t.Periods {
		first = min(first, dayNumber(pd.Start))
		last = max(last, dayNumber(pd.Start)+float64(max(pd.Days, 1)))
	}
	// A margin of a period at each end keeps the end bars off the axes.
	pad := max(1, float64(t.Periods[0].Days))
	p.X.Min, p.X.Max = first-pad, last+pad
	p.X.Tick.Marker = dateTicks(p.X.Min, p.X.Max)
	p.X.Label.Text = t.XLabel
	p.Y.Min, p.Y.Max = valueRange(totals)
	p.Y.Tick.Marker = valueTicks(false)
	p.Add(stackedBars{t})
	if len(t.Series) > 1 {
		for i, s := range t.Series {
			p.addLegend(s.Name, swatch{seriesColour(i)})
		}
	}
	return p.render(timelineHeight, t.Title)
}

// dayNumber is the days from 1970-01-01 to t's date.
func dayNumber(t time.Time) float64 {
	d := time.Date(t.Year(), t.Month(), t.Day(), 0, 0, 0, 0, time.UTC)
	return float64(d.Unix() / 86400)
}

// dayTime is dayNumber's inverse.
func dayTime(n float64) time.Time { return time.Unix(int64(n)*86400, 0).UTC() }

// plotWidth is about the width the time axis has, in points: the chart
// less the value axis and its labels.
const plotWidth = Width - 40

// dateTicks chooses ticks on a time axis in days, the finest steps whose
// labels fit whole side by side: days, weeks (Mondays), months, quarters,
// years. Only labelled ticks are drawn: a tick a day over a year is a
// solid bar, not a scale.
func dateTicks(lo, hi float64) plot.Ticker {
	return plot.TickerFunc(func(float64, float64) []plot.Tick {
		sty := plot.NewLegend().TextStyle
		sty.Font = font.From(sans, tickFont)
		for _, s := range dateSteps {
			ticks := s.ticks(dayTime(lo), dayTime(hi))
			if len(ticks) == 0 {
				continue
			}
			var widest vg.Length
			for _, tk := range ticks {
				widest = max(widest, sty.Width(tk.Label))
			}
			if vg.Length(len(ticks))*(widest+8) <= plotWidth {
				return ticks
			}
		}
		// Decades: the first and last year.
		return []plot.Tick{{Value: lo, Label: dayTime(lo).Format("2006")}, {Value: hi, Label: dayTime(hi).Format("2006")}}
	})
}

// dateStep is one spacing of a time axis's ticks.
type dateStep struct {
	// next is the first tick at or after t, then each one after.
	next   func(t time.Time, first bool) time.Time
	layout string // how a tick reads
}

var dateSteps = []dateStep{
	{func(t time.Time, first bool) time.Time { return nextDay(t, first, 1) }, "01-02"},
	{func(t time.Time, first bool) time.Time { return nextDay(t, first, 2) }, "01-02"},
	{nextMonday, "01-02"},
	{func(t time.Time, first bool) time.Time { return nextMonth(t, first, 1) }, "2006-01"},
	{func(t time.Time, first bool) time.Time { return nextMonth(t, first, 3) }, "2006-01"},
	{func(t time.Time, first bool) time.Time { return nextMonth(t, first, 6) }, "2006-01"},
	{func(t time.Time, first bool) time.Time { return nextMonth(t, first, 12) }, "2006"},
}

// ticks are the step's ticks from lo to hi. A day's label names its year
// on the first tick and where the year changes: the axis says no year.
func (s dateStep) ticks(lo, hi time.Time) []plot.Tick {
	var out []plot.Tick
	for t := s.next(lo, true); !t.After(hi); t = s.next(t, false) {
		label := t.Format(s.layout)
		if s.layout == "01-02" && (len(out) == 0 || t.Year() != dayTime(out[len(out)-1].Value).Year()) {
			label = t.Format("2006-01-02")
		}
		out = append(out, plot.Tick{Value: dayNumber(t), Label: label})
		if len(out) > 60 {
			return nil // too fine: the next step
		}
	}
	return out
}

func nextDay(t time.Time, first bool, n int) time.Time {
	if first {
		return time.Date(t.Year(), t.Month(), t.Day(), 0, 0, 0, 0, time.UTC).AddDate(0, 0, 1)
	}
	return t.AddDate(0, 0, n)
}

func nextMonday(t time.Time, first bool) time.Time {
	if !first {
		return t.AddDate(0, 0, 7)
	}
	d := nextDay(t, true, 1)
	for d.Weekday() != time.Monday {
		d = d.AddDate(0, 0, 1)
	}
	return d
}

func nextMonth(t time.Time, first bool, n int) time.Time {
	if !first {
		return t.AddDate(0, n, 0)
	}
	m := time.Date(t.Year(), t.Month(), 1, 0, 0, 0, 0, time.UTC).AddDate(0, 1, 0)
	for (int(m.Month())-1)%n != 0 {
		m = m.AddDate(0, 1, 0)
	}
	return m
}

// stackedBars draws a Timeline's bars at their periods' places.
type stackedBars struct{ t Timeline }

// minBar is the narrowest and lowest a bar is drawn, in points, so that
// a day in a span of years, or a small value beside a large one, still
// shows.
const minBar = 1.5

func (s stackedBars) Plot(c draw.Canvas, plt *plot.Plot) {
	trX, trY := plt.Transforms(&c)
	for i, pd := range s.t.Periods {
		start := dayNumber(pd.Start)
		x0, x1 := trX(start), trX(start+float64(max(pd.Days, 1)))
		gap := (x1 - x0) * 0.15
		x0, x1 = x0+gap, x1-gap
		if x1-x0 < minBar {
			mid := (x0 + x1) / 2
			x0, x1 = mid-minBar/2, mid+minBar/2
		}
		base := 0.0
		for j, ser := range s.t.Series {
			v := ser.Values[i]
			if !finite(v) || v <= 0 {
				continue
			}
			y0, y1 := trY(base), trY(base+v)
			// A period with 2 calls beside one with 300 still shows.
			y1 = max(y1, y0+minBar)
			c.FillPolygon(seriesColour(j), []vg.Point{{X: x0, Y: y0}, {X: x1, Y: y0}, {X: x1, Y: y1}, {X: x0, Y: y1}})
			base += v
		}
	}
}

// swatch is a legend's thumbnail of a stacked series: its colour.
type swatch struct{ c color.Color }

func (s swatch) Thumbnail(c *draw.Canvas) {
	r := c.Rectangle
	c.FillPolygon(s.c, []vg.Point{r.Min, {X: r.Max.X, Y: r.Min.Y}, r.Max, {X: r.Min.X, Y: r.Max.Y}})
}

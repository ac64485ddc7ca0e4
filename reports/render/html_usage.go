package render

import (
	"cmp"
	"math"
	"slices"
	"time"

	"github.com/orchstat/orchstat/model/reports"
	"github.com/orchstat/orchstat/reports/render/chart"
)

// usageFigures are the charts of the usage page's main section: for days,
// weeks and months, calls and cost per period by model on a time axis,
// so that periods months apart are drawn months apart; for sessions and
// models, the cost of each.
func usageFigures(u reports.Usage) []htmlFigure {
	periods, rows := usagePeriods(u)
	if len(periods) == 0 {
		return []htmlFigure{usageCostFigure(u)}
	}
	unit := u.By + " (" + u.Timezone + ")"
	calls := func(r reports.UsageRow) float64 { return float64(r.Calls) }
	cost := func(r reports.UsageRow) float64 {
		if r.CostUSD == nil {
			return math.NaN()
		}
		return *r.CostUSD
	}
	return []htmlFigure{
		usageTimeline("Calls per "+u.By, "calls", unit, u, periods, rows, calls, func(r reports.UsageRow) string { return itoa(r.Calls) }),
		usageTimeline("Cost per "+u.By+" (USD)", "cost", unit, u, periods, rows, cost, usageCostText),
	}
}

// usagePeriods are the periods of a day, week or month view's rows, and
// those rows; none for another view, or when a key is not a period's (the
// row of undated calls is left out: it has no place in time, and the
// table shows it).
func usagePeriods(u reports.Usage) ([]chart.Period, []reports.UsageRow) {
	layout, days := time.DateOnly, 1
	switch u.By {
	case "day":
	case "week":
		days = 7
	case "month":
		layout = "2006-01"
	default:
		return nil, nil
	}
	var periods []chart.Period
	var rows []reports.UsageRow
	for _, r := range u.Rows {
		t, err := time.Parse(layout, r.Key)
		if err != nil {
			if r.Key == undatedKey {
				continue
			}
			return nil, nil
		}
		n := days
		if u.By == "month" {
			n = t.AddDate(0, 1, 0).YearDay() - t.YearDay()
			if n <= 0 { // December
				n = 31
			}
		}
		periods, rows = append(periods, chart.Period{Start: t, Days: n}), append(rows, r)
	}
	return periods, rows
}

// undatedKey is the period view's row of calls with no recorded time.
const undatedKey = "(no time)"

// usageSeriesMax is how many models a usage chart names; the others are
// stacked as one. The chart package has four series' looks.
const usageSeriesMax = 3

// usageTimeline is one figure of usage over periods, stacked by model
// when there are several, with its data table (the period's total as the
// table format shows it, then each model's).
func usageTimeline(title, what, unit string, u reports.Usage, periods []chart.Period, rows []reports.UsageRow,
	get func(reports.UsageRow) float64, text func(reports.UsageRow) string) htmlFigure {
	// Ranked by calls in both charts, so that a model keeps its colour.
	models := usageTopModels(u.Total.Models, func(r reports.UsageRow) float64 { return float64(r.Calls) })
	tl := chart.Timeline{Title: title, Periods: periods, XLabel: unit}
	t := &htmlTable{Head: []htmlHead{{Text: u.By}, {Text: what, Numeric: true}}}
	if len(models) <= 1 {
		s := chart.Series{Name: what}
		for _, r := range rows {
			s.Values = append(s.Values, get(r))
			t.Rows = append(t.Rows, htmlRow{Cells: []htmlCell{{Text: escapeControls(r.Key)}, {Text: text(r), Numeric: true}}})
		}
		tl.Series = []chart.Series{s}
		return figure(title, tl, t)
	}
	for _, m := range models {
		tl.Series = append(tl.Series, chart.Series{Name: m.name})
		t.Head = append(t.Head, htmlHead{Text: escapeControls(m.name), Numeric: true})
	}
	for _, r := range rows {
		row := htmlRow{Cells: []htmlCell{{Text: escapeControls(r.Key)}, {Text: text(r), Numeric: true}}}
		sums := make([]float64, len(models))
		for _, rm := range r.Models {
			i := slices.IndexFunc(models, func(m usageModel) bool { return m.matches(rm) })
			if i < 0 && models[len(models)-1].name == otherModels {
				i = len(models) - 1
			}
			if i < 0 {
				continue
			}
			if v := get(rm); !math.IsNaN(v) {
				sums[i] += v
			}
		}
		for i, v := range sums {
			tl.Series[i].Values = append(tl.Series[i].Values, v)
			cell := countText(v)
			if what == "cost" {
				cell = costText(&v)
			}
			row.Cells = append(row.Cells, htmlCell{Text: cell, Numeric: true})
		}
		t.Rows = append(t.Rows, row)
	}
	f := figure(title, tl, t)
	f.Note = "By model."
	if what == "cost" {
		f.Note = "By model; a model without a price adds no cost."
	}
	return f
}

// usageModel is a model a usage chart names, or the rest ("other
// models", with no key).
type usageModel struct {
	name, provider, model string
}

func (m usageModel) matches(r reports.UsageRow) bool {
	return m.name != otherModels && r.Provider == m.provider && r.Model == m.model
}

const otherModels = "other models"

// usageTopModels are the models with the most of get over the whole
// view, at most usageSeriesMax of them, then the rest as one when there
// is a rest.
func usageTopModels(all []reports.UsageRow, get func(reports.UsageRow) float64) []usageModel {
	ms := slices.Clone(all)
	val := func(r reports.UsageRow) float64 {
		if v := get(r); !math.IsNaN(v) {
			return v
		}
		return 0
	}
	slices.SortStableFunc(ms, func(a, b reports.UsageRow) int { return cmp.Compare(val(b), val(a)) })
	var out []usageModel
	for i, m := range ms {
		if i == usageSeriesMax && len(ms) > usageSeriesMax+1 {
			return append(out, usageModel{name: otherModels})
		}
		name := m.Model
		if name == "" {
			name = joinKey(m.Provider, "-")
		}
		out = append(out, usageModel{name: name, provider: m.Provider, model: m.Model})
	}
	return out
}

package simulated

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/orchstat/orchstat/model/episode"
)

// The catalog of a replay's figures: one declaration per figure, which
// Result's fields, Diff's keys, the verdicts and every renderer of
// simulate (table, JSON, HTML) read. A figure added here shows
// everywhere; none can be named in one place and missing in another. How
// each is counted from a replay's sums is rules/replay's (figureTotals),
// and its test fails on a figure with no total.

// Unit is how a figure is counted, and so how it is written.
type Unit int

const (
	// UnitRate is a share of 0 to 1, written as a percentage; a
	// difference of rates is in points.
	UnitRate Unit = iota
	// UnitCount is a number of things, written as a whole number.
	UnitCount
	// UnitSeconds is a time in seconds.
	UnitSeconds
	// UnitUSD is an amount in dollars.
	UnitUSD
)

// Figure is one figure of a replay.
type Figure struct {
	// Key is the figure's name in JSON: Result's field and Diff's key.
	Key string
	// Label is its name in tables and on the page.
	Label string
	// Kind is the episode kind it is counted from.
	Kind episode.Kind
	Unit Unit

	field func(*Result) *Metric
	// say is the verdict's words for a difference d whose interval
	// excludes zero ("" for nothing to say), or nil when the verdict
	// never names the figure.
	say func(d float64, base, r Result) string
}

// Of is the figure's value in r.
func (f Figure) Of(r Result) Metric { return *f.field(&r) }

// In is the figure's field in r, for the replay that fills it.
func (f Figure) In(r *Result) *Metric { return f.field(r) }

// figureCatalog is every figure, in the order simulate shows them.
var figureCatalog = []Figure{
	{Key: "success_rate", Label: "success rate", Kind: episode.KindProvider, Unit: UnitRate,
		field: func(r *Result) *Metric { return &r.SuccessRate },
		say: func(v float64, base, r Result) string {
			return fmt.Sprintf("%.1f points %s requests succeed (%.1f%% instead of %.1f%%)",
				math.Abs(v)*100, moreFewer(v), r.SuccessRate.Value*100, base.SuccessRate.Value*100)
		}},
	{Key: "attempts", Label: "attempts", Kind: episode.KindProvider, Unit: UnitCount,
		field: func(r *Result) *Metric { return &r.Attempts },
		say: func(v float64, base, _ Result) string {
			return fmt.Sprintf("%s attempts (%+.0f, %+.1f%%)", moreFewer(v), v, pct(v, base.Attempts.Value))
		}},
	{Key: "wasted_attempts", Label: "wasted attempts", Kind: episode.KindProvider, Unit: UnitCount,
		field: func(r *Result) *Metric { return &r.Wasted },
		say:   func(v float64, _, _ Result) string { return fmt.Sprintf("%s wasted retries (%+.0f)", moreFewer(v), v) }},
	{Key: "backoff_seconds", Label: "time in backoff (s)", Kind: episode.KindProvider, Unit: UnitSeconds,
		field: func(r *Result) *Metric { return &r.BackoffSeconds },
		say: func(v float64, base, _ Result) string {
			return fmt.Sprintf("%s time in backoff (%+.0f s, %+.1f%%)", moreLess(v), v, pct(v, base.BackoffSeconds.Value))
		}},
	{Key: "resolution_p50_seconds", Label: "time to resolution p50 (s)", Kind: episode.KindProvider, Unit: UnitSeconds,
		field: func(r *Result) *Metric { return &r.ResolutionP50 }},
	{Key: "resolution_p95_seconds", Label: "time to resolution p95 (s)", Kind: episode.KindProvider, Unit: UnitSeconds,
		field: func(r *Result) *Metric { return &r.ResolutionP95 },
		say: func(v float64, base, r Result) string {
			return fmt.Sprintf("a %s p95 time to resolution (%.1f s instead of %.1f s)", longerShorter(v), r.ResolutionP95.Value, base.ResolutionP95.Value)
		}},
	{Key: "halts", Label: "halts", Kind: episode.KindProvider, Unit: UnitCount,
		field: func(r *Result) *Metric { return &r.Halts },
		say: func(v float64, _, r Result) string {
			if v <= 0 {
				return ""
			}
			return fmt.Sprintf("%.0f requests stopped by a limit (budget, cap or signature halt)", r.Halts.Value)
		}},
	{Key: "cost_usd", Label: "cost (USD, estimated)", Kind: episode.KindProvider, Unit: UnitUSD,
		field: func(r *Result) *Metric { return &r.CostUSD },
		say: func(v float64, _, r Result) string {
			if !r.HasCost {
				return ""
			}
			return fmt.Sprintf("an estimated $%.2f %s cost", math.Abs(v), moreLess(v))
		}},
	{Key: "l2_success_rate", Label: "L2 loops that pass", Kind: episode.KindL2, Unit: UnitRate,
		field: func(r *Result) *Metric { return &r.L2SuccessRate },
		say: func(_ float64, base, r Result) string {
			return fmt.Sprintf("%.0f%% of L2 loops pass instead of %.0f%%", r.L2SuccessRate.Value*100, base.L2SuccessRate.Value*100)
		}},
	{Key: "l2_iterations", Label: "L2 iterations", Kind: episode.KindL2, Unit: UnitCount,
		field: func(r *Result) *Metric { return &r.L2Iterations },
		say:   func(v float64, _, _ Result) string { return fmt.Sprintf("%s L2 iterations (%+.0f)", moreFewer(v), v) }},
	{Key: "escalations", Label: "escalations to L3", Kind: episode.KindL2, Unit: UnitCount,
		field: func(r *Result) *Metric { return &r.Escalations },
		say: func(v float64, base, r Result) string {
			return fmt.Sprintf("%s escalations to L3 (%.0f instead of %.0f)", moreFewer(v), r.Escalations.Value, base.Escalations.Value)
		}},
	{Key: "l2_non_improving_stops", Label: "non-improving stops", Kind: episode.KindL2, Unit: UnitCount,
		field: func(r *Result) *Metric { return &r.NonImproving }},
	{Key: "diagnoses", Label: "L3 diagnoses", Kind: episode.KindL3, Unit: UnitCount,
		field: func(r *Result) *Metric { return &r.Diagnoses },
		say: func(v float64, base, r Result) string {
			return fmt.Sprintf("%s L3 diagnoses (%.0f instead of %.0f)", moreFewer(v), r.Diagnoses.Value, base.Diagnoses.Value)
		}},
}

// Figures is the catalog: every figure, in the order simulate shows them.
func Figures() []Figure { return slices.Clone(figureCatalog) }

// FigureOf is the figure of the catalog whose key is key.
func FigureOf(key string) (Figure, bool) {
	i := slices.IndexFunc(figureCatalog, func(f Figure) bool { return f.Key == key })
	if i < 0 {
		return Figure{}, false
	}
	return figureCatalog[i], true
}

// Shown are the figures a replay whose baseline is base shows: the cost
// only when some episode recorded one, and a kind's figures only when
// the record has episodes of that kind (provider requests always).
func Shown(base Result) []Figure {
	var out []Figure
	for _, f := range figureCatalog {
		if f.shown(base) {
			out = append(out, f)
		}
	}
	return out
}

func (f Figure) shown(r Result) bool {
	switch {
	case f.Key == "cost_usd":
		return r.HasCost
	case f.Kind == episode.KindL2:
		return r.L2Loops > 0
	case f.Kind == episode.KindL3:
		return r.L3Runs > 0
	}
	return true
}

// replayed reports whether r replayed some episode f is counted from.
func (f Figure) replayed(r Result) bool {
	switch f.Kind {
	case episode.KindL2:
		return r.L2Loops > 0
	case episode.KindL3:
		return r.L3Runs > 0
	}
	return r.Episodes > 0
}

// EstimatedOf says how many of r's outcomes of kind are estimated, of
// how many, and the row's label; ok is false for a kind that is never
// estimated (L3 is replayed exactly).
func EstimatedOf(r Result, kind episode.Kind) (label string, estimated, total int, ok bool) {
	switch kind {
	case episode.KindProvider:
		return "outcomes estimated", r.Estimated, r.Episodes, true
	case episode.KindL2:
		return "L2 outcomes estimated", r.L2Estimated, r.L2Loops, true
	}
	return "", 0, 0, false
}

// Estimated reports whether some of r's outcomes of the figure's kind are
// estimated. The baseline's never are: it is the record.
func (f Figure) Estimated(r Result) bool {
	_, n, _, ok := EstimatedOf(r, f.Kind)
	return ok && n > 0
}

// Text writes m as simulate shows the figure: the value, then its 95%
// interval ("[−63.9 to −26.6]") unless exact, then "est." when estimated.
// A count is a whole number (212, not 212.0), a rate a percentage (a
// difference of rates in points, "pp"), and a negative number has a
// minus sign. NaN, a figure over no episodes, is "-".
func (f Figure) Text(m Metric, diff, estimated bool) string {
	if math.IsNaN(m.Value) {
		return "-"
	}
	unit, scale := "", 1.0
	switch f.Unit {
	case UnitRate:
		unit, scale = "%", 100
		if diff {
			unit = " pp"
		}
	}
	prec := 1
	switch {
	case f.Unit == UnitCount && whole(m.Value) && (m.Exact || whole(m.Lo) && whole(m.Hi)):
		prec = 0
	case f.Unit == UnitUSD || math.Abs(m.Value*scale) < 10:
		prec = 2
	}
	num := func(v float64) string {
		if math.IsNaN(v) {
			return "-"
		}
		s := strconv.FormatFloat(v*scale, 'f', prec, 64)
		if strings.Trim(s, "-0.") == "" {
			return strings.TrimPrefix(s, "-") // no "-0.0"
		}
		if s[0] == '-' {
			return "−" + s[1:]
		}
		return s
	}
	s := num(m.Value) + unit
	if !m.Exact {
		s += " [" + num(m.Lo) + " to " + num(m.Hi) + "]"
		if estimated {
			s += " est."
		}
	}
	return s
}

// whole reports whether v is a whole number, as a count is.
func whole(v float64) bool {
	return !math.IsNaN(v) && !math.IsInf(v, 0) && math.Abs(v-math.Round(v)) < 1e-9
}

// Unrecorded reports whether the record gives f nothing to measure:
// times to resolution when the record's p95 is at most the resolution
// histogram's first bin, a millisecond (transcripts that record no
// durations put every call there). Such a figure shows as "-", not as
// 0.00 s, which would read as instant.
func (f Figure) Unrecorded(base Result) bool {
	switch f.Key {
	case "resolution_p50_seconds", "resolution_p95_seconds":
		return base.ResolutionP95.Value <= 0.001
	}
	return false
}

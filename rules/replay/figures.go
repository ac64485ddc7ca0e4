package replay

import "github.com/orchstat/orchstat/model/simulated"

// figureTotals computes each figure of the catalog (model/simulated)
// from a block's sums. The catalog declares the figures; how each is
// counted from the replay's sums is the replay's, and
// TestEveryFigureHasATotal keeps the two lists the same.
var figureTotals = map[string]func(*sums) float64{
	"success_rate":           func(t *sums) float64 { return ratio(t.success, t.episodes) },
	"attempts":               func(t *sums) float64 { return t.attempts },
	"wasted_attempts":        func(t *sums) float64 { return t.wasted },
	"backoff_seconds":        func(t *sums) float64 { return t.backoff },
	"resolution_p50_seconds": func(t *sums) float64 { return histQuantile(&t.hist, 0.5) },
	"resolution_p95_seconds": func(t *sums) float64 { return histQuantile(&t.hist, 0.95) },
	"halts":                  func(t *sums) float64 { return t.halts },
	"cost_usd":               func(t *sums) float64 { return t.cost },
	"l2_success_rate":        func(t *sums) float64 { return ratio(t.l2success, t.l2loops) },
	"l2_iterations":          func(t *sums) float64 { return t.l2iterations },
	"escalations":            func(t *sums) float64 { return t.escalations },
	"l2_non_improving_stops": func(t *sums) float64 { return t.l2stops },
	"diagnoses":              func(t *sums) float64 { return t.diagnoses },
}

// catalog is the figures in the catalog's order, and totals their
// totals in the same order: the bootstrap indexes both by position.
var (
	catalog = simulated.Figures()
	totals  = totalsOf(catalog)
)

func totalsOf(figs []simulated.Figure) []func(*sums) float64 {
	out := make([]func(*sums) float64, len(figs))
	for i, f := range figs {
		out[i] = figureTotals[f.Key]
	}
	return out
}

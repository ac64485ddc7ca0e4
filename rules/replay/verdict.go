package replay

import (
	"fmt"
	"math"
	"strings"
)

// Verdict says in plain words what r changes against the baseline: one
// paragraph, naming only differences whose interval excludes zero as
// clear, and saying how much of it is estimated.
func Verdict(base, r Result) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: ", r.Policy)
	if r.Episodes == 0 && r.L2Loops == 0 {
		b.WriteString("no recorded episodes to replay.")
		return b.String()
	}
	d := r.Diff
	clear := func(name string) (float64, bool) {
		m := d[name]
		return m.Value, !math.IsNaN(m.Lo) && (m.Lo > 0 || m.Hi < 0)
	}
	var said []string
	if r.Episodes == 0 {
		// Only loops: the provider figures are undefined.
	} else if v, ok := clear("success_rate"); ok {
		dir := "more"
		if v < 0 {
			dir = "fewer"
		}
		said = append(said, fmt.Sprintf("%.1f points %s requests succeed (%.1f%% instead of %.1f%%)",
			math.Abs(v)*100, dir, r.SuccessRate.Value*100, base.SuccessRate.Value*100))
	} else {
		said = append(said, fmt.Sprintf("success stays at about %.1f%%", r.SuccessRate.Value*100))
	}
	if v, ok := clear("attempts"); ok {
		said = append(said, fmt.Sprintf("%s attempts (%+.0f, %+.1f%%)", moreFewer(v), v, pct(v, base.Attempts.Value)))
	}
	if v, ok := clear("wasted_attempts"); ok {
		said = append(said, fmt.Sprintf("%s wasted retries (%+.0f)", moreFewer(v), v))
	}
	if v, ok := clear("backoff_seconds"); ok {
		said = append(said, fmt.Sprintf("%s time in backoff (%+.0f s, %+.1f%%)", moreLess(v), v, pct(v, base.BackoffSeconds.Value)))
	}
	if v, ok := clear("resolution_p95_seconds"); ok {
		said = append(said, fmt.Sprintf("a %s p95 time to resolution (%.1f s instead of %.1f s)", longerShorter(v), r.ResolutionP95.Value, base.ResolutionP95.Value))
	}
	if v, ok := clear("halts"); ok && v > 0 {
		said = append(said, fmt.Sprintf("%.0f requests stopped by a limit (budget, cap or signature halt)", r.Halts.Value))
	}
	if r.HasCost {
		if v, ok := clear("cost_usd"); ok {
			said = append(said, fmt.Sprintf("an estimated $%.2f %s cost", math.Abs(v), moreLess(v)))
		}
	}
	if r.L2Loops > 0 {
		if _, ok := clear("l2_success_rate"); ok {
			said = append(said, fmt.Sprintf("%.0f%% of L2 loops pass instead of %.0f%%", r.L2SuccessRate.Value*100, base.L2SuccessRate.Value*100))
		}
		if v, ok := clear("escalations"); ok {
			said = append(said, fmt.Sprintf("%s escalations to L3 (%.0f instead of %.0f)", moreFewer(v), r.Escalations.Value, base.Escalations.Value))
		}
		if v, ok := clear("l2_iterations"); ok {
			said = append(said, fmt.Sprintf("%s L2 iterations (%+.0f)", moreFewer(v), v))
		}
	}
	if v, ok := clear("diagnoses"); ok && r.L3Runs > 0 {
		said = append(said, fmt.Sprintf("%s L3 diagnoses (%.0f instead of %.0f)", moreFewer(v), r.Diagnoses.Value, base.Diagnoses.Value))
	}
	if len(r.Unchanged) > 0 {
		var kinds []string
		for _, k := range r.Unchanged {
			kinds = append(kinds, kindWords[k])
		}
		said = append(said, fmt.Sprintf("it changes nothing %s depend on, so their figures are the record's",
			strings.Join(kinds, " or ")))
	}
	b.WriteString(strings.Join(said, "; "))
	b.WriteString(". ")
	est, n := r.Estimated+r.L2Estimated, r.Episodes+r.L2Loops
	switch {
	case est == 0:
		fmt.Fprintf(&b, "Every outcome is fixed by the record (%d of %d exact).", n, n)
	default:
		fmt.Fprintf(&b, "%d of %d outcomes (%.1f%%) are estimated, because they go beyond what the traces record; the intervals carry that uncertainty.",
			est, n, 100*float64(est)/float64(n))
	}
	return b.String()
}

var kindWords = map[Kind]string{KindProvider: "provider requests", KindL2: "L2 loops", KindL3: "L3 steps"}

func pct(v, base float64) float64 {
	if base == 0 {
		return math.NaN()
	}
	return 100 * v / base
}

func moreFewer(v float64) string {
	if v > 0 {
		return "more"
	}
	return "fewer"
}

func moreLess(v float64) string {
	if v > 0 {
		return "more"
	}
	return "less"
}

func longerShorter(v float64) string {
	if v > 0 {
		return "longer"
	}
	return "shorter"
}

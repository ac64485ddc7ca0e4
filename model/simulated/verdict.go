package simulated

import (
	"fmt"
	"math"
	"strings"

	"github.com/orchstat/orchstat/model/episode"
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
	var said []string
	for _, f := range figureCatalog {
		if f.say == nil || !f.replayed(r) {
			continue
		}
		m := r.Diff[f.Key]
		if !math.IsNaN(m.Lo) && (m.Lo > 0 || m.Hi < 0) {
			if s := f.say(m.Value, base, r); s != "" {
				said = append(said, s)
			}
		} else if f.Key == "success_rate" {
			// The record's figure, not the replay's: a replay within its
			// interval of the record is the record, and quoting its own
			// 98.0% beside a record of 97.4% reads as a change.
			s := fmt.Sprintf("success stays at the record's %.1f%%", base.SuccessRate.Value*100)
			if d := r.SuccessRate.Value - base.SuccessRate.Value; math.Abs(d) >= 0.0005 {
				s += fmt.Sprintf(" (%.1f%% replayed; the difference is within its interval)", r.SuccessRate.Value*100)
			}
			said = append(said, s)
		}
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

var kindWords = map[episode.Kind]string{episode.KindProvider: "provider requests", episode.KindL2: "L2 loops", episode.KindL3: "L3 steps"}

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

package render

import (
	"fmt"
	"io"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/orchstat/orchstat/model/reports"
)

// Exposition is a text format Prometheus reads counters in.
type Exposition int

const (
	// OpenMetrics is OpenMetrics 1.0 text: a counter's family is named
	// without _total, its sample with it, with # UNIT lines and # EOF.
	OpenMetrics Exposition = iota
	// PromText is Prometheus's text format 0.0.4, which node_exporter's
	// textfile collector parses: there a counter's # TYPE names the
	// sample, _total included, and a # UNIT or # EOF line is a comment
	// (given OpenMetrics, node_exporter 1.5 reads every counter as
	// untyped and drops its help).
	PromText
)

// ContentType is the format's HTTP content type.
func (e Exposition) ContentType() string {
	if e == OpenMetrics {
		return "application/openmetrics-text; version=1.0.0; charset=utf-8"
	}
	return "text/plain; version=0.0.4; charset=utf-8"
}

// FoldedGauge names the gauge that says how many models each family's
// counters count under model="other".
const FoldedGauge = "orchstat_models_folded"

// Counters writes the store's counters: every counter of specs, one
// sample per group of its family that holds its count (a sum nothing
// recorded is 0: a counter has counted nothing), the families in specs'
// order and the samples in their labels' order; then a gauge of the
// models folded into model="other" per family whose counters have a
// model label, 0 when none was.
func Counters(w io.Writer, e Exposition, specs []reports.CounterSpec, groups []reports.CounterGroup, folded []reports.Folded) error {
	var b strings.Builder
	for _, s := range specs {
		var lines []string
		for _, g := range groups {
			if g.Family != s.Family {
				continue
			}
			v, ok := g.Counts[s.Count]
			if !ok {
				continue
			}
			n := 0.0
			if v != nil {
				n = *v
			}
			lines = append(lines, s.Name+"_total"+promLabels(g.Labels)+" "+counterValue(n))
		}
		sort.Strings(lines)
		family := s.Name
		if e == PromText {
			family += "_total"
		}
		fmt.Fprintf(&b, "# HELP %s %s\n# TYPE %s counter\n", family, escapeHelp(s.Help), family)
		if s.Unit != "" && e == OpenMetrics {
			fmt.Fprintf(&b, "# UNIT %s %s\n", family, s.Unit)
		}
		for _, l := range lines {
			b.WriteString(l + "\n")
		}
	}
	fmt.Fprintf(&b, "# HELP %s Models counted under model=\"%s\", beyond the top models by volume.\n# TYPE %s gauge\n",
		FoldedGauge, reports.OtherModel, FoldedGauge)
	for _, f := range modelFamilies(specs) {
		n := 0
		for _, fo := range folded {
			if fo.Family == f {
				n = len(fo.Models)
				if e == PromText {
					fmt.Fprintf(&b, "# %s folds %d %s models into model=\"%s\": %s\n", FoldedGauge, n, f,
						reports.OtherModel, escapeHelp(strings.Join(fo.Models, ", ")))
				}
			}
		}
		fmt.Fprintf(&b, "%s{family=\"%s\"} %d\n", FoldedGauge, f, n)
	}
	if e == OpenMetrics {
		b.WriteString("# EOF\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// modelFamilies are the families with a counter split by model, in
// specs' order.
func modelFamilies(specs []reports.CounterSpec) []reports.Family {
	var out []reports.Family
	for _, s := range specs {
		has := false
		for _, l := range s.Labels {
			has = has || l == "model"
		}
		if has && !slices.Contains(out, s.Family) {
			out = append(out, s.Family)
		}
	}
	return out
}

// WriteFileAtomic writes text to path through a temporary file in the
// same folder, renamed over path: node_exporter's textfile collector, or
// any reader, sees the old file or the new, never half of one.
func WriteFileAtomic(path string, text []byte) error {
	return writeAtomic(path, text)
}

// counterValue is a counter's sample: a whole count as it is, anything
// else (dollars, seconds) to 12 significant digits. A float sum's last
// bits follow the order the store adds its rows in, which a checkpoint can
// change; a counter that came back 1e-18 lower would read to Prometheus as
// a reset, and increase() would count its whole value again. Rounding is
// monotonic, so a larger sum never prints smaller.
func counterValue(v float64) string {
	if v == math.Trunc(v) && math.Abs(v) < 1<<53 {
		return strconv.FormatFloat(v, 'f', -1, 64)
	}
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return promValue(v)
	}
	return strconv.FormatFloat(v, 'g', 12, 64)
}

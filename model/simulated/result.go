// Package simulated holds what a simulate run produces and how it is
// drawn: one policy's Result, its figures with their intervals, and the
// catalog of figures (key, label, unit, the episode kind each is counted
// from, the verdict's words) that simulate's table, JSON and page read.
// rules/replay fills Results; reports/render and the commands draw them;
// neither imports the other.
package simulated

import (
	"math"
	"strconv"

	"github.com/orchstat/orchstat/model/episode"
)

// Metric is a figure with its 95% interval (from the bootstrap over
// runs). An exact figure is the record's, or equal to it because the
// policy changes nothing the figure depends on: it has no interval
// (Lo == Hi == Value) and Exact is set.
type Metric struct {
	Value float64 `json:"value"`
	Lo    float64 `json:"lo"`
	Hi    float64 `json:"hi"`
	Exact bool    `json:"exact"`
}

// Note names an episode with a reason: one the baseline does not
// reproduce, or one it cannot check.
type Note struct {
	ID     string `json:"id"`
	Reason string `json:"reason"`
}

// Result is one policy's replay of the episodes. The baseline's is the
// record: its figures are counted from what happened, the same whatever
// the seed, and its replay only serves the self-check.
type Result struct {
	Policy   string `json:"policy"`
	Episodes int    `json:"episodes"`
	// Estimated counts episodes whose outcome under this policy is
	// estimated rather than read from the record.
	Estimated int `json:"estimated_episodes"`

	SuccessRate    Metric `json:"success_rate"`
	Attempts       Metric `json:"attempts"`
	Wasted         Metric `json:"wasted_attempts"`
	BackoffSeconds Metric `json:"backoff_seconds"`
	ResolutionP50  Metric `json:"resolution_p50_seconds"`
	ResolutionP95  Metric `json:"resolution_p95_seconds"`
	Halts          Metric `json:"halts"`
	CostUSD        Metric `json:"cost_usd"`

	// The L2 repair loops, replayed by the loop's own rules.
	L2Loops       int    `json:"l2_loops"`
	L2Estimated   int    `json:"l2_estimated_loops"`
	L2SuccessRate Metric `json:"l2_success_rate"`
	L2Iterations  Metric `json:"l2_iterations"`
	Escalations   Metric `json:"escalations"`
	NonImproving  Metric `json:"l2_non_improving_stops"`

	// L3: runs with L3 steps, and the diagnoses the trigger starts.
	L3Runs    int    `json:"l3_runs"`
	Diagnoses Metric `json:"diagnoses"`
	// Diff is each figure minus the baseline's, with the interval of the
	// paired difference (both replays see the same resampled runs).
	Diff map[string]Metric `json:"diff_from_baseline,omitempty"`
	// Unchanged lists the episode kinds this policy decides exactly as the
	// baseline does (it changes nothing they depend on): their figures
	// are the baseline's.
	Unchanged []episode.Kind `json:"unchanged_kinds,omitempty"`

	// The self-check, baseline only: of Checked episodes, Reproduced
	// replayed under the baseline as recorded (success and attempts; an
	// L2 loop's end and iterations); Mismatches names the first
	// MaxListed others with what the replay did. NotCheckable episodes
	// ended in a way the policy does not decide (an L2 loop unfinished or
	// stopped by an error); Unchecked names the first MaxListed with why.
	Reproduced   int    `json:"reproduced,omitempty"`
	Checked      int    `json:"checked,omitempty"`
	Mismatches   []Note `json:"mismatches,omitempty"`
	NotCheckable int    `json:"not_checkable,omitempty"`
	Unchecked    []Note `json:"not_checkable_episodes,omitempty"`
	// L2Inferred counts L2 loops some of whose failure signatures were
	// inferred from how the loop ended, their reports being missing.
	L2Inferred int `json:"l2_inferred_loops,omitempty"`
	// HasCost is set when some episode had a recorded cost.
	HasCost bool `json:"has_cost"`
}

// MarshalJSON writes an undefined figure (NaN, such as a rate over no
// episodes) as null.
func (m Metric) MarshalJSON() ([]byte, error) {
	f := func(v float64) string {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return "null"
		}
		return strconv.FormatFloat(v, 'g', -1, 64)
	}
	return []byte(`{"value":` + f(m.Value) + `,"lo":` + f(m.Lo) + `,"hi":` + f(m.Hi) + `,"exact":` + strconv.FormatBool(m.Exact) + `}`), nil
}

package simulated

import (
	"fmt"
	"maps"
	"slices"
	"strings"
)

// AttemptResult is one policy's replay of one system's runs.
type AttemptResult struct {
	Policy    string `json:"policy"`
	Runs      int    `json:"runs"`
	Succeeded int    `json:"succeeded"`
	Failed    int    `json:"failed"`
	// BeyondRecord counts runs the policy would retry past their last
	// recorded attempt, which had failed: what that retry would have done
	// is not in the record, so these runs' outcomes are unknown: neither
	// succeeded nor failed. The baseline, the record, has none.
	BeyondRecord int `json:"unknown"`
	// Unknown lists the first replay.MaxListed of them.
	Unknown []string `json:"unknown_runs"`
	// Attempts the policy makes within the record, and recorded attempts
	// it does not make.
	Attempts int `json:"attempts"`
	Saved    int `json:"attempts_saved"`
	// SuccessesLost counts runs that passed in the record at an attempt
	// the policy does not reach.
	SuccessesLost int `json:"successes_lost"`
	// Stops counts why runs stopped failing: the retry core's reasons
	// (class, max_retries, max_attempts, signature_halt, global_cap,
	// cascade, budget), or "record" where a baseline that only stands for
	// the record stopped because the record does.
	Stops map[string]int `json:"stops"`
	// Changed lists runs whose known outcome differs from the record, the
	// first replay.MaxListed.
	Changed []string `json:"changed_runs"`
	// For the baseline: runs whose replay ends as the record does, out of
	// those checked, and the first replay.MaxListed that do not.
	Reproduced int      `json:"reproduced,omitempty"`
	Checked    int      `json:"checked,omitempty"`
	Mismatches []string `json:"mismatches,omitempty"`
}

// AttemptVerdict says in plain words what r changes against the
// baseline (the record) for one system's runs. Runs r retries past the
// record have an unknown outcome: they count as neither success nor
// failure, and when they could account for the whole difference in
// successes the verdict says that the comparison means nothing.
func AttemptVerdict(base, r AttemptResult) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: ", r.Policy)
	if r.Runs == 0 {
		b.WriteString("no recorded runs to replay.")
		return b.String()
	}
	s0, s, u := base.Succeeded, r.Succeeded, r.BeyondRecord
	if u == 0 {
		fmt.Fprintf(&b, "%d of %d runs succeed and %d fail, against %d and %d in the record", s, r.Runs, r.Failed, s0, base.Failed)
	} else {
		fmt.Fprintf(&b, "%d of %d runs (%.1f%%) would be retried past the record, so their outcome is unknown: "+
			"between %d and %d runs would succeed against %d in the record, and between %d and %d would fail against %d",
			u, r.Runs, 100*float64(u)/float64(r.Runs), s, s+u, s0, r.Failed, r.Failed+u, base.Failed)
		switch {
		case s > s0:
			fmt.Fprintf(&b, "; at least %d more succeed whatever the unknown runs do", s-s0)
		case s+u < s0:
			fmt.Fprintf(&b, "; at least %d fewer succeed whatever the unknown runs do", s0-s-u)
		default:
			fmt.Fprintf(&b, ". The comparison is meaningless: the %d unknown runs can account for the whole difference, "+
				"so it cannot tell whether %s would make more runs succeed or fewer", u, r.Policy)
		}
	}
	if r.Saved > 0 {
		fmt.Fprintf(&b, "; it saves %d recorded attempts", r.Saved)
	} else {
		b.WriteString("; it saves no recorded attempt")
	}
	if r.SuccessesLost > 0 {
		fmt.Fprintf(&b, " and gives up %d runs that passed", r.SuccessesLost)
	}
	b.WriteString(".")
	return b.String()
}

// StopReasons lists the stop reasons of results, sorted, for a table.
func StopReasons(rs []AttemptResult) []string {
	set := map[string]bool{}
	for _, r := range rs {
		for k := range r.Stops {
			set[k] = true
		}
	}
	return slices.Sorted(maps.Keys(set))
}

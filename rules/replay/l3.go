package replay

import (
	"github.com/orchstat/orchstat/model/episode"
	"github.com/orchstat/orchstat/rules/retry"
)

// l3Run is one run's L3 steps, in order.
type l3Run struct {
	run   string
	steps []*episode.Episode
}

// applyErrors lists a run's patch-apply errors across its L3 steps, in
// order: the sequence the orchestrator's diagnosis trigger counts. A step
// that succeeded applied its patch, which restarts the count ("").
func (r *l3Run) applyErrors() []string {
	var out []string
	for _, e := range r.steps {
		for _, a := range e.Attempts {
			if a.PatchApplyFailed {
				out = append(out, a.Signature)
			}
		}
		if e.Success {
			out = append(out, "")
		}
	}
	return out
}

// recordedDiagnoses counts the diagnoses the record holds.
func (r *l3Run) recordedDiagnoses() int {
	n := 0
	for _, e := range r.steps {
		n += e.Diagnoses
	}
	return n
}

// Diagnoses replays the diagnosis trigger (retry.DiagnosisDue) over the
// run's recorded apply errors under p. It is exact: the trigger reads only
// the errors, which the record holds, and diagnosing does not change which
// candidates were generated before it.
func (r *l3Run) diagnoses(p *retry.Policy) int { return len(retry.DiagnosisDue(p, r.applyErrors())) }

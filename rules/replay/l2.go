package replay

import (
	"github.com/orchstat/orchstat/rules/retry"
)

// l2Iterations turns an L2 loop into the verification sequence
// retry.ReplayL2 walks: the initial verification, then one per iteration.
func l2Iterations(e *Episode) []retry.L2Iteration {
	its := make([]retry.L2Iteration, 0, len(e.Attempts)+1)
	its = append(its, retry.L2Iteration{Signature: e.InitialSignature})
	for _, a := range e.Attempts {
		its = append(its, retry.L2Iteration{Signature: a.Signature, PatchApplyFailed: a.PatchApplyFailed, Passed: a.OK,
			NoPatch: a.Class == retry.ClassLLMOutputInvalid})
	}
	return its
}

// fitL2 estimates, for iteration k, the chance that it passes given that
// the loop reached it, from the recorded loops.
func fitL2(eps []Episode) []float64 {
	var atRisk, passed []float64
	for i := range eps {
		e := &eps[i]
		if e.Kind != KindL2 {
			continue
		}
		for k, a := range e.Attempts {
			for len(atRisk) <= k {
				atRisk, passed = append(atRisk, 0), append(passed, 0)
			}
			atRisk[k]++
			if a.OK {
				passed[k]++
				break
			}
		}
	}
	h := make([]float64, len(atRisk))
	for k := range h {
		h[k] = passed[k] / atRisk[k]
	}
	return h
}

// L2 replays an L2 repair loop under p with retry.ReplayL2, the loop's
// own rules. Where p runs an iteration the record does not have, the
// outcome is estimated: the iteration passes with the recorded chance of
// passing at that iteration (the last one beyond the data), and otherwise
// fails the same way as the one before, which is what a non-improving
// repair looks like.
func (rp *Replayer) L2(e *Episode, p *retry.Policy, s *Stream) Outcome {
	rp.seed(s, p.Name, e.ID)
	its := l2Iterations(e)
	var o Outcome
	var out retry.L2Outcome
	for range 64 {
		out = retry.ReplayL2(p, its)
		if out.Stopped != retry.L2BeyondRecord {
			break
		}
		o.Estimated = true
		k := len(its) - 1 // the iteration index the record lacks, from 0
		h := 0.0
		if n := len(rp.Model.L2Pass); n > 0 {
			h = rp.Model.L2Pass[min(k, n-1)]
		}
		last := its[len(its)-1]
		its = append(its, retry.L2Iteration{Signature: last.Signature, Passed: s.rand.Float64() < h})
	}
	o.Attempts = out.Iterations
	o.Success = out.Stopped == retry.L2Passed
	o.Escalated = out.Escalated
	o.Halted = out.Stopped == retry.L2NonImproving
	o.Reason = out.Stopped
	if !o.Success && !o.Escalated {
		o.Wasted = max(o.Attempts-1, 0)
	}
	return o
}

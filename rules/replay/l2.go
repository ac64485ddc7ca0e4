package replay

import (
	"fmt"
	"slices"
	"strconv"

	"github.com/orchstat/orchstat/model/episode"
	"github.com/orchstat/orchstat/model/failure"
	"github.com/orchstat/orchstat/rules/retry"
)

// l2Iterations turns an L2 loop into the verification sequence
// retry.ReplayL2 walks: the initial verification, then one per iteration.
func l2Iterations(e *episode.Episode) []retry.L2Iteration {
	its := make([]retry.L2Iteration, 0, len(e.Attempts)+1)
	its = append(its, retry.L2Iteration{Signature: e.InitialSignature})
	for _, a := range e.Attempts {
		its = append(its, retry.L2Iteration{Signature: a.Signature, PatchApplyFailed: a.PatchApplyFailed, Passed: a.OK,
			NoPatch: a.Class == failure.ClassLLMOutputInvalid})
	}
	return its
}

// l2Record is what the record says of one L2 loop, prepared once for
// every policy: its verifications, with the signatures the record lacks
// inferred from how the loop ended, and the self-check's verdict on it.
type l2Record struct {
	its []retry.L2Iteration
	// inferred is set when some signature was not recorded (its report is
	// missing) and had to be inferred. alternatives are then the
	// assignments under which the baseline ends as recorded, and complete
	// says they are all of them.
	inferred     bool
	raw          []retry.L2Iteration // its, before filling
	unknown      []int               // the iterations whose signature is missing
	alternatives [][]int8            // fill choices, one per unknown
	complete     bool
	// checkable is false when the loop ended in a way the loop's rules do
	// not decide; why says so. reproduced and why tell the self-check.
	checkable, reproduced bool
	why                   string
}

// recordedEnd is how the record says the loop ended, as retry.ReplayL2
// would put it, or ok false with the reason it cannot be compared.
func recordedEnd(e *episode.Episode, base *retry.Policy) (retry.L2Outcome, bool, string) {
	n := len(e.Attempts)
	switch {
	case e.Success:
		return retry.L2Outcome{Iterations: n, Stopped: retry.L2Passed}, true, ""
	case e.Escalated:
		return retry.L2Outcome{Iterations: n, Escalated: true, EscalationReason: e.EscalationReason, Stopped: retry.L2Escalated}, true, ""
	case e.StopReason == "non_improving":
		return retry.L2Outcome{Iterations: n, Stopped: retry.L2NonImproving}, true, ""
	case e.StopReason == "budget_exceeded" && n == base.MaxIterations:
		return retry.L2Outcome{Iterations: n, Stopped: retry.L2MaxIterations}, true, ""
	case e.StopReason == "budget_exceeded":
		return retry.L2Outcome{}, false, fmt.Sprintf("stopped by a time or cost budget after %d iterations, which the replay does not model", n)
	case e.StopReason != "":
		return retry.L2Outcome{}, false, fmt.Sprintf("stopped by %s, which the loop's rules do not decide", e.StopReason)
	}
	return retry.L2Outcome{}, false, "no recorded end (the run is unfinished or its trace was cut short)"
}

// sameEnd compares a replay with the record's end. The escalation reason
// counts only when the record names one.
func sameEnd(got, want retry.L2Outcome) bool {
	if got.Stopped != want.Stopped || got.Iterations != want.Iterations {
		return false
	}
	return want.EscalationReason == "" || got.EscalationReason == want.EscalationReason
}

func describeL2(o retry.L2Outcome) string {
	switch o.Stopped {
	case retry.L2Escalated:
		return fmt.Sprintf("escalates (%s) after %s", o.EscalationReason, iterations(o.Iterations))
	case retry.L2BeyondRecord:
		return fmt.Sprintf("starts iteration %d, which the record does not have", o.Iterations)
	}
	return fmt.Sprintf("ends %s after %s", o.Stopped, iterations(o.Iterations))
}

func iterations(n int) string {
	if n == 1 {
		return "1 iteration"
	}
	return strconv.Itoa(n) + " iterations"
}

// maxInferred bounds the signatures prepareL2 searches over (3^n
// replays). The orchestrator's loop has at most 5 iterations.
const maxInferred = 6

// How prepareL2 fills one missing signature.
const (
	fillNew  = iota // a signature seen nowhere else
	fillPrev        // the verification in effect before it, repeated
	fillNext        // the next recorded signature, repeated from here
)

// prepareL2 reads one loop's record for replay and checks the baseline
// against it.
//
// Verification reports, the only place a failure signature is written,
// can be missing (cleaned up, or the trace ingested alone). The trace
// still says how the loop ended, and under the baseline's rules that end
// says which signatures repeated: a RunStopped non_improving after
// IterationStarted k means the verification in effect at k repeated the
// one before often enough (at iteration 1 the initial verification counts
// as a repeat of itself, so it needs a signature, even an unknown one).
// So each missing signature is a new one, a repeat of the verification
// before it, or the same as the next recorded one, and prepareL2 picks the
// assignment with the fewest repeats (later ones first) under which the
// baseline ends as the record does. Without such evidence every missing
// signature is new, which is what a loop that neither stopped nor
// escalated on repeats shows. When no assignment reproduces the record,
// the loop is named as not reproduced, with what the baseline does
// instead.
func prepareL2(e *episode.Episode, base *retry.Policy) l2Record {
	rec := l2Record{its: l2Iterations(e)}
	want, ok, why := recordedEnd(e, base)
	rec.findMissing(ok && want.Stopped == retry.L2NonImproving)
	rec.its = rec.fill(nil)
	if !ok {
		rec.why = why
		return rec
	}
	rec.checkable = true
	got := retry.ReplayL2(base, rec.its)
	n := len(rec.unknown)
	if n == 0 || n > maxInferred {
		rec.reproduced = sameEnd(got, want)
		rec.complete = n == 0
		if rec.reproduced {
			rec.alternatives = [][]int8{nil}
			return rec
		}
	} else if rec.inferMissing(base, want) {
		return rec
	}
	rec.why = fmt.Sprintf("the baseline %s; the record %s", describeL2(got), describeL2(want))
	if n > 0 {
		rec.why += ", whatever the missing signatures were"
	}
	return rec
}

// findMissing names the iterations whose signature is missing (the
// initial verification's becomes "unrecorded:0"). stoppedNonImproving
// says the last iteration was stopped, so made no verification.
func (rec *l2Record) findMissing(stoppedNonImproving bool) {
	if rec.its[0].Signature == "" {
		rec.its[0].Signature, rec.inferred = "unrecorded:0", true
	}
	limit := len(rec.its) - 1
	if stoppedNonImproving {
		limit--
	}
	var unknown []int
	for i := 1; i <= limit; i++ {
		if it := rec.its[i]; it.Signature == "" && !it.Passed && !it.NoPatch {
			unknown = append(unknown, i)
		}
	}
	rec.inferred = rec.inferred || len(unknown) > 0
	rec.raw, rec.unknown = rec.its, unknown
}

// inferMissing tries every assignment of the missing signatures, fewest
// repeats first, and keeps those under which the baseline ends as the
// record (want) does — once per pattern of repeats, so a policy's outcome
// is exact when it is the same under all of them. The first becomes the
// loop's iterations. It reports whether any does.
func (rec *l2Record) inferMissing(base *retry.Policy, want retry.L2Outcome) bool {
	rec.complete = true
	seen := map[string]bool{}
	for _, choice := range fillChoices(len(rec.unknown)) {
		its := rec.fill(choice)
		if !sameEnd(retry.ReplayL2(base, its), want) {
			continue
		}
		if !rec.reproduced {
			rec.its, rec.reproduced = its, true
		}
		if k := pattern(its); !seen[k] {
			seen[k] = true
			rec.alternatives = append(rec.alternatives, choice)
		}
	}
	return rec.reproduced
}

// fillChoices are the 3^n ways to fill n missing signatures, fewest
// repeats first and, among as many, repeats nearer the end first.
func fillChoices(n int) [][]int8 {
	type cand struct {
		choice       []int8
		cost, spread int
	}
	var cands []cand
	total := 1
	for range n {
		total *= 3
	}
	for x := range total {
		c := cand{choice: make([]int8, n)}
		for u, y := 0, x; u < n; u, y = u+1, y/3 {
			c.choice[u] = int8(y % 3)
			if c.choice[u] != fillNew {
				c.cost++
				c.spread += n - u // repeats nearer the end first
			}
		}
		cands = append(cands, c)
	}
	slices.SortStableFunc(cands, func(a, b cand) int {
		if a.cost != b.cost {
			return a.cost - b.cost
		}
		return a.spread - b.spread
	})
	choices := make([][]int8, len(cands))
	for i, c := range cands {
		choices[i] = c.choice
	}
	return choices
}

func (rec *l2Record) fill(choice []int8) []retry.L2Iteration {
	unknown := rec.unknown
	its := append([]retry.L2Iteration(nil), rec.raw...)
	// Backwards first, for fillNext: the next signature recorded or
	// already filled.
	next := ""
	for i := len(its) - 1; i >= 1; i-- {
		if u := slices.Index(unknown, i); u >= 0 && choice != nil && choice[u] == fillNext {
			its[i].Signature = next
		}
		if !its[i].NoPatch && its[i].Signature != "" {
			next = its[i].Signature
		}
	}
	prev := its[0].Signature
	for i := 1; i < len(its); i++ {
		if u := slices.Index(unknown, i); u >= 0 && (choice == nil || choice[u] != fillNext || its[i].Signature == "") {
			its[i].Signature = "unrecorded:" + strconv.Itoa(i)
			if choice != nil && choice[u] == fillPrev {
				its[i].Signature = prev
			}
		}
		if !its[i].NoPatch && its[i].Signature != "" {
			prev = its[i].Signature
		}
	}
	return its
}

// exactUnder reports whether p's replay of the loop is the same whatever
// the missing signatures were, among those the record allows: then the
// inference decides nothing.
func (rec *l2Record) exactUnder(p *retry.Policy) bool {
	if !rec.inferred {
		return true
	}
	if !rec.complete || len(rec.alternatives) == 0 {
		return false
	}
	first := retry.ReplayL2(p, rec.fill(rec.alternatives[0]))
	for _, c := range rec.alternatives[1:] {
		if retry.ReplayL2(p, rec.fill(c)) != first {
			return false
		}
	}
	return true
}

// pattern is which verifications of its share a signature: what the
// loop's rules read of them.
func pattern(its []retry.L2Iteration) string {
	ids := map[string]int{}
	b := make([]byte, 0, len(its))
	for _, it := range its {
		id, ok := ids[it.Signature]
		if !ok {
			id = len(ids)
			ids[it.Signature] = id
		}
		b = append(b, byte(id))
	}
	return string(b)
}

// recordL2 is the loop's outcome as recorded: the baseline's figures.
func recordL2(e *episode.Episode) Outcome {
	o := Outcome{Success: e.Success, Attempts: len(e.Attempts), Escalated: e.Escalated,
		Halted: !e.Success && !e.Escalated && e.StopReason == "non_improving", Reason: e.StopReason}
	if !o.Success && !o.Escalated {
		o.Wasted = max(o.Attempts-1, 0)
	}
	return o
}

// fitL2 estimates, for iteration k, the chance that it passes given that
// the loop reached it, from the recorded loops.
func fitL2(eps []episode.Episode) []float64 {
	var atRisk, passed []float64
	for i := range eps {
		e := &eps[i]
		if e.Kind != episode.KindL2 {
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
// own rules, over its verifications its (see prepareL2). Where p runs an
// iteration the record does not have, the outcome is estimated: the
// iteration passes with the recorded chance of passing at that iteration
// (the last one beyond the data), and otherwise fails the same way as the
// one before, which is what a non-improving repair looks like.
func (rp *Replayer) L2(e *episode.Episode, its []retry.L2Iteration, p *retry.Policy, s *Stream) Outcome {
	rp.seed(s, p.Name, e.ID)
	its = append([]retry.L2Iteration(nil), its...)
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

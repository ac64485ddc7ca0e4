package episode

import (
	"cmp"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/orchstat/orchstat/model/events"
	"github.com/orchstat/orchstat/model/failure"
)

// L2Reader folds the trace rows of runs' L2 repair loops (runners/l2.ts),
// given run by run in trace order (by file, then line; a run's trace is
// one file, and were it split over several each is read in turn), into
// one KindL2 episode per run, ID "<run>/l2":
//
//   - An iteration is known by any of its L2 events (IterationStarted,
//     RepairAttempted, IterationFinished), as in the l2_iterations view, so
//     a run whose IterationStarted lines were lost still has its loop.
//     Events without an iteration number are dropped. Attempts are the
//     iterations in numeric order; Time is the first iteration's earliest
//     event and Duration runs to the loop's last event (its escalation or
//     stop included).
//   - OK: IterationFinished says success, or the iteration's L2
//     verification report passed.
//   - Signature: that report's failureSignature, "" without one. Iterations
//     whose repair produced no diff ("none (no-diff)", "none (empty-diff)")
//     write no report, and l2.ts then compares the previous report again:
//     a replay that checks for repeated signatures should carry the
//     previous one over such an iteration.
//   - PatchApplyFailed: a PatchApplyFailed event whose nearest earlier L2
//     event in the same trace is this iteration's RepairAttempted, as l2.ts
//     applies the patch right after announcing it. L3's apply failures,
//     after the escalation, are not attributed. A "none (...)" repair is
//     not an apply failure: l2.ts does not count it towards the
//     patch-apply escalation.
//   - Class, for an iteration that did not succeed: patch_apply_failed,
//     else llm_output_invalid for a "none (...)" repair, else verify_failed
//     when it finished as a failure or its report failed, else "" (for
//     example an iteration cut short by a stop).
//   - Escalated: the run has a RunEscalated from L2; EscalationReason is
//     the first one's reason. Halted and StopReason:
//     the first RunStopped after the loop began and before any escalation
//     (a stop in L3 belongs to L3).
//
// The zero L2Reader is ready to use.
type L2Reader struct {
	out []Episode
	cur *l2Loop
}

// L2Event is one L2 event of a loop's own (IterationStarted,
// IterationFinished, RepairAttempted, …), with the verification report
// of its iteration.
type L2Event struct {
	Time time.Time
	Type string
	// Iteration is the event's iteration number, NaN when it has none.
	Iteration float64
	// Result is an IterationFinished's result, PatchPath a
	// RepairAttempted's patch path.
	Result, PatchPath string
	// Passed is the iteration's report's verdict, when HasPassed.
	Passed, HasPassed bool
	// Signature is the report's failure signature, when HasSignature.
	Signature    string
	HasSignature bool
}

type l2Iteration struct {
	n           float64
	first       time.Time
	result      string
	patchPath   string
	repaired    bool
	passed      bool
	hasPassed   bool
	sig         string
	applyFailed bool
}

type l2Loop struct {
	run         string
	iters       map[float64]*l2Iteration
	last        time.Time // the loop's last event
	boundary    *l2Iteration
	afterRepair bool // the latest L2 event was a RepairAttempted with a patch
	escalated   bool
	escReason   string
	halted      bool
	stop        string
}

// Run starts run's rows, ending the run before when it was another.
func (r *L2Reader) Run(run string) {
	if r.cur != nil && r.cur.run == run {
		return
	}
	r.flush()
	r.cur = &l2Loop{run: run, iters: map[float64]*l2Iteration{}}
}

// Event folds an event of the loop's own into its iteration.
func (r *L2Reader) Event(ev L2Event) {
	cur := r.cur
	cur.boundary, cur.afterRepair = nil, false
	cur.last = later(cur.last, ev.Time)
	if math.IsNaN(ev.Iteration) {
		return
	}
	n := ev.Iteration + 0 // folds -0 into 0
	it := cur.iters[n]
	if it == nil {
		it = &l2Iteration{n: n, first: ev.Time}
		cur.iters[n] = it
	}
	if ev.Time.Before(it.first) {
		it.first = ev.Time
	}
	if ev.HasPassed {
		it.passed, it.hasPassed = ev.Passed, true
	}
	if ev.HasSignature {
		it.sig = ev.Signature
	}
	switch ev.Type {
	case events.IterationFinished:
		it.result = ev.Result
	case events.RepairAttempted:
		it.repaired, it.patchPath = true, ev.PatchPath
		cur.boundary, cur.afterRepair = it, !strings.HasPrefix(ev.PatchPath, "none")
	}
}

// PatchApplyFailed is a PatchApplyFailed event: the failure of the patch
// the latest RepairAttempted announced, if that was the latest L2 event.
func (r *L2Reader) PatchApplyFailed(ts time.Time) {
	cur := r.cur
	if cur.afterRepair && cur.boundary != nil {
		cur.boundary.applyFailed = true
		cur.last = later(cur.last, ts)
	}
}

// Escalation is a RunEscalated from level from; one from L2 is the loop's
// end, with the first escalation's reason.
func (r *L2Reader) Escalation(ts time.Time, from, reason string) {
	cur := r.cur
	if from != "L2" {
		return
	}
	if !cur.escalated && len(cur.iters) > 0 {
		cur.last = later(cur.last, ts)
	}
	if !cur.escalated {
		cur.escReason = reason
	}
	cur.escalated = true
	cur.boundary, cur.afterRepair = nil, false
}

// Stopped is a RunStopped: it halts the loop when the loop has begun and
// has not escalated or halted already.
func (r *L2Reader) Stopped(ts time.Time, reason string) {
	cur := r.cur
	if !cur.escalated && !cur.halted && !cur.last.IsZero() {
		cur.halted, cur.stop = true, reason
		cur.last = later(cur.last, ts)
	}
}

// Episodes ends the last run and returns the loops read, one per run with
// an iteration, in the order their runs came.
func (r *L2Reader) Episodes() []Episode {
	r.flush()
	r.cur = nil
	return r.out
}

func (r *L2Reader) flush() {
	if r.cur != nil {
		r.out = appendL2(r.out, r.cur)
	}
}

func appendL2(out []Episode, l *l2Loop) []Episode {
	if len(l.iters) == 0 {
		return out
	}
	iters := make([]*l2Iteration, 0, len(l.iters))
	for _, it := range l.iters {
		iters = append(iters, it)
	}
	slices.SortFunc(iters, func(a, b *l2Iteration) int { return cmp.Compare(a.n, b.n) })
	e := Episode{
		Kind:       KindL2,
		ID:         l.run + "/l2",
		Run:        l.run,
		Time:       iters[0].first,
		Attempts:   make([]Attempt, len(iters)),
		Escalated:  l.escalated,
		Halted:     l.halted,
		StopReason: l.stop,
		// Why it escalated, so the self-check can tell a non-improving
		// escalation from a patch-apply one when the reports are missing.
		EscalationReason: l.escReason,
	}
	for i, it := range iters {
		a := &e.Attempts[i]
		a.OK = it.result == "success" || it.hasPassed && it.passed
		a.Signature = it.sig
		a.PatchApplyFailed = it.applyFailed
		switch {
		case a.OK:
		case it.applyFailed:
			a.Class = failure.ClassPatchApplyFailed
		case it.repaired && strings.HasPrefix(it.patchPath, "none"):
			a.Class = failure.ClassLLMOutputInvalid
		case it.result == "failure" || it.hasPassed:
			a.Class = failure.ClassVerifyFailed
		}
	}
	e.Success = e.Attempts[len(e.Attempts)-1].OK
	if d := l.last.Sub(e.Time); d > 0 {
		e.Duration = d
	}
	return append(out, e)
}

package retry

import "github.com/orchstat/orchstat/model/episode"

// Detect reports a cascade (the retry handler): at least Threshold failures among
// the last Window items, failed[i] being whether item i failed, oldest
// first. Threshold 0 is off; Window 0 looks at every item.
func (c Cascade) Detect(failed []bool) bool {
	if c.Threshold <= 0 {
		return false
	}
	if c.Window > 0 && len(failed) > c.Window {
		failed = failed[len(failed)-c.Window:]
	}
	n := 0
	for _, f := range failed {
		if f {
			n++
		}
	}
	return n >= c.Threshold
}

// Strategies Adaptive.Recommend returns besides those configured.
const (
	StrategyRetry = "retry"
	StrategyAbort = "abort-recommended"
)

// FailureRate is orchestr8's rule 1: among the last Window runs (every run
// when Window is 0), the share that failed at stage. No history is 0.
func (a Adaptive) FailureRate(stage string, history []episode.StageOutcome) float64 {
	failed, runs := a.window(stage, history)
	if runs == 0 {
		return 0
	}
	return float64(failed) / float64(runs)
}

// window counts the last Window runs (every run when Window is 0) and
// those among them that failed at stage.
func (a Adaptive) window(stage string, history []episode.StageOutcome) (failed, runs int) {
	if a.Window > 0 && len(history) > a.Window {
		history = history[len(history)-a.Window:]
	}
	for _, h := range history {
		if h.Failed && h.Stage == stage {
			failed++
		}
	}
	return failed, len(history)
}

// AdviceRule is which of Recommend's cases gave the advice.
type AdviceRule int

const (
	// AdvicePastMaxRetries: the attempt is past MaxRetries, so
	// abort-recommended.
	AdvicePastMaxRetries AdviceRule = iota
	// AdviceStrategy: the failure rate is above Threshold, so the stage's
	// strategy for the attempt (Advice.Step).
	AdviceStrategy
	// AdviceNoStrategy: the failure rate is above Threshold, but the stage
	// has no strategies, so retry.
	AdviceNoStrategy
	// AdviceNoHistory: no run is recorded, so retry (the adaptive retry spec's First
	// Failure case).
	AdviceNoHistory
	// AdviceBelowThreshold: the failure rate is not above Threshold, so
	// retry.
	AdviceBelowThreshold
)

// Advice is Recommend's answer with what it rests on, for whoever has to
// explain it.
type Advice struct {
	Strategy string
	Rule     AdviceRule
	// Rate is FailureRate: Failed of the last Runs runs failed at the
	// stage.
	Rate         float64
	Failed, Runs int
	// Step is, with AdviceStrategy, the position from 1 in the stage's
	// strategies that the attempt calls for: the attempt, or the last
	// strategy once attempts outrun the list. Strategy is "retry" when
	// that entry is empty or the attempt is below 1.
	Step int
}

// Recommend is orchestr8's rule 2, in its order, after attempt (1-based)
// at stage failed:
//
//  1. attempt > MaxRetries: "abort-recommended";
//  2. FailureRate over the last Window runs > Threshold: the stage's
//     strategy for this attempt, Strategies[stage][attempt-1], the last
//     one once attempts outrun the list, "retry" when the stage has none;
//  3. otherwise "retry".
//
// No history is a failure rate of 0, so "retry" (the adaptive retry spec's First Failure
// case) unless rule 1 applies. This is the pipeline's own
// recommendStrategy, attempt below 1 included: it gives "retry".
func (a Adaptive) Recommend(stage string, attempt int, history []episode.StageOutcome) string {
	return a.Advise(stage, attempt, history).Strategy
}

// Advise is Recommend, saying which case applied and on what numbers.
func (a Adaptive) Advise(stage string, attempt int, history []episode.StageOutcome) Advice {
	adv := Advice{Strategy: StrategyRetry}
	adv.Failed, adv.Runs = a.window(stage, history)
	adv.Rate = a.FailureRate(stage, history)
	switch s := a.Strategies[stage]; {
	case attempt > a.MaxRetries:
		adv.Strategy, adv.Rule = StrategyAbort, AdvicePastMaxRetries
	case adv.Rate > a.Threshold && len(s) == 0:
		adv.Rule = AdviceNoStrategy
	case adv.Rate > a.Threshold:
		adv.Rule = AdviceStrategy
		adv.Step = max(min(attempt, len(s)), 1)
		if i := min(attempt-1, len(s)-1); i >= 0 && s[i] != "" {
			adv.Strategy = s[i]
		}
	case adv.Runs == 0:
		adv.Rule = AdviceNoHistory
	default:
		adv.Rule = AdviceBelowThreshold
	}
	return adv
}

// L2Iteration is what the record says of one L2 verification: its[0] is
// the initial verification (verification_report_initial.json), its[i]
// the one after repair iteration i (verification_report_iter_<i>.json).
type L2Iteration struct {
	// Signature is the verification's failureSignature ("" when it has
	// none).
	Signature string
	// PatchApplyFailed is whether iteration i's patch failed to apply
	// (a PatchApplyFailed event). Ignored for its[0].
	PatchApplyFailed bool
	// NoPatch is an iteration whose repair produced no diff
	// (RepairAttempted with patchPath "none (no-diff)" or "none
	// (empty-diff)"): nothing was applied or verified, so the previous
	// verification and the patch-apply failure count carry over, and
	// Signature and Passed are ignored. Ignored for its[0].
	NoPatch bool
	// Passed is whether the verification passed.
	Passed bool
}

// How ReplayL2 ends.
const (
	L2Passed        = "passed"         // a verification passed
	L2NonImproving  = "non_improving"  // RunStopped non_improving
	L2MaxIterations = "max_iterations" // the loop ran out: RunStopped budget_exceeded
	L2Escalated     = "escalated"      // RunEscalated to L3
	L2BeyondRecord  = "beyond_record"  // the policy runs an iteration the record does not have
	L2NoRecord      = "no_record"      // no initial verification
)

// L2Outcome is an L2 loop replayed under a policy.
type L2Outcome struct {
	// Iterations is the number of iterations started (IterationStarted
	// events). With L2BeyondRecord it includes the one whose outcome the
	// record lacks.
	Iterations int
	Escalated  bool
	// EscalationReason is RunEscalated's reason: "non_improving" or
	// "patch_apply_failure".
	EscalationReason string
	Stopped          string
}

// ReplayL2 replays the orchestrator's L2 repair loop (runners/l2.ts, as
// spec/EVENTS.md describes it) over a recorded verification sequence under
// p. Each iteration i, from 1:
//
//  1. past p.MaxIterations, the loop ends (max_iterations);
//  2. at the top, before IterationStarted, it escalates to L3 when
//     consecutive identical signatures >= Escalation.NonImproving or
//     consecutive patch-apply failures >= Escalation.PatchApplyFailures,
//     while escalations (0 at the start) < Escalation.MaxEscalations;
//  3. IterationStarted; then if the current verification's signature is
//     non-empty and the same as the last distinct one, the count of
//     identical signatures grows and at NonImprovingStop stops the run
//     (non_improving); otherwise the count resets and the signature
//     becomes the one to compare with. The first iteration compares the
//     initial verification with itself, so it always counts one;
//  4. the repair: a patch that applies resets the patch-apply failures, one
//     that fails adds one; then the new verification, and a pass ends the
//     loop (passed).
//
// Limits at 0 are off, except MaxIterations: 0 runs no iteration. With the
// orchestrator's values the non-improving stop (2) always fires before the
// non-improving escalation (2) can, as spec/EVENTS.md notes. When the
// policy needs an iteration the record does not have, the outcome is
// L2BeyondRecord: what happens then is not in the data.
func ReplayL2(p *Policy, its []L2Iteration) L2Outcome {
	if len(its) == 0 {
		return L2Outcome{Stopped: L2NoRecord}
	}
	if its[0].Passed {
		return L2Outcome{Stopped: L2Passed}
	}
	esc := p.Escalation
	ver := its[0].Signature // the verification in effect
	last := ver             // the last distinct signature
	same, patchFails := 0, 0
	for i := 1; ; i++ {
		if i > p.MaxIterations {
			return L2Outcome{Iterations: i - 1, Stopped: L2MaxIterations}
		}
		if esc.MaxEscalations > 0 {
			nonImproving := esc.NonImproving > 0 && same >= esc.NonImproving
			if nonImproving || esc.PatchApplyFailures > 0 && patchFails >= esc.PatchApplyFailures {
				reason := "patch_apply_failure"
				if nonImproving {
					reason = "non_improving"
				}
				return L2Outcome{Iterations: i - 1, Escalated: true, EscalationReason: reason, Stopped: L2Escalated}
			}
		}
		if last != "" && ver == last {
			same++
			if p.NonImprovingStop > 0 && same >= p.NonImprovingStop {
				return L2Outcome{Iterations: i, Stopped: L2NonImproving}
			}
		} else {
			same, last = 0, ver
		}
		if i >= len(its) {
			return L2Outcome{Iterations: i, Stopped: L2BeyondRecord}
		}
		it := its[i]
		if it.NoPatch {
			continue
		}
		if it.PatchApplyFailed {
			patchFails++
		} else {
			patchFails = 0
		}
		ver = it.Signature
		if it.Passed {
			return L2Outcome{Iterations: i, Stopped: L2Passed}
		}
	}
}

// DiagnosisDue replays the orchestrator's L3 diagnosis trigger over one run's
// patch-apply errors, in order (runners/l3.ts): an error identical to the
// previous one adds to a count that otherwise restarts at 1, and at
// p.DiagnosisAfter a diagnosis starts (DiagnosisStarted) and the count
// resets. It returns the indexes of the errors that start a diagnosis.
// An empty error stands for none recorded and restarts the count at 0.
// DiagnosisAfter 0 is off. (In the orchestrator's published l3.ts a step
// whose patch fails to apply also ends the run, so a run records at most
// one such error; the trigger matters to policies that go on.)
func DiagnosisDue(p *Policy, applyErrors []string) []int {
	if p.DiagnosisAfter <= 0 {
		return nil
	}
	var out []int
	n, last := 0, ""
	for i, e := range applyErrors {
		switch {
		case e == "":
			n, last = 0, ""
			continue
		case e == last:
			n++
		default:
			n, last = 1, e
		}
		if n >= p.DiagnosisAfter {
			out = append(out, i)
			n = 0
		}
	}
	return out
}

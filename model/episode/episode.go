// Package episode holds what the records say was tried and how it ended,
// in the shape the replay, the rules and the store share: a failure
// episode and its attempts, a recorded run of whole attempts, and a
// pipeline run's outcome at a stage. The store builds them, rules/replay
// replays them and rules/retry reads the stage history; none of them owns
// the shape, so it sits on the model floor and imports only the model.
package episode

import (
	"time"

	"github.com/orchstat/orchstat/model/failure"
)

// Kind is what an episode records.
type Kind string

// Episode kinds. Other record formats add their own.
const (
	// KindProvider is one logical provider request: its attempts, retried
	// with backoff by the provider client.
	KindProvider Kind = "provider_request"
	// KindL2 is one run's L2 repair loop: its iterations.
	KindL2 Kind = "l2_loop"
	// KindL3 is one L3 step: its candidates, patch-apply failures and
	// diagnoses.
	KindL3 Kind = "l3_step"
)

// Attempt is one recorded try of an episode.
type Attempt struct {
	OK bool
	// Class is the failure's class, "" when the record does not say (the
	// orchestrator's traces keep only the last error of a request).
	Class failure.Class
	// Signature identifies the failure, so identical failures can halt a
	// loop; "" when unknown.
	Signature string
	// PatchApplyFailed marks an L2 iteration or L3 candidate whose patch
	// did not apply.
	PatchApplyFailed bool
	// Valid marks an L3 candidate whose output parsed as a patch.
	Valid bool
}

// Episode is one recorded sequence of attempts at one thing, and how it
// ended.
type Episode struct {
	Kind Kind
	ID   string // unique within its kind, such as "<run>/<line>"
	Run  string
	Time time.Time

	Provider, Model string
	// Operation is what was tried, for per-operation limits: test, build,
	// review, or a pipeline stage.
	Operation string

	// Attempts in order. An attempt the record does not describe is
	// present with the zero Attempt but for OK.
	Attempts []Attempt
	Success  bool
	// Diagnoses counts an L3 step's recorded diagnoses (DiagnosisStarted).
	Diagnoses int
	// InitialSignature is an L2 loop's initial verification failure, the
	// one its first iteration repairs; "" when unknown.
	InitialSignature string

	// Duration is the episode's recorded wall time, backoff sleeps
	// included; 0 when unknown.
	Duration time.Duration
	// Escalated and Halted say how a loop ended when it did not succeed:
	// escalated to the next level, or stopped by a limit (StopReason).
	Escalated  bool
	Halted     bool
	StopReason string
	// EscalationReason is an escalated L2 loop's RunEscalated reason
	// (non_improving, patch_apply_failure); "" when not recorded.
	EscalationReason string
	// CostUSD is the episode's share of its run's recorded cost; 0 when
	// unknown.
	CostUSD float64
}

// Retries is the number of attempts after the first.
func (e *Episode) Retries() int { return max(len(e.Attempts)-1, 0) }

// FinalClass is the class of the last failed attempt, "" when the episode
// succeeded or the class is unknown.
func (e *Episode) FinalClass() failure.Class {
	if e.Success || len(e.Attempts) == 0 {
		return ""
	}
	return e.Attempts[len(e.Attempts)-1].Class
}

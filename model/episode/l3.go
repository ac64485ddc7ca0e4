package episode

import (
	"math"
	"strconv"
	"time"

	"github.com/orchstat/orchstat/model/failure"
)

// L3Reader folds the trace rows of runs' L3 steps (runners/l3.ts and the
// flow EVENTS.md describes), given run by run in trace order, into one
// KindL3 episode per step with candidates, ID "<run>/l3/<step>":
//
//   - Attempts are the step's candidates in trace order, rounds of bestOfN
//     included when a step regenerates them; Valid is the candidate's valid
//     flag, and an invalid one has Class llm_output_invalid.
//   - A round ends with a patch event. The record does not say which
//     candidate was applied, so a PatchApplyFailed goes to the round's last
//     valid candidate (only a valid one has a patch to apply), or to its
//     last candidate when none was valid. That attempt gets
//     PatchApplyFailed, Class patch_apply_failed and the apply error as its
//     Signature: identical errors are what triggers a diagnosis.
//   - A StepFinished following the step's candidates (before the next
//     StepStarted) ends it; Success is its success flag and the last
//     attempt's OK is set to it, as the record does not say which candidate
//     won. Every other attempt has OK false. A step with no StepFinished (the
//     run stopped or is unfinished) did not succeed.
//   - StopReason is "diagnosed" when a DiagnosisStarted names the step, and
//     Diagnoses counts them (a step can be diagnosed more than once). Run
//     stops are not the step's: Halted and Escalated stay false.
//   - Time is the step's StepStarted when it directly precedes the first
//     candidate, else the first candidate; Duration runs to StepFinished,
//     or to the step's last event. Provider is the candidates' providerId
//     when they agree.
//
// Step numbers are the events' iteration, NaN when they have none: a
// CandidateGenerated without one is a step of its own, as METRICS.md
// counts it. The zero L3Reader is ready to use.
type L3Reader struct {
	out       []Episode
	run       string
	steps     []*l3Step
	byKey     map[stepKey]*l3Step
	diagnosed map[stepKey]int
	current   *l3Step
	started   time.Time // the pending StepStarted, zero when none
}

// stepKey is an L3 step index; CandidateGenerated without one is a step of
// its own, as METRICS.md counts it.
type stepKey struct {
	known bool
	n     float64
}

func (k stepKey) String() string {
	if !k.known {
		return "none"
	}
	return strconv.FormatFloat(k.n, 'f', -1, 64)
}

func keyOf(v float64) stepKey {
	if math.IsNaN(v) {
		return stepKey{}
	}
	return stepKey{true, v + 0}
}

type l3Step struct {
	key        stepKey
	start, end time.Time
	attempts   []Attempt
	round      int // the first candidate not yet followed by a patch event
	provider   string
	mixed      bool
	finished   bool
	success    bool
}

// Run starts run's rows, ending the run before when it was another.
func (r *L3Reader) Run(run string) {
	if run == r.run && r.byKey != nil {
		return
	}
	r.flush()
	r.run, r.steps, r.current, r.started = run, nil, nil, time.Time{}
	r.byKey, r.diagnosed = map[stepKey]*l3Step{}, map[stepKey]int{}
}

// Episodes ends the last run and returns the steps read, run by run.
func (r *L3Reader) Episodes() []Episode {
	r.flush()
	r.steps, r.byKey = nil, nil
	return r.out
}

func (r *L3Reader) flush() {
	for _, st := range r.steps {
		r.out = appendL3(r.out, r.run, st, r.diagnosed[st.key])
	}
}

// Candidate is a CandidateGenerated: an attempt of its step, which a
// pending StepStarted begins.
func (r *L3Reader) Candidate(step float64, ts time.Time, valid bool, provider string) {
	k := keyOf(step)
	st := r.byKey[k]
	if st == nil {
		st = &l3Step{key: k, start: ts}
		if !r.started.IsZero() {
			st.start = r.started
		}
		r.byKey[k] = st
		r.steps = append(r.steps, st)
	}
	r.started = time.Time{}
	if r.current != st {
		r.current = st
		st.round = len(st.attempts)
	}
	att := Attempt{Valid: valid}
	if !att.Valid {
		att.Class = failure.ClassLLMOutputInvalid
	}
	st.attempts = append(st.attempts, att)
	switch {
	case len(st.attempts) == 1:
		st.provider = provider
	case provider != st.provider:
		st.mixed = true
	}
	st.end = later(st.end, ts)
}

// StepEvent is a StepStarted (started), which the next candidate's step
// starts at, or a StepFinished, which ends the current step.
func (r *L3Reader) StepEvent(started bool, ts time.Time, success bool) {
	if started {
		r.current, r.started = nil, ts
		return
	}
	if c := r.current; c != nil && !c.finished {
		c.finished, c.success = true, success
		c.end = later(c.end, ts)
	}
	r.current, r.started = nil, time.Time{}
}

// Diagnosis is a DiagnosisStarted naming step.
func (r *L3Reader) Diagnosis(step float64) { r.diagnosed[keyOf(step)]++ }

// Patch is a PatchApplied or PatchApplyFailed (failed) of the current
// step's round of candidates: a failure belongs to the round's last valid
// candidate, with the apply error sig as its signature.
func (r *L3Reader) Patch(failed bool, ts time.Time, sig string) {
	st := r.current
	if st == nil || st.round >= len(st.attempts) {
		return
	}
	if failed {
		i := len(st.attempts) - 1
		for j := i; j >= st.round; j-- {
			if st.attempts[j].Valid {
				i = j
				break
			}
		}
		at := &st.attempts[i]
		at.PatchApplyFailed, at.Class, at.Signature = true, failure.ClassPatchApplyFailed, sig
	}
	st.round = len(st.attempts)
	st.end = later(st.end, ts)
}

func appendL3(out []Episode, run string, st *l3Step, diagnoses int) []Episode {
	e := Episode{
		Kind:     KindL3,
		ID:       run + "/l3/" + st.key.String(),
		Run:      run,
		Time:     st.start,
		Attempts: st.attempts,
		Success:  st.finished && st.success,
	}
	if !st.mixed {
		e.Provider = st.provider
	}
	if e.Success {
		last := &e.Attempts[len(e.Attempts)-1]
		last.OK, last.Class = true, ""
	}
	if diagnoses > 0 {
		e.StopReason, e.Diagnoses = "diagnosed", diagnoses
	}
	if d := st.end.Sub(st.start); d > 0 {
		e.Duration = d
	}
	return append(out, e)
}

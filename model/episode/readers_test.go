package episode

import (
	"math"
	"reflect"
	"testing"
	"time"

	"github.com/orchstat/orchstat/model/events"
	"github.com/orchstat/orchstat/model/failure"
)

var t0 = time.Unix(0, 0).UTC()

func at(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }

func TestL2Reader(t *testing.T) {
	for _, tc := range []struct {
		name string
		feed func(r *L2Reader)
		want []Episode
	}{
		{"no iteration, no loop", func(r *L2Reader) {
			r.Run("a")
			r.Event(L2Event{Time: at(1), Type: events.IterationStarted, Iteration: math.NaN()})
		}, nil},
		{"a patch that does not apply, an empty repair, a pass, a stop", func(r *L2Reader) {
			r.Run("a")
			r.Event(L2Event{Time: at(1), Type: events.IterationStarted, Iteration: 1})
			r.Event(L2Event{Time: at(2), Type: events.RepairAttempted, Iteration: 1, PatchPath: "p.diff"})
			r.PatchApplyFailed(at(3))
			r.Event(L2Event{Time: at(4), Type: events.IterationFinished, Iteration: 1, Result: "failure", Signature: "s", HasSignature: true})
			r.Event(L2Event{Time: at(5), Type: events.RepairAttempted, Iteration: 2, PatchPath: "none (no-diff)"})
			r.Event(L2Event{Time: at(6), Type: events.IterationFinished, Iteration: 2, Result: "failure"})
			r.Event(L2Event{Time: at(7), Type: events.IterationFinished, Iteration: 3, Passed: true, HasPassed: true})
			r.Stopped(at(9), "budget") // halts: the loop has begun and not escalated
		}, []Episode{{Kind: KindL2, ID: "a/l2", Run: "a", Time: at(1), Duration: 8 * time.Second, Success: true,
			Halted: true, StopReason: "budget",
			Attempts: []Attempt{
				{Class: failure.ClassPatchApplyFailed, Signature: "s", PatchApplyFailed: true},
				{Class: failure.ClassLLMOutputInvalid},
				{OK: true},
			}}}},
		{"escalates from L2 only, the first reason kept", func(r *L2Reader) {
			r.Run("b")
			r.Event(L2Event{Time: at(1), Type: events.IterationFinished, Iteration: 1, Result: "failure"})
			r.Escalation(at(2), "L3", "not ours")
			r.Escalation(at(3), "L2", "non_improving")
			r.Escalation(at(4), "L2", "patch_apply_failure")
			r.Stopped(at(5), "after the escalation")
		}, []Episode{{Kind: KindL2, ID: "b/l2", Run: "b", Time: at(1), Duration: 2 * time.Second,
			Escalated: true, EscalationReason: "non_improving",
			Attempts: []Attempt{{Class: failure.ClassVerifyFailed}}}}},
		{"runs in turn", func(r *L2Reader) {
			r.Run("a")
			r.Event(L2Event{Time: at(1), Type: events.IterationStarted, Iteration: 1})
			r.Run("b")
			r.Event(L2Event{Time: at(2), Type: events.IterationStarted, Iteration: 1})
		}, []Episode{
			{Kind: KindL2, ID: "a/l2", Run: "a", Time: at(1), Attempts: []Attempt{{}}},
			{Kind: KindL2, ID: "b/l2", Run: "b", Time: at(2), Attempts: []Attempt{{}}},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var r L2Reader
			tc.feed(&r)
			if got := r.Episodes(); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got  %+v\nwant %+v", got, tc.want)
			}
		})
	}
}

func TestL3Reader(t *testing.T) {
	for _, tc := range []struct {
		name string
		feed func(r *L3Reader)
		want []Episode
	}{
		{"a round whose patch fails, then a passing one", func(r *L3Reader) {
			r.Run("a")
			r.StepEvent(true, at(1), false)
			r.Candidate(1, at(2), true, "p")
			r.Candidate(1, at(3), false, "p")
			r.Patch(true, at(4), "apply error")
			r.Diagnosis(1)
			r.Candidate(1, at(5), true, "p")
			r.Patch(false, at(6), "")
			r.StepEvent(false, at(7), true)
		}, []Episode{{Kind: KindL3, ID: "a/l3/1", Run: "a", Time: at(1), Duration: 6 * time.Second, Provider: "p",
			Success: true, StopReason: "diagnosed", Diagnoses: 1,
			Attempts: []Attempt{
				{Valid: true, PatchApplyFailed: true, Class: failure.ClassPatchApplyFailed, Signature: "apply error"},
				{Class: failure.ClassLLMOutputInvalid},
				{Valid: true, OK: true},
			}}}},
		{"no step number, mixed providers, unfinished", func(r *L3Reader) {
			r.Run("b")
			r.Candidate(math.NaN(), at(1), true, "p")
			r.Candidate(math.NaN(), at(2), true, "q")
		}, []Episode{{Kind: KindL3, ID: "b/l3/none", Run: "b", Time: at(1), Duration: time.Second,
			Attempts: []Attempt{{Valid: true}, {Valid: true}}}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var r L3Reader
			tc.feed(&r)
			if got := r.Episodes(); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got  %+v\nwant %+v", got, tc.want)
			}
		})
	}
}

func TestMergeInto(t *testing.T) {
	e := func(s int, id string) Episode { return Episode{Kind: KindProvider, ID: id, Time: at(s)} }
	a := []Episode{e(1, "a"), e(3, "c"), e(5, "e")}
	b := []Episode{e(0, "z"), e(3, "b"), e(6, "f")}
	want := []Episode{e(0, "z"), e(1, "a"), e(3, "b"), e(3, "c"), e(5, "e"), e(6, "f")}
	if got := MergeInto(a, b); !reflect.DeepEqual(got, want) {
		t.Errorf("got %+v, want %+v", got, want)
	}
}

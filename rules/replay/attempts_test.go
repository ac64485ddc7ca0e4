package replay

import (
	"context"
	"reflect"
	"testing"

	"github.com/orchstat/orchstat/model/episode"
	"github.com/orchstat/orchstat/model/failure"
	"github.com/orchstat/orchstat/model/simulated"
	"github.com/orchstat/orchstat/rules/retry"
)

func mustPreset(t *testing.T, name string) *retry.Policy {
	t.Helper()
	p, err := retry.Preset(name)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// fails is n failed attempts of one class and signature, then a pass when
// pass is set.
func fails(n int, class failure.Class, sig string, pass bool) []episode.RecordedAttempt {
	var out []episode.RecordedAttempt
	for range n {
		out = append(out, episode.RecordedAttempt{Class: class, Signature: sig, Stage: string(class)})
	}
	if pass {
		out = append(out, episode.RecordedAttempt{Passed: true})
	}
	return out
}

func TestReplayAttempts(t *testing.T) {
	factory := mustPreset(t, "factory")
	sigHalt := factory.Clone()
	sigHalt.Name, sigHalt.SignatureHalt = "sig3", 3
	max2 := factory.Clone()
	max2.Name, max2.MaxAttempts = "max2", 2
	runs := []episode.AttemptRun{
		// Passes at the 4th attempt after three identical failures.
		{System: "factory", RunID: "a", Attempts: fails(3, failure.ClassVerifyFailed, "s", true)},
		// A precondition that can never hold, retried to the limit.
		{System: "factory", RunID: "b", Attempts: fails(5, failure.ClassPreflight, "p", false)},
		// Made under max_attempts 2, as its summary says.
		{System: "factory", RunID: "c", MaxAttempts: 2, Attempts: fails(2, failure.ClassVerifyFailed, "", false)},
		// Passes first time.
		{System: "factory", RunID: "d", Attempts: fails(0, "", "", true)},
	}
	got, err := ReplayAttempts(context.Background(), runs, factory, []*retry.Policy{mustPreset(t, "factory-audited"), sigHalt, max2}, true)
	if err != nil {
		t.Fatal(err)
	}
	want := []simulated.AttemptResult{
		// b meets the preset's retry limit, c its own attempt limit.
		{Policy: "factory", Runs: 4, Succeeded: 2, Failed: 2, Attempts: 12, Stops: map[string]int{"max_retries": 1, "max_attempts": 1},
			Changed: []string{}, Unknown: []string{}, Reproduced: 4, Checked: 4},
		// Preflight is not retried: 4 attempts saved on b.
		{Policy: "factory-audited", Runs: 4, Succeeded: 2, Failed: 1, BeyondRecord: 1, Attempts: 8, Saved: 4,
			Stops: map[string]int{"class": 1}, Changed: []string{}, Unknown: []string{"c"}},
		// The third identical signature halts a (a pass lost) and b.
		{Policy: "sig3", Runs: 4, Succeeded: 1, Failed: 2, BeyondRecord: 1, Attempts: 9, Saved: 3, SuccessesLost: 1,
			Stops: map[string]int{"signature_halt": 2}, Changed: []string{"a"}, Unknown: []string{"c"}},
		{Policy: "max2", Runs: 4, Succeeded: 1, Failed: 3, Attempts: 7, Saved: 5, SuccessesLost: 1,
			Stops: map[string]int{"max_attempts": 3}, Changed: []string{"a"}, Unknown: []string{}},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got\n%+v\nwant\n%+v", got, want)
	}
}

// Auto-retry's global cap counts retries across one orchestrator run's
// issues; a baseline that only stands for the record ends where it does.
func TestReplayAttemptsGlobalCapAndRecordBaseline(t *testing.T) {
	var runs []episode.AttemptRun
	for _, id := range []string{"i1", "i2", "i3", "i4"} {
		// Each failure differs from the last, so no signature halts.
		var as []episode.RecordedAttempt
		for i := range 5 {
			as = append(as, episode.RecordedAttempt{Class: failure.ClassLogicError, Signature: id + string(rune('a'+i))})
		}
		as = append(as, episode.RecordedAttempt{Passed: true})
		runs = append(runs, episode.AttemptRun{System: "claudestrator", RunID: id, Batch: "run-1", Attempts: as})
	}
	runs = append(runs, episode.AttemptRun{System: "claudestrator", RunID: "other", Batch: "run-2",
		Attempts: fails(2, failure.ClassLogicError, "x", false)})
	base := mustPreset(t, "auto-retry")
	base.Name, base.MaxRetries, base.MaxAttempts, base.SignatureHalt, base.GlobalCap = "as recorded", 1<<30, 0, 0, 0
	got, err := ReplayAttempts(context.Background(), runs, base, []*retry.Policy{mustPreset(t, "auto-retry")}, false)
	if err != nil {
		t.Fatal(err)
	}
	if b := got[0]; b.Succeeded != 4 || b.Failed != 1 || b.Stops["record"] != 1 || b.Checked != 0 {
		t.Errorf("baseline = %+v", b)
	}
	// Each of run-1's issues fails 5 times and passes at the 6th: 5
	// retries each, so the cap of 15 stops the 4th issue at once.
	p := got[1]
	if p.Succeeded != 3 || p.Failed != 1 || p.Stops["global_cap"] != 1 || p.SuccessesLost != 1 || p.BeyondRecord != 1 {
		t.Errorf("auto-retry = %+v", p)
	}
	if !reflect.DeepEqual(p.Changed, []string{"i4"}) {
		t.Errorf("changed = %v", p.Changed)
	}
}

// The baseline is the record: a run its replay does not reproduce (made
// under a limit the summary does not record) ends as recorded, not
// "retried past the record", and is named by the self-check.
func TestReplayAttemptsBaselineIsTheRecord(t *testing.T) {
	runs := []episode.AttemptRun{
		{System: "factory", RunID: "x", Attempts: fails(3, failure.ClassVerifyFailed, "", false)},
		{System: "factory", RunID: "y", Attempts: fails(1, failure.ClassVerifyFailed, "", true)},
	}
	got, err := ReplayAttempts(context.Background(), runs, mustPreset(t, "factory"), []*retry.Policy{mustPreset(t, "factory")}, true)
	if err != nil {
		t.Fatal(err)
	}
	b, p := got[0], got[1]
	if b.Succeeded != 1 || b.Failed != 1 || b.BeyondRecord != 0 || b.Stops["record"] != 1 || b.Attempts != 5 ||
		!reflect.DeepEqual(b.Mismatches, []string{"x"}) || b.Reproduced != 1 {
		t.Errorf("baseline = %+v", b)
	}
	// The same policy, not the record, retries x past it.
	if p.BeyondRecord != 1 || !reflect.DeepEqual(p.Unknown, []string{"x"}) || p.Failed != 0 {
		t.Errorf("policy = %+v", p)
	}
}

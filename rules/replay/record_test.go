package replay

import (
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/orchstat/orchstat/model/episode"
	"github.com/orchstat/orchstat/model/failure"
	"github.com/orchstat/orchstat/model/simulated"
	"github.com/orchstat/orchstat/rules/retry"
)

// orchestratorL2 is the orchestrator's provider policy with the orchestrator's L2
// loop and L3 trigger.
func orchestratorL2() *retry.Policy {
	p := orchestrator()
	p.MaxIterations, p.NonImprovingStop, p.DiagnosisAfter = 5, 2, 2
	p.Escalation = retry.Escalation{NonImproving: 2, PatchApplyFailures: 2, MaxEscalations: 1}
	return p
}

// loop makes an L2 episode from its iterations: "+" passed, "x" failed,
// "!" a patch that did not apply, "-" no patch, "s" the stopped iteration
// (IterationStarted only); a letter after the mark is the iteration's
// signature, none when its report is missing. initial is the initial
// verification's signature, "" when missing.
func loop(id, initial string, end string, iters ...string) episode.Episode {
	e := episode.Episode{Kind: episode.KindL2, ID: id + "/l2", Run: id, InitialSignature: initial}
	for _, it := range iters {
		a := episode.Attempt{Signature: it[1:]}
		switch it[0] {
		case '+':
			a.OK = true
		case 'x':
			a.Class = failure.ClassVerifyFailed
		case '!':
			a.Class, a.PatchApplyFailed = failure.ClassPatchApplyFailed, true
		case '-':
			a.Class = failure.ClassLLMOutputInvalid
		}
		e.Attempts = append(e.Attempts, a)
	}
	e.Success = len(e.Attempts) > 0 && e.Attempts[len(e.Attempts)-1].OK
	switch {
	case strings.HasPrefix(end, "escalated:"):
		e.Escalated, e.EscalationReason = true, strings.TrimPrefix(end, "escalated:")
	case end != "":
		e.Halted, e.StopReason = true, end
	}
	return e
}

// A loop's record, reports or not: the trace's end says which
// signatures repeated, and the baseline reproduces every loop whose end
// its rules decide; the rest are named with the reason.
func TestPrepareL2(t *testing.T) {
	base := orchestratorL2()
	for _, tt := range []struct {
		name       string
		e          episode.Episode
		checkable  bool
		reproduced bool
		inferred   bool
		why        string
	}{
		{"passes, reports", loop("a", "A", "", "xB", "xC", "+"), true, true, false, ""},
		{"passes, no reports", loop("a", "", "", "x", "x", "+"), true, true, true, ""},
		{"non-improving at 4, reports", loop("b", "A", "non_improving", "xB", "xB", "xB", "s"), true, true, false, ""},
		{"non-improving at 4, no reports", loop("b", "", "non_improving", "x", "x", "x", "s"), true, true, true, ""},
		{"non-improving at 2, no reports", loop("c", "", "non_improving", "x", "s"), true, true, true, ""},
		{"non-improving at 4, one report", loop("b", "A", "non_improving", "x", "xB", "x", "s"), true, true, true, ""},
		{"max iterations, no reports", loop("d", "", "budget_exceeded", "x", "-", "x", "-", "x"), true, true, true, ""},
		{"patch-apply escalation, no reports", loop("e", "", "escalated:patch_apply_failure", "x", "!", "!"), true, true, true, ""},
		{"non-improving escalation after 1", loop("f", "", "escalated:non_improving", "x"), true, false, true,
			"the baseline starts iteration 2, which the record does not have; the record escalates (non_improving) after 1 iteration, whatever the missing signatures were"},
		{"reports contradict the stop", loop("g", "A", "non_improving", "xB", "xC", "xD", "s"), true, false, false,
			"the baseline starts iteration 5, which the record does not have; the record ends non_improving after 4 iterations"},
		{"unfinished", loop("h", "", "", "x", "x"), false, false, true, "no recorded end (the run is unfinished or its trace was cut short)"},
		{"stopped by an error", loop("i", "A", "error", "xB"), false, false, false, "stopped by error, which the loop's rules do not decide"},
		{"a time budget", loop("j", "A", "budget_exceeded", "xB", "xC"), false, false, false,
			"stopped by a time or cost budget after 2 iterations, which the replay does not model"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			rec := prepareL2(&tt.e, base)
			if rec.checkable != tt.checkable || rec.reproduced != tt.reproduced || rec.inferred != tt.inferred || rec.why != tt.why {
				t.Errorf("checkable %t reproduced %t inferred %t why %q; want %t %t %t %q",
					rec.checkable, rec.reproduced, rec.inferred, rec.why, tt.checkable, tt.reproduced, tt.inferred, tt.why)
			}
		})
	}
}

// l2Corpus is provider requests, L2 loops (one that the baseline's
// replay would run past the record, one without reports) and L3 steps.
func l2Corpus() []episode.Episode {
	eps := corpus()
	eps = append(eps,
		loop("l1", "A", "", "xB", "+"),
		loop("l2", "", "non_improving", "x", "x", "x", "s"),
		loop("l3", "A", "escalated:non_improving", "xB"),
		loop("l4", "A", "", "xB", "xC"), // unfinished
		loop("l5", "A", "escalated:patch_apply_failure", "!B", "!B"),
		episode.Episode{Kind: episode.KindL3, ID: "l5/l3/0", Run: "l5", Diagnoses: 1, Attempts: []episode.Attempt{
			{PatchApplyFailed: true, Signature: "e"}, {PatchApplyFailed: true, Signature: "e"}}},
	)
	return eps
}

// The baseline is the record: the same figures, exact and unestimated,
// whatever the seed.
func TestBaselineIsTheRecord(t *testing.T) {
	eps := l2Corpus()
	more := orchestratorL2()
	more.Name, more.MaxIterations = "more iterations", 8
	var first simulated.Result
	for _, seed := range []uint64{1, 2, 3} {
		b := mustSimulate(t, eps, orchestratorL2(), []*retry.Policy{more}, Options{Seed: seed})[0]
		if seed == 1 {
			first = b
			continue
		}
		if !reflect.DeepEqual(b, first) {
			t.Errorf("seed %d: baseline\n%+v\nseed 1:\n%+v", seed, b, first)
		}
	}
	b := first
	for name, m := range map[string]simulated.Metric{"success": b.SuccessRate, "backoff": b.BackoffSeconds, "l2": b.L2SuccessRate,
		"iterations": b.L2Iterations, "escalations": b.Escalations, "diagnoses": b.Diagnoses} {
		if !m.Exact || m.Lo != m.Value || m.Hi != m.Value {
			t.Errorf("%s: %+v, want exact", name, m)
		}
	}
	// The record: l1 passes of 5 loops; 2+4+1+2+2 iterations; l3 and l5
	// escalate; l2 stops.
	if b.Estimated != 0 || b.L2Estimated != 0 || b.L2SuccessRate.Value != 0.2 || b.L2Iterations.Value != 11 ||
		b.Escalations.Value != 2 || b.NonImproving.Value != 1 || b.Diagnoses.Value != 1 {
		t.Errorf("baseline %+v", b)
	}
	// Self-check: l3 cannot be reproduced, l4 cannot be checked.
	if len(b.Mismatches) != 1 || b.Mismatches[0].ID != "l3/l2" || b.NotCheckable != 1 || b.Unchecked[0].ID != "l4/l2" ||
		b.Reproduced != b.Checked-1 || b.L2Inferred != 1 {
		t.Errorf("self-check %+v %+v %d/%d", b.Mismatches, b.Unchecked, b.Reproduced, b.Checked)
	}
}

// A policy that changes nothing a kind depends on leaves that kind's
// figures equal to the baseline's: no interval, no estimate, a zero
// difference. Backoff touches only provider requests; escalation only L2
// loops; the diagnosis trigger only L3 steps.
func TestPolicyChangesOnlyWhatItTouches(t *testing.T) {
	base := orchestratorL2()
	jitter := orchestratorL2()
	jitter.Name, jitter.Backoff.Jitter = "full jitter", retry.JitterFull
	sooner := orchestratorL2()
	sooner.Name, sooner.Escalation.NonImproving = "escalate sooner", 1
	diag := orchestratorL2()
	diag.Name, diag.DiagnosisAfter = "diagnose later", 3
	res := mustSimulate(t, l2Corpus(), base, []*retry.Policy{jitter, sooner, diag}, Options{Seed: 1})
	b := res[0]
	figs := map[episode.Kind][]string{
		episode.KindProvider: {"success_rate", "attempts", "wasted_attempts", "backoff_seconds", "halts", "cost_usd", "resolution_p50_seconds", "resolution_p95_seconds"},
		episode.KindL2:       {"l2_success_rate", "l2_iterations", "escalations", "l2_non_improving_stops"},
		episode.KindL3:       {"diagnoses"},
	}
	get := func(r simulated.Result, name string) simulated.Metric {
		return map[string]simulated.Metric{"success_rate": r.SuccessRate, "attempts": r.Attempts, "wasted_attempts": r.Wasted,
			"backoff_seconds": r.BackoffSeconds, "halts": r.Halts, "cost_usd": r.CostUSD, "resolution_p50_seconds": r.ResolutionP50,
			"resolution_p95_seconds": r.ResolutionP95, "l2_success_rate": r.L2SuccessRate, "l2_iterations": r.L2Iterations,
			"escalations": r.Escalations, "l2_non_improving_stops": r.NonImproving, "diagnoses": r.Diagnoses}[name]
	}
	for _, tt := range []struct {
		r       simulated.Result
		touched episode.Kind
	}{{res[1], episode.KindProvider}, {res[2], episode.KindL2}, {res[3], episode.KindL3}} {
		for kind, names := range figs {
			if kind == tt.touched {
				if slices.Contains(tt.r.Unchanged, kind) {
					t.Errorf("%s: %s listed unchanged", tt.r.Policy, kind)
				}
				continue
			}
			if !slices.Contains(tt.r.Unchanged, kind) {
				t.Errorf("%s: %s not listed unchanged: %v", tt.r.Policy, kind, tt.r.Unchanged)
			}
			for _, name := range names {
				m, want, d := get(tt.r, name), get(b, name), tt.r.Diff[name]
				if !reflect.DeepEqual(m, want) || !d.Exact || d.Value != 0 {
					t.Errorf("%s: %s = %+v (Δ %+v), want the baseline's %+v", tt.r.Policy, name, m, d, want)
				}
			}
		}
		if tt.touched != episode.KindProvider && tt.r.Estimated != 0 || tt.touched != episode.KindL2 && tt.r.L2Estimated != 0 {
			t.Errorf("%s: estimated %d provider, %d L2", tt.r.Policy, tt.r.Estimated, tt.r.L2Estimated)
		}
	}
	if res[1].BackoffSeconds.Exact || res[1].BackoffSeconds.Value == b.BackoffSeconds.Value {
		t.Errorf("full jitter's backoff %+v, baseline %+v", res[1].BackoffSeconds, b.BackoffSeconds)
	}
	if v := simulated.Verdict(b, res[1]); !strings.Contains(v, "changes nothing L2 loops or L3 steps depend on") {
		t.Errorf("verdict %q", v)
	}
}

// The record's backoff is the baseline's schedule at the middle of its
// jitter; its resolution time the recorded duration.
func TestRecordProvider(t *testing.T) {
	rp := &Replayer{Baseline: orchestrator(), Model: Fit(corpus(), orchestrator())}
	e := ep("r", 2, true, "")
	o := rp.recordProvider(&e, Outcome{}, true)
	if o.Backoff != 3*time.Second || o.Resolution != e.Duration || o.Attempts != 3 || !o.Success || o.Estimated {
		t.Errorf("%+v", o)
	}
}

// A policy's replay of a loop whose signatures were inferred is exact
// when it is the same under every assignment the record allows: with no
// iterations at all, or escalating at the first repeat (the initial
// verification's), which no assignment changes. An unfinished loop
// allows anything.
func TestInferredLoopExactness(t *testing.T) {
	base := orchestratorL2()
	none := orchestratorL2()
	none.MaxIterations = 0
	sooner := orchestratorL2()
	sooner.Escalation.NonImproving = 1
	for _, tt := range []struct {
		name  string
		e     episode.Episode
		p     *retry.Policy
		exact bool
	}{
		{"no iterations", loop("a", "", "", "x", "x", "+"), none, true},
		{"escalate at the first repeat", loop("b", "", "budget_exceeded", "x", "x", "x", "x", "x"), sooner, true},
		{"reports", loop("c", "A", "", "xB", "+"), sooner, true},
		{"unfinished", loop("d", "", "", "x", "x"), none, false},
	} {
		rec := prepareL2(&tt.e, base)
		if got := rec.exactUnder(tt.p); got != tt.exact {
			t.Errorf("%s: exact %t, want %t (alternatives %d, complete %t)", tt.name, got, tt.exact, len(rec.alternatives), rec.complete)
		}
	}
}

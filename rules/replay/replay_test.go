package replay

import (
	"context"
	"fmt"
	"hash/fnv"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/orchstat/orchstat/model/episode"
	"github.com/orchstat/orchstat/model/failure"
	"github.com/orchstat/orchstat/model/simulated"
	"github.com/orchstat/orchstat/rules/retry"
)

// orchestrator is the orchestrator's provider policy, spelt out so these tests do
// not depend on the presets.
func orchestrator() *retry.Policy {
	return &retry.Policy{Name: "baseline", MaxRetries: 3, Backoff: retry.Orchestrator,
		Retriable: map[failure.Class]bool{failure.ClassRateLimit: true, failure.ClassTimeout: true, failure.ClassServer: true, failure.ClassNetwork: true}}
}

// ep makes a provider episode: retries failed attempts, then success or a
// final failure of class final.
func ep(id string, retries int, success bool, final failure.Class) episode.Episode {
	e := episode.Episode{Kind: episode.KindProvider, ID: id, Run: "run-" + id, Success: success, Duration: time.Duration(retries+1) * time.Second}
	for range retries {
		e.Attempts = append(e.Attempts, episode.Attempt{})
	}
	last := episode.Attempt{OK: success}
	if !success {
		last.Class = final
	}
	e.Attempts = append(e.Attempts, last)
	for k := 1; k <= retries; k++ {
		e.Duration += retry.Orchestrator.Base(k)
	}
	return e
}

func corpus() []episode.Episode {
	var eps []episode.Episode
	add := func(n int, retries int, success bool, final failure.Class) {
		for range n {
			eps = append(eps, ep(fmt.Sprintf("%d", len(eps)), retries, success, final))
		}
	}
	add(60, 0, true, "")
	add(20, 1, true, "")
	add(10, 2, true, "")
	add(4, 3, false, failure.ClassServer)    // exhausted
	add(4, 3, false, failure.ClassRateLimit) // exhausted
	add(2, 0, false, failure.ClassAuth)      // not retried
	return eps
}

func TestFit(t *testing.T) {
	m := Fit(corpus(), orchestrator())
	// The mix: final classes the baseline retries, 4 server and 4 rate_limit.
	if fmt.Sprint(m.Mix) != "[{rate_limit 0.5} {server 0.5}]" {
		t.Errorf("mix %v", m.Mix)
	}
	// Server, attempt 2: at risk 4 (failed) + half of the 30 successes that
	// retried = 19; events: half of 20 = 10.
	h := m.Hazard[failure.ClassServer]
	want := []float64{0, 10.0 / 19, 5.0 / 9, 0}
	for i := range want {
		if math.Abs(h[i]-want[i]) > 1e-12 {
			t.Errorf("hazard[%d] = %v, want %v", i, h[i], want[i])
		}
	}
	if m.hazard(failure.ClassServer, 9) != 0 || m.hazard(failure.ClassAuth, 2) != 0 {
		t.Errorf("beyond the data: %v %v", m.hazard(failure.ClassServer, 9), m.hazard(failure.ClassAuth, 2))
	}
	if m.AttemptTime != time.Second {
		t.Errorf("attempt time %v", m.AttemptTime)
	}
}

func replayOne(t *testing.T, e episode.Episode, p *retry.Policy) Outcome {
	t.Helper()
	rp := &Replayer{Baseline: orchestrator(), Model: Fit(corpus(), orchestrator()), Seed: 1}
	return rp.Provider(&e, p, retry.NewTracker(p, nil), NewStream())
}

func TestProviderReplay(t *testing.T) {
	fewer := orchestrator()
	fewer.Name, fewer.MaxRetries = "fewer", 1
	noRate := orchestrator()
	noRate.Name = "no-rate-limit"
	delete(noRate.Retriable, failure.ClassRateLimit)
	more := orchestrator()
	more.Name, more.MaxRetries = "more", 6
	allClasses := orchestrator()
	allClasses.Name = "retry-auth"
	allClasses.Retriable[failure.ClassAuth] = true

	tests := []struct {
		name      string
		e         episode.Episode
		p         *retry.Policy
		success   bool
		attempts  int
		estimated bool
	}{
		{"baseline: success after 2 retries", ep("a", 2, true, ""), orchestrator(), true, 3, false},
		{"baseline: exhausted", ep("b", 3, false, failure.ClassServer), orchestrator(), false, 4, false},
		{"baseline: auth is final", ep("c", 0, false, failure.ClassAuth), orchestrator(), false, 1, false},
		{"fewer retries: the recorded prefix fails", ep("d", 2, true, ""), fewer, false, 2, false},
		{"fewer retries: a first-try success stays", ep("e", 0, true, ""), fewer, true, 1, false},
		{"a class never retried stops at once", ep("f", 3, false, failure.ClassRateLimit), noRate, false, 1, false},
		{"an unnamed retried failure: estimated", ep("g", 1, true, ""), noRate, true, 2, true},
		{"more retries after exhaustion: estimated", ep("h", 3, false, failure.ClassServer), more, false, 7, true},
		{"retrying auth: no data, assumed to fail", ep("i", 0, false, failure.ClassAuth), allClasses, false, 4, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := replayOne(t, tt.e, tt.p)
			// The unnamed failure's class is drawn; either way the outcome
			// is marked estimated.
			if tt.name == "an unnamed retried failure: estimated" {
				if !o.Estimated || (o.Attempts != 1 && o.Attempts != 2) {
					t.Fatalf("got %+v", o)
				}
				return
			}
			if tt.name == "more retries after exhaustion: estimated" {
				if !o.Estimated || o.Attempts < 5 {
					t.Fatalf("got %+v", o)
				}
				return
			}
			if o.Success != tt.success || o.Attempts != tt.attempts || o.Estimated != tt.estimated {
				t.Fatalf("got success %v attempts %d estimated %v, want %v %d %v (%+v)", o.Success, o.Attempts, o.Estimated,
					tt.success, tt.attempts, tt.estimated, o)
			}
		})
	}
}

// A different schedule changes the time in backoff even when the outcome
// is the same.
func TestBackoffRecomputed(t *testing.T) {
	constant := orchestrator()
	constant.Name, constant.Backoff = "constant", retry.Backoff{Initial: 100 * time.Millisecond}
	e := ep("x", 2, true, "")
	base, alt := replayOne(t, e, orchestrator()), replayOne(t, e, constant)
	if !base.Success || !alt.Success || alt.Backoff != 200*time.Millisecond || base.Backoff < 2700*time.Millisecond || base.Backoff > 3300*time.Millisecond {
		t.Fatalf("baseline %v, constant %v", base.Backoff, alt.Backoff)
	}
	if d := base.Resolution - alt.Resolution; d != base.Backoff-alt.Backoff {
		t.Fatalf("resolution differs by %v, backoff by %v", d, base.Backoff-alt.Backoff)
	}
}

func TestSimulate(t *testing.T) {
	eps := corpus()
	fewer := orchestrator()
	fewer.Name, fewer.MaxRetries = "fewer", 0
	res := mustSimulate(t, eps, orchestrator(), []*retry.Policy{fewer}, Options{Seed: 7})
	b, f := res[0], res[1]
	if b.Reproduced != len(eps) || b.Checked != len(eps) {
		t.Fatalf("baseline reproduces %d/%d", b.Reproduced, b.Checked)
	}
	// Recorded: 90 of 100 succeed, 60+40+30+32+2 = 164 attempts.
	if b.SuccessRate.Value != 0.9 || b.Attempts.Value != 164 || b.Wasted.Value != 24 || b.Estimated != 0 {
		t.Errorf("baseline %+v", b)
	}
	// No retries: only first-try successes succeed; exact.
	if f.SuccessRate.Value != 0.6 || f.Attempts.Value != 100 || f.Estimated != 0 || f.Diff["attempts"].Value != -64 {
		t.Errorf("no retries %+v", f)
	}
	if !(f.SuccessRate.Lo <= f.SuccessRate.Value && f.SuccessRate.Value <= f.SuccessRate.Hi) || f.BackoffSeconds.Value != 0 {
		t.Errorf("interval %+v, backoff %v", f.SuccessRate, f.BackoffSeconds)
	}
	// Deterministic, whatever the order.
	rev := append([]episode.Episode(nil), eps...)
	for i, j := 0, len(rev)-1; i < j; i, j = i+1, j-1 {
		rev[i], rev[j] = rev[j], rev[i]
	}
	again := mustSimulate(t, rev, orchestrator(), []*retry.Policy{fewer}, Options{Seed: 7})
	if fmt.Sprint(again[1].BackoffSeconds, again[0].BackoffSeconds) != fmt.Sprint(f.BackoffSeconds, b.BackoffSeconds) {
		t.Errorf("order changed the result: %v %v vs %v %v", again[1].BackoffSeconds, again[0].BackoffSeconds, f.BackoffSeconds, b.BackoffSeconds)
	}
}

// Retries ended by a failure the baseline does not retry: the retried
// failures were of another class, and the baseline still reproduces it.
func TestRetriesEndedByAFinalClass(t *testing.T) {
	e := ep("z", 2, false, failure.ClassAuth)
	o := replayOne(t, e, orchestrator())
	if o.Success || o.Attempts != 3 || o.Estimated {
		t.Fatalf("baseline: %+v", o)
	}
	none := orchestrator()
	none.Name, none.Retriable = "retry-nothing", map[failure.Class]bool{}
	if o := replayOne(t, e, none); o.Attempts != 1 || o.Estimated {
		t.Fatalf("no retries: %+v", o)
	}
}

// A baseline that retries nothing cannot explain recorded retries: the
// replay says so (estimated) instead of failing.
func TestBaselineWithoutRetries(t *testing.T) {
	none := &retry.Policy{Name: "none", Retriable: map[failure.Class]bool{}}
	eps := corpus()
	res := mustSimulate(t, eps, none, []*retry.Policy{orchestrator()}, Options{Seed: 1})
	if res[0].Reproduced == res[0].Checked || res[1].Episodes != len(eps) {
		t.Fatalf("%+v", res[0])
	}
	if v := simulated.Verdict(res[0], res[1]); !strings.Contains(v, "baseline:") {
		t.Fatalf("verdict %q", v)
	}
}

// The diagnosis trigger replays over a run's apply errors across its L3
// steps; a step that succeeded restarts the count.
func TestL3Diagnoses(t *testing.T) {
	fail := func(sig string) episode.Attempt {
		return episode.Attempt{PatchApplyFailed: true, Signature: sig, Class: failure.ClassPatchApplyFailed}
	}
	step := func(run, id string, success bool, diagnoses int, as ...episode.Attempt) episode.Episode {
		return episode.Episode{Kind: episode.KindL3, ID: run + "/l3/" + id, Run: run, Success: success, Attempts: as, Diagnoses: diagnoses}
	}
	eps := []episode.Episode{
		// Two identical errors in a row: one diagnosis at 2.
		step("a", "0", false, 1, fail("x"), fail("x")),
		// Identical errors split by a step that applied: none.
		step("b", "0", false, 0, fail("y")), step("b", "1", true, 0, episode.Attempt{OK: true}), step("b", "2", false, 0, fail("y")),
	}
	base := orchestrator()
	base.DiagnosisAfter = 2
	later := orchestrator()
	later.Name, later.DiagnosisAfter = "later", 3
	res := mustSimulate(t, eps, base, []*retry.Policy{later}, Options{Seed: 1})
	if res[0].L3Runs != 2 || res[0].Reproduced != 2 || res[0].Checked != 2 || res[0].Diagnoses.Value != 1 {
		t.Fatalf("baseline %+v", res[0])
	}
	if res[1].Diagnoses.Value != 0 || res[1].Diff["diagnoses"].Value != -1 {
		t.Fatalf("later %+v", res[1])
	}
}

func mustSimulate(t *testing.T, eps []episode.Episode, base *retry.Policy, policies []*retry.Policy, opts Options) []simulated.Result {
	t.Helper()
	res, err := Simulate(context.Background(), eps, base, policies, opts)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// TestSeedHashIsFNV: the stream's seed is hash/fnv's FNV-1a of the
// policy's name, a zero byte and the episode's ID, whatever policy the
// stream last replayed, so that caching the name's hash changes no draw.
func TestSeedHashIsFNV(t *testing.T) {
	rp := &Replayer{Seed: 7}
	s := NewStream()
	for _, c := range [][2]string{{"aggressive", "run/1"}, {"aggressive", "run/2"}, {"", "x"}, {"max_retries=3 backoff=full", ""}, {"aggressive", "run/1"}} {
		rp.seed(s, c[0], c[1])
		got := s.rand.Uint64()
		h := fnv.New64a()
		h.Write([]byte(c[0] + "\x00" + c[1]))
		want := rand.New(rand.NewPCG(7, h.Sum64())).Uint64()
		if got != want {
			t.Errorf("seed(%q, %q): first draw %d, want %d", c[0], c[1], got, want)
		}
	}
}

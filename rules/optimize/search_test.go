package optimize

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/orchstat/orchstat/model/episode"
	"github.com/orchstat/orchstat/model/failure"
	"github.com/orchstat/orchstat/model/simulated"
	"github.com/orchstat/orchstat/rules/retry"
)

// truthCorpus is provider requests recorded under a baseline that retried
// rate limits up to 10 times and did not retry auth errors:
//
//   - 1,024 rate-limited requests, of which exactly 1024/2^n succeed at
//     attempt n (512 at the first, 256 at the second, …, 1 at the tenth)
//     and one fails all 11: a transient failure that passes each attempt
//     with probability 1/2;
//   - 4 requests that failed with auth, not retried: a class that a
//     policy retrying it finds never succeeds, since no retried auth
//     failure in the record ever did.
//
// Each rate-limit failure has a signature of its own, as varying limits'
// texts do; the auth failures repeat theirs.
func truthCorpus() []episode.Episode {
	var eps []episode.Episode
	t0 := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	add := func(attempts []episode.Attempt, ok bool) {
		i := len(eps)
		eps = append(eps, episode.Episode{Kind: episode.KindProvider, ID: fmt.Sprintf("r%04d/1", i), Run: fmt.Sprintf("r%04d", i),
			Time: t0.Add(time.Duration(i) * time.Minute), Provider: "p", Model: "m", Attempts: attempts, Success: ok})
	}
	for n := 1; n <= 11; n++ {
		count := 1024 >> n
		if n == 11 {
			count = 1 // the one that fails every attempt
		}
		for range count {
			var as []episode.Attempt
			for a := 1; a < n; a++ {
				as = append(as, episode.Attempt{Class: failure.ClassRateLimit, Signature: fmt.Sprintf("rate limited %d", a)})
			}
			if n <= 10 {
				as = append(as, episode.Attempt{OK: true})
			} else {
				as = append(as, episode.Attempt{Class: failure.ClassRateLimit, Signature: "rate limited 11"})
			}
			add(as, n <= 10)
		}
	}
	for range 4 {
		add([]episode.Attempt{{Class: failure.ClassAuth, Signature: "401 invalid key"}}, false)
	}
	return eps
}

func truthBaseline() *retry.Policy {
	p, _ := retry.Preset("orchestrator")
	p.Name, p.MaxRetries = "recorded", 10
	return p
}

// TestSearchFindsTheTruth: success with k retries is (1024 − 1024/2^(k+1))
// of 1,028 requests (the auth ones never succeed): 6 retries give
// 1016/1028 = 98.83%, 7 give 1020/1028 = 99.22%. So "success >= 99%"
// picks 7 retries; and no policy on the front retries auth (+auth), which
// only adds attempts.
func TestSearchFindsTheTruth(t *testing.T) {
	c, err := ParseConstraint("success >= 99%")
	if err != nil {
		t.Fatal(err)
	}
	// The backoff changes only waits; fixing it keeps the test's space to
	// what decides success and attempts.
	all, picked, err := Search(context.Background(), truthCorpus(), truthBaseline(), Options{Seed: 1, Resamples: 20,
		Constraints: []Constraint{c}, Search: "backoff=none,base=1s,cap=10s,budget=none"})
	if err != nil {
		t.Fatal(err)
	}
	opt := only(t, all)
	if opt.Pick < 0 {
		t.Fatalf("no pick: %s", opt.NoPick)
	}
	got := opt.Front[opt.Pick]
	if !strings.Contains(got.Policy, "max_retries=7 ") {
		t.Errorf("picked %q (success %.4f), want 7 retries", got.Policy, got.Search.SuccessRate.Value)
	}
	if want := 1020.0 / 1028; abs(got.Search.SuccessRate.Value-want) > 1e-9 {
		t.Errorf("the pick's success = %v, want 1020/1028 = %v", got.Search.SuccessRate.Value, want)
	}
	if len(opt.Front) < 3 {
		t.Errorf("a front of %d policies; the truth has one per retry count", len(opt.Front))
	}
	for _, f := range opt.Front {
		if strings.Contains(f.Policy, "classes=+auth") && !strings.Contains(f.Policy, "max_retries=0 ") {
			t.Errorf("front policy %q retries auth", f.Policy)
		}
	}
	if picked == nil || picked.MaxRetries != 7 || picked.Retriable[failure.ClassAuth] {
		t.Errorf("the policy picked: %+v", picked)
	}
	if opt.Tried == 0 || opt.Replays == 0 {
		t.Errorf("tried %d policies in %d replays", opt.Tried, opt.Replays)
	}
}

// only is a search's one layer, the provider requests'.
func only(t *testing.T, o *simulated.Optimization) simulated.Layer {
	t.Helper()
	if len(o.Layers) != 1 || o.Layers[0].Name != layerProvider {
		t.Fatalf("layers %+v; want the provider requests' alone", o.Layers)
	}
	return o.Layers[0]
}

func abs(x float64) float64 {
	if x < 0 {
		return -x
	}
	return x
}

// shiftCorpus is requests recorded under the orchestrator's policy (3
// retries of server errors): the older 700 failed all four attempts with
// a 503; of the newer 300, 290 failed once and passed on the retry (the
// provider recovered) and 10 still failed all four, which tells the
// replay that the failures it does not see named were 503s too. On the older ones not retrying server errors looks free;
// on the newer ones it loses every request a retry would have saved.
func shiftCorpus() []episode.Episode {
	var eps []episode.Episode
	t0 := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	for i := range 1000 {
		as := []episode.Attempt{{Class: failure.ClassServer, Signature: "503"}, {OK: true}}
		ok := i >= 700 && i < 990
		if !ok {
			as = nil
			for range 4 {
				as = append(as, episode.Attempt{Class: failure.ClassServer, Signature: "503"})
			}
		}
		eps = append(eps, episode.Episode{Kind: episode.KindProvider, ID: fmt.Sprintf("s%04d/1", i), Run: fmt.Sprintf("s%04d", i),
			Time: t0.Add(time.Duration(i) * time.Minute), Provider: "p", Model: "m", Attempts: as, Success: ok})
	}
	return eps
}

// TestHoldoutChecksTheFront: the newest 30% are kept out of the search.
// On the older 700, not retrying server errors keeps success at 0% and
// saves 2,100 of 2,800 attempts; on the newer 300 it fails all of them,
// where the baseline saved 290: its advantage is gone.
func TestHoldoutChecksTheFront(t *testing.T) {
	base, _ := retry.Preset("orchestrator")
	space := "max_retries=3,backoff=proportional,base=1s,cap=10s,budget=none,signature_halt=0"
	optAll, _, err := Search(context.Background(), shiftCorpus(), base, Options{Seed: 1, Resamples: 50, Holdout: 0.3, Search: space})
	if err != nil {
		t.Fatal(err)
	}
	opt := only(t, optAll)
	if opt.SearchEpisodes != 700 || opt.HoldoutEpisodes != 300 {
		t.Fatalf("searched %d, held out %d; want 700 and 300", opt.SearchEpisodes, opt.HoldoutEpisodes)
	}
	if opt.Baseline.Holdout == nil || opt.Baseline.Holdout.SuccessRate.Value != 290.0/300 {
		t.Fatalf("the baseline's holdout: %+v", opt.Baseline.Holdout)
	}
	found := false
	for _, f := range opt.Front {
		if !strings.Contains(f.Policy, "classes=-server") {
			continue
		}
		found = true
		if f.Holdout == nil || f.Holdout.SuccessRate.Value != 0 {
			t.Errorf("%s on the holdout: %+v", f.Policy, f.Holdout)
		}
		if f.Kept == nil || *f.Kept {
			t.Errorf("%s keeps its advantage out of sample (%v)", f.Policy, f.Kept)
		}
	}
	if !found {
		t.Fatalf("not retrying server errors is not on the front: %v", opt.Front)
	}
	noHoldAll, _, err := Search(context.Background(), shiftCorpus(), base, Options{Seed: 1, Resamples: 20, Search: space})
	if err != nil {
		t.Fatal(err)
	}
	noHold := only(t, noHoldAll)
	if noHold.HoldoutEpisodes != 0 || noHold.SearchEpisodes != 1000 || noHold.Baseline.Holdout != nil {
		t.Errorf("without a holdout: searched %d, held out %d", noHold.SearchEpisodes, noHold.HoldoutEpisodes)
	}
}

// TestEvidenceBound: recorded under 1 retry, half the requests failed
// both attempts. A policy with more retries decides those 500 requests
// by the estimate beyond the record: 500 of 1,000 outcomes, 50%, over the
// default bound of 20%. Such policies are set apart, never on the front
// or picked, whatever their estimated success.
func TestEvidenceBound(t *testing.T) {
	var eps []episode.Episode
	t0 := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	for i := range 1000 {
		as := []episode.Attempt{{Class: failure.ClassRateLimit, Signature: "429"}, {OK: i%2 == 0}}
		if i%2 != 0 {
			as[1] = episode.Attempt{Class: failure.ClassRateLimit, Signature: "429"}
		}
		eps = append(eps, episode.Episode{Kind: episode.KindProvider, ID: fmt.Sprintf("e%04d/1", i), Run: fmt.Sprintf("e%04d", i),
			Time: t0.Add(time.Duration(i) * time.Minute), Provider: "p", Model: "m", Attempts: as, Success: i%2 == 0})
	}
	base, _ := retry.Preset("orchestrator")
	base.MaxRetries = 1
	optAll, _, err := Search(context.Background(), eps, base, Options{Seed: 1, Resamples: 20,
		Search: "max_retries=0..4,backoff=none,base=1s,cap=10s,budget=none,signature_halt=0,classes=baseline"})
	if err != nil {
		t.Fatal(err)
	}
	opt := only(t, optAll)
	for _, f := range opt.Front {
		if f.EstimatedShare > 0.2 {
			t.Errorf("%s is on the front with %.0f%% of its outcomes estimated", f.Policy, 100*f.EstimatedShare)
		}
	}
	if len(opt.Beyond) == 0 {
		t.Error("no policy set apart as beyond the evidence")
	}
	for _, b := range opt.Beyond {
		if b.EstimatedShare <= 0.2 || !strings.Contains(b.Policy, "max_retries=") {
			t.Errorf("%s set apart with %.0f%% estimated", b.Policy, 100*b.EstimatedShare)
		}
	}
}

// TestConstraints: a bound on attempts against the baseline's picks
// within it; one no policy can meet is named as the one that binds.
func TestConstraints(t *testing.T) {
	eps := truthCorpus()
	space := "backoff=none,base=1s,cap=10s,budget=none,signature_halt=0"
	att, _ := ParseConstraint("attempts <= 0.95*baseline")
	succ, _ := ParseConstraint("success >= 0.9")
	optAll, _, err := Search(context.Background(), eps, truthBaseline(), Options{Seed: 1, Resamples: 20, Constraints: []Constraint{att, succ}, Search: space})
	if err != nil {
		t.Fatal(err)
	}
	opt := only(t, optAll)
	if opt.Pick < 0 {
		t.Fatalf("no pick: %s", opt.NoPick)
	}
	// The record's 10 retries made Σ n·1024/2^n for n = 1..10 = 2036
	// attempts, 11 for the request that never passed and 4 for auth:
	// 2051, of which 0.95 is 1948.45. 3 retries make 1924 attempts at
	// 93.4% success; 2 retries fall to 87.2%, 4 make 1988 attempts: 3 is
	// the one policy that meets both.
	if opt.Baseline.Search.Attempts.Value != 2051 {
		t.Errorf("the baseline made %v attempts, want 2051", opt.Baseline.Search.Attempts.Value)
	}
	if p := opt.Front[opt.Pick]; !strings.Contains(p.Policy, "max_retries=3 ") {
		t.Errorf("picked %s: %v attempts, success %v", p.Policy, p.Search.Attempts.Value, p.Search.SuccessRate.Value)
	}
	never, _ := ParseConstraint("success >= 100%")
	optAll, _, err = Search(context.Background(), eps, truthBaseline(), Options{Seed: 1, Resamples: 20, Constraints: []Constraint{att, never}, Search: space})
	if err != nil {
		t.Fatal(err)
	}
	opt = only(t, optAll)
	if opt.Pick >= 0 || !strings.Contains(opt.NoPick, `"success >= 100%" binds`) {
		t.Errorf("pick %d, %q; want none, naming success >= 100%%", opt.Pick, opt.NoPick)
	}
	for _, bad := range []string{"speed >= 1", "success >= 2*3", "attempts <=", "cost <= x"} {
		if _, err := ParseConstraint(bad); err == nil {
			t.Errorf("ParseConstraint(%q) = nil error", bad)
		}
	}
}

// loopCorpus is 100 L2 repair loops recorded under the orchestrator's 5
// iterations, each iteration failing with a signature of its own (so no
// non-improving stop or escalation fires): 40 pass at the first
// iteration, 20 at the second, 10 at the third, and 30 never pass and
// end at the fifth.
func loopCorpus() []episode.Episode {
	var eps []episode.Episode
	t0 := time.Date(2026, 11, 2, 0, 0, 0, 0, time.UTC)
	add := func(passAt int) {
		i := len(eps)
		e := episode.Episode{Kind: episode.KindL2, ID: fmt.Sprintf("l%03d/l2", i), Run: fmt.Sprintf("l%03d", i),
			Time: t0.Add(time.Duration(i) * time.Minute), InitialSignature: "initial"}
		for k := 1; k <= 5; k++ {
			if k == passAt {
				e.Attempts, e.Success = append(e.Attempts, episode.Attempt{OK: true}), true
				break
			}
			e.Attempts = append(e.Attempts, episode.Attempt{Signature: fmt.Sprintf("failure %d", k)})
		}
		if !e.Success {
			e.StopReason = "budget_exceeded"
		}
		eps = append(eps, e)
	}
	for _, c := range []struct{ passAt, n int }{{1, 40}, {2, 20}, {3, 10}, {0, 30}} {
		for range c.n {
			add(c.passAt)
		}
	}
	return eps
}

// TestSearchLoops: the L2 loops are searched as a layer of their own,
// on their own objectives. Under k iterations the loops that pass are
// those that passed by k: 40, 60, 70 of 100 for k = 1, 2, 3, and 70 for
// more. The baseline's 5 iterations cost 40·1 + 20·2 + 10·3 + 30·5 = 260;
// 3 keep its 70% for 40 + 40 + 30 + 30·3 = 200. So "success >= baseline"
// picks 3 iterations, and the policy picked carries both layers' picks:
// 3 iterations, and 9 retries, the fewest that keep the baseline's
// 1023/1028 (TestSearchFindsTheTruth's arithmetic: 8 pass 1022).
func TestSearchLoops(t *testing.T) {
	c, _ := ParseConstraint("success >= 99%")
	eps := append(truthCorpus(), loopCorpus()...)
	all, _, err := Search(context.Background(), eps, truthBaseline(), Options{Seed: 1, Resamples: 20,
		Constraints: []Constraint{c}, Search: "backoff=none,base=1s,cap=10s,budget=none"})
	if err != nil {
		t.Fatal(err)
	}
	if len(all.Layers) != 2 || all.Layers[1].Name != "L2 loops" {
		t.Fatalf("layers %+v", all.Layers)
	}
	loops := all.Layers[1]
	if loops.SearchEpisodes != 100 || loops.Baseline.Search.L2Iterations.Value != 260 || loops.Baseline.Search.L2SuccessRate.Value != 0.7 {
		t.Fatalf("the baseline: %d loops, %v iterations, %v pass", loops.SearchEpisodes,
			loops.Baseline.Search.L2Iterations.Value, loops.Baseline.Search.L2SuccessRate.Value)
	}
	// "success >= 99%" cannot hold for loops that passed 70% of the time
	// under 5 iterations and pass no more under 8.
	if loops.Pick >= 0 || !strings.Contains(loops.NoPick, `"success >= 99%" binds`) {
		t.Errorf("pick %d (%s); want none, with success >= 99%% binding", loops.Pick, loops.NoPick)
	}
	base, _ := ParseConstraint(DefaultConstraint)
	all, picked, err := Search(context.Background(), eps, truthBaseline(), Options{Seed: 1, Resamples: 20,
		Constraints: []Constraint{base}, Search: "backoff=none,base=1s,cap=10s,budget=none,max_retries=8..10"})
	if err != nil {
		t.Fatal(err)
	}
	loops = all.Layers[1]
	if loops.Pick < 0 {
		t.Fatalf("no pick: %s", loops.NoPick)
	}
	got := loops.Front[loops.Pick]
	if got.Search.L2Iterations.Value != 200 || got.Search.L2SuccessRate.Value != 0.7 || !strings.Contains(got.Policy, "max_iterations=3 ") {
		t.Errorf("picked %s: %v iterations, %v pass; want 3 iterations, 200, 0.7", got.Policy,
			got.Search.L2Iterations.Value, got.Search.L2SuccessRate.Value)
	}
	if picked == nil || picked.MaxIterations != 3 || picked.MaxRetries != 9 {
		t.Errorf("the policy picked: %+v", picked)
	}
	for _, p := range all.Layers[0].Space {
		if strings.Contains(p.Name, "iteration") {
			t.Errorf("the provider layer searches %s", p.Name)
		}
	}
	// A constraint on escalations alone keeps the default on success:
	// else one iteration, with 40% passing, would be picked.
	esc, _ := ParseConstraint("escalations <= baseline")
	all, _, err = Search(context.Background(), eps, truthBaseline(), Options{Seed: 1, Resamples: 20,
		Constraints: []Constraint{esc}, Search: "backoff=none,base=1s,cap=10s,budget=none"})
	if err != nil {
		t.Fatal(err)
	}
	loops = all.Layers[1]
	if strings.Join(loops.Constraints, "; ") != "escalations <= baseline; success >= baseline" || loops.Pick < 0 ||
		loops.Front[loops.Pick].Search.L2SuccessRate.Value != 0.7 {
		t.Errorf("constraints %q, pick %d", loops.Constraints, loops.Pick)
	}
	if p := all.Layers[0]; strings.Join(p.Constraints, "; ") != "success >= baseline" {
		t.Errorf("the provider layer's constraints %q", p.Constraints)
	}
}

// TestSplitKeepsRunsWhole: the holdout takes the newest whole runs, up to
// its share of the episodes; when one run holds most of them, it falls
// back to the newest episodes by time.
func TestSplitKeepsRunsWhole(t *testing.T) {
	t0 := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	corpus := func(sizes ...int) []episode.Episode {
		var eps []episode.Episode
		for r, n := range sizes {
			for k := range n {
				eps = append(eps, episode.Episode{Kind: episode.KindProvider, Run: fmt.Sprintf("run%d", r),
					ID: fmt.Sprintf("run%d/%d", r, k), Time: t0.Add(time.Duration(r)*time.Hour + time.Duration(k)*time.Minute)})
			}
		}
		return eps
	}
	for _, tt := range []struct {
		sizes      []int
		wantHold   int
		wantWholly bool
	}{
		{[]int{10, 10, 10, 10, 10, 10, 10, 10, 10, 10}, 30, true}, // three newest runs
		{[]int{40, 40, 10, 10}, 20, true},                         // 30 of 100 is 2 runs of 10 (and not the 40)
		{[]int{30, 30, 30, 5, 50, 5}, 40, true},                   // 45 of 150: the newest 5, the 50 passed over, 5 and 30
		{[]int{5, 95}, 30, false},                                 // the newest run alone is 95: by time
	} {
		search, hold, byTime := split(corpus(tt.sizes...), 0.3)
		if byTime == tt.wantWholly {
			t.Errorf("%v: by time %v", tt.sizes, byTime)
		}
		if len(hold) != tt.wantHold || len(search)+len(hold) != sumOf(tt.sizes) {
			t.Errorf("%v: held %d of %d, want %d", tt.sizes, len(hold), len(search)+len(hold), tt.wantHold)
		}
		runsHeld := map[string]bool{}
		for _, e := range hold {
			runsHeld[e.Run] = true
		}
		cut := false
		for _, e := range search {
			cut = cut || runsHeld[e.Run]
		}
		if cut == tt.wantWholly {
			t.Errorf("%v: a run cut in two: %v, want %v", tt.sizes, cut, !tt.wantWholly)
		}
	}
}

func sumOf(xs []int) int {
	n := 0
	for _, x := range xs {
		n += x
	}
	return n
}

// TestSameSeedSameFront: the same seed draws the same candidates and
// finds the same front, figure for figure; and the front is the one
// found by computing every candidate's intervals (Naive), policy for
// policy, since every candidate is replayed on every episode.
func TestSameSeedSameFront(t *testing.T) {
	eps := append(truthCorpus(), loopCorpus()...)
	search := func(o Options) *simulated.Optimization {
		t.Helper()
		o.Seed, o.Candidates, o.Resamples, o.Holdout = 7, 120, 20, 0.3
		out, _, err := Search(context.Background(), eps, truthBaseline(), o)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	a, b := search(Options{}), search(Options{})
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	if string(ja) != string(jb) {
		t.Fatal("the same seed found two different searches")
	}
	naive := search(Options{Naive: true})
	for k := range a.Layers {
		var got, want []string
		for _, c := range a.Layers[k].Front {
			got = append(got, c.Policy)
		}
		for _, c := range naive.Layers[k].Front {
			want = append(want, c.Policy)
		}
		if strings.Join(got, "\n") != strings.Join(want, "\n") || len(got) == 0 {
			t.Errorf("%s: the front\n%s\nthe naive front\n%s", a.Layers[k].Name, strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
	}
}

// TestL3StepsAloneAreNamed: L3 steps with no L2 loop beside them are not
// searched, and the search says so.
func TestL3StepsAloneAreNamed(t *testing.T) {
	eps := truthCorpus()
	eps = append(eps, episode.Episode{Kind: episode.KindL3, ID: "x/l3", Run: "x", Time: time.Date(2026, 11, 3, 0, 0, 0, 0, time.UTC)})
	out, _, err := Search(context.Background(), eps, truthBaseline(), Options{Seed: 1, Resamples: 20, Candidates: 20})
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Layers) != 1 || len(out.Notes) != 1 || !strings.Contains(out.Notes[0], "The one L3 step is not searched") {
		t.Errorf("layers %d, notes %q", len(out.Layers), out.Notes)
	}
}

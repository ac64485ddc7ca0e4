package awssim

import (
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/orchstat/orchstat/rules/retry"
)

func schedule(t *testing.T, name string) retry.Backoff {
	t.Helper()
	for _, s := range Published() {
		if s.Name == name {
			return s.Backoff
		}
	}
	t.Fatalf("no schedule %q", name)
	return retry.Backoff{}
}

// TestPublishedOrdering checks the orderings the post reports, averaged over
// 20 seeds: capped exponential backoff without jitter does the most work of
// the four backoff schedules; full and decorrelated jitter finish before
// equal jitter; and with 100 clients full jitter cuts the calls "by more than
// half" against no jitter.
func TestPublishedOrdering(t *testing.T) {
	const seeds = 20
	for _, n := range []int{10, 50, 100} {
		sum := map[string]Summary{}
		for _, name := range []string{"exponential, no jitter", "full jitter", "equal jitter", "decorrelated jitter"} {
			sum[name] = Sweep(Config{Clients: n, Backoff: schedule(t, name), Seed: 1}, seeds)
		}
		none := sum["exponential, no jitter"]
		for _, name := range []string{"full jitter", "equal jitter", "decorrelated jitter"} {
			if got := sum[name].Calls.Mean; got >= none.Calls.Mean {
				t.Errorf("%d clients: %s does %.1f writes, no jitter %.1f: no jitter should do the most work",
					n, name, got, none.Calls.Mean)
			}
		}
		equal := sum["equal jitter"].CompletionMS.Mean
		for _, name := range []string{"full jitter", "decorrelated jitter"} {
			if got := sum[name].CompletionMS.Mean; got >= equal {
				t.Errorf("%d clients: %s completes in %.0f ms, equal jitter in %.0f ms: it should be faster",
					n, name, got, equal)
			}
		}
		if n == 100 {
			if full := sum["full jitter"].Calls.Mean; full > none.Calls.Mean/2 {
				t.Errorf("100 clients: full jitter does %.1f writes, no jitter %.1f: the post reports more than half saved",
					full, none.Calls.Mean)
			}
		}
	}
}

func TestDeterministic(t *testing.T) {
	for _, s := range Published() {
		cfg := Config{Clients: 30, Backoff: s.Backoff, Seed: 42}
		a, b := Run(cfg), Run(cfg)
		if !reflect.DeepEqual(a, b) {
			t.Errorf("%s: same seed, different results: %+v vs %+v", s.Name, a.Calls, b.Calls)
		}
		cfg.Seed = 43
		if c := Run(cfg); reflect.DeepEqual(a, c) {
			t.Errorf("%s: seeds 42 and 43 gave the same result", s.Name)
		}
		if x, y := Sweep(cfg, 5), Sweep(cfg, 5); x != y {
			t.Errorf("%s: Sweep not repeatable: %+v vs %+v", s.Name, x, y)
		}
	}
}

// TestInvariants checks the bookkeeping of a run: every client succeeds
// exactly once, every write was preceded by a read, and the run ends when the
// last client learns of its success.
func TestInvariants(t *testing.T) {
	for _, s := range Published() {
		for _, n := range []int{1, 2, 17} {
			res := Run(Config{Clients: n, Backoff: s.Backoff, Seed: 7})
			if res.Calls != n+res.Failures {
				t.Errorf("%s, %d clients: %d writes, %d failures", s.Name, n, res.Calls, res.Failures)
			}
			if res.Reads != res.Calls {
				t.Errorf("%s, %d clients: %d reads, %d writes", s.Name, n, res.Reads, res.Calls)
			}
			calls := 0
			var last time.Duration
			for _, c := range res.Clients {
				calls += c.Calls
				last = max(last, c.Done)
				if c.Calls < 1 || c.Done <= 0 {
					t.Errorf("%s, %d clients: a client did not finish: %+v", s.Name, n, c)
				}
				if s.Backoff == (retry.Backoff{}) && c.Waited != 0 {
					t.Errorf("%s: waited %v", s.Name, c.Waited)
				}
			}
			if calls != res.Calls || last != res.Completion {
				t.Errorf("%s, %d clients: clients sum to %d writes and end at %v; run: %d, %v",
					s.Name, n, calls, last, res.Calls, res.Completion)
			}
		}
	}
	if res := Run(Config{}); !reflect.DeepEqual(res, Result{}) {
		t.Errorf("no clients: %+v", res)
	}
}

// TestExactTiming runs a network with a fixed 10 ms delay, so the timing can
// be worked out by hand and the retry index the core is asked for is pinned.
// Two clients read version 0 at 10 ms and both write at 30 ms; the first
// write wins and replies at 40 ms; the loser learns at 40 ms, sleeps the
// backoff w, and needs four more legs: done at 80 ms + w.
func TestExactTiming(t *testing.T) {
	ms := time.Millisecond
	fixed := Net{Mean: 10 * ms}
	expo := schedule(t, "exponential, no jitter")
	tests := []struct {
		name    string
		clients int
		b       retry.Backoff
		first   int
		calls   int
		done    []time.Duration
	}{
		{"one client", 1, expo, 0, 1, []time.Duration{40 * ms}},
		{"published index: first sleep 2×base", 2, expo, 0, 3, []time.Duration{40 * ms, 90 * ms}},
		{"core's own index: first sleep base", 2, expo, 1, 3, []time.Duration{40 * ms, 85 * ms}},
		{"no backoff", 2, retry.Backoff{}, 0, 3, []time.Duration{40 * ms, 80 * ms}},
		// Three clients: round 1 at 30 ms, one wins; the two losers sleep
		// 10 ms, write together at 80 ms, one wins at 90 ms; the last sleeps
		// 20 ms (retry 2 with the published index) and is done at 90+20+40.
		{"three clients", 3, expo, 0, 6, []time.Duration{40 * ms, 90 * ms, 150 * ms}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := Run(Config{Clients: tt.clients, Backoff: tt.b, Seed: 1, Net: fixed, FirstRetry: tt.first})
			var done []time.Duration
			for _, c := range res.Clients {
				done = append(done, c.Done)
			}
			slices.Sort(done)
			if res.Calls != tt.calls || !slices.Equal(done, tt.done) || res.Completion != tt.done[len(tt.done)-1] {
				t.Errorf("got %d writes, done at %v (completion %v); want %d, %v", res.Calls, done, res.Completion, tt.calls, tt.done)
			}
		})
	}
}

// TestDecorrelatedFirstWait pins the decorrelated schedule's first wait: with
// a fixed 10 ms network the loser of two clients is done at 80 ms plus one
// wait drawn from [base, 3×base] = [5 ms, 15 ms].
func TestDecorrelatedFirstWait(t *testing.T) {
	b := schedule(t, "decorrelated jitter")
	for seed := range uint64(50) {
		res := Run(Config{Clients: 2, Backoff: b, Seed: seed, Net: Net{Mean: 10 * time.Millisecond}})
		if w := res.Completion - 80*time.Millisecond; w < 5*time.Millisecond || w > 15*time.Millisecond {
			t.Errorf("seed %d: completion %v: the wait %v is outside [5ms, 15ms]", seed, res.Completion, w)
		}
	}
}

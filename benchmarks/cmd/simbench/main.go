// Command simbench times orchstat's replay core: it replays a million
// provider-request episodes under eight policies with 200 bootstrap
// resamples, as `orchstat simulate` would, and prints the time taken.
//
//	go run ./benchmarks/cmd/simbench -episodes 1000000
package main

import (
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"syscall"
	"time"

	"github.com/orchstat/orchstat/model/episode"
	"github.com/orchstat/orchstat/model/failure"
	"github.com/orchstat/orchstat/rules/replay"
	"github.com/orchstat/orchstat/rules/retry"
)

func main() {
	n := flag.Int("episodes", 1_000_000, "provider-request episodes to replay")
	runs := flag.Int("runs", 20_000, "runs they belong to")
	resamples := flag.Int("resamples", 200, "bootstrap resamples")
	seed := flag.Uint64("seed", 1, "seed")
	flag.Parse()

	eps := episodes(*n, *runs, *seed)
	base := policy("orchestrator", 3, retry.Orchestrator, nil)
	full := retry.Backoff{Initial: time.Second, Max: 10 * time.Second, Factor: 2, Jitter: retry.JitterFull}
	policies := []*retry.Policy{
		policy("max-retries 0", 0, retry.Orchestrator, nil),
		policy("max-retries 1", 1, retry.Orchestrator, nil),
		policy("max-retries 5", 5, retry.Orchestrator, nil),
		policy("max-retries 5, full jitter", 5, full, nil),
		policy("no retry of rate_limit", 3, retry.Orchestrator, []failure.Class{failure.ClassRateLimit}),
		policy("constant 1s", 3, retry.Backoff{Initial: time.Second}, nil),
		withBudget(policy("10% budget", 3, retry.Orchestrator, nil)),
	}
	start := time.Now()
	res, err := replay.Simulate(context.Background(), eps, base, policies, replay.Options{Seed: *seed, Resamples: *resamples})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	wall := time.Since(start)
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	fmt.Printf("replayed %d episodes under %d policies (baseline included) with %d resamples in %.2f s; peak RSS %d MB\n",
		len(eps), len(res), *resamples, wall.Seconds(), ru.Maxrss/1024)
	fmt.Printf("%s\n", fmt.Sprintf("baseline reproduces %d/%d", res[0].Reproduced, res[0].Checked))
	if res[0].Reproduced != res[0].Checked {
		os.Exit(1)
	}
}

func policy(name string, maxRetries int, b retry.Backoff, noRetry []failure.Class) *retry.Policy {
	p := &retry.Policy{Name: name, MaxRetries: maxRetries, Backoff: b, Retriable: map[failure.Class]bool{
		failure.ClassRateLimit: true, failure.ClassTimeout: true, failure.ClassServer: true, failure.ClassNetwork: true}}
	for _, c := range noRetry {
		delete(p.Retriable, c)
	}
	return p
}

func withBudget(p *retry.Policy) *retry.Policy {
	p.Budget = &retry.Budget{MaxTokens: 10, Ratio: 0.1}
	return p
}

// episodes draws recorded requests as the orchestrator's client makes
// them: each attempt fails with probability 0.15 (a third of those not
// retriable), up to 3 retries.
func episodes(n, runs int, seed uint64) []episode.Episode {
	r := rand.New(rand.NewPCG(seed, 7))
	retriable := []failure.Class{failure.ClassRateLimit, failure.ClassTimeout, failure.ClassServer, failure.ClassNetwork}
	final := []failure.Class{failure.ClassAuth, failure.ClassClient}
	eps := make([]episode.Episode, n)
	t0 := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	for i := range eps {
		e := &eps[i]
		e.Kind, e.ID = episode.KindProvider, fmt.Sprintf("r%d/%d", i%runs, i)
		e.Run, e.Time = fmt.Sprintf("r%d", i%runs), t0.Add(time.Duration(i)*time.Second)
		e.CostUSD = 0.002
		var d time.Duration
		for k := 1; ; k++ {
			d += time.Duration(500+r.IntN(3000)) * time.Millisecond
			if r.Float64() >= 0.15 {
				e.Attempts = append(e.Attempts, episode.Attempt{OK: true})
				e.Success = true
				break
			}
			if r.Float64() < 1.0/3 {
				e.Attempts = append(e.Attempts, episode.Attempt{Class: final[r.IntN(2)]})
				break
			}
			if k == 4 {
				e.Attempts = append(e.Attempts, episode.Attempt{Class: retriable[r.IntN(4)]})
				break
			}
			e.Attempts = append(e.Attempts, episode.Attempt{})
			d += retry.Orchestrator.Base(k)
		}
		e.Duration = d
	}
	return eps
}

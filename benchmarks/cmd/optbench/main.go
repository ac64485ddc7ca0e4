// Command optbench times `simulate --optimize`'s search against the
// naive way to evaluate every candidate in full, replaying each with its
// intervals as simulate replays a named policy, on generated provider
// requests whose retries pass with a known chance, and says whether the
// two find the same front.
//
//	go run ./benchmarks/cmd/optbench -episodes 100000 -candidates 500
package main

import (
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"runtime/pprof"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/orchstat/orchstat/model/episode"
	"github.com/orchstat/orchstat/model/failure"
	"github.com/orchstat/orchstat/model/simulated"
	"github.com/orchstat/orchstat/rules/optimize"
	"github.com/orchstat/orchstat/rules/retry"
)

func main() {
	n := flag.Int("episodes", 100_000, "provider-request episodes")
	runs := flag.Int("runs", 2_000, "runs they belong to")
	candidates := flag.Int("candidates", 500, "policies drawn")
	resamples := flag.Int("resamples", 200, "bootstrap resamples of the front's figures (simulate's default)")
	seed := flag.Uint64("seed", 1, "seed")
	full := flag.Bool("full", true, "also evaluate every candidate the naive way, and compare")
	verbose := flag.Bool("v", false, "print both fronts")
	cpuprofile := flag.String("cpuprofile", "", "write the search's CPU profile to this file")
	flag.Parse()

	eps := episodes(*n, *runs, *seed)
	base, _ := retry.Preset("orchestrator")
	base.MaxRetries = 10 // the record goes as far as any candidate's retries
	o := optimize.Options{Seed: *seed, Candidates: *candidates, Holdout: 0.3, Resamples: *resamples}
	if *cpuprofile != "" {
		f, err := os.Create(*cpuprofile)
		if err == nil {
			err = pprof.StartCPUProfile(f)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
	}
	searched, t1 := run(eps, base, o)
	pprof.StopCPUProfile()
	fmt.Printf("search: %d candidates, %d episode replays, %.1f s, front of %d\n", searched.Tried, searched.Replays, t1.Seconds(), len(searched.Front))
	if *full {
		o.Naive = true
		naive, t2 := run(eps, base, o)
		fmt.Printf("naive:  %d candidates, %d episode replays, %.1f s, front of %d\n", naive.Tried, naive.Replays, t2.Seconds(), len(naive.Front))
		fmt.Printf("search / naive: time %.2f\n", t1.Seconds()/t2.Seconds())
		a, b := fronts(searched), fronts(naive)
		if slices.Equal(a, b) {
			fmt.Println("the same front, policy for policy")
		} else {
			fmt.Printf("different fronts:\n  search: %s\n  naive:  %s\n", strings.Join(a, "; "), strings.Join(b, "; "))
		}
		if *verbose {
			fmt.Printf("  %s\n", strings.Join(a, "\n  "))
		}
	}
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	fmt.Printf("peak RSS %d MB\n", ru.Maxrss/1024)
}

// run searches eps, provider requests alone: one layer.
func run(eps []episode.Episode, base *retry.Policy, o optimize.Options) (*simulated.Layer, time.Duration) {
	start := time.Now()
	opt, _, err := optimize.Search(context.Background(), eps, base, o)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	return &opt.Layers[0], time.Since(start)
}

// fronts are a front's policies with their success and attempts, most
// success first: two searches find the same front when these agree.
func fronts(o *simulated.Layer) []string {
	var out []string
	for _, c := range o.Front {
		out = append(out, fmt.Sprintf("%s: %.4f/%.0f", c.Policy, c.Search.SuccessRate.Value, c.Search.Attempts.Value))
	}
	return out
}

// episodes are n requests over runs: most pass at once; a failed one is
// a rate limit (passes on each retry with chance 1/2), a server error
// (chance 1/3) or an auth error (never, and not retried by the record),
// recorded under up to 10 retries.
func episodes(n, runs int, seed uint64) []episode.Episode {
	r := rand.New(rand.NewPCG(seed, 7))
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	eps := make([]episode.Episode, n)
	for i := range eps {
		e := episode.Episode{Kind: episode.KindProvider, ID: fmt.Sprintf("r%d/%d", i%runs, i), Run: fmt.Sprintf("r%d", i%runs),
			Time: t0.Add(time.Duration(i) * time.Second), Provider: "p", Model: "m"}
		var class failure.Class
		var pass float64
		switch x := r.Float64(); {
		case x < 0.80:
			e.Attempts, e.Success = []episode.Attempt{{OK: true}}, true
			eps[i] = e
			continue
		case x < 0.92:
			class, pass = failure.ClassRateLimit, 0.5
		case x < 0.98:
			class, pass = failure.ClassServer, 1.0/3
		default:
			e.Attempts = []episode.Attempt{{Class: failure.ClassAuth, Signature: "401"}}
			eps[i] = e
			continue
		}
		e.Attempts = []episode.Attempt{{Class: class, Signature: string(class)}}
		for k := 0; k < 10; k++ {
			if r.Float64() < pass {
				e.Attempts, e.Success = append(e.Attempts, episode.Attempt{OK: true}), true
				break
			}
			e.Attempts = append(e.Attempts, episode.Attempt{Class: class, Signature: string(class)})
		}
		eps[i] = e
	}
	return eps
}

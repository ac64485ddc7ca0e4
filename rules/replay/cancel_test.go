package replay

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/orchstat/orchstat/model/episode"
	"github.com/orchstat/orchstat/model/failure"
	"github.com/orchstat/orchstat/rules/retry"
)

// manyEpisodes is a corpus big enough that replaying it under many
// policies takes a long while: runs of provider requests that failed,
// which a policy that retries every class retries to its cap.
func manyEpisodes(runs int) []episode.Episode {
	var eps []episode.Episode
	for r := range runs {
		for i := range 10 {
			e := ep(fmt.Sprintf("%d-%d", r, i), i%4, i%3 != 0, failure.ClassServer)
			e.Run = fmt.Sprintf("run-%d", r)
			eps = append(eps, e)
		}
	}
	return eps
}

// everything retries every class up to the cap.
func everything(name string) *retry.Policy {
	p := orchestrator()
	p.Name, p.MaxRetries = name, retry.MaxRetriesCap
	for _, c := range failure.AllClasses() {
		p.Retriable[c] = true
	}
	return p
}

// A long simulation stops soon after its context is cancelled, from
// another goroutine, with the context's error: Ctrl-C reaches it.
func TestSimulateStopsWhenCancelled(t *testing.T) {
	eps := manyEpisodes(2000)
	var policies []*retry.Policy
	for i := range 30 {
		policies = append(policies, everything(fmt.Sprintf("p%d", i)))
	}
	for _, after := range []time.Duration{0, 20 * time.Millisecond, 300 * time.Millisecond} {
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() {
			_, err := Simulate(ctx, eps, orchestrator(), policies, Options{Seed: 1, Resamples: MaxResamples})
			done <- err
		}()
		time.Sleep(after)
		cancel()
		select {
		case err := <-done:
			if !errors.Is(err, context.Canceled) {
				t.Errorf("cancelled after %v: %v", after, err)
			}
		case <-time.After(60 * time.Second): // a hang guard, not a timing
			t.Fatalf("cancelled after %v: Simulate did not return", after)
		}
	}
}

func TestReplayAttemptsStopsWhenCancelled(t *testing.T) {
	var runs []episode.AttemptRun
	for i := range 200000 {
		runs = append(runs, episode.AttemptRun{System: "factory", RunID: fmt.Sprint(i), Attempts: fails(3, failure.ClassVerifyFailed, "s", true)})
	}
	var policies []*retry.Policy
	for i := range 50 {
		p := mustPreset(t, "factory")
		p.Name = fmt.Sprint("p", i)
		policies = append(policies, p)
	}
	for _, after := range []time.Duration{0, 20 * time.Millisecond} {
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() {
			_, err := ReplayAttempts(ctx, runs, mustPreset(t, "factory"), policies, true)
			done <- err
		}()
		time.Sleep(after)
		cancel()
		select {
		case err := <-done:
			if !errors.Is(err, context.Canceled) {
				t.Errorf("cancelled after %v: %v", after, err)
			}
		case <-time.After(60 * time.Second):
			t.Fatalf("cancelled after %v: ReplayAttempts did not return", after)
		}
	}
}

// Resamples are capped: 100,000,000 asked for 20 GB of picks and ran out
// of memory; the cap is accepted, one more is refused.
func TestSimulateResamplesCap(t *testing.T) {
	eps := corpus()
	if _, err := Simulate(context.Background(), eps, orchestrator(), nil, Options{Seed: 1, Resamples: MaxResamples}); err != nil {
		t.Errorf("%d resamples: %v", MaxResamples, err)
	}
	for _, n := range []int{MaxResamples + 1, 100000000} {
		_, err := Simulate(context.Background(), eps, orchestrator(), nil, Options{Seed: 1, Resamples: n})
		if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("%d resamples: at most %d", n, MaxResamples)) {
			t.Errorf("%d resamples: %v", n, err)
		}
	}
}

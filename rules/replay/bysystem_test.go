package replay

import (
	"context"
	"errors"
	"testing"

	"github.com/orchstat/orchstat/model/episode"
	"github.com/orchstat/orchstat/model/simulated"
	"github.com/orchstat/orchstat/rules/retry"
)

func TestSystems(t *testing.T) {
	run := func(system, id string, passed ...bool) episode.AttemptRun {
		r := episode.AttemptRun{System: system, RunID: id}
		for _, p := range passed {
			r.Attempts = append(r.Attempts, episode.RecordedAttempt{Passed: p, Class: "test"})
		}
		return r
	}
	runs := map[string][]episode.AttemptRun{
		"exec":    {run("exec", "e1", false, true), run("exec", "e2", true)},
		"mystery": {run("mystery", "m1", true)},
	}
	unknown := map[string]int{"claudestrator": 2}
	noQuick := func(*retry.Policy) (*retry.Policy, error) { return nil, nil }

	got, left, err := Systems(context.Background(), runs, unknown, nil, noQuick)
	if err != nil {
		t.Fatal(err)
	}
	wantLeft := []simulated.LeftOut{
		{System: "claudestrator", Count: 2, What: "runs", Why: "an attempt's outcome is not recorded"},
		{System: "mystery", Count: 1, What: "runs", Why: "simulate has no replay of this system's records"},
	}
	if len(left) != len(wantLeft) || left[0] != wantLeft[0] || left[1] != wantLeft[1] {
		t.Errorf("left out %+v, want %+v", left, wantLeft)
	}
	if len(got) != 1 || got[0].System != "exec" || got[0].Baseline.Runs != 2 || len(got[0].Policies) != 1 ||
		got[0].Policies[0].Policy != "none" || len(got[0].Verdicts) != 1 {
		t.Errorf("got %+v", got)
	}

	// The quick policy is compared beside the named ones, and its error
	// is the caller's.
	bad := errors.New("bad flag")
	if _, _, err := Systems(context.Background(), runs, nil, nil, func(*retry.Policy) (*retry.Policy, error) { return nil, bad }); !errors.Is(err, bad) {
		t.Errorf("err %v, want %v", err, bad)
	}
}

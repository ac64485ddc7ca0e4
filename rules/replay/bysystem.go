package replay

import (
	"context"
	"slices"

	"github.com/orchstat/orchstat/model/episode"
	"github.com/orchstat/orchstat/model/simulated"
	"github.com/orchstat/orchstat/rules/retry"
)

// Systems replays each system's recorded runs (runs, by system) under its
// baseline and the named policies, plus quick's change of that baseline
// (quick returns nil for none), or the system's defaults when there are
// none. Runs it cannot replay are left out, with why: unknown counts, by
// system, runs an attempt's outcome of which is not recorded.
func Systems(ctx context.Context, runs map[string][]episode.AttemptRun, unknown map[string]int, named []*retry.Policy,
	quick func(base *retry.Policy) (*retry.Policy, error)) (out []simulated.System, left []simulated.LeftOut, err error) {
	var systems []string
	for s := range runs {
		systems = append(systems, s)
	}
	for s := range unknown {
		if _, ok := runs[s]; !ok {
			systems = append(systems, s)
		}
	}
	slices.Sort(systems)
	for _, system := range systems {
		runs := runs[system]
		if n := unknown[system]; n > 0 {
			left = append(left, simulated.LeftOut{System: system, Count: n, What: "runs", Why: "an attempt's outcome is not recorded"})
		}
		if len(runs) == 0 {
			continue
		}
		sr, ok := ForSystem(system)
		if !ok {
			left = append(left, simulated.LeftOut{System: system, Count: len(runs), What: "runs", Why: "simulate has no replay of this system's records"})
			continue
		}
		base := sr.Baseline
		policies := named
		q, err := quick(base)
		if err != nil {
			return nil, nil, err
		}
		if q != nil {
			policies = append(slices.Clone(policies), q)
		}
		if len(policies) == 0 {
			policies = sr.Defaults
		}
		res, err := ReplayAttempts(ctx, runs, base, policies, sr.Check)
		if err != nil {
			return nil, nil, err
		}
		ss := simulated.System{System: system, Unknown: unknown[system], Baseline: res[0], Policies: res[1:], Hint: sr.Mismatch, Verdicts: []string{}}
		for _, r := range res[1:] {
			ss.Verdicts = append(ss.Verdicts, simulated.AttemptVerdict(res[0], r))
		}
		out = append(out, ss)
	}
	return out, left, nil
}

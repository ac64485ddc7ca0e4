package replay

import (
	"cmp"
	"slices"

	"github.com/orchstat/orchstat/model/episode"
	"github.com/orchstat/orchstat/model/simulated"
	"github.com/orchstat/orchstat/model/systems"
	"github.com/orchstat/orchstat/rules/retry"
)

// Pick is which recorded episodes one replay covers, against which
// baseline, and the episodes it leaves out with why.
type Pick struct {
	Episodes []episode.Episode
	// Systems are the systems whose episodes are picked (see
	// EpisodeSystem), the orchestrator first; none when nothing is.
	Systems []string
	// Baseline names the baseline's policy: a preset or a policy file.
	Baseline string
	// Defaults are the policies compared when none is named.
	Defaults []*retry.Policy
	LeftOut  []simulated.LeftOut
}

// PickEpisodes picks the episodes of eps that one replay covers: with a
// baseline (a preset or a policy file; "" for none) all of them, against
// it; without, those of the first system that has a policy of its own
// (the orchestrator first), against that policy. Provider requests are
// replayed against one baseline at a time, so the other systems' are left
// out, as are those of a system with no policy of its own.
func PickEpisodes(eps []episode.Episode, baseline string) Pick {
	bySystem := map[string][]episode.Episode{}
	var order []string
	for _, e := range eps {
		s := EpisodeSystem(&e)
		if bySystem[s] == nil {
			order = append(order, s)
		}
		bySystem[s] = append(bySystem[s], e)
	}
	slices.SortFunc(order, func(a, b string) int { // the orchestrator first
		first := func(s string) int {
			if s == simulated.Orchestrator {
				return 0
			}
			return 1
		}
		return cmp.Or(cmp.Compare(first(a), first(b)), cmp.Compare(a, b))
	})
	p := Pick{Baseline: cmp.Or(baseline, simulated.Orchestrator)}
	if baseline != "" {
		p.Systems = order // the user's baseline, for every episode
		if sr, ok := ForEpisodes(simulated.Orchestrator); ok {
			p.Defaults = sr.Defaults
		}
	} else {
		for _, s := range order {
			sr, ok := ForEpisodes(s)
			switch {
			case !ok:
				p.LeftOut = append(p.LeftOut, simulated.LeftOut{System: s, Count: countProvider(bySystem[s]), What: "model calls",
					Why: noReplay(s)})
			case len(p.Systems) > 0:
				p.LeftOut = append(p.LeftOut, simulated.LeftOut{System: s, Count: countProvider(bySystem[s]), What: "model calls",
					Why: "provider requests are replayed against one baseline at a time, here " + order[0] + "'s: simulate their records alone"})
			default:
				p.Systems, p.Baseline, p.Defaults = []string{s}, sr.Baseline.Name, sr.Defaults
			}
		}
	}
	for _, s := range p.Systems {
		p.Episodes = append(p.Episodes, bySystem[s]...)
	}
	if len(p.Systems) < len(order) {
		// Back in the record's order, as the store gave them.
		slices.SortStableFunc(p.Episodes, func(a, b episode.Episode) int { return a.Time.Compare(b.Time) })
	}
	return p
}

// noReplay is why simulate leaves a system's calls out.
func noReplay(system string) string {
	if s, ok := systems.Get(system); ok && s.NoReplay != "" {
		return s.NoReplay
	}
	return "simulate has no replay of this system's calls"
}

// countProvider counts an agent's calls among eps (its provider requests).
func countProvider(eps []episode.Episode) int {
	n := 0
	for _, e := range eps {
		if e.Kind == episode.KindProvider {
			n++
		}
	}
	return n
}

// CallsLeftOut is what no replay covers of system's model calls: those
// whose attempts the record does not show (unknown of them), and those it
// gives no time (noTime of them).
func CallsLeftOut(system string, unknown, noTime int) []simulated.LeftOut {
	var out []simulated.LeftOut
	if unknown > 0 {
		why := "the record does not show their attempts, so no policy can be said to change them"
		if system == "codex" {
			why = "a Codex rollout records no attempts or retries, so no policy can be said to change them"
		}
		out = append(out, simulated.LeftOut{System: system, Count: unknown, What: "model calls", Why: why})
	}
	if noTime > 0 {
		out = append(out, simulated.LeftOut{System: system, Count: noTime, What: "model calls", Why: "the record gives them no time"})
	}
	return out
}

// IdleLeftOut is the orchestrator's runs with nothing to replay, n of
// them; none when n is 0.
func IdleLeftOut(n int) []simulated.LeftOut {
	if n == 0 {
		return nil
	}
	return []simulated.LeftOut{{System: simulated.Orchestrator, Count: n, What: "runs",
		Why: "with nothing to replay: no provider request, L2 loop or L3 step"}}
}

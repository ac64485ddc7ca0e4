package replay

import (
	"slices"
	"testing"
	"time"

	"github.com/orchstat/orchstat/model/episode"
	"github.com/orchstat/orchstat/model/simulated"
)

func TestPickEpisodes(t *testing.T) {
	t0 := time.Unix(0, 0)
	ep := func(id string, s int) episode.Episode {
		return episode.Episode{ID: id, Kind: episode.KindProvider, Time: t0.Add(time.Duration(s) * time.Second)}
	}
	eps := []episode.Episode{ep("claude-code:a", 0), ep("r1/p1", 1), ep("otel:b", 2), ep("r1/p2", 3), ep("claude-code:c", 4)}
	ids := func(es []episode.Episode) []string {
		var out []string
		for _, e := range es {
			out = append(out, e.ID)
		}
		return out
	}
	for _, tt := range []struct {
		name     string
		eps      []episode.Episode
		baseline string
		systems  []string
		ids      []string
		base     string
		leftOut  []string // systems left out
	}{
		{name: "the orchestrator first, the others left out", eps: eps,
			systems: []string{"orchestrator"}, ids: []string{"r1/p1", "r1/p2"}, base: "orchestrator", leftOut: []string{"claude-code", "otel"}},
		{name: "an agent alone, against its own", eps: []episode.Episode{eps[0], eps[4]},
			systems: []string{"claude-code"}, ids: []string{"claude-code:a", "claude-code:c"}, base: "claude-code"},
		{name: "a baseline takes every episode, system by system", eps: eps, baseline: "none",
			systems: []string{"orchestrator", "claude-code", "otel"}, ids: []string{"r1/p1", "r1/p2", "claude-code:a", "claude-code:c", "otel:b"}, base: "none"},
		{name: "nothing", base: "orchestrator"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p := PickEpisodes(tt.eps, tt.baseline)
			var left []string
			for _, l := range p.LeftOut {
				left = append(left, l.System)
			}
			if !slices.Equal(p.Systems, tt.systems) || !slices.Equal(ids(p.Episodes), tt.ids) || p.Baseline != tt.base || !slices.Equal(left, tt.leftOut) {
				t.Errorf("systems %v, episodes %v, baseline %q, left out %v; want %v, %v, %q, %v",
					p.Systems, ids(p.Episodes), p.Baseline, left, tt.systems, tt.ids, tt.base, tt.leftOut)
			}
			if len(p.Systems) > 0 && p.Systems[0] == simulated.Orchestrator && len(p.Defaults) == 0 {
				t.Error("no default policies")
			}
		})
	}
}

func TestCallsLeftOut(t *testing.T) {
	for _, tt := range []struct {
		system          string
		unknown, noTime int
		want            []string // whys
	}{
		{"claude-code", 0, 0, nil},
		{"claude-code", 2, 1, []string{"the record does not show their attempts, so no policy can be said to change them", "the record gives them no time"}},
		{"codex", 3, 0, []string{"a Codex rollout records no attempts or retries, so no policy can be said to change them"}},
	} {
		var got []string
		for _, l := range CallsLeftOut(tt.system, tt.unknown, tt.noTime) {
			got = append(got, l.Why)
		}
		if !slices.Equal(got, tt.want) {
			t.Errorf("%s %d %d: %q, want %q", tt.system, tt.unknown, tt.noTime, got, tt.want)
		}
	}
	if IdleLeftOut(0) != nil || len(IdleLeftOut(2)) != 1 {
		t.Error("IdleLeftOut")
	}
}

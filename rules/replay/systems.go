package replay

import (
	"fmt"
	"strings"

	"github.com/orchstat/orchstat/model/episode"
	"github.com/orchstat/orchstat/model/records"
	"github.com/orchstat/orchstat/model/simulated"
	"github.com/orchstat/orchstat/model/systems"
	"github.com/orchstat/orchstat/rules/retry"
)

// SystemReplay is how simulate replays one system's recorded runs
// (ReplayAttempts): against which baseline, and under which policies when
// the user names none.
type SystemReplay struct {
	// Baseline is the policy the records were made under, or a stand-in
	// that retries as the record did.
	Baseline *retry.Policy
	// Check is whether the baseline is the system's own policy, so that
	// its replay must reproduce the record.
	Check bool
	// Defaults are the policies compared when none is named: the
	// questions asked of each system.
	Defaults []*retry.Policy
	// Mismatch explains the usual reason a run does not reproduce.
	Mismatch string
}

// ForSystem is how system's records are replayed (fresh policies, the
// caller's to change), or false for a system simulate does not replay
// its attempts of (model/systems says which).
func ForSystem(system string) (SystemReplay, bool) {
	s, ok := systems.Get(system)
	if !ok || s.Replay != systems.Attempts {
		return SystemReplay{}, false
	}
	own := preset(s.Preset)
	if s.AsRecorded {
		// Its own rule (claudestrator's auto-retry caps, orchestr8's
		// adaptive maxRetries) against the loops as they ran.
		return SystemReplay{Baseline: asRecorded(), Defaults: []*retry.Policy{own}, Mismatch: s.Mismatch}, true
	}
	sr := SystemReplay{Baseline: own, Check: true, Defaults: []*retry.Policy{preset("none")}, Mismatch: s.Mismatch}
	if q := questions[system]; q != nil {
		sr.Defaults = q(own)
	}
	return sr, true
}

// questions are the policies a system's replay compares by default when
// there is more to ask than what no retries would have done.
var questions = map[string]func(base *retry.Policy) []*retry.Policy{
	// The factory's audit: not retrying deterministic stages, halting
	// on a repeated signature, and other attempt limits.
	records.Factory: factoryQuestions,
}

// factoryQuestions are the factory's: the audited factory, a signature
// halt, and fewer attempts.
func factoryQuestions(base *retry.Policy) []*retry.Policy {
	out := []*retry.Policy{preset("factory-audited"),
		variant(base, "signature-halt 3", func(p *retry.Policy) { p.SignatureHalt = 3 })}
	for _, n := range []int{2, 3, 5} {
		out = append(out, variant(base, fmt.Sprintf("max-attempts %d", n), func(p *retry.Policy) {
			p.MaxAttempts, p.MaxRetries = n, max(p.MaxRetries, n)
		}))
	}
	return out
}

func preset(name string) *retry.Policy {
	p, err := retry.Preset(name)
	if err != nil {
		panic(err) // model/systems names the engine's own presets (TestEverySystemHandled)
	}
	return p
}

// asRecorded retries whatever failed, as often as the record shows: the
// baseline of systems whose retries a person or an outer loop decided.
func asRecorded() *retry.Policy {
	p := preset("auto-retry")
	p.Name, p.MaxRetries, p.MaxAttempts, p.SignatureHalt, p.GlobalCap = "as recorded", 1<<30, 0, 0, 0
	return p
}

// variant is base changed by set, named for the change.
func variant(base *retry.Policy, name string, set func(p *retry.Policy)) *retry.Policy {
	p := base.Clone()
	set(p)
	p.Name = base.Name + " with " + name
	return p
}

// EpisodeSystem is the system whose record e comes from: simulated.Orchestrator,
// or the agent whose call it is ("claude-code", "codex", "otel").
func EpisodeSystem(e *episode.Episode) string {
	s, _, ok := strings.Cut(e.ID, ":")
	if !ok || s == "" || strings.Contains(s, "/") {
		return simulated.Orchestrator
	}
	return s
}

// ForEpisodes is how system's episodes (see EpisodeSystem) are replayed
// when no --baseline names their policy: against the system's own preset,
// so that the baseline reproduces the record, and by default compared
// with no retries at all (what do the retries buy?). False for a system
// with no policy of its own: OpenTelemetry calls come from any agent.
func ForEpisodes(system string) (SystemReplay, bool) {
	s, ok := systems.Get(system)
	if !ok || s.Replay != systems.Calls {
		return SystemReplay{}, false
	}
	return SystemReplay{Baseline: preset(s.Preset), Check: true, Defaults: []*retry.Policy{preset("none")}}, true
}

package replay

import (
	"fmt"
	"strings"

	"github.com/orchstat/orchstat/model/episode"
	"github.com/orchstat/orchstat/model/records"
	"github.com/orchstat/orchstat/model/simulated"
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
	// questions the seeds ask of each system.
	Defaults []*retry.Policy
	// Mismatch explains the usual reason a run does not reproduce.
	Mismatch string
}

// ForSystem is how system's records are replayed (fresh policies, the
// caller's to change), or false for a system simulate does not replay.
func ForSystem(system string) (SystemReplay, bool) {
	switch system {
	case records.Factory:
		// Seed 003: what not retrying deterministic stages, halting on a
		// repeated signature, and other attempt limits would have done.
		base := preset("factory")
		return SystemReplay{Baseline: base, Check: true, Defaults: factoryQuestions(base),
			Mismatch: "older run summaries do not record the max_attempts a run was made under; they are replayed " +
				"under the preset's 5, so one that gave up after fewer failed attempts does not reproduce."}, true
	case records.Claudestrator:
		// Seed 002: the auto-retry caps (per issue 10, global 15,
		// signature halt 3) against the loops as they ran.
		return SystemReplay{Baseline: asRecorded(), Defaults: []*retry.Policy{preset("auto-retry")}}, true
	case records.Orchestr8:
		// Seed 004: the adaptive rule's maxRetries against the retries the
		// user chose.
		return SystemReplay{Baseline: asRecorded(), Defaults: []*retry.Policy{preset("adaptive")}}, true
	case records.Exec:
		// Seed 001: exec decides with the retry handler; what if it did
		// not retry at all?
		return SystemReplay{Baseline: preset("retry-handler"), Check: true, Defaults: []*retry.Policy{preset("none")}}, true
	}
	return SystemReplay{}, false
}

// factoryQuestions are seed 003's: the audited factory, a signature halt,
// and fewer attempts.
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
		panic(err) // the names above are the engine's own presets
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
	base, err := retry.Preset(system)
	if err != nil {
		return SystemReplay{}, false
	}
	return SystemReplay{Baseline: base, Check: true, Defaults: []*retry.Policy{preset("none")}}, true
}

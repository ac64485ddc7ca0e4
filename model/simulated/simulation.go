package simulated

import (
	"github.com/orchstat/orchstat/model/reports"
	"github.com/orchstat/orchstat/model/systems"
)

// Orchestrator names the orchestrator's own episodes (provider requests,
// L2 loops, L3 steps), whose ids carry no system; an agent's calls are
// "<system>:…" (see rules/replay's EpisodeSystem).
const Orchestrator = systems.Orchestrator

// Simulation is what simulate found in its scope: the replay of provider
// requests, L2 loops and L3 steps (Results, the baseline first; nil when
// none), each other system's replay, and what it left out and why. The
// commands fill it and reports/render draws it.
type Simulation struct {
	// DB names what was read: the store's path, or "lake NAME".
	DB    string
	Scope reports.Scope
	// Replayed names the systems whose episodes Results replays.
	Replayed []string
	Results  []Result
	Systems  []System
	LeftOut  []LeftOut
	// Note says how the policies compared came to be when that is not
	// plain from the flags (--policy and quick flags make two).
	Note string
	// Optimization is --optimize's search, in place of Results; nil
	// without it.
	Optimization *Optimization `json:"optimization,omitempty"`
}

// LeftOut is something in scope that simulate does not replay, with why:
// it is named on the output's first line, never skipped in silence.
type LeftOut struct {
	System string `json:"system"`
	Count  int    `json:"count"`
	What   string `json:"what"`
	Why    string `json:"why"`
}

// System is one system's replay of its recorded attempts.
type System struct {
	System  string `json:"system"`
	Unknown int    `json:"runs_not_replayable"`
	// Hint says why a baseline's replay usually differs from the
	// record of this system.
	Hint     string          `json:"-"`
	Baseline AttemptResult   `json:"baseline"`
	Policies []AttemptResult `json:"policies"`
	// Verdicts say, policy by policy, what changes against the record,
	// and when the runs of unknown outcome leave nothing to compare.
	Verdicts []string `json:"verdicts"`
}

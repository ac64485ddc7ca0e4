// Package systems declares, once, each system whose records orchstat
// reads: its name in the store, what --input-format calls its records,
// the kinds of file they come in, where reports list it, its own retry
// policy, how simulate replays it (or why it does not) and whether
// recommend takes it. The stages read this table rather than lists of
// their own; TestEverySystemHandled (systems_test.go, at the module's
// root) fails on a system the table declares and a stage does not handle.
//
// How a kind's files are recognised and parsed is its format package's
// (ingest/factory, ingest/codex, …), which declares a records.Format.
package systems

import (
	"slices"

	"github.com/orchstat/orchstat/model/records"
)

// Orchestrator is the orchestrator's name as a system: its traces,
// summaries and verification reports are ingest's own files.
const Orchestrator = "orchestrator"

// Kinds of record files, as stored in files.kind. Stores on disk hold
// them, so they are never renamed.
const (
	KindFactorySummary = "factory_summary" // run_summary.json
	KindFactoryBrief   = "factory_brief"   // attempt_N/failure_brief.json
	KindFactoryEvents  = "factory_events"  // web pipeline runs/<id>/events.jsonl
	KindFactoryMeta    = "factory_meta"    // web pipeline runs/<id>/meta.json
	KindClaudeHistory  = "claudestrator_history"
	KindClaudeSession  = "claudestrator_session"
	KindClaudeTasks    = "claudestrator_tasks"
	KindClaudeIssues   = "claudestrator_issues"
	KindO8History      = "orchestr8_history"
	KindO8Config       = "orchestr8_config"
	KindCodexRollout   = "codex_rollout"          // sessions/YYYY/MM/DD/rollout-*.jsonl
	KindClaudeCode     = "claude_code_transcript" // projects/<dir>/<session>.jsonl and its sub-agents'
	KindOTLP           = "otlp"                   // the OpenTelemetry Collector file exporter's JSON, or an OTLP/HTTP JSON payload
)

// Replay is how simulate replays a system's records.
type Replay int

const (
	// NotReplayed: simulate leaves the system's records out, saying
	// System.NoReplay.
	NotReplayed Replay = iota
	// Attempts: its recorded runs' attempts are replayed exactly
	// (rules/replay.ForSystem).
	Attempts
	// Calls: its episodes (the orchestrator's provider requests, an
	// agent's model calls) are replayed against its own preset
	// (rules/replay.ForEpisodes).
	Calls
)

// System is one system's facts.
type System struct {
	// Name is the system as stored in the system columns.
	Name string
	// Format is what --input-format names its records ("otlp" for
	// otel's); "" when they come within another system's files.
	Format string
	// Within, for a system without files of its own, is the system in
	// whose files its records are written: exec's invocations are in
	// orchestrator traces.
	Within string
	// Kinds are the files.kind of its record files, each recognised and
	// parsed by its format package. The orchestrator's own files (traces,
	// summaries, verification reports) are ingest's, not a format's.
	Kinds []string
	// Calls says its records are model calls (the calls table), which
	// the calls migration reads again.
	Calls bool
	// Rank is its place in reports: the orchestrator, the runs orchstat
	// exec records, the agents, then the other systems' records.
	Rank int
	// Preset is the rules/retry preset of its own retry policy; "" for a
	// system with none (OpenTelemetry calls come from any agent).
	Preset string
	// Replay is how simulate replays it.
	Replay Replay
	// AsRecorded replays its attempts against the retries the record
	// shows, with its preset as the question asked, rather than against
	// its preset: a person or an outer loop decided its retries.
	AsRecorded bool
	// Mismatch is the usual reason a replayed run does not reproduce.
	Mismatch string
	// NoReplay says why simulate does not replay it.
	NoReplay string
	// Stages says its records may have stages, so recommend --system
	// takes it.
	Stages bool
}

// All are the systems, in the order they are offered (--input-format,
// recommend --system): the orchestrator, the other systems' records, the
// runs exec records, the agents.
var All = []System{
	{Name: Orchestrator, Format: "orchestrator", Rank: 0, Preset: "orchestrator", Replay: Calls},
	{Name: records.Factory, Format: records.Factory, Rank: 5, Stages: true,
		Kinds:  []string{KindFactorySummary, KindFactoryBrief, KindFactoryEvents, KindFactoryMeta},
		Preset: "factory", Replay: Attempts,
		Mismatch: "older run summaries do not record the max_attempts a run was made under; they are replayed " +
			"under the preset's 5, so one that gave up after fewer failed attempts does not reproduce."},
	{Name: records.Claudestrator, Format: records.Claudestrator, Rank: 6, Stages: true,
		Kinds:  []string{KindClaudeHistory, KindClaudeSession, KindClaudeTasks, KindClaudeIssues},
		Preset: "auto-retry", Replay: Attempts, AsRecorded: true},
	{Name: records.Orchestr8, Format: records.Orchestr8, Rank: 7, Stages: true,
		Kinds:  []string{KindO8History, KindO8Config},
		Preset: "adaptive", Replay: Attempts, AsRecorded: true},
	{Name: records.Exec, Within: Orchestrator, Rank: 1, Stages: true, Preset: "retry-handler", Replay: Attempts},
	{Name: records.OTel, Format: "otlp", Rank: 4, Calls: true, Kinds: []string{KindOTLP}, Replay: NotReplayed,
		NoReplay: "they name no agent whose policy would be their baseline; name it with --baseline"},
	{Name: records.ClaudeCode, Format: records.ClaudeCode, Rank: 2, Calls: true, Kinds: []string{KindClaudeCode},
		Preset: "claude-code", Replay: Calls},
	{Name: records.Codex, Format: records.Codex, Rank: 3, Calls: true, Kinds: []string{KindCodexRollout},
		Preset: "codex", Replay: Calls},
}

// Get is the system named name.
func Get(name string) (System, bool) {
	i := slices.IndexFunc(All, func(s System) bool { return s.Name == name })
	if i < 0 {
		return System{}, false
	}
	return All[i], true
}

// Ranked are the systems' names in the order reports list them.
func Ranked() []string {
	byRank := slices.Clone(All)
	slices.SortStableFunc(byRank, func(a, b System) int { return a.Rank - b.Rank })
	out := make([]string, len(byRank))
	for i, s := range byRank {
		out[i] = s.Name
	}
	return out
}

// Names are the names of the systems keep says yes to, in All's order.
func Names(keep func(System) bool) []string {
	var out []string
	for _, s := range All {
		if keep(s) {
			out = append(out, s.Name)
		}
	}
	return out
}

// CallKinds are the kinds of the files of the systems whose records are
// model calls.
func CallKinds() []string {
	var out []string
	for _, s := range All {
		if s.Calls {
			out = append(out, s.Kinds...)
		}
	}
	return out
}

// OfFormat is the system whose records --input-format format names.
func OfFormat(format string) (System, bool) {
	i := slices.IndexFunc(All, func(s System) bool { return s.Format != "" && s.Format == format })
	if i < 0 {
		return System{}, false
	}
	return All[i], true
}

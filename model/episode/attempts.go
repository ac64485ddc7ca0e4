package episode

import "github.com/orchstat/orchstat/model/failure"

// AttemptRun is one recorded run of a system that retries whole attempts
// at an item: a factory run, a claudestrator task or issue, an orchestr8
// pipeline entry, an exec'd command. Unlike provider requests, every
// attempt is in the record with its class and signature, so a replay that
// stops earlier than the record did is exact.
type AttemptRun struct {
	System, RunID string
	// Batch groups the runs that share a run-wide limit (auto-retry's
	// global cap, the retry handler's cascade): one orchestrator run's
	// tasks. "" is a batch of its own.
	Batch string
	// MaxAttempts is the limit the run was made under, when the record
	// says; the baseline replays each run under its own.
	MaxAttempts int
	Attempts    []RecordedAttempt
}

// RecordedAttempt is one attempt as recorded.
type RecordedAttempt struct {
	Passed    bool
	Class     failure.Class
	Signature string
	// Stage is where it failed; it is also the operation whose limit
	// applies (the retry handler's test, build, review).
	Stage   string
	Message string
}

// StageOutcome is one pipeline run in orchestr8's history: whether it
// failed, and at which stage (the history's failedStage). The store reads
// the history; rules/retry's Adaptive rule counts it.
type StageOutcome struct {
	Stage  string
	Failed bool
}

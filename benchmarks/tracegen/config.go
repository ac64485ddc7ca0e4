// Package tracegen writes a deterministic corpus of synthetic orchestrator
// run records (trace.jsonl, summary.json, manifest.json and verification
// reports) shaped like github.com/ahmeddyounis/orchestrator's, for benchmarks
// and for tests that need realistic retry, repair-loop and escalation data.
//
// Each run is a pure function of (Config, run index): runs can be built in
// any order or in parallel and the corpus is byte-for-byte the same.
package tracegen

import (
	"errors"
	"time"
)

// Config says how many runs to write and how they behave. Probabilities are
// per event of the kind named; zero values are legal and switch a behaviour
// off, so start from DefaultConfig and change what a scenario needs.
type Config struct {
	Runs   int
	Seed   uint64
	Start  time.Time // first run's start; runs are spread over Days from here
	Days   int
	Chunks bool // emit SubprocessOutputChunked lines (the bulk of real traces)

	// Workers bounds the goroutines Generate uses; 0 means GOMAXPROCS.
	// The output does not depend on it.
	Workers int

	// Provider requests (executeProviderRequest).
	RetryProb   float64 // a request needs at least one retry
	FatalProb   float64 // a request fails at once with a non-retried 4xx
	ExhaustProb float64 // a request that used all 3 retries still fails
	// Incidents replace RetryProb and FatalProb for one provider over a time
	// window, for alerting scenarios. Later entries win where windows overlap.
	Incidents []Incident
	// InterleaveProb: a run's planning issues a second, concurrent request
	// (a research pass), so two Started lines precede their Finished lines.
	InterleaveProb float64
	// CancelProb: the user aborts a run during a request: that request gets
	// no Finished line and the run ends RunFinished{status:"cancelled"}.
	CancelProb float64

	// Think levels. The rest of the runs are L2.
	L1Prob        float64 // run at L1: plan and patch, no verification
	StartAtL3Prob float64 // run at L3 from the start

	EmptyPlanProb float64 // planner returns no steps
	// L1 step attempts.
	StepNoDiffProb    float64
	StepApplyFailProb float64
	// ReapplyFailProb replaces StepApplyFailProb and L3ApplyFailProb for
	// later attempts at a step whose patch already failed to apply: such
	// failures cluster (a stale file stays stale).
	ReapplyFailProb float64

	// L2 repair loop (runners/l2.ts).
	VerifyFailProb       float64 // initial verification fails, so the loop runs
	RepairNoDiffProb     float64 // repair output has no diff (patchPath "none (no-diff)")
	RepairEmptyDiffProb  float64 // ... or an empty one ("none (empty-diff)")
	RepairApplyFailProb  float64 // repair patch does not apply
	RepairFixProb        float64 // an applied repair makes verification pass
	SameSignatureProb    float64 // an applied repair that did not fix fails the same way
	ApplyFailSameSigProb float64 // verification after a failed apply fails the same way

	// L3 (runners/l3.ts).
	CandidateValidProb  float64 // a candidate contains a usable diff
	CandidatePassProb   float64 // a valid candidate passes its evaluation
	JudgeProb           float64 // no candidate passed and the judge is called
	JudgeFailProb       float64 // the judge errors and falls back
	L3ApplyFailProb     float64 // the selected candidate does not apply
	SameApplyErrorProb  float64 // a repeated apply failure has the same error text
	FinalVerifyFailProb float64 // the applied patch fails its final verification

	// UnfinishedProb: the run is still running or crashed: the trace stops
	// part-way, with no RunFinished and no summary.json.
	UnfinishedProb float64
	// TornLineProb: an unfinished run's last line is cut mid-write.
	TornLineProb float64

	// ChunkScale multiplies the volume of subprocess output text.
	ChunkScale float64

	// PayloadBytes, when above zero, gives every provider request its
	// prompt (ProviderRequestStarted's "prompt") and every answered one its
	// output (ProviderRequestFinished's "output"), each a text of about
	// this many bytes before escaping: the large payloads of traces that
	// record what was sent and received. The text is drawn from a stream
	// of its own, so the rest of the corpus stays byte for byte the same.
	PayloadBytes int
}

// Incident is a window in which one provider misbehaves.
type Incident struct {
	Provider  string // provider id: "anthropic", "openai" or "google"
	From, To  time.Time
	RetryProb float64
	FatalProb float64
}

// DefaultConfig is tuned so that about 20% of provider requests retry, about
// half of the L2 runs enter the repair loop, and a 20,000-run corpus with
// Chunks is about 650 MB.
func DefaultConfig() Config {
	return Config{
		Runs:   1000,
		Seed:   1,
		Start:  time.Date(2026, 10, 1, 0, 0, 0, 0, time.UTC),
		Days:   30,
		Chunks: false,

		RetryProb:      0.20,
		FatalProb:      0.002,
		ExhaustProb:    0.20,
		InterleaveProb: 0.10,
		CancelProb:     0.01,

		L1Prob:        0.10,
		StartAtL3Prob: 0.08,
		EmptyPlanProb: 0.01,

		StepNoDiffProb:    0.03,
		StepApplyFailProb: 0.06,
		ReapplyFailProb:   0.50,

		VerifyFailProb:       0.50,
		RepairNoDiffProb:     0.05,
		RepairEmptyDiffProb:  0.02,
		RepairApplyFailProb:  0.30,
		RepairFixProb:        0.35,
		SameSignatureProb:    0.35,
		ApplyFailSameSigProb: 0.50,

		CandidateValidProb:  0.85,
		CandidatePassProb:   0.45,
		JudgeProb:           0.60,
		JudgeFailProb:       0.10,
		L3ApplyFailProb:     0.15,
		SameApplyErrorProb:  0.70,
		FinalVerifyFailProb: 0.20,

		UnfinishedProb: 0.02,
		ChunkScale:     1,
	}
}

func (c Config) validate() error {
	if c.Runs < 0 {
		return errors.New("tracegen: Runs must not be negative")
	}
	if c.Days < 0 {
		return errors.New("tracegen: Days must not be negative")
	}
	if c.PayloadBytes < 0 {
		return errors.New("tracegen: PayloadBytes must not be negative")
	}
	if c.Start.IsZero() {
		return errors.New("tracegen: Start must be set")
	}
	return nil
}

// Stats describes what Generate wrote.
type Stats struct {
	Runs   int64
	Events int64 // trace lines
	Files  int64
	Bytes  int64 // all files
}

func (s *Stats) add(o Stats) {
	s.Runs += o.Runs
	s.Events += o.Events
	s.Files += o.Files
	s.Bytes += o.Bytes
}

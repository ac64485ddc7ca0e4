package retry

import "time"

// Policy is a retry policy: when to retry, how long to wait, and when to
// stop. The zero value never retries. Limits left at zero are off.
type Policy struct {
	Name string

	Backoff Backoff
	// MaxRetries is the retries allowed after the first attempt, unless
	// PerOperation names the operation.
	MaxRetries   int
	PerOperation map[string]int
	// Retriable lists the classes worth retrying. A failure whose class is
	// not listed is final. ClassUnknown must be listed to retry failures
	// that match no pattern.
	Retriable map[Class]bool

	// MaxAttempts caps the attempts at one item across loops (seed 002's
	// per-issue Max-Retries, 10).
	MaxAttempts int
	// SignatureHalt stops after this many identical failure signatures in
	// a row (seed 002: 3).
	SignatureHalt int
	// GlobalCap caps the retries of one run across all its items (seed
	// 002: 15).
	GlobalCap int

	// L2 repair loop (seed 000).
	MaxIterations    int // 5
	NonImprovingStop int // stop after this many identical signatures in a row: 2
	Escalation       Escalation

	// Diagnosis triggers after this many identical patch-apply failures in
	// an L3 step (seed 000: 2).
	DiagnosisAfter int

	Budget   *Budget
	Cascade  *Cascade
	Adaptive *Adaptive
}

// Escalation is when an L2 loop escalates to L3 (seed 000).
type Escalation struct {
	NonImproving       int // identical signatures in a row: 2
	PatchApplyFailures int // patch-apply failures in a row: 2
	MaxEscalations     int // per run: 1
}

// Budget is a retry budget shared by one client's requests: a token bucket
// as in gRPC's retry throttling. Each failure takes a token, each success
// gives back Ratio; retries are allowed while more than half the tokens
// remain. Ratio 0.1 is the SRE book's 10% budget.
type Budget struct {
	MaxTokens float64
	Ratio     float64
}

// Cascade detects Threshold failures among the last Window items (seed
// 001: 3 within 5).
type Cascade struct {
	Threshold, Window int
}

// Adaptive is seed 004's advisory rule: over the last Window runs, a stage
// failing more often than Threshold gets an alternative strategy by
// attempt; past MaxRetries the advice is to abort.
type Adaptive struct {
	Window     int
	Threshold  float64
	MaxRetries int
	Strategies map[string][]string // stage → strategy for attempt 1, 2, ...
}

// Failure is one failed attempt, as a policy sees it.
type Failure struct {
	Class     Class
	Signature string
	Operation string
	// Attempt is the 1-based number of the attempt that failed.
	Attempt int
}

// Decision is what a policy says after a failure.
type Decision struct {
	Retry bool
	Wait  time.Duration
	// Reason names what stopped the retries when Retry is false: "class"
	// (not retriable), "max_retries", "signature_halt", "max_attempts",
	// "global_cap", "budget".
	Reason string
}

// Tracker is the state one policy keeps while deciding: a sequence of
// attempts at one item, within a run that may share a global cap and a
// budget. It is what decides retries live and what replays them.
type Tracker struct {
	Policy *Policy
	Rand   Rand

	// Per item.
	sameSig  int
	lastSig  string
	lastWait time.Duration

	// Per run.
	runRetries int
	tokens     float64
	tokensInit bool
}

// NewTracker starts tracking under p, drawing jitter from r.
func NewTracker(p *Policy, r Rand) *Tracker { return &Tracker{Policy: p, Rand: r} }

// StartItem resets the per-item state before the first attempt at a new
// item (a request, an issue); the per-run state carries on.
func (t *Tracker) StartItem() { t.sameSig, t.lastSig, t.lastWait = 0, "", 0 }

// Success records a successful attempt (it refills the budget).
func (t *Tracker) Success() {
	if b := t.Policy.Budget; b != nil {
		t.initTokens()
		t.tokens = min(b.MaxTokens, t.tokens+b.Ratio)
	}
}

func (t *Tracker) initTokens() {
	if !t.tokensInit {
		t.tokens, t.tokensInit = t.Policy.Budget.MaxTokens, true
	}
}

// Failed records a failed attempt and decides whether to retry it.
func (t *Tracker) Failed(f Failure) Decision {
	p := t.Policy
	if f.Signature != "" && f.Signature == t.lastSig {
		t.sameSig++
	} else {
		t.sameSig = 1
	}
	t.lastSig = f.Signature
	if p.Budget != nil {
		t.initTokens()
		t.tokens = max(0, t.tokens-1)
	}
	maxRetries := p.MaxRetries
	if n, ok := p.PerOperation[f.Operation]; ok {
		maxRetries = n
	}
	class := f.Class
	if class == "" {
		class = ClassUnknown
	}
	switch {
	case !p.Retriable[class]:
		return Decision{Reason: "class"}
	case f.Attempt > maxRetries:
		return Decision{Reason: "max_retries"}
	case p.MaxAttempts > 0 && f.Attempt >= p.MaxAttempts:
		return Decision{Reason: "max_attempts"}
	case p.SignatureHalt > 0 && f.Signature != "" && t.sameSig >= p.SignatureHalt:
		return Decision{Reason: "signature_halt"}
	case p.GlobalCap > 0 && t.runRetries >= p.GlobalCap:
		return Decision{Reason: "global_cap"}
	case p.Budget != nil && t.tokens <= p.Budget.MaxTokens/2:
		return Decision{Reason: "budget"}
	}
	t.runRetries++
	t.lastWait = p.Backoff.Next(f.Attempt, t.lastWait, t.Rand)
	return Decision{Retry: true, Wait: t.lastWait}
}

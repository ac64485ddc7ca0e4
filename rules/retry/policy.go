package retry

import (
	"maps"
	"slices"
	"time"

	"github.com/orchstat/orchstat/model/failure"
)

// Policy is a retry policy: when to retry, how long to wait, and when to
// stop. The zero value never retries. Limits left at zero are off, except
// MaxRetries (0: no retry) and MaxIterations (0: no repair iteration).
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
	Retriable map[failure.Class]bool

	// MaxAttempts caps the attempts at one item across loops, the first
	// attempt included: after attempt MaxAttempts fails there is no retry.
	// Auto-retry's per-issue Max-Retries 10 allows 10 retries after the loop
	// that flagged the issue, so its preset has MaxAttempts 11.
	MaxAttempts int
	// SignatureHalt stops after this many identical failure signatures in
	// a row (auto-retry: 3).
	SignatureHalt int
	// GlobalCap caps the retries of one run across all its items
	// (auto-retry: 15).
	GlobalCap int

	// L2 repair loop (the orchestrator).
	MaxIterations    int // 5
	NonImprovingStop int // stop after this many identical signatures in a row: 2
	Escalation       Escalation

	// Diagnosis triggers after this many identical patch-apply failures in
	// an L3 step (the orchestrator: 2).
	DiagnosisAfter int

	Budget   *Budget
	Cascade  *Cascade
	Adaptive *Adaptive

	// TransientOnly lists retriable classes that are retried only when the
	// failure's Message reads as transient (failure.ExceptionTransient): the
	// factory audit retries the factory's "exception" stage for rate limits,
	// timeouts, 5xx and network errors, not for a bad key or a missing
	// module.
	TransientOnly map[failure.Class]bool

	// Classify holds the policy's own classification rules, tried before
	// the defaults (see Classifier).
	Classify []failure.Rule
}

// Classifier is the policy's classifier over defaults
// (failure.DefaultProvider, failure.DefaultFactory): the policy's rules first, then the defaults'.
func (p *Policy) Classifier(defaults failure.Classifier) failure.Classifier {
	if len(p.Classify) == 0 {
		return defaults
	}
	return defaults.With(p.Classify...)
}

// Clone is a deep copy of p: maps, slices and limits are its own.
func (p *Policy) Clone() *Policy {
	if p == nil {
		return nil
	}
	c := *p
	c.PerOperation = maps.Clone(p.PerOperation)
	c.Retriable = maps.Clone(p.Retriable)
	c.TransientOnly = maps.Clone(p.TransientOnly)
	if p.Classify != nil {
		c.Classify = make([]failure.Rule, len(p.Classify))
		for i, r := range p.Classify {
			r.Contains = slices.Clone(r.Contains)
			r.Status = slices.Clone(r.Status)
			r.Equals = slices.Clone(r.Equals)
			c.Classify[i] = r
		}
	}
	if p.Budget != nil {
		b := *p.Budget
		c.Budget = &b
	}
	if p.Cascade != nil {
		cc := *p.Cascade
		c.Cascade = &cc
	}
	if p.Adaptive != nil {
		a := *p.Adaptive
		if p.Adaptive.Strategies != nil {
			a.Strategies = make(map[string][]string, len(p.Adaptive.Strategies))
			for k, v := range p.Adaptive.Strategies {
				a.Strategies[k] = slices.Clone(v)
			}
		}
		c.Adaptive = &a
	}
	return &c
}

// Escalation is when an L2 loop escalates to L3 (the orchestrator).
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

// Cascade detects Threshold failures among the last Window items (the
// retry handler: 3 within 5).
type Cascade struct {
	Threshold, Window int
}

// Adaptive is orchestr8's advisory rule: over the last Window runs, a stage
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
	Class     failure.Class
	Signature string
	Operation string
	// Attempt is the 1-based number of the attempt that failed; 0 counts
	// as 1.
	Attempt int
	// Message is the failure's text, read only for the policy's
	// TransientOnly classes.
	Message string
}

// Decision is what a policy says after a failure.
type Decision struct {
	Retry bool
	Wait  time.Duration
	// Reason names what stopped the retries when Retry is false: "class"
	// (not retriable, or a TransientOnly class whose text is permanent),
	// "max_retries", "max_attempts", "signature_halt", "global_cap",
	// "budget", "cascade" (the run paused: see Tracker.EndItem).
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
	runRetries  int
	tokens      float64
	tokensInit  bool
	outcomes    []bool // the last Cascade.Window items' outcomes, true = failed
	failedItems int    // failed items, when the window is every item
	cascaded    bool
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

// Failed records a failed attempt and decides whether to retry it. The
// checks run in this order, and the first that stops names the Reason:
// class, cascade, max_retries, max_attempts, signature_halt, global_cap,
// budget. A failure whose class is retriable takes a budget token before
// any other check, as gRPC's throttling records every failure with a
// retryable status, including those other limits then stop; a failure
// the policy never retries takes none.
func (t *Tracker) Failed(f Failure) Decision {
	p := t.Policy
	if f.Attempt < 1 {
		f.Attempt = 1
	}
	if f.Signature != "" && f.Signature == t.lastSig {
		t.sameSig++
	} else {
		t.sameSig = 1
	}
	t.lastSig = f.Signature
	class := f.Class
	if class == "" {
		class = failure.ClassUnknown
	}
	if !p.Retriable[class] || p.TransientOnly[class] && !failure.ExceptionTransient(f.Message) {
		return Decision{Reason: "class"}
	}
	if p.Budget != nil {
		t.initTokens()
		t.tokens = max(0, t.tokens-1)
	}
	maxRetries := p.MaxRetries
	if n, ok := p.PerOperation[f.Operation]; ok {
		maxRetries = n
	}
	switch {
	case t.cascaded:
		return Decision{Reason: "cascade"}
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

// EndItem records an item's final outcome (failed after its retries, or
// not) for cascade detection (the retry handler): once Cascade.Threshold of the
// last Cascade.Window items have failed, the run pauses, EndItem reports
// true, and every later failure's Decision is "cascade". Without a
// Cascade it does nothing and reports false.
func (t *Tracker) EndItem(failed bool) bool {
	c := t.Policy.Cascade
	if c == nil || c.Threshold <= 0 {
		return false
	}
	if c.Window <= 0 { // every item: a running count will do
		if failed {
			t.failedItems++
		}
		t.cascaded = t.cascaded || t.failedItems >= c.Threshold
		return t.cascaded
	}
	t.outcomes = append(t.outcomes, failed)
	if len(t.outcomes) > c.Window {
		t.outcomes = append(t.outcomes[:0], t.outcomes[len(t.outcomes)-c.Window:]...)
	}
	t.cascaded = t.cascaded || c.Detect(t.outcomes)
	return t.cascaded
}

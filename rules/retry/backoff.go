// Package retry is orchstat's retry-policy core: whether a failure is
// worth another attempt, how long to wait before it, and when to stop. It
// is pure Go, with randomness injected, so the code that decides a retry
// live is the code that replays one.
//
//   - Backoff: the schedules (the orchestrator's ±10%, AWS's full, equal
//     and decorrelated jitter, constant, none).
//   - Policy and Tracker: the limits, failure by failure, over the
//     failure classes of model/failure; ReplayL2, Cascade.Detect,
//     Adaptive.Recommend (and Advise) and DiagnosisDue for the modelled
//     systems' loops.
//   - Preset: the modelled systems' policies; Policy.Validate, the range
//     checks. Policy files, YAML that composes and overrides a preset, are
//     read by rules/retry/policyfile.
package retry

import (
	"fmt"
	"math"
	"slices"
	"time"
)

// Rand is the randomness a schedule draws from: a uniform float in [0, 1).
// *math/rand/v2.Rand satisfies it; seed it to make a schedule repeatable.
type Rand interface {
	Float64() float64
}

// Jitter is how a schedule randomises its delays.
type Jitter int

const (
	// JitterNone waits exactly the exponential delay.
	JitterNone Jitter = iota
	// JitterProportional spreads the delay uniformly over ±Spread of
	// itself: the orchestrator's ±10%.
	JitterProportional
	// JitterFull waits uniformly between 0 and the delay (AWS "full").
	JitterFull
	// JitterEqual waits half the delay plus up to half again (AWS "equal").
	JitterEqual
	// JitterDecorrelated waits uniformly between Initial and three times
	// the previous wait, capped at Max (AWS "decorrelated"). It depends on
	// the previous wait, so use Next.
	JitterDecorrelated
)

var jitterNames = [...]string{"none", "proportional", "full", "equal", "decorrelated"}

func (j Jitter) String() string {
	if j >= 0 && int(j) < len(jitterNames) {
		return jitterNames[j]
	}
	return fmt.Sprintf("Jitter(%d)", int(j))
}

// Backoff is an exponential schedule: attempt n (the first retry is n=1)
// waits Initial×Factor^(n-1), capped at Max, then jittered.
type Backoff struct {
	Initial time.Duration
	Max     time.Duration // 0: no cap
	Factor  float64       // 0 or 1: constant
	Jitter  Jitter
	Spread  float64 // for JitterProportional: 0.1 is ±10%
}

// Orchestrator is the orchestrator's provider backoff: 1 s
// doubling to at most 10 s, ±10%.
var Orchestrator = Backoff{Initial: time.Second, Max: 10 * time.Second, Factor: 2, Jitter: JitterProportional, Spread: 0.1}

// Base is the delay before retry n without jitter.
func (b Backoff) Base(n int) time.Duration {
	if n < 1 || b.Initial <= 0 {
		return 0
	}
	f := b.Factor
	if f < 1 {
		f = 1
	}
	d := float64(b.Initial) * math.Pow(f, float64(n-1))
	if b.Max > 0 && d > float64(b.Max) {
		d = float64(b.Max)
	}
	if d > math.MaxInt64/2 {
		d = math.MaxInt64 / 2
	}
	return time.Duration(d)
}

// Next is the wait before retry n when the wait before retry n-1 was prev
// (0 for the first retry). It is Delay for every jitter but decorrelated.
func (b Backoff) Next(n int, prev time.Duration, r Rand) time.Duration {
	if b.Jitter != JitterDecorrelated {
		return b.Delay(n, r)
	}
	if n < 1 || b.Initial <= 0 {
		return 0
	}
	lo, hi := float64(b.Initial), 3*float64(max(prev, b.Initial))
	d := lo + (hi-lo)*r.Float64()
	if b.Max > 0 && d > float64(b.Max) {
		d = float64(b.Max)
	}
	return time.Duration(d)
}

// Delay is the wait before retry n, drawing from r when the schedule
// jitters. A decorrelated schedule needs its previous wait: Delay gives its
// first one; use Next. A proportional jitter may exceed Max by up to Spread, as the
// orchestrator's does.
func (b Backoff) Delay(n int, r Rand) time.Duration {
	d := float64(b.Base(n))
	switch b.Jitter {
	case JitterProportional:
		d *= 1 + b.Spread*(2*r.Float64()-1)
	case JitterFull:
		d *= r.Float64()
	case JitterEqual:
		d = d/2 + d/2*r.Float64()
	case JitterDecorrelated:
		return b.Next(n, 0, r)
	}
	if d < 0 {
		d = 0
	}
	return time.Duration(d)
}

// JitterNames lists the jitters by name, in the order of their values.
func JitterNames() []string { return slices.Clone(jitterNames[:]) }

// Package replay replays recorded failure episodes under other retry
// policies, with the same retry core (rules/retry) that decides retries
// live. It is pure Go: episodes (model/episode) come in, outcomes and
// results (model/simulation) go out.
package replay

import (
	"math/rand/v2"
	"slices"
	"time"

	"github.com/orchstat/orchstat/model/episode"
	"github.com/orchstat/orchstat/model/failure"
	"github.com/orchstat/orchstat/rules/retry"
)

// Outcome is one episode replayed under one policy.
type Outcome struct {
	Success  bool
	Attempts int
	// Wasted counts retries that did not change the outcome: every retry
	// of an episode that still failed.
	Wasted  int
	Backoff time.Duration
	// Resolution is the time from the first attempt to the last outcome,
	// attempts and waits included.
	Resolution time.Duration
	Halted     bool   // a limit other than the retry count stopped it
	Reason     string // what stopped the retries, as retry.Decision.Reason
	Escalated  bool
	CostUSD    float64
	// Estimated is set when the outcome depends on what the record does
	// not hold: attempts beyond the recorded ones, or the class of a
	// failure the record does not name. Exact outcomes are the record's.
	Estimated bool
}

// Model holds what replay estimates from the data: per-class chances of
// success at each attempt beyond the record, and the mix of classes behind
// the failures the record does not name.
type Model struct {
	// Hazard[c][k-1] is the probability that attempt k succeeds given
	// that attempts 1..k-1 failed with class c, by Kaplan–Meier under the
	// assumption that an episode's failures keep their class. Beyond the
	// last attempt observed, the last hazard carries on.
	Hazard map[failure.Class][]float64
	// Mix is the distribution of the classes retried in the record, for
	// failures whose class is unrecorded.
	Mix []ClassWeight
	// AttemptTime is the median time of one attempt, for attempts beyond
	// the record.
	AttemptTime time.Duration
	// L2Pass[k] is the chance that L2 iteration k+1 passes given that the
	// loop reached it.
	L2Pass []float64
}

// ClassWeight is one class's share of the mix.
type ClassWeight struct {
	Class  failure.Class
	Weight float64
}

// Fit estimates a Model for provider episodes recorded under baseline.
func Fit(eps []episode.Episode, baseline *retry.Policy) *Model {
	m := &Model{L2Pass: fitL2(eps), Mix: fitMix(eps, baseline), AttemptTime: fitAttemptTime(eps, baseline)}
	m.Hazard = fitHazard(eps, baseline, m.Mix)
	return m
}

// fitMix is the final classes of failed episodes that the baseline
// retries, which is what an unnamed (retried) failure could have been;
// every retriable class alike when the record has none.
func fitMix(eps []episode.Episode, baseline *retry.Policy) []ClassWeight {
	counts := map[failure.Class]float64{}
	for i := range eps {
		e := &eps[i]
		if e.Kind != episode.KindProvider {
			continue
		}
		if c := e.FinalClass(); c != "" && baseline.Retriable[c] {
			counts[c]++
		}
	}
	if len(counts) == 0 {
		for c, ok := range baseline.Retriable {
			if ok {
				counts[c] = 1
			}
		}
	}
	var total float64
	for _, n := range counts {
		total += n
	}
	var mix []ClassWeight
	for _, c := range slices.Sorted(mapsKeys(counts)) {
		mix = append(mix, ClassWeight{c, counts[c] / total})
	}
	return mix
}

// fitAttemptTime is the median time of one attempt of the provider
// requests with a recorded duration; 0 when none has one.
func fitAttemptTime(eps []episode.Episode, baseline *retry.Policy) time.Duration {
	var durs []time.Duration
	for i := range eps {
		e := &eps[i]
		if e.Kind == episode.KindProvider && e.Duration > 0 && len(e.Attempts) > 0 {
			durs = append(durs, perAttempt(e, baseline))
		}
	}
	if len(durs) == 0 {
		return 0
	}
	slices.Sort(durs)
	return durs[len(durs)/2]
}

// fitHazard is Kaplan–Meier by class: at risk at attempt k are the
// episodes that reached it; those that succeed at k are events. A failed
// episode's class is its final one; a successful episode's earlier
// failures are spread over the mix.
func fitHazard(eps []episode.Episode, baseline *retry.Policy, mix []ClassWeight) map[failure.Class][]float64 {
	byClass := map[failure.Class]*survival{}
	add := func(c failure.Class, w float64, attempts int, success bool) {
		k := byClass[c]
		if k == nil {
			k = &survival{}
			byClass[c] = k
		}
		k.add(w, attempts, success)
	}
	for i := range eps {
		e := &eps[i]
		if e.Kind != episode.KindProvider || len(e.Attempts) < 2 && e.Success {
			continue
		}
		n := len(e.Attempts)
		c := e.FinalClass()
		if c == "" {
			c = failure.ClassUnknown
		}
		if !e.Success && baseline.Retriable[c] {
			add(c, 1, n, false)
			continue
		}
		// Earlier failures of an unknown class: those of a success, and
		// those a non-retriable final failure ended.
		for _, cw := range mix {
			add(cw.Class, cw.Weight, n, e.Success)
		}
	}
	hazard := map[failure.Class][]float64{}
	for c, k := range byClass {
		hazard[c] = k.hazard()
	}
	return hazard
}

// survival is one class's Kaplan–Meier counts, by attempt: the weight of
// episodes at risk and of those that succeeded there.
type survival struct{ atRisk, events []float64 }

func (k *survival) add(w float64, attempts int, success bool) {
	for len(k.atRisk) < attempts {
		k.atRisk, k.events = append(k.atRisk, 0), append(k.events, 0)
	}
	// Attempt 1 has no class yet; hazards start at attempt 2.
	for a := 2; a <= attempts; a++ {
		k.atRisk[a-1] += w
	}
	if success && attempts >= 2 {
		k.events[attempts-1] += w
	}
}

// hazard is the chance of success at each attempt; an attempt nobody
// reached carries the previous one's.
func (k *survival) hazard() []float64 {
	h := make([]float64, len(k.atRisk))
	last := 0.0
	for a := range h {
		if k.atRisk[a] > 0 {
			last = k.events[a] / k.atRisk[a]
		}
		h[a] = last
	}
	return h
}

// hazard is the chance attempt k succeeds after failures of class c.
func (m *Model) hazard(c failure.Class, k int) float64 {
	h := m.Hazard[c]
	if len(h) == 0 {
		return 0 // never retried in the record: assume it fails again
	}
	if k-1 < len(h) {
		return h[k-1]
	}
	return h[len(h)-1]
}

func (m *Model) drawClass(r *rand.Rand) failure.Class {
	if len(m.Mix) == 0 {
		return failure.ClassUnknown // a baseline that retries nothing explains no retry
	}
	x := r.Float64()
	for _, cw := range m.Mix {
		if x < cw.Weight {
			return cw.Class
		}
		x -= cw.Weight
	}
	return m.Mix[len(m.Mix)-1].Class
}

// perAttempt estimates one attempt's time: the recorded duration less the
// baseline's (unjittered) sleeps, over the attempts.
func perAttempt(e *episode.Episode, baseline *retry.Policy) time.Duration {
	d := e.Duration
	for k := 1; k < len(e.Attempts); k++ {
		d -= baseline.Backoff.Base(k)
	}
	return max(d, 0) / time.Duration(len(e.Attempts))
}

// Replayer replays provider episodes under a policy, deterministically:
// each episode's random draws come from a stream seeded by the seed, the
// policy's name and the episode's ID, so results do not depend on order.
type Replayer struct {
	Baseline *retry.Policy
	Model    *Model
	Seed     uint64
}

// Stream is the randomness of one replay, reseeded for each episode.
type Stream struct {
	pcg  *rand.PCG
	rand *rand.Rand
	// policy and prefix are the policy last seeded for and the FNV-1a
	// state after its name: a stream replays one policy's episodes, and
	// hashing a long policy name for each was a third of a search's time.
	policy string
	prefix uint64
}

// NewStream returns a Stream; one per goroutine.
func NewStream() *Stream {
	pcg := rand.NewPCG(0, 0)
	return &Stream{pcg: pcg, rand: rand.New(pcg)}
}

// Provider replays one provider episode under p. The record fixes each
// recorded attempt's outcome; p decides, failure by failure, whether there
// is a next attempt. tr carries the run's shared limits (global cap,
// budget) from one episode of the run to the next.
func (rp *Replayer) Provider(e *episode.Episode, p *retry.Policy, tr *retry.Tracker, s *Stream) Outcome {
	attemptTime := rp.Model.AttemptTime
	if e.Duration > 0 {
		attemptTime = perAttempt(e, rp.Baseline)
	}
	if len(e.Attempts) == 1 && e.Success {
		// A request that passed at once is the same under every policy
		// and draws nothing; only the run's budget hears of it. Most
		// requests are such, and seeding a stream for each was most of a
		// replay's time.
		tr.StartItem()
		tr.Success()
		return Outcome{Success: true, Attempts: 1, Resolution: attemptTime, CostUSD: e.CostUSD}
	}
	rp.seed(s, p.Name, e.ID)
	r := s.rand
	tr.Rand = r
	tr.StartItem()
	var o Outcome
	n := len(e.Attempts)
	final := e.FinalClass()
	if final == "" && !e.Success {
		final = failure.ClassUnknown
	}
	// A request's failures are assumed to keep their class: a failed
	// request's are its final one when the baseline retries that class.
	// Otherwise (a success, or retries ended by a final failure the
	// baseline does not retry) the retried failures' class is drawn once
	// from the mix.
	persistent := !e.Success && rp.Baseline.Retriable[final]
	var drawn failure.Class
	classOf := func(k int) failure.Class {
		if persistent || (!e.Success && k >= n) {
			return final
		}
		if drawn == "" {
			drawn = rp.Model.drawClass(r)
			if rp.sensitive(p) {
				o.Estimated = true
			}
		}
		return drawn
	}
	for k := 1; ; k++ {
		o.Attempts = k
		o.Resolution += attemptTime
		var ok bool
		switch {
		case k < n:
			ok = false
		case k == n:
			ok = e.Success
		default:
			// Beyond the record: the recorded request had given up.
			o.Estimated = true
			ok = r.Float64() < rp.Model.hazard(final, k)
		}
		if ok {
			o.Success = true
			tr.Success()
			break
		}
		d := tr.Failed(retry.Failure{Class: classOf(k), Attempt: k, Operation: e.Operation})
		if !d.Retry {
			o.Reason = d.Reason
			o.Halted = d.Reason != "max_retries" && d.Reason != "class"
			break
		}
		o.Backoff += d.Wait
		o.Resolution += d.Wait
	}
	if !o.Success {
		o.Wasted = o.Attempts - 1
	}
	if n > 0 {
		o.CostUSD = e.CostUSD * float64(o.Attempts) / float64(n)
	}
	return o
}

// sensitive reports whether p's decision could depend on which class of
// the mix an unnamed failure had.
func (rp *Replayer) sensitive(p *retry.Policy) bool {
	mix := rp.Model.Mix
	if len(mix) == 0 {
		return true
	}
	for _, cw := range mix[1:] {
		if p.Retriable[cw.Class] != p.Retriable[mix[0].Class] {
			return true
		}
	}
	return false
}

// seed restarts s on the stream of one policy and episode: the FNV-1a
// hash of the policy's name, a zero byte and the episode's ID.
func (rp *Replayer) seed(s *Stream, policy, id string) {
	if s.prefix == 0 || s.policy != policy {
		s.policy, s.prefix = policy, fnv1a(fnvOffset, policy)
		s.prefix = (s.prefix ^ 0) * fnvPrime
	}
	s.pcg.Seed(rp.Seed, fnv1a(s.prefix, id))
}

// FNV-1a, 64 bits, as hash/fnv's New64a computes it, over a string with
// no copy into bytes.
const (
	fnvOffset uint64 = 14695981039346656037
	fnvPrime  uint64 = 1099511628211
)

func fnv1a(h uint64, s string) uint64 {
	for i := 0; i < len(s); i++ {
		h = (h ^ uint64(s[i])) * fnvPrime
	}
	return h
}

func mapsKeys[K comparable, V any](m map[K]V) func(func(K) bool) {
	return func(yield func(K) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

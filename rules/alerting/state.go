// # Alert states
//
// Every check evaluates each rule once. A rule yields one sample per label
// set (for example one per provider); each label set is its own alert,
// identified by the rule name plus its labels (see [Fingerprint]). An alert
// is in one of four states:
//
//   - inactive: the condition does not hold. Nothing is notified, and no
//     state is kept (Eval drops the alert); check still lists the label
//     set with its value, so a reader sees how close it is to firing.
//   - pending: the condition holds, but not yet for as long as the rule's
//     `for` asks (a duration such as 15m, or a number of consecutive
//     checks). Pending alerts are shown but never notified. If the
//     condition stops holding while pending, the alert simply goes back to
//     inactive: a blip never wakes anyone.
//   - firing: the condition has held for at least `for` (at once when `for`
//     is not set). This is the state that notifies. When the condition
//     stops holding, a firing alert keeps firing for `keep_firing_for`
//     (default 0) so that a flapping metric does not resolve and fire
//     again on every check; if the condition comes back meanwhile it simply
//     goes on firing.
//   - resolved: the alert was firing and its condition has stopped holding
//     for `keep_firing_for`. The resolution is reported, and the alert is
//     kept for 15 minutes so the notification can be delivered. If the
//     condition holds again it is a new incident: the alert starts over as
//     pending, with a new active-since time.
//
// No data is not the same as "all clear". When a rule's query returns no
// samples (or only samples without a value, such as a ratio over zero
// runs), or one label set's sample has no value, its alerts are marked
// "no data" and keep their state: a pending alert does not advance, a
// firing alert does not resolve. A label set that disappears from a
// rule's result while the rule still has other data counts as "condition
// does not hold".
//
// Each alert records when it became active, when it fired and resolved,
// when it was last evaluated, and its last value with the numerator and
// denominator behind it.
package alerting

import (
	"fmt"
	"hash/fnv"
	"maps"
	"slices"
	"sort"
	"time"

	"github.com/orchstat/orchstat/model/alerts"
)

// State is an alert's state. States are ordered by urgency, so the state
// of a rule is the maximum over its alerts: StateInactive < StateResolved <
// StatePending < StateFiring.
type State int

// The alert states; see "Alert states" in the package documentation.
const (
	StateInactive State = iota
	StateResolved
	StatePending
	StateFiring
)

var stateNames = [...]string{
	StateInactive: alerts.StateInactive,
	StateResolved: alerts.StateResolved,
	StatePending:  alerts.StatePending,
	StateFiring:   alerts.StateFiring,
}

func (s State) String() string {
	if s >= 0 && int(s) < len(stateNames) {
		return stateNames[s]
	}
	return fmt.Sprintf("State(%d)", int(s))
}

// MarshalText encodes s as its name, for JSON output and stored state.
func (s State) MarshalText() ([]byte, error) {
	if s < 0 || int(s) >= len(stateNames) {
		return nil, fmt.Errorf("invalid alert state %d", int(s))
	}
	return []byte(stateNames[s]), nil
}

// UnmarshalText decodes a state name written by MarshalText.
func (s *State) UnmarshalText(b []byte) error {
	for i, n := range stateNames {
		if n == string(b) {
			*s = State(i)
			return nil
		}
	}
	return fmt.Errorf("unknown alert state %q", b)
}

// holdMet reports whether a has been active long enough under h (a rule's
// `for`, declared beside Rule) to fire at now. When both a duration and a
// number of checks are set, both must be met; the zero Hold fires at once.
func holdMet(h Hold, a *Alert, now time.Time) bool {
	if h.Duration > 0 && now.Sub(a.ActiveAt) < h.Duration {
		return false
	}
	if h.Checks > 0 && a.Checks < h.Checks {
		return false
	}
	return true
}

// DefaultResolvedRetention is how long a resolved alert is kept when
// Spec.ResolvedRetention is zero (Prometheus' resolvedRetention).
const DefaultResolvedRetention = 15 * time.Minute

// Spec is the part of a rule that drives its alerts' states.
type Spec struct {
	Rule              string
	For               Hold
	KeepFiringFor     time.Duration
	ResolvedRetention time.Duration // 0 means DefaultResolvedRetention
}

// Alert is the state of one label set of one rule.
type Alert struct {
	Rule        string
	Labels      map[string]string
	Fingerprint string // Fingerprint(Rule, Labels)
	State       State

	ActiveAt        time.Time // when the condition started holding (this incident)
	FiredAt         time.Time // when it started firing; zero unless firing or resolved
	ResolvedAt      time.Time // when it resolved; zero unless resolved
	LastEvalAt      time.Time // last evaluation that saw this alert
	KeepFiringSince time.Time // when a firing alert's condition stopped holding; zero while it holds

	// Checks counts the checks since ActiveAt on which the condition held
	// (the check that made the alert pending counts as 1). While pending
	// these are consecutive, since a pending alert that stops holding is
	// deleted. Checks without data do not count.
	Checks int

	// The last sample with a value. Not updated by checks without data.
	// NoPrice is not kept in the store: an alert loaded from it has none
	// until its next evaluation with data.
	Value, Numerator, Denominator, NoPrice *float64

	// NoData is set when the last evaluation had no value for this alert.
	NoData bool
}

// Observation is the result of one evaluation of a rule for one label set:
// the sample and whether the rule's condition holds for it.
type Observation struct {
	Sample Sample
	Holds  bool
}

// Transition is one alert's change of state in one evaluation. Alert is
// the alert after the change (State == To). An alert that was pending and
// stopped holding appears with To == StateInactive; a resolved alert that
// is dropped after its retention produces no transition.
type Transition struct {
	Alert    Alert
	From, To State
}

// Fingerprint identifies a rule's alert for one label set: the hex form of
// the 64-bit FNV-1a hash of the labels plus alertname=rule, sorted by
// name, computed exactly as Prometheus and Alertmanager fingerprint a label
// set. An "alertname" entry in labels is overridden by rule.
func Fingerprint(rule string, labels map[string]string) string {
	names := make([]string, 0, len(labels)+1)
	names = append(names, "alertname")
	for n := range labels {
		if n != "alertname" {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	h := fnv.New64a()
	for _, n := range names {
		v := labels[n]
		if n == "alertname" {
			v = rule
		}
		h.Write([]byte(n))
		h.Write([]byte{0xff})
		h.Write([]byte(v))
		h.Write([]byte{0xff})
	}
	return fmt.Sprintf("%016x", h.Sum64())
}

// Eval advances a rule's alerts to now and returns the new alerts, sorted by
// fingerprint, and the state changes, in the same order.
//
// prev is the rule's alerts from the previous evaluation (in any order; it
// is not modified). obs holds one observation per label set the rule's
// query returned. noData says the query returned no samples at all; a
// non-empty obs whose samples all lack a value counts as no data too.
// Without data every alert keeps its state and is marked NoData. A label
// set whose sample has no value is likewise kept as it is and marked NoData.
// If several observations share a label set, a holding one wins, then the
// first one with a value.
//
// Eval is pure: it never reads the clock, and the same inputs give the same
// outputs. now should not go backwards between evaluations.
func Eval(spec Spec, prev []Alert, obs []Observation, noData bool, now time.Time) (next []Alert, changes []Transition) {
	if !noData && len(obs) > 0 {
		noData = !slices.ContainsFunc(obs, func(o Observation) bool { return o.Sample.Value != nil })
	}
	cur, from := current(spec, prev)
	if noData {
		for _, a := range cur {
			a.NoData = true
			a.LastEvalAt = now
		}
		return collect(cur, from)
	}
	// This evaluation's observation per fingerprint.
	seen := make(map[string]Observation, len(obs))
	for _, o := range obs {
		fp := Fingerprint(spec.Rule, o.Sample.Labels)
		old, ok := seen[fp]
		if !ok || better(o, old) {
			seen[fp] = o
		}
	}
	holding(spec, cur, from, seen, now)
	for fp, a := range cur {
		a.LastEvalAt = now
		o, ok := seen[fp]
		if ok && o.Sample.Value == nil {
			a.NoData = true
			continue
		}
		a.NoData = false
		if ok {
			a.Value = clonef(o.Sample.Value)
			a.Numerator = clonef(o.Sample.Numerator)
			a.Denominator = clonef(o.Sample.Denominator)
			a.NoPrice = clonef(o.Sample.NoPrice)
			if o.Holds {
				continue // handled by holding
			}
		}
		if notHolding(spec, a, now) {
			delete(cur, fp)
			delete(from, fp)
		}
	}
	return collect(cur, from)
}

// current is the alerts of the last evaluation by fingerprint, copied so
// prev is never modified, with the state each was in.
func current(spec Spec, prev []Alert) (cur map[string]*Alert, from map[string]State) {
	cur = make(map[string]*Alert, len(prev))
	from = make(map[string]State, len(prev))
	for _, p := range prev {
		fp := Fingerprint(spec.Rule, p.Labels)
		if _, dup := cur[fp]; dup {
			continue
		}
		a := p
		a.Rule = spec.Rule
		a.Fingerprint = fp
		a.Labels = maps.Clone(p.Labels)
		cur[fp] = &a
		from[fp] = p.State
	}
	return cur, from
}

// holding refreshes or starts the alerts of the label sets the condition
// holds for, and fires those that have held long enough.
func holding(spec Spec, cur map[string]*Alert, from map[string]State, seen map[string]Observation, now time.Time) {
	for fp, o := range seen {
		if o.Sample.Value == nil || !o.Holds {
			continue
		}
		a := cur[fp]
		if a == nil || a.State == StateResolved || a.State == StateInactive {
			// A new incident, even for an alert that resolved a moment ago.
			if _, ok := from[fp]; !ok {
				from[fp] = StateInactive
			}
			a = &Alert{
				Rule:        spec.Rule,
				Labels:      maps.Clone(o.Sample.Labels),
				Fingerprint: fp,
				State:       StatePending,
				ActiveAt:    now,
			}
			cur[fp] = a
		}
		a.Checks++
		a.KeepFiringSince = time.Time{}
		switch met := holdMet(spec.For, a, now); {
		case a.State == StatePending && met:
			a.State = StateFiring
			a.FiredAt = now
		case a.State == StateFiring && !met:
			// `for` was raised: the alert no longer qualifies.
			a.State = StatePending
			a.FiredAt = time.Time{}
		}
	}
}

// notHolding advances an alert whose condition does not hold (with data)
// at now, and reports whether it is to be forgotten: a resolution
// reported for long enough.
func notHolding(spec Spec, a *Alert, now time.Time) (forget bool) {
	switch a.State {
	case StatePending, StateInactive:
		a.State = StateInactive
	case StateFiring:
		if a.KeepFiringSince.IsZero() {
			a.KeepFiringSince = now
		}
		if now.Sub(a.KeepFiringSince) >= spec.KeepFiringFor {
			a.State = StateResolved
			a.ResolvedAt = now
		}
	case StateResolved:
		retention := spec.ResolvedRetention
		if retention <= 0 {
			retention = DefaultResolvedRetention
		}
		return now.Sub(a.ResolvedAt) >= retention
	}
	return false
}

// better reports whether o should replace old as its label set's
// observation: a holding sample beats one that does not hold, and a sample
// with a value beats one without.
func better(o, old Observation) bool {
	rank := func(o Observation) int {
		switch {
		case o.Sample.Value == nil:
			return 0
		case !o.Holds:
			return 1
		}
		return 2
	}
	return rank(o) > rank(old)
}

// collect sorts the alerts by fingerprint, drops the inactive ones and
// lists every change of state from "from".
func collect(cur map[string]*Alert, from map[string]State) (next []Alert, changes []Transition) {
	fps := slices.Sorted(maps.Keys(cur))
	for _, fp := range fps {
		a := cur[fp]
		if f := from[fp]; f != a.State {
			changes = append(changes, Transition{Alert: *a, From: f, To: a.State})
		}
		if a.State != StateInactive {
			next = append(next, *a)
		}
	}
	return next, changes
}

func clonef(p *float64) *float64 {
	if p == nil {
		return nil
	}
	v := *p
	return &v
}

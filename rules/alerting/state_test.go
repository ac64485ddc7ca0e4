package alerting

import (
	"encoding/json"
	"maps"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

var baseTime = time.Unix(0, 0)

const cronInterval = 5 * time.Minute

var stateLetter = map[State]string{StateInactive: "I", StatePending: "P", StateFiring: "F", StateResolved: "R"}

// obsFor turns one step's input letter into Eval's arguments for the
// series {provider="a"}:
//
//	H  the condition holds
//	.  the sample has a value but the condition does not hold
//	_  the series is absent, but the rule has data for another series
//	n  the series' sample has no value (e.g. a ratio over zero runs)
//	N  the rule's query returned nothing at all
func obsFor(t *testing.T, in byte, v float64) ([]Observation, bool) {
	t.Helper()
	a := map[string]string{"provider": "a"}
	other := Observation{Sample: Sample{Value: f(0), Labels: map[string]string{"provider": "other"}}}
	switch in {
	case 'H', '.':
		return []Observation{{Sample: Sample{Value: f(v), Numerator: f(v * 100), Denominator: f(100), Labels: a}, Holds: in == 'H'}}, false
	case '_':
		return []Observation{other}, false
	case 'n':
		return []Observation{{Sample: Sample{Denominator: f(0), Labels: a}, Holds: true}, other}, false
	case 'N':
		return nil, true
	}
	t.Fatalf("bad input letter %q", in)
	return nil, false
}

// describe renders the series {provider="a"} after one step as "X" (its
// state, I when absent) or "X>Y" when it changed from X to Y.
func describe(t *testing.T, next []Alert, changes []Transition) string {
	t.Helper()
	fp := Fingerprint("r", map[string]string{"provider": "a"})
	state := StateInactive
	for _, a := range next {
		if a.Fingerprint == fp {
			state = a.State
		}
	}
	var got []string
	for _, c := range changes {
		if c.Alert.Fingerprint == fp {
			got = append(got, stateLetter[c.From]+">"+stateLetter[c.To])
			if c.To != state {
				t.Errorf("transition to %v but alert is %v", c.To, state)
			}
		} else {
			t.Errorf("unexpected transition for %v: %v>%v", c.Alert.Labels, c.From, c.To)
		}
	}
	if len(got) > 1 {
		t.Errorf("more than one transition in one step: %v", got)
	}
	if len(got) == 1 {
		return got[0]
	}
	return stateLetter[state]
}

// TestEvalSteps steps one series through time, one cron check every
// cronInterval from time.Unix(0, 0), and lists what each check yields, in
// the manner of Prometheus' TestKeepFiringFor.
func TestEvalSteps(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		spec Spec
		in   string // one letter per check, see obsFor
		want []string
	}{
		{
			name: "for zero fires at once, resolves at once, resolved kept 15m",
			in:   "H......",
			// Resolved at 5m; kept at 10m, 15m; dropped at 20m (15m later).
			want: []string{"I>F", "F>R", "R", "R", "I", "I", "I"},
		},
		{
			name: "for duration",
			spec: Spec{For: Hold{Duration: 10 * time.Minute}},
			in:   "HHHH",
			want: []string{"I>P", "P", "P>F", "F"},
		},
		{
			name: "for duration not a multiple of the interval",
			spec: Spec{For: Hold{Duration: 11 * time.Minute}},
			in:   "HHHH",
			want: []string{"I>P", "P", "P", "P>F"},
		},
		{
			name: "for checks: the first check counts as one",
			spec: Spec{For: Hold{Checks: 3}},
			in:   "HHHH",
			want: []string{"I>P", "P", "P>F", "F"},
		},
		{
			name: "for one check is for zero",
			spec: Spec{For: Hold{Checks: 1}},
			in:   "H.",
			want: []string{"I>F", "F>R"},
		},
		{
			name: "duration and checks both required",
			spec: Spec{For: Hold{Duration: 5 * time.Minute, Checks: 3}},
			in:   "HHHH",
			want: []string{"I>P", "P", "P>F", "F"},
		},
		{
			name: "pending that stops holding is deleted, and starts over",
			spec: Spec{For: Hold{Duration: 10 * time.Minute}},
			in:   "HH.HHH",
			want: []string{"I>P", "P", "P>I", "I>P", "P", "P>F"},
		},
		{
			name: "pending on checks needs consecutive checks",
			spec: Spec{For: Hold{Checks: 2}},
			in:   "H.H.HH",
			want: []string{"I>P", "P>I", "I>P", "P>I", "I>P", "P>F"},
		},
		{
			name: "keep_firing_for",
			spec: Spec{KeepFiringFor: 10 * time.Minute},
			in:   "H...",
			// Stops holding at 5m; keeps firing until 15m.
			want: []string{"I>F", "F", "F", "F>R"},
		},
		{
			name: "keep_firing_for restarts when the condition comes back",
			spec: Spec{KeepFiringFor: 10 * time.Minute},
			in:   "H..H...",
			want: []string{"I>F", "F", "F", "F", "F", "F", "F>R"},
		},
		{
			name: "resolved that holds again is a new incident",
			spec: Spec{For: Hold{Duration: 5 * time.Minute}},
			in:   "HH.HH",
			want: []string{"I>P", "P>F", "F>R", "R>P", "P>F"},
		},
		{
			name: "resolved that holds again with for zero fires again",
			in:   "H.H",
			want: []string{"I>F", "F>R", "R>F"},
		},
		{
			name: "custom resolved retention",
			spec: Spec{ResolvedRetention: 5 * time.Minute},
			in:   "H...",
			want: []string{"I>F", "F>R", "I", "I"},
		},
		{
			name: "no data: pending does not advance",
			spec: Spec{For: Hold{Duration: 10 * time.Minute}},
			in:   "HHNH",
			want: []string{"I>P", "P", "P", "P>F"},
		},
		{
			name: "no data: checks neither count nor break the run",
			spec: Spec{For: Hold{Checks: 3}},
			in:   "HHNNH",
			want: []string{"I>P", "P", "P", "P", "P>F"},
		},
		{
			name: "no data: firing does not resolve",
			in:   "HNNNN.",
			want: []string{"I>F", "F", "F", "F", "F", "F>R"},
		},
		{
			name: "no data: keep_firing_for does not run out",
			spec: Spec{KeepFiringFor: 10 * time.Minute},
			in:   "H.NNN",
			want: []string{"I>F", "F", "F", "F", "F"},
		},
		{
			name: "no data: resolved alerts are kept past retention",
			in:   "H.NNNNN.",
			want: []string{"I>F", "F>R", "R", "R", "R", "R", "R", "I"},
		},
		{
			name: "no data: nothing starts",
			in:   "NnH",
			want: []string{"I", "I", "I>F"},
		},
		{
			name: "sample without a value is no data for its series",
			spec: Spec{For: Hold{Duration: 10 * time.Minute}},
			in:   "HHnnHH",
			want: []string{"I>P", "P", "P", "P", "P>F", "F"},
		},
		{
			name: "sample without a value: firing does not resolve",
			in:   "Hnnn.",
			want: []string{"I>F", "F", "F", "F", "F>R"},
		},
		{
			name: "series absent while the rule has other data resolves",
			in:   "H_",
			want: []string{"I>F", "F>R"},
		},
		{
			name: "absent series: pending is deleted",
			spec: Spec{For: Hold{Checks: 2}},
			in:   "H_",
			want: []string{"I>P", "P>I"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if len(tc.in) != len(tc.want) {
				t.Fatalf("bad case: %d inputs, %d expectations", len(tc.in), len(tc.want))
			}
			spec := tc.spec
			spec.Rule = "r"
			var alerts []Alert
			var got []string
			for i := range len(tc.in) {
				now := baseTime.Add(time.Duration(i) * cronInterval)
				obs, noData := obsFor(t, tc.in[i], float64(i))
				prev := alerts
				next, changes := Eval(spec, prev, obs, noData, now)
				checkStep(t, spec, prev, next, changes, noData, now)
				alerts = next
				got = append(got, describe(t, alerts, changes))
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("input %s\n got %v\nwant %v", tc.in, got, tc.want)
			}
		})
	}
}

// run evaluates the series {provider="a"} over the inputs and returns the
// alerts after each step.
func run(t *testing.T, spec Spec, in string) [][]Alert {
	t.Helper()
	var alerts []Alert
	var out [][]Alert
	for i := range len(in) {
		obs, noData := obsFor(t, in[i], float64(i))
		alerts, _ = Eval(spec, alerts, obs, noData, baseTime.Add(time.Duration(i)*cronInterval))
		out = append(out, alerts)
	}
	return out
}

func at(step int) time.Time { return baseTime.Add(time.Duration(step) * cronInterval) }

func TestEvalTimestamps(t *testing.T) {
	t.Parallel()
	spec := Spec{Rule: "r", For: Hold{Duration: 5 * time.Minute}, KeepFiringFor: 5 * time.Minute}
	steps := run(t, spec, "HHH..HHN")
	one := func(i int) Alert {
		t.Helper()
		if len(steps[i]) != 1 {
			t.Fatalf("step %d: %d alerts, want 1", i, len(steps[i]))
		}
		return steps[i][0]
	}

	a := one(2)
	if a.State != StateFiring || !a.ActiveAt.Equal(at(0)) || !a.FiredAt.Equal(at(1)) || a.Checks != 3 {
		t.Errorf("step 2: %+v", a)
	}
	if *a.Value != 2 || *a.Numerator != 200 || *a.Denominator != 100 || !a.LastEvalAt.Equal(at(2)) {
		t.Errorf("step 2 value: %v %v %v at %v", *a.Value, *a.Numerator, *a.Denominator, a.LastEvalAt)
	}
	a = one(3)
	if a.State != StateFiring || !a.KeepFiringSince.Equal(at(3)) || a.Checks != 3 {
		t.Errorf("step 3 (keep firing): %+v", a)
	}
	a = one(4)
	if a.State != StateResolved || !a.ResolvedAt.Equal(at(4)) || !a.FiredAt.Equal(at(1)) || *a.Value != 4 {
		t.Errorf("step 4 (resolved): %+v", a)
	}
	a = one(5)
	if a.State != StatePending || !a.ActiveAt.Equal(at(5)) || !a.FiredAt.IsZero() || !a.ResolvedAt.IsZero() ||
		!a.KeepFiringSince.IsZero() || a.Checks != 1 {
		t.Errorf("step 5 (new incident): %+v", a)
	}
	a = one(6)
	if a.State != StateFiring || !a.ActiveAt.Equal(at(5)) || !a.FiredAt.Equal(at(6)) || a.NoData {
		t.Errorf("step 6: %+v", a)
	}
	a = one(7)
	if a.State != StateFiring || !a.NoData || !a.LastEvalAt.Equal(at(7)) || *a.Value != 6 {
		t.Errorf("step 7 (no data keeps the last value): %+v", a)
	}
	if a.Rule != "r" || a.Labels["provider"] != "a" || a.Fingerprint != Fingerprint("r", a.Labels) {
		t.Errorf("identity: %+v", a)
	}
}

func TestEvalForRaised(t *testing.T) {
	t.Parallel()
	spec := Spec{Rule: "r", For: Hold{Duration: 5 * time.Minute}}
	obs, _ := obsFor(t, 'H', 1)
	alerts, _ := Eval(spec, nil, obs, false, at(0))
	alerts, _ = Eval(spec, alerts, obs, false, at(1))
	if alerts[0].State != StateFiring {
		t.Fatalf("not firing: %+v", alerts[0])
	}

	spec.For.Duration = 20 * time.Minute
	alerts, changes := Eval(spec, alerts, obs, false, at(2))
	if alerts[0].State != StatePending || !alerts[0].FiredAt.IsZero() || !alerts[0].ActiveAt.Equal(at(0)) {
		t.Errorf("after raising for: %+v", alerts[0])
	}
	if len(changes) != 1 || changes[0].From != StateFiring || changes[0].To != StatePending {
		t.Errorf("changes: %+v", changes)
	}
	// Still counted from the original ActiveAt: fires 20m after it.
	alerts, changes = Eval(spec, alerts, obs, false, at(3))
	if alerts[0].State != StatePending || len(changes) != 0 {
		t.Errorf("at 15m: %+v %+v", alerts[0], changes)
	}
	alerts, changes = Eval(spec, alerts, obs, false, at(4))
	if alerts[0].State != StateFiring || !alerts[0].FiredAt.Equal(at(4)) || len(changes) != 1 {
		t.Errorf("at 20m: %+v %+v", alerts[0], changes)
	}

	// Same with checks.
	spec.For = Hold{Checks: 10}
	alerts, changes = Eval(spec, alerts, obs, false, at(5))
	if alerts[0].State != StatePending || len(changes) != 1 || changes[0].To != StatePending {
		t.Errorf("after raising checks: %+v %+v", alerts[0], changes)
	}

	// Lowering for fires at the next check.
	spec.For = Hold{}
	alerts, changes = Eval(spec, alerts, obs, false, at(6))
	if alerts[0].State != StateFiring || len(changes) != 1 || changes[0].From != StatePending {
		t.Errorf("after lowering for: %+v %+v", alerts[0], changes)
	}
}

func TestEvalForZeroOneTransition(t *testing.T) {
	t.Parallel()
	obs, _ := obsFor(t, 'H', 1)
	next, changes := Eval(Spec{Rule: "r"}, nil, obs, false, baseTime)
	if len(next) != 1 || next[0].State != StateFiring || !next[0].ActiveAt.Equal(baseTime) || !next[0].FiredAt.Equal(baseTime) {
		t.Fatalf("next: %+v", next)
	}
	want := []Transition{{Alert: next[0], From: StateInactive, To: StateFiring}}
	if !reflect.DeepEqual(changes, want) {
		t.Errorf("changes:\n got %+v\nwant %+v", changes, want)
	}
}

func TestEvalLabelSets(t *testing.T) {
	t.Parallel()
	spec := Spec{Rule: "retry_rate", For: Hold{Checks: 2}}
	lbl := func(p string) map[string]string { return map[string]string{"provider": p} }
	obs := func(holds ...string) []Observation {
		var out []Observation
		for _, p := range []string{"openai", "anthropic", "mistral", "google"} {
			out = append(out, Observation{Sample: Sample{Value: f(0.5), Labels: lbl(p)}, Holds: slices.Contains(holds, p)})
		}
		return out
	}
	states := func(alerts []Alert) map[string]State {
		m := map[string]State{}
		for _, a := range alerts {
			m[a.Labels["provider"]] = a.State
		}
		return m
	}

	next, changes := Eval(spec, nil, obs("openai", "mistral"), false, at(0))
	if got := states(next); !maps.Equal(got, map[string]State{"openai": StatePending, "mistral": StatePending}) {
		t.Errorf("step 0: %v", got)
	}
	if len(changes) != 2 {
		t.Errorf("step 0 changes: %+v", changes)
	}
	next, changes = Eval(spec, next, obs("openai", "anthropic"), false, at(1))
	if got := states(next); !maps.Equal(got, map[string]State{"openai": StateFiring, "anthropic": StatePending}) {
		t.Errorf("step 1: %v", got)
	}
	var got []string
	for _, c := range changes {
		got = append(got, c.Alert.Labels["provider"]+":"+c.From.String()+">"+c.To.String())
	}
	slices.Sort(got)
	if want := []string{"anthropic:inactive>pending", "mistral:pending>inactive", "openai:pending>firing"}; !slices.Equal(got, want) {
		t.Errorf("step 1 changes: %v, want %v", got, want)
	}
	if !slices.IsSortedFunc(next, func(a, b Alert) int { return strings.Compare(a.Fingerprint, b.Fingerprint) }) {
		t.Errorf("alerts not sorted by fingerprint")
	}
	if !slices.IsSortedFunc(changes, func(a, b Transition) int { return strings.Compare(a.Alert.Fingerprint, b.Alert.Fingerprint) }) {
		t.Errorf("changes not sorted by fingerprint")
	}
}

func TestEvalDuplicateObservations(t *testing.T) {
	t.Parallel()
	l := map[string]string{"provider": "a"}
	obs := func(v *float64, holds bool) Observation {
		return Observation{Sample: Sample{Value: v, Labels: l}, Holds: holds}
	}
	// A holding sample wins, then the first one with a value.
	cases := []struct {
		obs   []Observation
		state State
		value float64
	}{
		{[]Observation{obs(f(1), false), obs(f(2), true), obs(nil, true)}, StateFiring, 2},
		{[]Observation{obs(nil, true), obs(f(2), true), obs(f(1), false)}, StateFiring, 2},
		{[]Observation{obs(f(2), true), obs(f(3), true)}, StateFiring, 2},
		{[]Observation{obs(nil, true), obs(f(4), false), obs(f(5), false)}, StateInactive, 4},
	}
	for i, tc := range cases {
		prev := []Alert{{Rule: "r", Labels: l, State: StateResolved, ActiveAt: baseTime, FiredAt: baseTime, ResolvedAt: baseTime}}
		next, _ := Eval(Spec{Rule: "r"}, prev, tc.obs, false, at(1))
		if tc.state == StateInactive {
			// Not holding: stays resolved, with the chosen value.
			tc.state = StateResolved
		}
		if len(next) != 1 || next[0].State != tc.state || next[0].NoData || *next[0].Value != tc.value {
			t.Errorf("case %d: next %+v, want %v with value %v", i, next, tc.state, tc.value)
		}
	}
}

func TestEvalAllSamplesWithoutValueIsNoData(t *testing.T) {
	t.Parallel()
	spec := Spec{Rule: "r"}
	obs, _ := obsFor(t, 'H', 1)
	prev, _ := Eval(spec, nil, obs, false, baseTime)
	// Only valueless samples, and not for the alert's series: without the
	// "all without a value" rule the alert would resolve as absent.
	novalue := []Observation{{Sample: Sample{Labels: map[string]string{"provider": "b"}}}}
	next, changes := Eval(spec, prev, novalue, false, at(1))
	if len(changes) != 0 || len(next) != 1 || next[0].State != StateFiring || !next[0].NoData {
		t.Errorf("next %+v changes %+v", next, changes)
	}
}

func TestEvalDoesNotModifyPrev(t *testing.T) {
	t.Parallel()
	spec := Spec{Rule: "r", KeepFiringFor: time.Minute}
	obs, _ := obsFor(t, 'H', 1)
	prev, _ := Eval(spec, nil, obs, false, baseTime)
	prev = append(prev, Alert{Rule: "r", Labels: map[string]string{"provider": "gone"}, State: StatePending, ActiveAt: baseTime})
	saved := cloneAlerts(prev)
	notHolding, _ := obsFor(t, '.', 7)
	next, _ := Eval(spec, prev, notHolding, false, at(1))
	if !reflect.DeepEqual(prev, saved) {
		t.Errorf("prev modified:\n got %+v\nwant %+v", prev, saved)
	}
	// Outputs share nothing with inputs.
	next[0].Labels["provider"] = "x"
	*next[0].Value = 99
	if prev[0].Labels["provider"] != "a" || *prev[0].Value != 1 || *notHolding[0].Sample.Value != 7 {
		t.Errorf("next aliases its inputs")
	}
}

func TestFingerprint(t *testing.T) {
	t.Parallel()
	// Values computed independently (FNV-1a 64 over name 0xff value 0xff,
	// sorted by name), as Prometheus' model.LabelSet.Fingerprint does.
	cases := []struct {
		rule   string
		labels map[string]string
		want   string
	}{
		{"retry_rate", map[string]string{"provider": "openai"}, "f4c7e99216fd57b2"},
		{"retry_rate", map[string]string{"provider": "openai", "alertname": "ignored"}, "f4c7e99216fd57b2"},
		{"cascade", nil, "fe5866bfb11485c0"},
		{"cascade", map[string]string{}, "fe5866bfb11485c0"},
	}
	for _, tc := range cases {
		if got := Fingerprint(tc.rule, tc.labels); got != tc.want {
			t.Errorf("Fingerprint(%q, %v) = %s, want %s", tc.rule, tc.labels, got, tc.want)
		}
	}
	// Identity is rule plus the whole label set; separators keep
	// concatenations apart.
	seen := map[string]string{}
	for _, c := range []struct {
		rule string
		l    map[string]string
	}{
		{"r", nil}, {"s", nil}, {"r", map[string]string{"a": "b"}}, {"r", map[string]string{"a": "bc"}},
		{"r", map[string]string{"ab": "c"}}, {"r", map[string]string{"a": "b", "c": "d"}}, {"r", map[string]string{"a": ""}},
	} {
		fp := Fingerprint(c.rule, c.l)
		if len(fp) != 16 {
			t.Errorf("fingerprint %q is not 16 hex digits", fp)
		}
		key := c.rule + " " + strings.Join(slices.Sorted(maps.Keys(c.l)), ",")
		if prevKey, dup := seen[fp]; dup {
			t.Errorf("%s and %v collide", prevKey, c)
		}
		seen[fp] = key
	}
}

func TestStateString(t *testing.T) {
	t.Parallel()
	for s, want := range map[State]string{StateInactive: "inactive", StatePending: "pending", StateFiring: "firing", StateResolved: "resolved", State(9): "State(9)"} {
		if got := s.String(); got != want {
			t.Errorf("%d.String() = %q, want %q", int(s), got, want)
		}
	}
	if !(StateInactive < StatePending && StatePending < StateFiring && StateResolved < StatePending) {
		t.Errorf("states out of order")
	}
	b, err := json.Marshal([]State{StateFiring, StateResolved})
	if err != nil || string(b) != `["firing","resolved"]` {
		t.Errorf("marshal: %s %v", b, err)
	}
	var back []State
	if err := json.Unmarshal(b, &back); err != nil || !slices.Equal(back, []State{StateFiring, StateResolved}) {
		t.Errorf("unmarshal: %v %v", back, err)
	}
	if err := json.Unmarshal([]byte(`["on fire"]`), &back); err == nil {
		t.Errorf("unknown state accepted")
	}
	if _, err := json.Marshal(State(-1)); err == nil {
		t.Errorf("invalid state marshalled")
	}
}

func cloneAlerts(as []Alert) []Alert {
	if as == nil {
		return nil
	}
	out := make([]Alert, len(as))
	for i, a := range as {
		a.Labels = maps.Clone(a.Labels)
		a.Value, a.Numerator, a.Denominator = clonef(a.Value), clonef(a.Numerator), clonef(a.Denominator)
		out[i] = a
	}
	return out
}

// checkStep checks the invariants of one evaluation from prev to next.
func checkStep(t *testing.T, spec Spec, prev, next []Alert, changes []Transition, noData bool, now time.Time) {
	t.Helper()
	prevState := map[string]State{}
	for _, a := range prev {
		if _, ok := prevState[a.Fingerprint]; !ok {
			prevState[a.Fingerprint] = a.State
		}
	}
	nextState := map[string]State{}
	for i, a := range next {
		switch a.State {
		case StatePending, StateFiring, StateResolved:
		default:
			t.Errorf("alert %v in state %v", a.Labels, a.State)
		}
		if a.Rule != spec.Rule || a.Fingerprint != Fingerprint(spec.Rule, a.Labels) {
			t.Errorf("alert identity %q %v %q", a.Rule, a.Labels, a.Fingerprint)
		}
		if i > 0 && next[i-1].Fingerprint >= a.Fingerprint {
			t.Errorf("alerts not sorted and unique by fingerprint")
		}
		if a.State == StateFiring && (a.FiredAt.IsZero() || a.FiredAt.Before(a.ActiveAt)) {
			t.Errorf("firing alert with ActiveAt %v FiredAt %v", a.ActiveAt, a.FiredAt)
		}
		if a.State == StatePending && !a.FiredAt.IsZero() {
			t.Errorf("pending alert with FiredAt %v", a.FiredAt)
		}
		if a.State == StateResolved && (a.ResolvedAt.IsZero() || a.ResolvedAt.Before(a.FiredAt) || a.FiredAt.IsZero()) {
			t.Errorf("resolved alert with FiredAt %v ResolvedAt %v", a.FiredAt, a.ResolvedAt)
		}
		if a.State != StateResolved && !a.ResolvedAt.IsZero() {
			t.Errorf("%v alert with ResolvedAt %v", a.State, a.ResolvedAt)
		}
		if a.ActiveAt.IsZero() && a.State != StateInactive {
			t.Errorf("active alert without ActiveAt")
		}
		if !a.LastEvalAt.Equal(now) {
			t.Errorf("LastEvalAt %v, want %v", a.LastEvalAt, now)
		}
		if noData && !a.NoData {
			t.Errorf("no data but NoData unset")
		}
		nextState[a.Fingerprint] = a.State
	}
	if noData && len(changes) != 0 {
		t.Errorf("transitions without data: %+v", changes)
	}
	// Transitions are exactly the state differences. An alert missing from
	// next is inactive, except a resolved one dropped after its retention.
	want := map[string][2]State{}
	for fp, from := range prevState {
		to, ok := nextState[fp]
		if !ok && from == StateResolved {
			continue
		}
		if from != to {
			want[fp] = [2]State{from, to}
		}
	}
	for fp, to := range nextState {
		if _, ok := prevState[fp]; !ok {
			want[fp] = [2]State{StateInactive, to}
		}
	}
	got := map[string][2]State{}
	for i, c := range changes {
		if c.From == c.To || c.Alert.State != c.To {
			t.Errorf("bad transition %+v", c)
		}
		if i > 0 && changes[i-1].Alert.Fingerprint >= c.Alert.Fingerprint {
			t.Errorf("transitions not sorted and unique by fingerprint")
		}
		got[c.Alert.Fingerprint] = [2]State{c.From, c.To}
	}
	if !maps.Equal(got, want) {
		t.Errorf("transitions %v, want %v", got, want)
	}
}

func FuzzEval(f *testing.F) {
	for _, seed := range []int64{0, 1, 42, 2026, -7} {
		f.Add(seed, uint8(40))
	}
	f.Fuzz(func(t *testing.T, seed int64, steps uint8) {
		r := rand.New(rand.NewPCG(uint64(seed), 0x6f7263687374))
		durations := []time.Duration{0, time.Minute, 5 * time.Minute, 10 * time.Minute, 17 * time.Minute}
		randSpec := func() Spec {
			return Spec{
				Rule:              "fuzz",
				For:               Hold{Duration: durations[r.IntN(len(durations))], Checks: r.IntN(4)},
				KeepFiringFor:     durations[r.IntN(len(durations))],
				ResolvedRetention: durations[r.IntN(len(durations))],
			}
		}
		spec := randSpec()
		providers := []string{"a", "b", "c"}
		now := baseTime
		var prev []Alert
		for range int(steps) {
			if r.IntN(10) == 0 {
				spec = randSpec() // `for` and friends change between checks
			}
			now = now.Add(time.Duration(r.IntN(11)) * time.Minute)
			var obs []Observation
			noData := r.IntN(8) == 0
			if !noData {
				for _, p := range providers {
					o := Observation{Sample: Sample{Labels: map[string]string{"provider": p}}, Holds: r.IntN(2) == 0}
					switch r.IntN(6) {
					case 0: // absent
						continue
					case 1: // no value
					default:
						v := r.Float64()
						o.Sample.Value = &v
					}
					obs = append(obs, o)
				}
			}
			saved := cloneAlerts(prev)
			next, changes := Eval(spec, prev, obs, noData, now)
			next2, changes2 := Eval(spec, prev, obs, noData, now)
			if !reflect.DeepEqual(next, next2) || !reflect.DeepEqual(changes, changes2) {
				t.Fatalf("Eval is not deterministic")
			}
			if !reflect.DeepEqual(prev, saved) {
				t.Fatalf("Eval modified prev")
			}
			allNoValue := len(obs) > 0 && !slices.ContainsFunc(obs, func(o Observation) bool { return o.Sample.Value != nil })
			checkStep(t, spec, prev, next, changes, noData || allNoValue, now)
			if t.Failed() {
				t.FailNow()
			}
			prev = next
		}
	})
}

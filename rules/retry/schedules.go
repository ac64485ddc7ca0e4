package retry

import (
	"fmt"
	"slices"
	"strings"
)

// scheduleChanges are the schedules a policy's backoff can be switched
// to while keeping its base, cap and factor (simulate's --backoff): each
// name with how it changes the backoff. A jittered schedule is named after
// its jitter, as policy files' jitter key and the aws- presets name it.
var scheduleChanges = []struct {
	name string
	set  func(b *Backoff)
}{
	{"none", func(b *Backoff) { *b = Backoff{} }},
	{"constant", func(b *Backoff) { b.Factor, b.Jitter = 1, JitterNone }},
	{"exponential", func(b *Backoff) { b.Jitter = JitterNone }},
	{JitterProportional.String(), func(b *Backoff) { b.Jitter, b.Spread = JitterProportional, Orchestrator.Spread }},
	{JitterFull.String(), func(b *Backoff) { b.Jitter = JitterFull }},
	{JitterEqual.String(), func(b *Backoff) { b.Jitter = JitterEqual }},
	{JitterDecorrelated.String(), func(b *Backoff) { b.Jitter = JitterDecorrelated }},
}

// ScheduleNames are the schedules WithSchedule knows, in order.
func ScheduleNames() []string {
	out := make([]string, len(scheduleChanges))
	for i, s := range scheduleChanges {
		out[i] = s.name
	}
	return out
}

// WithSchedule is base switched to the named schedule (see
// ScheduleNames): none waits not at all; constant waits the base every
// time; exponential grows by the factor without jitter; proportional,
// full, equal and decorrelated add that jitter. A base with no wait
// starts from the orchestrator's schedule, and one with no factor
// doubles.
func WithSchedule(name string, base Backoff) (Backoff, error) {
	i := slices.IndexFunc(scheduleChanges, func(s struct {
		name string
		set  func(b *Backoff)
	}) bool {
		return s.name == name
	})
	if i < 0 {
		return base, fmt.Errorf("unknown schedule %q (%s)", name, strings.Join(ScheduleNames(), ", "))
	}
	b := base
	if b.Initial == 0 {
		b = Orchestrator
	}
	scheduleChanges[i].set(&b)
	if b.Factor == 0 && name != "constant" && name != "none" {
		b.Factor = 2
	}
	return b, nil
}

package retry

import (
	"slices"
	"strings"
	"testing"
)

// TestOneBackoffVocabulary: the jitters are named once (Jitter.String);
// simulate's schedules and the aws- presets use those names, so a policy
// file's jitter: full, simulate's --backoff full and the aws-full preset
// all mean the same jitter.
func TestOneBackoffVocabulary(t *testing.T) {
	schedules := ScheduleNames()
	for _, name := range JitterNames() {
		if !slices.Contains(schedules, name) {
			t.Errorf("jitter %q has no schedule of its name (%v)", name, schedules)
		}
	}
	for _, name := range BackoffNames() {
		j, ok := strings.CutPrefix(name, "aws-")
		if !ok {
			continue
		}
		b, _ := BackoffPreset(name)
		if b.Jitter.String() != j {
			t.Errorf("backoff %s has jitter %s", name, b.Jitter)
		}
		if s, _ := WithSchedule(j, Orchestrator); s.Jitter != b.Jitter || s.Initial != b.Initial || s.Max != b.Max {
			t.Errorf("schedule %s on the orchestrator's base is %+v; backoff %s is %+v", j, s, name, b)
		}
	}
	// The generic presets are the named backoffs no seed preset shares a
	// name with.
	for _, name := range BackoffNames() {
		p, err := Preset(name)
		if err != nil {
			t.Errorf("backoff %s has no preset: %v", name, err)
			continue
		}
		if b, _ := BackoffPreset(name); name != "none" && p.Backoff != b {
			t.Errorf("preset %s has backoff %+v, want %+v", name, p.Backoff, b)
		}
	}
}

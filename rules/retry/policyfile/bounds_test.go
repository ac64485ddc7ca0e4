package policyfile

import (
	"errors"
	"runtime"
	"strings"
	"testing"

	"github.com/orchstat/orchstat/rules/retry"
)

// A policy file nested 20 KB or 200 KB deep (195 MB and 15 GB to parse)
// is one problem at its line and column, found in bounded memory.
func TestParsePolicyNestedTooDeep(t *testing.T) {
	for _, doc := range []string{
		"extends: orchestrator\nretriable: " + strings.Repeat("[", 10000) + strings.Repeat("]", 10000) + "\n",
		"extends: orchestrator\nretriable: " + strings.Repeat("[", 100000) + strings.Repeat("]", 100000) + "\n",
		"extends: orchestrator\nbackoff: " + strings.Repeat("{a: ", 50000) + strings.Repeat("}", 50000) + "\n",
	} {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		_, err := Parse("p.yaml", []byte(doc))
		runtime.ReadMemStats(&after)
		var pe *retry.PolicyError
		if !errors.As(err, &pe) || len(pe.Problems) != 1 || pe.Problems[0].Line != 2 ||
			!strings.Contains(pe.Problems[0].String(), "p.yaml:2:") || !strings.Contains(pe.Problems[0].Message, "nested too deep") {
			t.Errorf("%d bytes: %v", len(doc), err)
		}
		if n := after.TotalAlloc - before.TotalAlloc; n > 4<<20 {
			t.Errorf("%d bytes: allocated %d", len(doc), n)
		}
	}
}

// Every limit is capped at what a policy can mean; the cap itself is
// accepted and one past it is refused where the file sets it. simulate
// walked all 2,000,000,000 retries of max_retries: 2000000000.
func TestPolicyCaps(t *testing.T) {
	for _, tc := range []struct {
		at, past, field, want string
	}{
		{"max_retries: 100", "max_retries: 101", "max_retries", "p.yaml:2:14: max_retries: must be at most 100, got 101"},
		{"max_retries: 100", "max_retries: 2000000000", "max_retries", "must be at most 100, got 2000000000"},
		{"per_operation: {test: 100}", "per_operation: {test: 101}", "per_operation.test", "p.yaml:2:23: per_operation.test: must be at most 100"},
		{"max_attempts: 100", "max_attempts: 101", "max_attempts", "must be at most 100"},
		{"signature_halt: 100", "signature_halt: 101", "signature_halt", "must be at most 100"},
		{"max_iterations: 100", "max_iterations: 101", "max_iterations", "must be at most 100"},
		{"non_improving_stop: 100", "non_improving_stop: 101", "non_improving_stop", "must be at most 100"},
		{"diagnosis_after: 100", "diagnosis_after: 101", "diagnosis_after", "must be at most 100"},
		{"escalation: {max_escalations: 100}", "escalation: {max_escalations: 101}", "escalation.max_escalations", "must be at most 100"},
		{"global_cap: 10000", "global_cap: 10001", "global_cap", "must be at most 10000"},
		{"cascade: {threshold: 10000, window: 10000}", "cascade: {threshold: 3, window: 10001}", "cascade.window", "must be at most 10000"},
		{"cascade: {threshold: 10000, window: 0}", "cascade: {threshold: 10001, window: 0}", "cascade.threshold", "must be at most 10000"},
		{"adaptive: {window: 10000, max_retries: 100}", "adaptive: {window: 10001}", "adaptive.window", "must be at most 10000"},
		{"adaptive: {max_retries: 100}", "adaptive: {max_retries: 101}", "adaptive.max_retries", "must be at most 100"},
		{"backoff: {initial: 24h, max: 24h}", "backoff: {initial: 1s, max: 24h1s}", "backoff.max", "must be at most 24h0m0s, got 24h0m1s"},
		{"backoff: {initial: 24h, max: 0s}", "backoff: {initial: 25h, max: 0s}", "backoff.initial", "must be at most 24h0m0s"},
	} {
		if _, err := Parse("p.yaml", []byte("extends: orchestrator\n"+tc.at+"\n")); err != nil {
			t.Errorf("%s refused: %v", tc.at, err)
		}
		_, err := Parse("p.yaml", []byte("extends: orchestrator\n"+tc.past+"\n"))
		var pe *retry.PolicyError
		if !errors.As(err, &pe) || len(pe.Problems) != 1 || pe.Problems[0].Field != tc.field || pe.Problems[0].Line != 2 ||
			!strings.Contains(pe.Problems[0].String(), tc.want) {
			t.Errorf("%s: %v, want %s: %q", tc.past, err, tc.field, tc.want)
		}
	}
	// The presets are within the caps.
	for _, name := range retry.PresetNames() {
		p, err := retry.Preset(name)
		if err != nil {
			t.Fatal(err)
		}
		if err := p.Validate(); err != nil {
			t.Errorf("preset %s: %v", name, err)
		}
	}
}

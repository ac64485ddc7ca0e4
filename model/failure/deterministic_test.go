package failure

import (
	"slices"
	"testing"
)

func TestDeterministic(t *testing.T) {
	if got, want := DeterministicClasses(), []Class{ClassPreflight, ClassWriteFailed}; !slices.Equal(got, want) {
		t.Errorf("DeterministicClasses() = %v, want %v", got, want)
	}
	DeterministicClasses()[0] = "mutated"
	if !ClassPreflight.Deterministic() {
		t.Error("DeterministicClasses shares its slice")
	}
	for _, c := range DeterministicClasses() {
		if !c.Known() {
			t.Errorf("%q is not a known class", c)
		}
	}
	for _, tt := range []struct {
		stage, text string
		want        bool
	}{
		{"preflight", "", true},
		{" Preflight ", "", true}, // as DefaultFactory reads stages
		{"write_failed", "disk full", true},
		{"acceptance_failed", "Failed to parse acceptance command: No closing quotation", true},
		{"acceptance_failed", "  Failed to parse acceptance command", true},
		{"acceptance_failed", "exit 1: assertion failed", false},
		{"verify_failed", "Failed to parse acceptance command", false},
		{"exception", "ModuleNotFoundError: No module named 'x'", false}, // permanent, but a class a retry can change
		{"stale_context", "", false},
		{"", "", false},
	} {
		if got := FactoryDeterministic(tt.stage, tt.text); got != tt.want {
			t.Errorf("FactoryDeterministic(%q, %q) = %v, want %v", tt.stage, tt.text, got, tt.want)
		}
	}
}

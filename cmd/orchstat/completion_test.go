package main

import (
	"slices"
	"strings"
	"testing"

	"github.com/orchstat/orchstat/ingest"
	"github.com/orchstat/orchstat/rules/retry"
)

// complete runs cobra's hidden __complete as a shell's completion script
// does, and returns the values offered and the directive line.
func complete(t *testing.T, args ...string) ([]string, string) {
	t.Helper()
	code, out, stderr := runCLI(t, "", append([]string{"__complete"}, args...)...)
	if code != 0 {
		t.Fatalf("__complete %q: exit %d: %s", args, code, stderr)
	}
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	return lines[:len(lines)-1], lines[len(lines)-1]
}

// TestCompletion: flag values complete. Before, every flag completed file
// names, the shell's default.
func TestCompletion(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args      []string
		want      []string
		directive string
	}{
		{[]string{"report", "--format", ""}, []string{"table", "markdown", "json", "csv", "html"}, ":4"},
		{[]string{"simulate", "--format", ""}, []string{"table", "markdown", "json", "csv", "html"}, ":4"},
		{[]string{"check", "--format", ""}, []string{"table", "markdown", "json", "csv"}, ":4"},
		{[]string{"sql", "-f", ""}, []string{"table", "markdown", "json", "csv"}, ":4"},
		{[]string{"recommend", "--format", ""}, []string{"text", "json"}, ":4"},
		{[]string{"retry-config", "show", "--format", ""}, []string{"text", "json"}, ":4"},
		{[]string{"ingest", "--format", ""}, ingest.Formats, ":4"},
		{[]string{"ingest", "--input-format", ""}, ingest.Formats, ":4"},
		{[]string{"report", "--input-format", ""}, ingest.Formats, ":4"},
		{[]string{"check", "--input-format", ""}, ingest.Formats, ":4"},
		// A preset, or else a policy file: the shell's own completion.
		{[]string{"simulate", "--policy", ""}, retry.PresetNames(), ":0"},
		{[]string{"simulate", "--baseline", ""}, retry.PresetNames(), ":0"},
		{[]string{"exec", "--policy", ""}, retry.PresetNames(), ":0"},
		{[]string{"simulate", "--backoff", ""}, retry.ScheduleNames(), ":4"},
		{[]string{"exec", "--op", ""}, execOps, ":4"},
		{[]string{"report", "--by", ""}, []string{"day", "week", "month", "session", "model", "device", "project", "block"}, ":4"},
		{[]string{"recommend", "--system", ""}, recordSystems, ":4"},
		{[]string{"recommend", "--config", "/nonexistent/retry-config.json", "--stage", ""},
			[]string{"acceptance", "alex", "apply", "cass", "codey-implement", "codey-plan", "nigel", "verify", "write"}, ":4"},
		// Rule files: YAML files only.
		{[]string{"check", "--rules", ""}, []string{"yaml", "yml"}, ":8"},
		{[]string{"rules", "test", ""}, []string{"yaml", "yml"}, ":8"},
		{[]string{"rules", "check", ""}, []string{"yaml", "yml"}, ":8"},
	} {
		got, directive := complete(t, tc.args...)
		if !slices.Equal(got, tc.want) || directive != tc.directive {
			t.Errorf("%q: %q %s, want %q %s", tc.args, got, directive, tc.want, tc.directive)
		}
	}
}

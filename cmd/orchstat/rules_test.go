package main

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

func TestRulesCheck(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	good := filepath.Join(dir, "good.yaml")
	bad := filepath.Join(dir, "bad.yaml")
	os.WriteFile(good, []byte("rules:\n  - name: a\n    metric: runs\n    condition: value > 1\n"), 0o644)
	os.WriteFile(bad, []byte("rules:\n  - name: a\n    metric: nope\n    window: soon\n    condition: value > 1\n"), 0o644)

	code, out, stderr := runCLI(t, "", "rules", "check")
	if code != 0 || out != "alerts.yaml (built in): 13 rules, OK\n" || stderr != "" {
		t.Errorf("built in: exit %d, stdout %q, stderr %q", code, out, stderr)
	}
	code, out, stderr = runCLI(t, "", "rules", "check", "../../alerts.yaml", good)
	if code != 0 || out != "../../alerts.yaml: 13 rules, OK\n"+good+": 1 rule, OK\n" || stderr != "" {
		t.Errorf("good files: exit %d, stdout %q, stderr %q", code, out, stderr)
	}
	code, out, stderr = runCLI(t, "", "rules", "check", good, bad)
	if code != 1 || out != good+": 1 rule, OK\n"+bad+": 2 problems\n" {
		t.Errorf("bad file: exit %d, stdout %q", code, out)
	}
	lines := strings.Split(strings.TrimSpace(stderr), "\n")
	if len(lines) != 2 || !strings.HasPrefix(lines[0], bad+`:3:13: rule "a": metric: unknown metric "nope"`) ||
		!strings.HasPrefix(lines[1], bad+`:4:13: rule "a": window: "soon" is not a duration`) {
		t.Errorf("bad file: stderr %q", stderr)
	}
	code, out, _ = runCLI(t, "", "rules", "check", filepath.Join(dir, "missing.yaml"))
	if code != 1 || !strings.HasSuffix(out, "missing.yaml: unreadable\n") {
		t.Errorf("missing file: exit %d, stdout %q", code, out)
	}
	for _, args := range [][]string{{"rules"}, {"rules", "bogus"}, {"rules", "check", "--bogus"}} {
		if code, _, stderr := runCLI(t, "", args...); code != 2 || !strings.Contains(stderr, "--help") {
			t.Errorf("%v: exit %d, stderr %q; want a usage error", args, code, stderr)
		}
	}
	// report --rules gets the same validation.
	if code, _, stderr := runCLI(t, "", "--db", filepath.Join(dir, "x.duckdb"), "report", "--no-ingest", "--rules", bad); code != 1 ||
		!strings.Contains(stderr, bad+`:3:13: rule "a": metric: unknown metric`) {
		t.Errorf("report --rules bad: exit %d, stderr %q", code, stderr)
	}
}

// allocatedBy is the bytes f allocates, for tests that bound memory.
func allocatedBy(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// hostileRuleFiles writes the rule files: nested brackets of 20 KB
// (195 MB to check) and 200 KB (15 GB and 152 s), flow mappings, nesting
// by indentation, a 50 MB file; with /dev/zero (out of memory).
func hostileRuleFiles(t *testing.T) map[string]string {
	dir := t.TempDir()
	var indent strings.Builder
	indent.WriteString("rules:\n")
	for i := range 1000 {
		indent.WriteString(strings.Repeat(" ", i+1) + "a:\n")
	}
	files := map[string]string{"/dev/zero": "/dev/zero: more than 1048576 bytes (1 MiB), the most orchstat reads of a YAML file"}
	for name, body := range map[string]string{
		"nested20k.yaml":  "rules: " + strings.Repeat("[", 10000) + strings.Repeat("]", 10000) + "\n",
		"nested200k.yaml": "rules: " + strings.Repeat("[", 100000) + strings.Repeat("]", 100000) + "\n",
		"flow.yaml":       "rules: " + strings.Repeat("{a: ", 50000) + "1" + strings.Repeat("}", 50000) + "\n",
		"indent.yaml":     indent.String(),
		"huge.yaml":       "rules:\n# " + strings.Repeat("x", 50<<20) + "\n",
	} {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		want := p + ":1:71: YAML: nested too deep: more than 64 levels of lists and mappings"
		switch name {
		case "flow.yaml":
			want = p + ":1:260: YAML: nested too deep"
		case "indent.yaml":
			want = p + ":65:65: YAML: nested too deep"
		case "huge.yaml":
			want = p + ": 52428810 bytes, more than the 1048576 (1 MiB) orchstat reads of a YAML file"
		}
		files[p] = want
	}
	return files
}

// rules check, report --rules and check --rules refuse each hostile rule
// file with one clear error, in bounded memory.
func TestHostileRuleFiles(t *testing.T) {
	db := filepath.Join(t.TempDir(), "x.duckdb")
	for path, want := range hostileRuleFiles(t) {
		t.Run(filepath.Base(path), func(t *testing.T) {
			for _, tc := range []struct {
				args []string
				code int
			}{
				{[]string{"rules", "check", path}, 1},
				{[]string{"--db", db, "report", "--no-ingest", "--rules", path}, 1},
				{[]string{"--db", db, "check", "--no-ingest", "--rules", path}, 3},
			} {
				var code int
				var stderr string
				bytes := allocatedBy(func() { code, _, stderr = runCLI(t, "", tc.args...) })
				if code != tc.code || !strings.Contains(stderr, want) {
					t.Errorf("%v: exit %d, stderr %.300q; want %d and %q", tc.args, code, stderr, tc.code, want)
				}
				if bytes > 16<<20 {
					t.Errorf("%v: allocated %d bytes", tc.args, bytes)
				}
			}
		})
	}
}

// The condition and templates passed rules check and then failed
// (or ran out of memory) at every check; rules check now finds them, at
// their line.
func TestRulesCheckRunsConditionsAndTemplates(t *testing.T) {
	t.Parallel()
	p := filepath.Join(t.TempDir(), "alerts.yaml")
	os.WriteFile(p, []byte(`rules:
  - name: bomb
    metric: runs
    condition: 'len(repeat(repeat("a", 100000), 100000)) > 0'
  - name: index
    metric: provider_failure_rate
    by: [provider]
    condition: value > 0
    annotations:
      summary: '{{ index .Labels.provider 99 }}'
  - name: call
    metric: runs
    condition: value > 0
    annotations:
      summary: '{{ call .Labels }}'
`), 0o644)
	code, out, stderr := runCLI(t, "", "rules", "check", p)
	want := []string{
		p + `:4:16: rule "bomb": condition: builds more than 1048576 bytes (1 MiB) of text in one evaluation`,
		p + `:10:16: warning: rule "index": annotations.summary: fails on sample data (value 0, labels map[provider:sample]): error calling index: index out of range: 99`,
		p + `:15:20: rule "call": annotations.summary: call is not available`,
	}
	lines := strings.Split(strings.TrimSpace(stderr), "\n")
	if code != 1 || out != p+": 2 problems, 1 warning\n" || len(lines) != len(want) {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, out, stderr)
	}
	for i, w := range want {
		if !strings.HasPrefix(lines[i], w) {
			t.Errorf("line %d: %q\nwant %q", i+1, lines[i], w)
		}
	}
}

// A condition past its bounds on the data (not on rules check's samples)
// is an error of the rule at report time, with the rule's name, not an
// out-of-memory crash.
func TestReportConditionPastItsBudget(t *testing.T) {
	endToEnd(t, "runs orchstat against a real store")
	t.Parallel()
	dir := t.TempDir()
	db := bundledStore(t)
	p := filepath.Join(dir, "alerts.yaml")
	// No sample value is above 1 and below 1e6; the store's run count is.
	// Only then does + build 2.4 MB, which expr's own budget does not count.
	os.WriteFile(p, []byte(`rules:
  - name: runs_bomb
    metric: runs
    threshold: 1
    condition: 'let s = repeat("ab", 300000); value > 1 && value < 1000000 && len(s + s + s + s) > 0'
`), 0o644)
	if code, out, stderr := runCLI(t, "", "rules", "check", p); code != 0 {
		t.Fatalf("rules check: exit %d %s %s", code, out, stderr)
	}
	code, _, stderr := runCLI(t, "", "--db", db, "report", "--no-ingest", "--rules", p)
	if code != 1 || !strings.Contains(stderr, `rule "runs_bomb": condition builds more than 1048576 bytes (1 MiB) of text in one evaluation`) {
		t.Fatalf("exit %d: %s", code, stderr)
	}
}

package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestRulesCheck(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good.yaml")
	bad := filepath.Join(dir, "bad.yaml")
	os.WriteFile(good, []byte("rules:\n  - name: a\n    metric: runs\n    condition: value > 1\n"), 0o644)
	os.WriteFile(bad, []byte("rules:\n  - name: a\n    metric: nope\n    window: soon\n    condition: value > 1\n"), 0o644)

	code, out, stderr := runCLI(t, "", "rules", "check")
	if code != 0 || out != "alerts.yaml (built in): 10 rules, OK\n" || stderr != "" {
		t.Errorf("built in: exit %d, stdout %q, stderr %q", code, out, stderr)
	}
	code, out, stderr = runCLI(t, "", "rules", "check", "../../alerts.yaml", good)
	if code != 0 || out != "../../alerts.yaml: 10 rules, OK\n"+good+": 1 rule, OK\n" || stderr != "" {
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

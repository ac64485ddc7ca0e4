package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/orchstat/orchstat/model/simulated"
)

// TestSimulateOptimize runs the search on the bundled runs as a user
// does: the front in JSON with the baseline beside it, a pick that meets
// the constraint, the pick written as a policy file that simulate then
// reads, and the flags that make no sense without --optimize refused.
func TestSimulateOptimize(t *testing.T) {
	endToEnd(t, "runs orchstat against a real store")
	t.Parallel()
	dir := t.TempDir()
	db, file := filepath.Join(dir, "o.duckdb"), filepath.Join(dir, "picked.yaml")
	narrow := filepath.Join(dir, "narrow.txt")
	if err := os.WriteFile(narrow, []byte("# the retries\nmax_retries: 0..4\nmax_iterations=2|5  # and the loop's\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr := runCLI(t, "", "simulate", "--db", db, "../../testdata/runs", "--optimize", "--candidates", "60",
		"--resamples", "20", "--constraint", "success >= baseline", "--write-policy", file, "--format", "json",
		"--search-file", narrow, "--search", "max_iterations=3..5")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var out struct {
		Summary      string                  `json:"summary"`
		Optimization *simulated.Optimization `json:"optimization"`
	}
	if err := json.Unmarshal([]byte(stdout), &out); err != nil {
		t.Fatal(err)
	}
	if out.Optimization == nil || len(out.Optimization.Layers) != 2 {
		t.Fatalf("optimization %+v; want the provider requests' and the L2 loops and L3 steps' searches", out.Optimization)
	}
	o, loops := out.Optimization.Layers[0], out.Optimization.Layers[1]
	if len(o.Front) == 0 || o.Tried == 0 || o.HoldoutEpisodes == 0 || o.Baseline.Holdout == nil {
		t.Fatalf("the provider requests' search %+v", o)
	}
	if loops.Name != "L2 loops and L3 steps" || len(loops.Front) == 0 || loops.Tried == 0 || loops.Baseline.Search.L2Loops == 0 {
		t.Fatalf("the loops' search %+v", loops)
	}
	// The file narrows; --search, after it, wins.
	for _, want := range []simulated.Param{{Name: "max_retries", Values: []string{"0", "1", "2", "3", "4"}},
		{Name: "max_iterations", Values: []string{"3", "4", "5"}}} {
		found := false
		for _, l := range out.Optimization.Layers {
			for _, p := range l.Space {
				if p.Name == want.Name {
					found = strings.Join(p.Values, " ") == strings.Join(want.Values, " ")
				}
			}
		}
		if !found {
			t.Errorf("%s not searched over %v: %+v", want.Name, want.Values, out.Optimization.Layers)
		}
	}
	if !strings.Contains(out.Summary, "under the policies --optimize draws, against orchestrator") {
		t.Errorf("summary %q", out.Summary)
	}
	if o.Pick < 0 || o.Front[o.Pick].Search.SuccessRate.Value < o.Baseline.Search.SuccessRate.Value {
		t.Errorf("pick %d: %s", o.Pick, o.NoPick)
	}
	data, err := os.ReadFile(file)
	if err != nil || !strings.Contains(string(data), "extends: orchestrator") || !strings.Contains(string(data), "max_iterations: ") ||
		!strings.Contains(string(data), "# provider requests: ") || !strings.Contains(string(data), "# L2 loops and L3 steps: ") {
		t.Fatalf("the written policy: %v\n%s", err, data)
	}
	if code, _, stderr := runCLI(t, "", "simulate", "--db", db, "--no-ingest", "--policy", file); code != 0 {
		t.Errorf("simulate --policy %s: exit %d, %s", file, code, stderr)
	}
	plan := filepath.Join(dir, "plan.txt")
	if err := os.WriteFile(plan, []byte("# narrow\nmax_retries: 1..3\nbackof=full\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"--search", "max_retries=1..3"}, "go with --optimize"},
		{[]string{"--optimize", "--policy", "none"}, "takes no --policy or quick flag"},
		{[]string{"--optimize", "--constraint", "speed >= 1"}, `"speed" is no objective`},
		{[]string{"--optimize", "--search", "max_retries=9..1"}, "lo..hi"},
		{[]string{"--optimize", "--search", "max_iterations=0|x"}, `max_iterations "x"`},
		{[]string{"--optimize", "--search-file", plan}, plan + ":3: "},
		{[]string{"--search-file", plan}, "go with --optimize"},
		{[]string{"--optimize", "--evidence-bound", "0"}, "--evidence-bound 0"},
	} {
		code, _, stderr := runCLI(t, "", append([]string{"simulate", "--db", db, "--no-ingest"}, tt.args...)...)
		if code != 2 || !strings.Contains(stderr, tt.want) {
			t.Errorf("%v: exit %d, %q; want 2 and %q", tt.args, code, stderr, tt.want)
		}
	}
}

// TestSimulateOptimizePage: the page draws the front as a scatter with the
// baseline and the pick marked, and its table.
func TestSimulateOptimizePage(t *testing.T) {
	endToEnd(t, "runs orchstat against a real store")
	t.Parallel()
	dir := t.TempDir()
	page := filepath.Join(dir, "opt.html")
	code, _, stderr := runCLI(t, "", "simulate", "--db", filepath.Join(dir, "o.duckdb"), "../../testdata/runs", "--optimize",
		"--candidates", "40", "--resamples", "20", "--format", "html", "-o", page)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	b, err := os.ReadFile(page)
	if err != nil {
		t.Fatal(err)
	}
	html := string(b)
	for _, want := range []string{"<svg", "The front: success against attempts", ">baseline<", ">pick<", "Pareto front", "later success"} {
		if !strings.Contains(html, want) {
			t.Errorf("the page lacks %q", want)
		}
	}
}

// TestSimulateOptimizeRealRecords: on the real records read as one
// folder, every system in scope is searched or named as left out, with
// why.
func TestSimulateOptimizeRealRecords(t *testing.T) {
	t.Parallel()
	if _, err := os.Stat(externalData); err != nil {
		t.Skip("../shared/testdata-external is absent")
	}
	db := filepath.Join(t.TempDir(), "s.duckdb")
	code, stdout, stderr := runCLI(t, "", "--db", db, "simulate", externalData, "--optimize", "--candidates", "40",
		"--resamples", "20", "--format", "json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var out struct {
		Summary      string                  `json:"summary"`
		Optimization *simulated.Optimization `json:"optimization"`
	}
	if err := json.Unmarshal([]byte(stdout), &out); err != nil {
		t.Fatal(err)
	}
	if out.Optimization == nil || out.Optimization.System != "claude-code" || len(out.Optimization.Layers) == 0 ||
		len(out.Optimization.Layers[0].Front) == 0 {
		t.Fatalf("the search: %+v", out.Optimization)
	}
	for _, want := range []string{"Replays claude-code's", "claudestrator's 17 record runs (--optimize searches",
		"factory's 138 record runs (", "codex's 322 model calls (", "otel's", "orchestrator's 7 runs (with nothing to replay"} {
		if !strings.Contains(out.Summary, want) {
			t.Errorf("the summary lacks %q: %s", want, out.Summary)
		}
	}
}

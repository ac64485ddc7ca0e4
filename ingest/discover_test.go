package ingest

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/orchstat/orchstat/model/systems"
)

// fixture is a file of another package's testdata, for its content.
func fixture(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func skippedOf(t *testing.T, root string, f *Found) []string {
	t.Helper()
	var out []string
	for _, s := range f.Skipped() {
		rel, err := filepath.Rel(root, s.Path)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, rel)
	}
	return out
}

// Agents' records and orchestrator traces are told by their first lines
// wherever a walk meets a JSON file, not only where their programs keep
// them; a JSON file no format claims, and a stray .md or .csv where
// claudestrator or orchestr8 keep theirs, are reported, a README is not.
func TestDiscoverByContent(t *testing.T) {
	claude := fixture(t, "claudecode/testdata/clean.jsonl")
	codex := fixture(t, "codex/testdata/normal.jsonl")
	otel := fixture(t, "otlp/testdata/agents.jsonl")
	root := tree(t, map[string]string{
		"copy/cc/session one.jsonl":      claude,
		"copy/cx/2026/rollout-x.jsonl":   codex,
		"copy/cx/renamed.jsonl":          codex,
		"copy/otel/out.json":             otel,
		"copy/traces/ci-run.jsonl":       line0("r9"),
		"copy/nodata.json":               `{"name": "x", "version": "1.0.0"}`,
		"copy/empty.jsonl":               "",
		"copy/list.json":                 `[1, 2]`,
		"copy/bin.json":                  "\x00\x01\x02garbage",
		"copy/README.md":                 "# hi\n",
		"copy/notes.csv":                 "a,b\n",
		"copy/.orchestrator/stray.md":    "# stray\n",
		"copy/.orchestrator/history.csv": "",
		"copy/.claude/settings.json":     `{"model": "opus"}`,
		"copy/.claude/todos/t.json":      `[]`,
		"copy/.claude/notes.md":          "# notes\n",
		"copy/.claude/projects/p/x.json": `{"a": 1}`,
		"copy/.codex/auth.json":          `{"token": "x"}`,
		"copy/.hidden.json":              `{"a": 1}`,
		"copy/app/package.json":          `{"name": "x"}`,
	})
	now := time.Now().Add(time.Hour)
	f, err := discoverAll([]string{filepath.Join(root, "copy")}, "", noKnown, now)
	if err != nil || len(f.errs) > 0 {
		t.Fatalf("discover: %v %v", err, f.errs)
	}
	want := []string{
		"copy/.orchestrator/history.csv claudestrator_history",
		"copy/cc/session one.jsonl claude_code_transcript",
		"copy/cx/2026/rollout-x.jsonl codex_rollout",
		"copy/cx/renamed.jsonl codex_rollout",
		"copy/otel/out.json otlp",
		"copy/traces/ci-run.jsonl trace",
	}
	if got := kinds(t, root, f.sources); !slices.Equal(got, want) {
		t.Errorf("found\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	// Not reported: a manifest, a hidden file, Claude Code's and Codex's
	// own settings and state (but a JSON file in projects/ is).
	wantSkipped := []string{"copy/.claude/projects/p/x.json", "copy/.orchestrator/stray.md", "copy/bin.json", "copy/empty.jsonl",
		"copy/list.json", "copy/nodata.json"}
	if got := skippedOf(t, root, f); !slices.Equal(got, wantSkipped) {
		t.Errorf("skipped %q, want %q", got, wantSkipped)
	}
	for _, s := range f.Skipped() {
		if s.Reason == "" {
			t.Errorf("%s skipped without a reason", s.Path)
		}
		if strings.HasSuffix(s.Path, "nodata.json") && !strings.Contains(s.Reason, `"name"`) {
			t.Errorf("nodata.json: reason %q does not name its keys", s.Reason)
		}
	}

	// --format on a folder reads that format's files by content too.
	srcs, _, _, err := discover([]string{filepath.Join(root, "copy")}, "codex", noKnown, now)
	if err != nil {
		t.Fatal(err)
	}
	if got := kinds(t, root, srcs); !slices.Equal(got, []string{"copy/cx/2026/rollout-x.jsonl codex_rollout", "copy/cx/renamed.jsonl codex_rollout"}) {
		t.Errorf("--format codex: %q", got)
	}

	// A file named without --format is read as its first lines say.
	for file, kind := range map[string]string{"copy/cc/session one.jsonl": systems.KindClaudeCode, "copy/cx/renamed.jsonl": systems.KindCodexRollout,
		"copy/otel/out.json": systems.KindOTLP, "copy/empty.jsonl": KindTrace} {
		if s, ok := classifyFile(filepath.Join(root, file), ""); !ok || s.kind != kind {
			t.Errorf("%s named: %q, want %q", file, s.kind, kind)
		}
	}
	// One whose first lines no format reads is not recognised, named
	// alone as in a folder (before, it was read as a trace).
	if _, ok := classifyFile(filepath.Join(root, "copy/nodata.json"), ""); ok {
		t.Error("nodata.json named alone is read")
	}
	if s, ok := classifyFile(filepath.Join(root, "copy/nodata.json"), "orchestrator"); !ok || s.kind != KindTrace {
		t.Errorf("nodata.json with --input-format orchestrator: %q, %v", s.kind, ok)
	}
	// Binary content is no format's: an error, not lines quarantined.
	if _, ok := classifyFile(filepath.Join(root, "copy/bin.json"), ""); ok {
		t.Errorf("a binary file named alone is read")
	}
	if s, _ := classifyFile(filepath.Join(root, "copy/cc/session one.jsonl"), "orchestrator"); s.kind != KindTrace {
		t.Errorf("--format orchestrator: %q", s.kind)
	}
}

// line0 is a trace's first line.
func line0(run string) string {
	return `{"type":"RunStarted","schemaVersion":1,"timestamp":"2026-01-01T00:00:00Z","runId":"` + run + `","payload":{}}` + "\n"
}

// Orchestrator runs are found at any depth below the folder named: in
// <x>/runs/<id>/ and in any folder holding a trace.jsonl; a runs folder
// of other systems' runs is walked into as before.
func TestDiscoverRunsBelowAParent(t *testing.T) {
	root := tree(t, map[string]string{
		"top/orchestrator/runs/1/trace.jsonl":          line0("1"),
		"top/orchestrator/runs/1/summary.json":         `{"status":"success"}`,
		"top/orchestrator/runs/1/manifest.json":        `{}`,
		"top/orchestrator/runs/2/summary.json":         `{"status":"failure"}`,
		"top/a/b/c/runs/3/trace.jsonl":                 line0("3"),
		"top/lone/trace.jsonl":                         line0("4"),
		"top/harness/runs/01K/events.jsonl":            "",
		"top/harness/runs/01K/meta.json":               "{}",
		"top/deep/1/2/3/4/5/6/7/runs/9/trace.jsonl":    line0("9"),
		"top/node_modules/x/runs/8/trace.jsonl":        line0("8"),
		"top/repo/.orchestrator/runs/5/trace.jsonl":    line0("5"),
		"top/repo/.orchestrator/runs/6/notes/x.json":   `{"a":1}`,
		"top/repo/.orchestrator/runs/6/trace.jsonl":    line0("6"),
		"top/repo/.orchestrator/runs/6/summary.json":   `{}`,
		"top/repo/.orchestrator/runs/6/otherfile.json": `{}`,
	})
	now := time.Now().Add(time.Hour)
	f, err := discoverAll([]string{filepath.Join(root, "top")}, "", noKnown, now)
	if err != nil || len(f.errs) > 0 {
		t.Fatalf("discover: %v %v", err, f.errs)
	}
	want := []string{
		"top/a/b/c/runs/3/trace.jsonl trace",
		"top/harness/runs/01K/events.jsonl factory_events",
		"top/harness/runs/01K/meta.json factory_meta",
		"top/lone/trace.jsonl trace",
		"top/orchestrator/runs/1/summary.json summary",
		"top/orchestrator/runs/1/trace.jsonl trace",
		"top/orchestrator/runs/2/summary.json summary",
		"top/repo/.orchestrator/runs/5/trace.jsonl trace",
		"top/repo/.orchestrator/runs/6/summary.json summary",
		"top/repo/.orchestrator/runs/6/trace.jsonl trace",
	}
	if got := kinds(t, root, f.sources); !slices.Equal(got, want) {
		t.Errorf("found\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	// A run folder's other files are the run's, not unrecognised.
	if got := skippedOf(t, root, f); len(got) != 0 {
		t.Errorf("skipped %q", got)
	}
	// Each run folder is listed, so an unchanged one is not read again.
	var dirs []string
	for _, l := range f.lists {
		if rel, _ := filepath.Rel(root, l.dir); strings.Contains(rel, "runs/") || strings.HasSuffix(rel, "lone") {
			dirs = append(dirs, rel)
		}
	}
	slices.Sort(dirs)
	wantDirs := []string{"top/a/b/c/runs/3", "top/lone", "top/orchestrator/runs/1", "top/orchestrator/runs/2",
		"top/repo/.orchestrator/runs/5", "top/repo/.orchestrator/runs/6"}
	if !slices.Equal(dirs, wantDirs) {
		t.Errorf("listed %q, want %q", dirs, wantDirs)
	}
	// --format orchestrator finds them too; another format does not.
	srcs, _, _, _ := discover([]string{filepath.Join(root, "top")}, "orchestrator", noKnown, now)
	if len(srcs) != 8 {
		t.Errorf("--format orchestrator: %q", kinds(t, root, srcs))
	}
}

// discover is discoverAll without the files no format reads, as most
// tests want it.
func discover(paths []string, format string, getKnown func() (known, error), now time.Time) ([]source, []FileError, []listing, error) {
	f, err := discoverAll(paths, format, getKnown, now)
	if err != nil {
		return nil, nil, nil, err
	}
	return f.sources, f.errs, f.lists, nil
}

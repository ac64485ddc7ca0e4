package ingest

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// tree writes files (path → content) under a temporary directory.
func tree(t *testing.T, files map[string]string) string {
	t.Helper()
	root := t.TempDir()
	for p, c := range files {
		full := filepath.Join(root, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

func kinds(t *testing.T, root string, srcs []source) []string {
	t.Helper()
	var out []string
	for _, s := range srcs {
		rel, err := filepath.Rel(root, s.path)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, rel+" "+s.kind)
	}
	slices.Sort(out)
	return out
}

func noKnown() (known, error) { return known{}, nil }

// Each system's files are found by name and place; a directory of
// orchestrator runs is not walked for them.
func TestDiscoverRecordFormats(t *testing.T) {
	root := tree(t, map[string]string{
		"harness/examples/artifacts/r1/run_summary.json":                     "{}",
		"harness/examples/artifacts/r1/attempt_1/failure_brief.json":         "{}",
		"harness/runs/01K/events.jsonl":                                      "",
		"harness/runs/01K/meta.json":                                         "{}",
		"harness/runs/lonely/meta.json":                                      "{}", // no events.jsonl beside it: not the web pipeline
		"harness/node_modules/x/run_summary.json":                            "{}",
		"cs/.orchestrator/history.csv":                                       "",
		"cs/.orchestrator/issue_queue.md":                                    "",
		"o8/.claude/pipeline-history.json":                                   "[]",
		"o8/.claude/retry-config.json":                                       "{}",
		"orch/.orchestrator/runs/1700000000000/trace.jsonl":                  "",
		"orch/.orchestrator/runs/1700000000000/run_summary.json":             "{}",
		"orch/.orchestrator/runs/1700000000000/attempt_1/failure_brief.json": "{}",
	})
	now := time.Now().Add(time.Hour)
	tests := []struct {
		name, format string
		paths        []string
		want         []string
	}{
		{"factory tree walked", "", []string{"harness"}, []string{
			"harness/examples/artifacts/r1/attempt_1/failure_brief.json factory_brief",
			"harness/examples/artifacts/r1/run_summary.json factory_summary",
			"harness/runs/01K/events.jsonl factory_events",
			"harness/runs/01K/meta.json factory_meta",
		}},
		{"claudestrator project", "", []string{"cs"}, []string{
			"cs/.orchestrator/history.csv claudestrator_history",
			"cs/.orchestrator/issue_queue.md claudestrator_issues",
		}},
		{"orchestr8 project", "", []string{"o8"}, []string{
			"o8/.claude/pipeline-history.json orchestr8_history",
			"o8/.claude/retry-config.json orchestr8_config",
		}},
		// Traces were found, so nothing walks into the run directories.
		{"orchestrator runs not walked", "", []string{"orch"}, []string{
			"orch/.orchestrator/runs/1700000000000/trace.jsonl trace",
		}},
		{"--format narrows", "orchestr8", []string{"o8", "cs"}, []string{
			"o8/.claude/pipeline-history.json orchestr8_history",
			"o8/.claude/retry-config.json orchestr8_config",
		}},
		{"--format factory walks", "factory", []string{"orch"}, []string{
			"orch/.orchestrator/runs/1700000000000/attempt_1/failure_brief.json factory_brief",
			"orch/.orchestrator/runs/1700000000000/run_summary.json factory_summary",
		}},
		{"--format orchestrator ignores records", "orchestrator", []string{"cs"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var paths []string
			for _, p := range tt.paths {
				paths = append(paths, filepath.Join(root, p))
			}
			srcs, errs, _, err := discover(paths, tt.format, noKnown, now)
			if err != nil || len(errs) > 0 {
				t.Fatalf("discover: %v %v", err, errs)
			}
			if got := kinds(t, root, srcs); !slices.Equal(got, tt.want) {
				t.Errorf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(tt.want, "\n"))
			}
		})
	}
}

// A file named on the command line is read as its name says, or with
// --format, as its content says.
func TestClassifyNamedFile(t *testing.T) {
	root := tree(t, map[string]string{
		"a.jsonl":        "",
		"history.csv":    "",
		"tasks.csv":      "",
		"x.json":         `{"pipeline_run_id": "01K"}`,
		"y.json":         `{"verdict": "PASS", "attempts": []}`,
		"cfg.json":       `{"maxRetries": 3}`,
		"queue.md":       "### ISSUE-1\n**Retry-Count:** 1\n",
		"state.md":       "loop_count: 3\n",
		"brief.json":     `{"stage": "preflight"}`,
		"whatever.jsonl": "",
	})
	tests := []struct{ file, format, want string }{
		{"a.jsonl", "", "trace"},
		{"history.csv", "", "claudestrator_history"},
		{"history.csv", "orchestrator", "trace"},
		{"tasks.csv", "claudestrator", "claudestrator_history"},
		{"x.json", "factory", "factory_meta"},
		{"y.json", "factory", "factory_summary"},
		{"brief.json", "factory", "factory_brief"},
		{"whatever.jsonl", "factory", "factory_events"},
		{"cfg.json", "orchestr8", "orchestr8_config"},
		{"x.json", "orchestr8", "orchestr8_history"},
		{"queue.md", "claudestrator", "claudestrator_issues"},
		{"state.md", "claudestrator", "claudestrator_session"},
	}
	for _, tt := range tests {
		s, ok := classifyFile(filepath.Join(root, tt.file), tt.format)
		if !ok || s.kind != tt.want {
			t.Errorf("%s with format %q: %q, %v; want %q", tt.file, tt.format, s.kind, ok, tt.want)
		}
	}
}

// An empty directory holds nothing to read, and is no error.
func TestDiscoverEmptyDirectory(t *testing.T) {
	root := t.TempDir()
	srcs, errs, _, err := discover([]string{root}, "", noKnown, time.Now())
	if err != nil || len(errs) > 0 || len(srcs) > 0 {
		t.Errorf("discover(empty) = %v, %v, %v", srcs, errs, err)
	}
}

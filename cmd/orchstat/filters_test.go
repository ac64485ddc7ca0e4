package main

import (
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/orchstat/orchstat/rules/yamlast"
)

func TestFilterSinceNotBeforeUntilIsAUsageError(t *testing.T) {
	endToEnd(t, "runs orchstat against a real store")
	t.Parallel()
	db := bundledStore(t)
	tests := []struct {
		since, until string
		code         int
	}{
		{"2025-11-05", "2025-11-04", 2},
		{"2025-11-05", "2025-11-05", 2}, // an empty window
		{"1d", "2d", 2},                 // a day ago is after two days ago
		{"2025-11-04", "2025-11-05", 0},
		{"2d", "1d", 0},
	}
	for _, tt := range tests {
		code, _, stderr := runCLI(t, "", "--db", db, "report", "--no-ingest", "--format", "json", "--since", tt.since, "--until", tt.until)
		if code != tt.code {
			t.Errorf("--since %s --until %s: exit %d, want %d (%s)", tt.since, tt.until, code, tt.code, stderr)
		}
		if tt.code == 2 && !strings.Contains(stderr, "is not before --until") {
			t.Errorf("--since %s --until %s: stderr %q", tt.since, tt.until, stderr)
		}
	}
}

// A filter value that names nothing in the store is warned about, with the
// nearest known value; one that names something, in any case, is not.
func TestFilterWarnsWhenNothingMatches(t *testing.T) {
	endToEnd(t, "runs orchstat against a real store")
	t.Parallel()
	db := bundledStore(t)
	runsOf := func(out string) float64 {
		var r struct {
			Metrics map[string]struct{ Value *float64 }
		}
		if err := json.Unmarshal([]byte(out), &r); err != nil || r.Metrics["runs"].Value == nil {
			t.Fatalf("%v: %s", err, out)
		}
		return *r.Metrics["runs"].Value
	}
	tests := []struct {
		args []string
		// warn is what stderr must hold, "" for no warning at all.
		warn []string
	}{
		{[]string{"--provider", "anthropic"}, nil},
		{[]string{"--provider", "ANTHROPIC"}, nil},
		{[]string{"--provider", "antrhopic"}, []string{`--provider "antrhopic" matches no provider`, `did you mean "anthropic"?`,
			"Known providers: ", "anthropic", "openai"}},
		{[]string{"--provider", "nobody"}, []string{`--provider "nobody" matches no provider in the store.`, "Known providers: "}},
		{[]string{"--run", "1762164347120"}, nil},
		{[]string{"--run", "1762164347120", "--run", "176216434712"}, []string{`--run "176216434712" matches no run`,
			`did you mean "1762164347120"?`, "and 10 more"}},
	}
	for _, tt := range tests {
		args := append([]string{"--db", db, "report", "--no-ingest", "--format", "json"}, tt.args...)
		code, out, stderr := runCLI(t, "", args...)
		if code != 0 {
			t.Fatalf("%v: exit %d %s", tt.args, code, stderr)
		}
		if len(tt.warn) == 0 && stderr != "" {
			t.Errorf("%v: unexpected stderr %q", tt.args, stderr)
		}
		for _, w := range tt.warn {
			if !strings.Contains(stderr, w) {
				t.Errorf("%v: stderr %q lacks %q", tt.args, stderr, w)
			}
		}
		if strings.Count(stderr, "\n") > 1 {
			t.Errorf("%v: one warning expected: %q", tt.args, stderr)
		}
		runsOf(out)
	}
	_, lower, _ := runCLI(t, "", "--db", db, "report", "--no-ingest", "--format", "json", "--provider", "anthropic")
	_, upper, _ := runCLI(t, "", "--db", db, "report", "--no-ingest", "--format", "json", "--provider", "AnThRoPiC")
	if l, u := runsOf(lower), runsOf(upper); l == 0 || l != u {
		t.Errorf("--provider anthropic: %v runs, AnThRoPiC: %v", l, u)
	}
}

func TestFilterClosest(t *testing.T) {
	t.Parallel()
	tests := []struct {
		s     string
		known []string
		fold  bool
		want  string // "" for no suggestion
	}{
		{"antrhopic", []string{"anthropic", "gemini", "openai"}, true, "anthropic"},
		{"OPENIA", []string{"anthropic", "gemini", "openai"}, true, "openai"},
		{"OPENIA", []string{"anthropic", "gemini", "openai"}, false, ""}, // every letter differs in case
		{"nobody", []string{"anthropic", "gemini", "ollama", "openai"}, true, ""},
		{"17621643471", []string{"1762161125318", "1762164347120"}, false, "1762164347120"},
		{"x", []string{"y"}, false, ""},
		{"x", nil, false, ""},
		{"", []string{"a"}, false, ""},
		{"café", []string{"cafe", "cafés"}, false, "cafe"}, // runes, not bytes: a tie goes to the first
	}
	for _, tt := range tests {
		got, ok := closest(tt.s, tt.known, tt.fold)
		if got != tt.want || ok != (tt.want != "") {
			t.Errorf("closest(%q, %v, %v) = %q, %v; want %q", tt.s, tt.known, tt.fold, got, ok, tt.want)
		}
	}
	for _, tt := range []struct {
		a, b string
		d    int
	}{{"", "", 0}, {"abc", "", 3}, {"kitten", "sitting", 3}, {"é", "e", 1}, {"flaw", "lawn", 2}} {
		if d := yamlast.Distance(tt.a, tt.b); d != tt.d {
			t.Errorf("Distance(%q, %q) = %d, want %d", tt.a, tt.b, d, tt.d)
		}
		if d := yamlast.Distance(tt.b, tt.a); d != tt.d {
			t.Errorf("Distance(%q, %q) = %d, want %d", tt.b, tt.a, d, tt.d)
		}
	}
	var many []string
	for i := range maxKnown + 3 {
		many = append(many, string(rune('a'+i)))
	}
	if got := knownList(many); !strings.HasSuffix(got, ", and 3 more") || strings.Count(got, ",") != maxKnown {
		t.Errorf("knownList = %q", got)
	}
	if got := knownList(many[:2]); got != "a, b" {
		t.Errorf("knownList = %q", got)
	}
}

// A copy of the real records, made now, dates none of its undated runs:
// a window after every recorded start holds no run, and the overview
// counts the undated runs and the queued tasks.
func TestReportUndatedRealData(t *testing.T) {
	endToEnd(t, "copies and reports every real factory and claudestrator record")
	t.Parallel()
	claude := filepath.Join(harness, "..", "claudestrator")
	if _, err := os.Stat(harness); err != nil {
		t.Skip("../shared/testdata-external is absent")
	}
	// Copies made now: their modification times are today's.
	dir := t.TempDir()
	for _, src := range []string{filepath.Join(harness, "artifacts"), filepath.Join(harness, "artifacts2"), filepath.Join(harness, "examples"), claude} {
		if err := os.CopyFS(filepath.Join(dir, filepath.Base(src)), os.DirFS(src)); err != nil {
			t.Fatal(err)
		}
	}
	// Read straight from the JSON: each run's start, if its summary has one.
	starts := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, e fs.DirEntry, err error) error {
		if err != nil || e.Name() != "run_summary.json" {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		var s struct {
			RunID   string `json:"run_id"`
			Started string `json:"started_utc"`
		}
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		starts[s.RunID] = s.Started
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	undated, latest := 0, time.Time{}
	for _, s := range starts {
		if s == "" {
			undated++
			continue
		}
		ts, err := time.Parse(time.RFC3339Nano, s)
		if err != nil {
			ts, err = time.Parse("2006-01-02T15:04:05", s)
		}
		if err != nil {
			t.Fatalf("started_utc %q", s)
		}
		if ts.After(latest) {
			latest = ts
		}
	}
	queue, err := os.ReadFile(filepath.Join(claude, ".orchestrator", "task_queue.md"))
	if err != nil {
		t.Fatal(err)
	}
	pending := len(regexp.MustCompile(`(?m)^\*\*Status:\*\* pending\s*$`).FindAll(queue, -1))
	if undated == 0 || pending == 0 || latest.IsZero() {
		t.Fatalf("the real records are not the ones this test counted: %d undated, %d pending, latest %v", undated, pending, latest)
	}
	db := filepath.Join(t.TempDir(), "u.duckdb")
	if code, _, stderr := runCLI(t, "", "--db", db, "ingest", "-q", dir); code != 0 {
		t.Fatalf("ingest: exit %d %s", code, stderr)
	}
	type report struct {
		Overview struct {
			Undated     int `json:"undated"`
			QueuedTasks int `json:"queued_tasks"`
		}
		Metrics map[string]struct{ Value *float64 }
		Systems struct {
			BySystem []struct {
				System string
				Runs   int
			} `json:"by_system"`
		}
	}
	read := func(args ...string) report {
		code, out, stderr := runCLI(t, "", append([]string{"--db", db, "report", "--no-ingest", "--format", "json"}, args...)...)
		if code != 0 {
			t.Fatalf("%v: exit %d %s", args, code, stderr)
		}
		var r report
		if err := json.Unmarshal([]byte(out), &r); err != nil {
			t.Fatal(err)
		}
		return r
	}
	after := latest.Add(time.Second).Format(time.RFC3339)
	for _, r := range []report{read(), read("--since", after)} {
		if r.Overview.Undated != undated || r.Overview.QueuedTasks != pending {
			t.Errorf("undated %d, queued %d; want %d, %d", r.Overview.Undated, r.Overview.QueuedTasks, undated, pending)
		}
	}
	if r := read("--since", after); len(r.Systems.BySystem) != 0 || *r.Metrics["record_runs"].Value != 0 {
		t.Errorf("--since %s: %+v, record_runs %v; want no run", after, r.Systems.BySystem, *r.Metrics["record_runs"].Value)
	}
	factory := 0
	for _, s := range read().Systems.BySystem {
		if s.System == "factory" {
			factory = s.Runs
		}
	}
	if factory != len(starts) {
		t.Errorf("no time filter: %d factory runs, want every one of %d", factory, len(starts))
	}
}

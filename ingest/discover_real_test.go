package ingest_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/orchstat/orchstat/ingest"
	"github.com/orchstat/orchstat/model/systems"
	"github.com/orchstat/orchstat/query"
)

// external is the real records copied from public projects, beside the
// repository; tests that read them skip without it.
const external = "../../shared/testdata-external"

func needExternal(t *testing.T) {
	t.Helper()
	if _, err := os.Stat(external); err != nil {
		t.Skip("../shared/testdata-external is absent")
	}
}

func ingestWith(t *testing.T, st *query.Store, format string, paths ...string) *ingest.Result {
	t.Helper()
	res, err := ingest.Run(context.Background(), st, ingest.Options{Paths: paths, Format: format, Now: time.Now})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Errors) > 0 {
		t.Fatalf("errors: %v", res.Errors)
	}
	return res
}

func countFiles(t *testing.T, dir, suffix string) int64 {
	t.Helper()
	var n int64
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(p, suffix) {
			n++
		}
		return nil
	})
	return n
}

// Real Claude Code transcripts and Codex rollouts kept anywhere (here,
// not below ~/.claude/projects or ~/.codex/sessions) are found by their
// first lines: in auto, with --format on their folder, and named one by
// one without --format (before, each was read as a trace and every line
// quarantined).
func TestRealAgentsRecordsFoundByContent(t *testing.T) {
	needExternal(t)
	cc, cx := filepath.Join(external, "claude-code"), filepath.Join(external, "codex")
	for _, tc := range []struct {
		dir, format, kind string
	}{
		{cc, "", systems.KindClaudeCode},
		{cc, "claude-code", systems.KindClaudeCode},
		{cx, "", systems.KindCodexRollout},
		{cx, "codex", systems.KindCodexRollout},
	} {
		st := openStore(t)
		res := ingestWith(t, st, tc.format, tc.dir)
		want := countFiles(t, tc.dir, ".jsonl")
		if got := scalar[int64](t, st, `SELECT count(*) FROM files WHERE kind = ?`, tc.kind); got != want || res.Calls == 0 {
			t.Errorf("%s --format %q: %d files read as %s of %d; %d calls", tc.dir, tc.format, got, tc.kind, want, res.Calls)
		}
		if n := scalar[int64](t, st, `SELECT count(*) FROM files WHERE kind = 'trace'`); n != 0 {
			t.Errorf("%s: %d files read as traces", tc.dir, n)
		}
	}
	// Named one by one without --format.
	st := openStore(t)
	transcript := filepath.Join(cc, "d-kimuson", "fe5e1c67-53e7-4862-81ae-d0e013e3270b.jsonl")
	rollout := filepath.Join(cx, "codex-session-viewer", "example.jsonl")
	res := ingestWith(t, st, "", transcript, rollout)
	if res.Quarantined != 0 || res.Calls == 0 {
		t.Errorf("named files: %d quarantined, %d calls", res.Quarantined, res.Calls)
	}
	if got := scalar[string](t, st, `SELECT string_agg(kind, ',' ORDER BY kind) FROM files`); got != "claude_code_transcript,codex_rollout" {
		t.Errorf("named files read as %s", got)
	}
}

// A copy of all the real records: the orchestrator runs below
// orchestrator/runs are found (before, none was), and the JSON files no
// format reads are reported, not read as traces.
func TestRealRecordsWholeTree(t *testing.T) {
	needExternal(t)
	st := openStore(t)
	res := ingestWith(t, st, "", external)
	runs := countFiles(t, filepath.Join(external, "orchestrator", "runs"), "trace.jsonl")
	if got := scalar[int64](t, st, `SELECT count(DISTINCT run_id) FROM events`); got != runs || runs == 0 {
		t.Errorf("%d runs with events, want %d", got, runs)
	}
	if got := scalar[int64](t, st, `SELECT count(*) FROM files WHERE kind = 'trace'`); got != runs {
		t.Errorf("%d trace files, want %d", got, runs)
	}
	for _, kind := range []string{systems.KindClaudeCode, systems.KindCodexRollout, systems.KindOTLP, systems.KindFactorySummary, systems.KindClaudeHistory} {
		if n := scalar[int64](t, st, `SELECT count(*) FROM files WHERE kind = ?`, kind); n == 0 {
			t.Errorf("no %s read", kind)
		}
	}
	// claudestrator's analytics.json and its loop reports are no
	// format's; each is named with a reason.
	want := countFiles(t, filepath.Join(external, "claudestrator", ".orchestrator"), ".json")
	if int64(len(res.Skipped)) != want {
		t.Errorf("%d files not recognised, want %d: %v", len(res.Skipped), want, res.Skipped)
	}
	for _, s := range res.Skipped {
		if !strings.Contains(s.Path, "claudestrator") || s.Reason == "" {
			t.Errorf("not recognised: %+v", s)
		}
	}
}

// Runs below a parent folder keep the shortcut of runs in a runs folder:
// an unchanged run folder's recorded listing is used, not read again.
func TestRunsBelowAParentKeepTheirListing(t *testing.T) {
	st := openStore(t)
	parent := t.TempDir()
	dir := filepath.Join(parent, "project", "runs", "r1")
	write(t, filepath.Join(dir, "trace.jsonl"), line("r1", "RunStarted", 0, `{}`), os.O_TRUNC)
	old := time.Now().Add(-time.Hour)
	if err := os.Chtimes(dir, old, old); err != nil {
		t.Fatal(err)
	}
	if res := ingestNow(t, st, parent); res.Events != 1 {
		t.Fatalf("run below a parent folder not found: %+v", res)
	}
	if n := scalar[int64](t, st, `SELECT count(*) FROM dir_states WHERE path = ?`, dir); n != 1 {
		t.Fatalf("%d listings of the run folder recorded", n)
	}
	// A file that appears without moving the folder's mtime is not seen:
	// the listing was used rather than read again.
	write(t, filepath.Join(dir, "summary.json"), `{"status":"success"}`, os.O_TRUNC)
	os.Chtimes(dir, old, old)
	if res := ingestNow(t, st, parent); res.Files != 1 || res.Unchanged != 1 {
		t.Fatalf("listing not used: %+v", res)
	}
}

// An ingest that finds nothing to read leaves the store as it was: it
// records no listing of the empty folders it looked in, so the same
// command gives the same answer the next time.
func TestNothingToReadRecordsNothing(t *testing.T) {
	st := openStore(t)
	dir := t.TempDir()
	for _, sub := range []string{"a", "b"} {
		os.Mkdir(filepath.Join(dir, sub), 0o755)
		old := time.Now().Add(-time.Hour)
		os.Chtimes(filepath.Join(dir, sub), old, old)
	}
	for range 2 {
		if res := ingestNow(t, st, dir); res.Files != 0 {
			t.Fatalf("%+v", res)
		}
		if n := scalar[int64](t, st, `SELECT count(*) FROM dir_states`); n != 0 {
			t.Fatalf("%d listings recorded by an ingest that found nothing", n)
		}
	}
}

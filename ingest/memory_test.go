package ingest_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"testing"
	"time"

	"github.com/orchstat/orchstat/benchmarks/tracegen"
	"github.com/orchstat/orchstat/ingest"
	"github.com/orchstat/orchstat/query"
)

// TestStoreGrownByCronKeepsIngesting grows a store the way cron does:
// thousands of runs at once, then one more, then batches of 25, each round
// in a process of its own (a fresh Open). On DuckDB 1.1.2, with its memory
// limit fixed at 64 MiB, the round that added one run failed to commit
// ("could not allocate block of size 256.0 KiB (63.7 MiB/64.0 MiB used)")
// and so did every later one; orchstat then learned to retry with more.
// DuckDB 1.5.6 commits that round at the writer's floor (32 MiB plus three
// times the largest payload; see writer.write), which the test holds it to
// by allowing no more.
func TestStoreGrownByCronKeepsIngesting(t *testing.T) {
	if testing.Short() {
		t.Skip("generates and ingests 100 MB of traces; go test ./... runs it (skipped under -short)")
	}
	t.Setenv("ORCHSTAT_MEMORY_LIMIT", "")
	tmp := t.TempDir()
	// Runs are generated beside the runs folder and moved in by rename,
	// not copied: on this file system writing ~100 MB of small files
	// twice cost more CPU than ingesting them.
	gen := func(name string, cfg tracegen.Config) []string {
		dir := filepath.Join(tmp, "gen", name)
		if _, err := tracegen.Generate(dir, cfg); err != nil {
			t.Fatal(err)
		}
		return runDirs(t, dir)
	}
	a := tracegen.DefaultConfig()
	a.Runs, a.Seed, a.Chunks = 3000, 5, true
	b := tracegen.DefaultConfig()
	b.Runs, b.Seed, b.Start = 400, 9, time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	aRuns, bRuns := gen("a", a), gen("b", b)

	runs := filepath.Join(tmp, "repo", ".orchestrator", "runs")
	if err := os.MkdirAll(runs, 0o755); err != nil {
		t.Fatal(err)
	}
	db := filepath.Join(tmp, "repo", ".orchestrator", "orchstat.duckdb")
	var lines int64 // complete trace lines under runs
	var nRuns, nFiles int
	round := func(name string, dirs []string, ceiling int64) {
		t.Helper()
		var added int64
		for _, d := range dirs {
			dst := filepath.Join(runs, filepath.Base(d))
			if err := os.Rename(d, dst); err != nil {
				t.Fatal(err)
			}
			added += traceLines(t, dst)
		}
		opts := ingest.Options{}
		if ceiling > 0 {
			// The round gets ceiling bytes and no more.
			t.Setenv("ORCHSTAT_MEMORY_LIMIT", fmt.Sprint(ceiling))
			opts.MemoryCeiling = ceiling
		}
		lines += added
		nRuns += len(dirs)
		err := cronRound(t, db, runs, opts, func(st *query.Store, res *ingest.Result) {
			t.Helper()
			if res.Events != added || res.Unchanged != nFiles || res.Read != res.Files-nFiles {
				t.Errorf("%s: ingested %d events from %d of %d files, %d unchanged; want %d events, %d unchanged",
					name, res.Events, res.Read, res.Files, res.Unchanged, added, nFiles)
			}
			nFiles = res.Files
			expectCounts(t, name, st, lines, nRuns)
		})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		t.Setenv("ORCHSTAT_MEMORY_LIMIT", "")
	}

	round("3300 runs", append(append([]string{}, aRuns...), bRuns[:300]...), 0)
	round("one more run", bRuns[300:301], 1<<20)
	for lo := 301; lo < len(bRuns); lo += 25 {
		hi := min(lo+25, len(bRuns))
		round(fmt.Sprintf("runs %d-%d of the second batch", lo+1, hi), bRuns[lo:hi], 0)
	}
}

func openReadOnly(t *testing.T, db string) *query.Store {
	t.Helper()
	st, err := query.Open(context.Background(), db, query.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// cronRound opens the store as a new process would, ingests runs, hands
// the result to check, and closes the store.
func cronRound(t *testing.T, db, runs string, opts ingest.Options, check func(*query.Store, *ingest.Result)) error {
	t.Helper()
	ctx := context.Background()
	st, err := query.Open(ctx, db, query.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	opts.Paths = []string{runs}
	res, err := ingest.Run(ctx, st, opts)
	if err != nil {
		return err
	}
	if check != nil {
		check(st, res)
	}
	return nil
}

func expectCounts(t *testing.T, name string, st *query.Store, lines int64, runs int) {
	t.Helper()
	events := scalar[int64](t, st, `SELECT count(*) FROM events`)
	quarantined := scalar[int64](t, st, `SELECT count(*) FROM quarantine`)
	ids := scalar[int64](t, st, `SELECT count(*) FROM runs`)
	if events+quarantined != lines || ids != int64(runs) {
		t.Fatalf("%s: the store holds %d events and %d quarantined lines of %d runs; the traces hold %d lines of %d runs",
			name, events, quarantined, ids, lines, runs)
	}
}

// runDirs lists the run directories tracegen wrote, in order.
func runDirs(t *testing.T, dir string) []string {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range es {
		if e.IsDir() {
			out = append(out, filepath.Join(dir, e.Name()))
		}
	}
	sort.Strings(out)
	return out
}

// traceLines counts the complete lines of a run's traces.
func traceLines(t *testing.T, run string) (lines int64) {
	t.Helper()
	err := filepath.WalkDir(run, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		if d.Name() == "trace.jsonl" {
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			lines += int64(bytes.Count(b, []byte("\n")))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return lines
}

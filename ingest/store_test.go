package ingest_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/orchstat/orchstat/ingest"
	"github.com/orchstat/orchstat/model/disk"
	"github.com/orchstat/orchstat/model/rows"
)

// fakeStore is an ingest.Store in memory: it keeps the rows of the
// transactions that committed, and can be full.
type fakeStore struct {
	committed []*rows.Set
	states    []rows.States
	settings  map[string]string
	full      bool
}

type fakeTx struct {
	s      *fakeStore
	sets   []*rows.Set
	states []rows.States
}

func (f *fakeStore) Appender(context.Context) (rows.Appender, error) { return &fakeTx{s: f}, nil }

func (f *fakeStore) EnsureSpace(need int64) error {
	if f.full {
		return &disk.NoSpaceError{Dir: "/fake", Free: 1 << 20, Need: need}
	}
	return nil
}

func (f *fakeStore) MemoryLimit(context.Context) (string, error)      { return "64.0 MiB", nil }
func (f *fakeStore) SetMemoryLimit(context.Context, string) error     { return nil }
func (f *fakeStore) Reopen(context.Context) error                     { return nil }
func (f *fakeStore) DBPath() string                                   { return "/fake/orchstat.duckdb" }
func (f *fakeStore) LastStateSeq(context.Context) (int64, error)      { return 0, nil }
func (f *fakeStore) MaxFileID(context.Context) (int32, error)         { return 0, nil }
func (f *fakeStore) CompactStates(context.Context) error              { return nil }
func (f *fakeStore) SaveSetting(_ context.Context, k, v string) error { f.settings[k] = v; return nil }

func (f *fakeStore) Setting(_ context.Context, k string) (string, bool, error) {
	v, ok := f.settings[k]
	return v, ok, nil
}

func (f *fakeStore) FileStates(_ context.Context, sized func(int), _ func(*rows.FileState)) error {
	sized(0)
	return nil
}

func (f *fakeStore) UnsealedFileStates(ctx context.Context, sized func(int), each func(*rows.FileState)) error {
	return f.FileStates(ctx, sized, each)
}

func (f *fakeStore) FileStatesIn(context.Context, []string, func(*rows.FileState)) error { return nil }
func (f *fakeStore) DirStates(context.Context, bool, func(string, time.Time)) error      { return nil }
func (f *fakeStore) SealedDirs(context.Context, func(string, rows.Sealed)) error         { return nil }

func (t *fakeTx) Append(sets ...*rows.Set) error                    { t.sets = append(t.sets, sets...); return nil }
func (t *fakeTx) AppendStates(s *rows.States) error                 { t.states = append(t.states, *s); return nil }
func (t *fakeTx) DeleteFiles(context.Context, []int32) error        { return nil }
func (t *fakeTx) DeleteOpen(context.Context, []rows.OpenRows) error { return nil }
func (t *fakeTx) Rollback(context.Context)                          { t.sets, t.states = nil, nil }

func (t *fakeTx) Commit(context.Context) error {
	t.s.committed = append(t.s.committed, t.sets...)
	t.s.states = append(t.s.states, t.states...)
	return nil
}

// TestIngestThroughFakeStore ingests a bundled run through a Store that is
// no DuckDB: ingest hands it typed rows and file states, and a full disk
// comes back as the NoSpaceError the store said, with nothing committed.
func TestIngestThroughFakeStore(t *testing.T) {
	run := filepath.Join("..", "testdata", "runs", "1762161125318")
	trace, err := os.ReadFile(filepath.Join(run, "trace.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	lines := int64(strings.Count(string(trace), "\n"))
	for _, tc := range []struct {
		name string
		full bool
	}{{"room", false}, {"full disk", true}} {
		t.Run(tc.name, func(t *testing.T) {
			st := &fakeStore{settings: map[string]string{}, full: tc.full}
			res, err := ingest.Run(context.Background(), st, ingest.Options{Paths: []string{run}, Now: func() time.Time { return t0 }})
			var events, summaries, files int
			for _, s := range st.committed {
				events += len(s.Events)
				summaries += len(s.Summaries)
			}
			for _, s := range st.states {
				files += len(s.Files)
			}
			if tc.full {
				var ns *disk.NoSpaceError
				if !errors.As(err, &ns) || ns.Dir != "/fake" {
					t.Fatalf("err = %v, want the store's NoSpaceError", err)
				}
				if events+summaries+files > 0 {
					t.Errorf("%d events, %d summaries and %d file states committed to a full store", events, summaries, files)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if int64(events) != lines || res.Events != lines || summaries != 1 || files != 3 {
				t.Errorf("%d events (result %d), %d summaries, %d file states committed; want %d, 1, 3", events, res.Events, summaries, files, lines)
			}
		})
	}
}

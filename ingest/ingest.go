// Package ingest streams run records into the orchstat store, exactly once.
//
// Each source file has a state recording how far it has been read (the
// byte offset after its last complete line) and what it looked like (size,
// mtime, device/inode, a hash of its head). The state is written in the
// same DuckDB transaction as the rows it accounts for, so after a crash at
// any instant the store holds either both or neither (DuckDB replays its
// write-ahead log of committed transactions), and the next ingest resumes
// from the committed offset.
//
// Read top-down: Run (memory.go) retries an ingest that ran out of memory
// with a higher limit; runOnce is one attempt, in the steps of
// pipeline.go: plan what to read (discover.go finds the sources, state.go
// loads what earlier ingests recorded), read the sources on many
// goroutines (read.go a file, lines.go a trace's lines, extract.go and
// formats.go the rows they give), gather what was read into batches, and
// commit them (writer.go).
package ingest

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/orchstat/orchstat/model/rows"
)

const (
	headSize = 4096
	// A chunk is what one worker hands the writer; a batch is what the
	// writer hands DuckDB at once; a transaction spans batches up to
	// defaultTxnBytes. Chunks and batches are bounded so memory stays flat.
	chunkBytes        = 1 << 20
	chunkRows         = 16384
	defaultBatchBytes = 8 << 20
	defaultBatchRows  = 50000
	// A transaction spans many batches; see writer.write. A checkpoint
	// rewrites a table's last row group, leaving free blocks in the file,
	// so a typical ingest is one transaction.
	defaultTxnBytes = 1 << 30
	// DuckDB's buffer pool defaults to 80% of RAM and keeps what it caches.
	// Ingest streams, so a small pool bounds RSS and, measured, is no
	// slower. Queries run with DuckDB's default.
	defaultMemoryLimit = 64 << 20
	// Run files are parsed whole; anything larger is not a real summary.
	maxRunFile = 64 << 20
)

// Options configure one ingest.
type Options struct {
	Paths []string // runs directories, run directories, files, or "-"
	// Format is one of Formats; "" is auto.
	Format    string
	Stdin     io.Reader // read when Paths contains "-"
	StdinName string    // names the stdin stream; re-ingesting a name replaces it
	Now       func() time.Time
	// Full looks at every file, sealed runs' too (see sealable); so does
	// an ingest when the last full one is older than FullEvery (0: 24h).
	Full      bool
	FullEvery time.Duration
	Workers   int // reading goroutines; 0 means twice GOMAXPROCS
	// BatchBytes and BatchRows bound a batch handed to DuckDB, and TxnBytes
	// the payload of one transaction; 0 means the default.
	BatchBytes, BatchRows, TxnBytes int
	// Progress, when set, receives running totals after every chunk.
	Progress func(Progress)
	// Hook is called at named points; tests use it to crash on purpose.
	Hook func(point string)
	// MemoryCeiling bounds how far Run raises DuckDB's memory limit when
	// a commit needs more; 0 means 80% of the machine's memory.
	MemoryCeiling int64
	// Found, when set, is what Find found for Paths and Format before the
	// store was created; discovery is not done again.
	Found *Found
	// Scratch is for a store that is thrown away (rules test's): DuckDB's
	// memory limit is left as it is, and the learned limit is neither read
	// nor saved.
	Scratch bool
}

// Progress is a running total.
type Progress struct {
	FilesDone, FilesTotal int
	Events                int64
	Bytes                 int64
}

// Replacement records a file whose earlier rows were discarded.
type Replacement struct{ Path, Reason string }

// Result summarises an ingest.
type Result struct {
	Files     int // sources examined
	Read      int // sources read: neither unchanged nor failed
	Unchanged int // skipped because nothing changed
	// Sealed counts the files of sealed runs not looked at, in SealedRuns
	// run directories (see sealable); Full says every file was looked at.
	Sealed, SealedRuns int
	Full               bool
	Events             int64
	Calls              int64 // agents' model calls read (rows of the calls table)
	Quarantined        int64
	Bytes              int64
	Transactions       int
	Replaced           []Replacement
	Moved              []Replacement // known files found under a new path
	Errors             []FileError
	// Skipped are the files the walks met that no format reads (see
	// docs/ingest.md for which files are looked at), with the reason.
	Skipped []Skipped
	// Ignored counts the records of files read that gave no row, by
	// reason: OpenTelemetry spans that are no model call, agent or tool.
	Ignored map[string]int64
}

type fileState struct {
	id                  int32
	path, kind, runDir  string
	size                int64
	mtime               time.Time
	dev, ino            uint64
	offset, lines       int64
	headLen             int
	headHash            string
	events, quarantined int64
	pairing             string // the pairing state after byte offset, encoded
}

type task struct {
	src   source
	prev  *fileState
	id    int32
	moves *moves
}

type chunk struct {
	state        fileState
	deleteOld    bool      // on a file's first chunk when its earlier rows go
	drop         *openRows // on an agent file's first chunk: the rows its last reading stored as open
	replace      string    // why a trace's earlier rows go, reported to the user
	moved        string    // the file's old path, when it was found under a new one
	rows         *rows.Set
	payloadBytes int
	quarantined  int // lines quarantined in the chunk, which weigh as events do
	maxPayload   int
	consumed     int64          // bytes of the file this chunk accounts for
	ignored      map[string]int // records read but not used, by reason
	last         bool
	err          *FileError
}

// quarantinedLines counts the lines the chunk quarantined: its rows, or
// for a trace more when rows past maxQuarantinedRows were only counted.
func (c *chunk) quarantinedLines() int64 {
	return int64(max(len(c.rows.Quarantine), c.quarantined))
}

// runOnce ingests opts.Paths into st with DuckDB's memory limit at limit.
// It also returns the work of the transactions that committed, which is
// what stays in the store if it fails.
func runOnce(ctx context.Context, st Store, opts Options, limit int64) (*Result, tally, error) {
	p, err := makePlan(ctx, st, opts)
	if err != nil {
		return nil, tally{}, err
	}
	res := &Result{Files: len(p.tasks), Skipped: p.skipped, Full: opts.Full}
	for _, l := range p.lists {
		if l.sealed {
			res.Sealed += l.files
			res.SealedRuns++
		}
	}
	res.Errors = append(res.Errors, p.errs...)

	w, err := newWriter(ctx, st, opts)
	if err != nil {
		return nil, tally{}, err
	}
	defer w.close()
	if !opts.Scratch {
		if err := w.setMemoryLimit(ctx, limit); err != nil {
			return nil, tally{}, err
		}
	}

	// The readers, this goroutine gathering their chunks into batches, and
	// the committer run at once; a failed commit cancels ctx, which stops
	// the readers.
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var unchanged atomic.Int64
	chunks := readAll(ctx, p.tasks, opts, &unchanged)
	commits := make(chan *batch)
	committed := commitAll(ctx, cancel, w, commits)
	g := newGather(res, opts)
	for c := range chunks {
		g.add(c, commits)
	}
	if ctx.Err() == nil {
		// Directory listings are recorded last, once every file they list
		// is committed: a listing recorded before its files would hide a
		// file that a crash kept out of the store. An ingest that found
		// nothing to read records nothing, so the store is left as it
		// was and the same command gives the same answer next time.
		var lists, sealed []listing
		if len(p.tasks) > 0 {
			lists = newListings(p.lists, p.known, res.Errors)
			sealed = sealable(p, g.final, res.Errors, opts.Now())
		}
		g.last(commits, lists, sealed)
	}
	close(commits)
	err = <-committed
	res.Transactions = w.commits
	if err != nil {
		return res, w.committed, err
	}
	if err := ctx.Err(); err != nil {
		return res, w.committed, err
	}
	if err := g.settle(ctx, st, w, unchanged.Load()); err != nil {
		return res, w.committed, err
	}
	sort.Slice(res.Errors, func(i, j int) bool { return res.Errors[i].Path < res.Errors[j].Path })
	return res, w.committed, nil
}

func loadKnown(ctx context.Context, st Store, prev map[string]*fileState, full bool) (known, error) {
	k := known{dirs: make(map[string]time.Time, len(prev)/3), files: make(map[string][]source, len(prev)/3), full: full}
	err := st.DirStates(ctx, !full, func(p string, m time.Time) { k.dirs[rows.ReadString(p)] = m })
	if err != nil {
		return k, fmt.Errorf("reading ingest state: %w", err)
	}
	// A full pass loads the seals too, so it does not seal again what is
	// sealed as it was (see sealable).
	k.sealed = map[string]rows.Sealed{}
	if err := st.SealedDirs(ctx, func(p string, d rows.Sealed) { k.sealed[rows.ReadString(p)] = d }); err != nil {
		return k, fmt.Errorf("reading ingest state: %w", err)
	}
	for p, s := range prev {
		if i := strings.LastIndexByte(p, '/'); i > 0 && s.kind != KindStdin {
			d := p[:i] // paths are absolute and clean
			k.files[d] = append(k.files[d], source{path: p, kind: s.kind, runDir: s.runDir})
		}
	}
	return k, nil
}

// newListings picks the directory listings worth recording: read this time,
// old enough to trust, changed, and with no file in them that failed.
func newListings(lists []listing, k known, errs []FileError) []listing {
	failed := map[string]bool{}
	for _, e := range errs {
		failed[filepath.Dir(e.Path)] = true
		failed[e.Path] = true
	}
	var out []listing
	for _, l := range lists {
		if l.fresh && !failed[l.dir] && !k.dirs[l.dir].Equal(l.mtime) {
			out = append(out, l)
		}
	}
	return out
}

func statOf(fi os.FileInfo) (dev, ino uint64) {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return uint64(st.Dev), uint64(st.Ino)
	}
	return 0, 0
}

// mtimes are compared at microsecond precision, which is what DuckDB's
// TIMESTAMP keeps.
func truncMtime(t time.Time) time.Time { return t.UTC().Truncate(time.Microsecond) }

func headHash(f io.ReaderAt, n int) (string, error) {
	buf := make([]byte, n)
	if _, err := f.ReadAt(buf, 0); err != nil && !errors.Is(err, io.EOF) {
		return "", err
	}
	sum := sha256.Sum256(buf)
	return hex.EncodeToString(sum[:]), nil
}

// parseBytes reads sizes like 64MB, 1GiB or 500000.
func parseBytes(s string) (int64, error) {
	s = strings.TrimSpace(s)
	units := []struct {
		suffix string
		mult   int64
	}{{"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}, {"GB", 1e9}, {"MB", 1e6}, {"KB", 1e3}, {"B", 1}}
	mult := int64(1)
	for _, u := range units {
		if strings.HasSuffix(s, u.suffix) {
			s, mult = strings.TrimSpace(strings.TrimSuffix(s, u.suffix)), u.mult
			break
		}
	}
	n, err := strconv.ParseFloat(s, 64)
	if err != nil || n <= 0 {
		return 0, fmt.Errorf("%q is not a size such as 64MB", s)
	}
	return int64(n * float64(mult)), nil
}

func baseName(p string) string {
	if i := strings.LastIndexByte(p, '/'); i >= 0 {
		return p[i+1:]
	}
	return p
}

// Package ingest streams run records into the orchstat store, exactly once.
//
// Each source file has a state recording how far it has been read (the
// byte offset after its last complete line) and what it looked like (size,
// mtime, device/inode, a hash of its head). The state is written in the
// same DuckDB transaction as the rows it accounts for, so after a crash at
// any instant the store holds either both or neither (DuckDB replays its
// write-ahead log of committed transactions), and the next ingest resumes
// from the committed offset.
package ingest

import (
	"context"
	"crypto/sha256"
	"database/sql/driver"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/orchstat/orchstat/ingest/records"
	"github.com/orchstat/orchstat/ingest/runfile"
	"github.com/orchstat/orchstat/ingest/trace"
	"github.com/orchstat/orchstat/query"
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
	Files        int // sources examined
	Read         int // sources read: neither unchanged nor failed
	Unchanged    int // skipped because nothing changed
	Events       int64
	Quarantined  int64
	Bytes        int64
	Transactions int
	Replaced     []Replacement
	Moved        []Replacement // known files found under a new path
	Errors       []FileError
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
	deleteOld    bool   // on a file's first chunk when its earlier rows go
	replace      string // why a trace's earlier rows go, reported to the user
	moved        string // the file's old path, when it was found under a new one
	events       []eventRow
	rows         rows
	payloadBytes int
	maxPayload   int
	consumed     int64 // bytes of the file this chunk accounts for
	last         bool
	err          *FileError
}

type eventRow struct {
	line    int64
	runID   string
	ts      time.Time
	typ     string
	sv      driver.Value
	payload string
}

// runOnce ingests opts.Paths into st with DuckDB's memory limit at limit.
// It also returns the work of the transactions that committed, which is
// what stays in the store if it fails.
func runOnce(ctx context.Context, st *query.Store, opts Options, limit int64) (*Result, tally, error) {
	p, err := makePlan(ctx, st, opts)
	if err != nil {
		return nil, tally{}, err
	}
	res := &Result{Files: len(p.tasks)}
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
		// file that a crash kept out of the store.
		g.last(commits, newListings(p.lists, p.known, res.Errors))
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

// compact drops superseded file and directory states once they outnumber
// the live ones, so loading states stays proportional to the files, not to
// how often they were ingested. It is its own transaction, so a crash
// during it leaves the states as they were.
func compact(ctx context.Context, st *query.Store) error {
	var rows, live int64
	if err := st.Conn.QueryRowContext(ctx, `SELECT
		(SELECT count(*) FROM file_states) + (SELECT count(*) FROM dir_states),
		(SELECT count(DISTINCT file_id) FROM file_states) + (SELECT count(DISTINCT path) FROM dir_states)`).Scan(&rows, &live); err != nil {
		return fmt.Errorf("compacting ingest state: %w", err)
	}
	if rows <= 2*live+10000 {
		return nil
	}
	for _, q := range []string{
		"BEGIN TRANSACTION",
		`DELETE FROM file_states WHERE seq NOT IN (SELECT max(seq) FROM file_states GROUP BY file_id)`,
		`DELETE FROM dir_states WHERE seq NOT IN (SELECT max(seq) FROM dir_states GROUP BY path)`,
		"COMMIT",
	} {
		if _, err := st.Conn.ExecContext(ctx, q); err != nil {
			st.Conn.ExecContext(context.WithoutCancel(ctx), "ROLLBACK")
			return fmt.Errorf("compacting ingest state: %w", err)
		}
	}
	return st.Checkpoint(ctx)
}

func loadKnown(ctx context.Context, st *query.Store, prev map[string]*fileState) (known, error) {
	k := known{dirs: make(map[string]time.Time, len(prev)/3), files: make(map[string][]source, len(prev)/3)}
	rs, err := st.Conn.QueryContext(ctx, `SELECT path, arg_max(mtime, seq) FROM dir_states GROUP BY path`)
	if err != nil {
		return k, fmt.Errorf("reading ingest state: %w", err)
	}
	defer rs.Close()
	for rs.Next() {
		var p string
		var m time.Time
		if err := rs.Scan(&p, &m); err != nil {
			return k, fmt.Errorf("reading ingest state: %w", err)
		}
		k.dirs[query.ReadString(p)] = m.UTC()
	}
	for p, s := range prev {
		if i := strings.LastIndexByte(p, '/'); i > 0 && s.kind != KindStdin {
			d := p[:i] // paths are absolute and clean
			k.files[d] = append(k.files[d], source{path: p, kind: s.kind, runDir: s.runDir})
		}
	}
	return k, rs.Err()
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

// readFile reads one source file from where the last ingest stopped. It
// returns skipped when the file is unchanged, and ok=false when cancelled.
func readFile(t task, send func(chunk) bool) (skipped, ok bool) {
	fail := func(err error) (bool, bool) {
		return false, send(chunk{err: &FileError{Path: t.src.path, Err: err}, last: true})
	}
	fi, err := os.Stat(t.src.path)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) && t.prev != nil {
			// Removed since last time: its rows stay, as the store is an
			// index of what was seen.
			return true, true
		}
		return fail(describeOpenErr(err))
	}
	if p := t.prev; p != nil && p.kind == t.src.kind && p.path == t.src.path && p.size == fi.Size() && p.mtime.Equal(truncMtime(fi.ModTime())) {
		if dev, ino := statOf(fi); p.dev == dev && p.ino == ino {
			return true, true
		}
	}
	if !fi.Mode().IsRegular() {
		// A pipe or device has no size to stop at and no second reading.
		return fail(errors.New("not a regular file (use - to read a stream)"))
	}
	f, err := os.Open(t.src.path)
	if err != nil {
		return fail(describeOpenErr(err))
	}
	defer f.Close()
	// What was opened is what is described, even if the path was replaced
	// since the stat above.
	if fi, err = f.Stat(); err != nil {
		return fail(err)
	}
	cur := fileState{id: t.id, path: t.src.path, kind: t.src.kind, runDir: t.src.runDir, size: fi.Size(), mtime: truncMtime(fi.ModTime())}
	cur.dev, cur.ino = statOf(fi)
	if t.prev == nil && t.moves != nil {
		if old := t.moves.adopt(f, cur); old != nil {
			t.prev, cur.id = old, old.id
			moved := chunk{state: *old, moved: old.path, rows: rows{}}
			moved.state.path = cur.path
			if !send(moved) {
				return false, false
			}
		}
	}
	if t.src.kind != KindTrace {
		return false, readRunFile(t, f, cur, send)
	}
	p := t.prev
	replace := kindChange(p, t.src.kind)
	if p != nil && replace == "" {
		// Identity is the inode and the first bytes; the device number is
		// not compared, as it can change across remounts and containers.
		switch {
		case p.ino != cur.ino:
			replace = "the file was replaced (its inode changed)"
		case cur.size < p.offset:
			replace = fmt.Sprintf("the file shrank from %d to %d bytes", p.offset, cur.size)
		case cur.size == p.size && !cur.mtime.Equal(p.mtime):
			// Written to without growing: the bytes already read may have
			// changed anywhere, and only reading them again can tell. A
			// file that grew is taken as appended to (its head is checked
			// below), as a trace is while its run goes on.
			replace = "it was rewritten without changing size (its modification time changed), so it was read again"
		case p.headLen > 0:
			old, err := headHash(f, p.headLen)
			if err != nil {
				return fail(err)
			}
			if old != p.headHash {
				replace = "its first bytes changed"
			}
		}
	}
	if p != nil && replace == "" {
		cur.offset, cur.lines, cur.events, cur.quarantined = p.offset, p.lines, p.events, p.quarantined
		cur.headLen, cur.headHash, cur.pairing = p.headLen, p.headHash, p.pairing
	}
	r := trace.NewReader(io.NewSectionReader(f, cur.offset, cur.size-cur.offset), cur.offset, cur.lines)
	defer r.Close()
	// The head hash covers only committed bytes, up to 4 KiB: a line still
	// being written past the offset may change without the file changing.
	head := func(s *fileState) error {
		if n := int(min(s.offset, headSize)); n != s.headLen {
			h, err := headHash(f, n)
			if err != nil {
				return err
			}
			s.headLen, s.headHash = n, h
		}
		return nil
	}
	return false, readLines(r, cur, replace, head, send)
}

// moves finds where a new path is a known file under a new name: a run
// directory renamed, or a repository moved along with its store.
type moves struct {
	prev  map[string]*fileState
	index sync.Once // byIno is built when a new path first appears
	byIno map[uint64][]*fileState
	taken sync.Map // file id -> true once a new path has adopted it
}

func newMoves(prev map[string]*fileState) *moves { return &moves{prev: prev} }

// adopt returns the known file that cur is, if any: same kind and inode,
// its old path gone, and the same committed first bytes (traces) or the
// same size and mtime (run files).
func (m *moves) adopt(f *os.File, cur fileState) *fileState {
	m.index.Do(func() {
		m.byIno = map[uint64][]*fileState{}
		for _, s := range m.prev {
			if s.kind != KindStdin {
				m.byIno[s.ino] = append(m.byIno[s.ino], s)
			}
		}
	})
	for _, old := range m.byIno[cur.ino] {
		if old.kind != cur.kind {
			continue
		}
		if _, err := os.Lstat(old.path); !errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if cur.kind == KindTrace {
			if cur.size < old.offset {
				continue
			}
			if h, err := headHash(f, old.headLen); err != nil || h != old.headHash {
				continue
			}
		} else if cur.size != old.size || !cur.mtime.Equal(old.mtime) {
			continue
		}
		if _, taken := m.taken.LoadOrStore(old.id, true); !taken {
			return old
		}
	}
	return nil
}

func readStream(t task, in io.Reader, send func(chunk) bool) bool {
	cur := fileState{id: t.id, path: t.src.path, kind: KindStdin, runDir: t.src.runDir}
	replace := ""
	if t.prev != nil {
		replace = "standard input named " + strconv.Quote(t.src.runDir) + " was ingested again (use --stdin-name to keep both)"
	}
	if in == nil {
		in = strings.NewReader("")
	}
	r := trace.NewStreamReader(in)
	ok := readLines(r, cur, replace, nil, func(c chunk) bool {
		c.state.size = c.state.offset
		return send(c)
	})
	return ok
}

// readLines turns complete lines into chunks. Each chunk carries the file
// state as of its last line, which is what makes partial commits safe.
func readLines(r *trace.Reader, cur fileState, replace string, head func(*fileState) error, send func(chunk) bool) bool {
	start := cur.offset
	c := chunk{replace: replace, deleteOld: replace != "", rows: rows{}}
	spans := map[string]*span{}
	pair := decodePairing(cur.pairing)
	// A chunk's payloads are gathered back to back and made one string
	// when it is sent, which the events' payloads then share: a string per
	// payload was a visible share of ingest time, in allocation and in the
	// collector's work.
	var arena []byte
	var spansOf [][2]int
	flush := func(last bool) bool {
		if len(spansOf) > 0 {
			all := string(arena)
			for i, sp := range spansOf {
				c.events[i].payload = all[sp[0]:sp[1]]
			}
			arena, spansOf = arena[:0], spansOf[:0]
		}
		cur.pairing = pair.encode()
		for run, sp := range spans {
			c.rows.add(query.RunSpans, cur.id, run, sp.first, sp.last, sp.events)
		}
		clear(spans)
		cur.offset, cur.lines = r.Offset(), r.LineNum()
		if head != nil {
			if err := head(&cur); err != nil {
				c.err = &FileError{Path: cur.path, Err: err}
			}
		}
		c.state, c.last = cur, last
		c.consumed = cur.offset - start
		start = cur.offset
		if !send(c) {
			return false
		}
		c = chunk{rows: rows{}}
		return true
	}
	for {
		l, err := r.Next()
		if errors.Is(err, io.EOF) {
			return flush(true)
		}
		if err != nil {
			// Keep what was read; the rest is retried next time.
			if !flush(false) {
				return false
			}
			return send(chunk{state: cur, err: &FileError{Path: cur.path, Err: err}, last: true, rows: rows{}})
		}
		if l.TooLong {
			quarantineLen(c.rows, cur, l.Num, l.Offset, "", fmt.Sprintf("line longer than %d MiB", trace.MaxLine>>20), l.Bytes, l.Len)
			cur.quarantined++
		} else if !trace.Blank(l.Bytes) {
			ev, perr := trace.Parse(l.Bytes)
			if perr != nil {
				quarantine(c.rows, cur, l.Num, l.Offset, perr.Field, perr.Error(), l.Bytes)
				cur.quarantined++
			} else {
				var sv driver.Value
				if ev.HasSchema && ev.SchemaVersion >= -1<<31 && ev.SchemaVersion < 1<<31 {
					sv = int32(ev.SchemaVersion)
				}
				spansOf = append(spansOf, [2]int{len(arena), len(arena) + len(ev.Payload)})
				arena = append(arena, ev.Payload...)
				c.events = append(c.events, eventRow{line: l.Num, runID: ev.RunID, ts: ev.Time, typ: ev.Type, sv: sv})
				if sp := spans[ev.RunID]; sp == nil {
					spans[ev.RunID] = &span{first: ev.Time, last: ev.Time, events: 1}
				} else {
					sp.add(ev.Time)
				}
				c.payloadBytes += len(ev.Payload)
				c.maxPayload = max(c.maxPayload, len(ev.Payload))
				extractEvent(c.rows, pair, cur.id, l.Num, &ev)
				cur.events++
			}
		}
		if c.payloadBytes >= chunkBytes || len(c.events) >= chunkRows {
			// Flushing mid-file records the offset after this line.
			if !flush(false) {
				return false
			}
		}
	}
}

// span is one run's events within a chunk.
type span struct {
	first, last time.Time
	events      int64
}

func (s *span) add(t time.Time) {
	if t.Before(s.first) {
		s.first = t
	}
	if t.After(s.last) {
		s.last = t
	}
	s.events++
}

func quarantine(r rows, f fileState, line, offset int64, field, reason string, raw []byte) {
	quarantineLen(r, f, line, offset, field, reason, raw, int64(len(raw)))
}

// quarantineLen is quarantine of a line of n bytes of which raw is the
// start: raw_bytes is always the line's full length.
func quarantineLen(r rows, f fileState, line, offset int64, field, reason string, raw []byte, n int64) {
	if len(raw) > trace.MaxRaw {
		raw = raw[:trace.MaxRaw]
	}
	var fieldV driver.Value
	if field != "" {
		fieldV = field
	}
	r.add(query.Quarantine, f.id, f.path, line, offset, fieldV, reason, strings.ToValidUTF8(string(raw), "\uFFFD"), n, nil)
}

// readRunFile parses a summary or verification report whole. Any change
// replaces the file's rows: these files are rewritten, not appended to.
// kindChange says why a file's rows go when it is now read as another
// kind than before (ingest --format names it), "" when it is not.
func kindChange(prev *fileState, kind string) string {
	if prev == nil || prev.kind == kind {
		return ""
	}
	return fmt.Sprintf("it was read as %s before and is now read as %s", kindName(prev.kind), kindName(kind))
}

// kindName names a source kind as users name formats.
func kindName(kind string) string {
	switch kind {
	case KindTrace, KindStdin:
		return "an orchestrator trace"
	case KindSummary:
		return "an orchestrator summary"
	case KindVerification:
		return "an orchestrator verification report"
	}
	return "a " + systemOf(kind) + " record (" + kind + ")"
}

func readRunFile(t task, f *os.File, cur fileState, send func(chunk) bool) bool {
	c := chunk{state: cur, deleteOld: t.prev != nil, rows: rows{}, last: true, replace: kindChange(t.prev, t.src.kind)}
	if cur.size > maxRunFile {
		quarantine(c.rows, cur, 0, 0, "", fmt.Sprintf("file larger than %d MiB", maxRunFile>>20), nil)
		c.state.quarantined = 1
		return send(c)
	}
	b := make([]byte, cur.size)
	n, err := io.ReadFull(f, b)
	if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
		err = nil // it shrank since the stat: what is there is read
	}
	b = b[:n]
	if err != nil {
		return send(chunk{err: &FileError{Path: cur.path, Err: err}, last: true, rows: rows{}})
	}
	c.state.offset = int64(len(b))
	c.consumed = int64(len(b))
	var perr error
	switch t.src.kind {
	case KindSummary:
		var s *runfile.Summary
		if s, perr = runfile.ParseSummary(b); perr == nil {
			runID := t.src.runDir
			if s.RunID != nil && *s.RunID != "" {
				runID = *s.RunID
			}
			summaryRows(c.rows, cur.id, runID, s, b)
		}
	case KindVerification:
		var v *runfile.Verification
		if v, perr = runfile.ParseVerification(cur.path, b); perr == nil {
			verificationRows(c.rows, cur.id, t.src.runDir, baseName(cur.path), v, b)
		}
	default:
		var set *records.Set
		if set, perr = recordKinds[t.src.kind].parse(cur.path, b); perr == nil {
			recordRows(c.rows, cur, set)
			c.state.quarantined = int64(len(set.Problems))
		}
	}
	if perr != nil {
		var line, offset int64
		field := ""
		var re *runfile.Error
		var rec *records.Error
		if errors.As(perr, &rec) {
			line, offset, field = int64(rec.Line), rec.Offset, rec.Field
		}
		if errors.As(perr, &re) {
			line, offset = int64(re.Line), int64(re.Offset)
		}
		quarantine(c.rows, cur, line, offset, field, perr.Error(), b)
		c.state.quarantined = 1
	}
	return send(c)
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

func quoteSQL(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

func baseName(p string) string {
	if i := strings.LastIndexByte(p, '/'); i >= 0 {
		return p[i+1:]
	}
	return p
}

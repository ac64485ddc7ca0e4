package ingest

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strconv"
	"strings"
	"sync"

	"github.com/orchstat/orchstat/ingest/runfile"
	"github.com/orchstat/orchstat/ingest/trace"
	"github.com/orchstat/orchstat/model/disk"
	"github.com/orchstat/orchstat/model/records"
	"github.com/orchstat/orchstat/model/rows"
)

// Reading one source: a file is stat'ed and skipped when unchanged, else
// opened, matched to a known file it may have been moved from, and read
// from where the last ingest stopped, as a trace (readTrace) or whole, as a
// run file (readRunFile). Standard input is read as a trace (readStream).

// readFile reads one source file from where the last ingest stopped. It
// returns skipped when the file is unchanged, and ok=false when cancelled.
func readFile(t task, send func(chunk) bool) (skipped, ok bool) {
	fail := func(err error) (bool, bool) {
		return false, send(chunk{err: &FileError{Path: t.src.path, Err: err}, last: true, rows: &rows.Set{}})
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
	if unchanged(t, fi) {
		return true, true
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
	if t.prev == nil && t.moves != nil && !adoptMoved(&t, f, &cur, send) {
		return false, false
	}
	if sf, ok := streamFormat(t.src.kind); ok {
		return false, readAgent(t, f, cur, sf, send)
	}
	if t.src.kind != KindTrace {
		return false, readRunFile(t, f, cur, send)
	}
	return false, readTrace(t, f, cur, send)
}

// unchanged reports whether a file is as the last ingest left it: same
// kind, path, size, mtime and identity. Most files of a store that is
// ingested again are, and this costs one stat(2).
func unchanged(t task, fi os.FileInfo) bool {
	p := t.prev
	if p == nil || p.kind != t.src.kind || p.path != t.src.path || p.size != fi.Size() || !p.mtime.Equal(truncMtime(fi.ModTime())) {
		return false
	}
	dev, ino := statOf(fi)
	return p.dev == dev && p.ino == ino
}

// adoptMoved makes a new path that is a known file moved take over that
// file's id and state, so its rows are kept rather than read again, and
// tells the writer the file's path changed. It returns false when
// cancelled.
func adoptMoved(t *task, f *os.File, cur *fileState, send func(chunk) bool) bool {
	old := t.moves.adopt(f, *cur)
	if old == nil {
		return true
	}
	t.prev, cur.id = old, old.id
	moved := chunk{state: *old, moved: old.path, rows: &rows.Set{}}
	moved.state.path = cur.path
	return send(moved)
}

// readTrace reads a trace from the offset where the last ingest stopped,
// or from its start when the rows read before no longer describe it.
func readTrace(t task, f *os.File, cur fileState, send func(chunk) bool) bool {
	p := t.prev
	replace, err := traceReplaced(p, t.src.kind, cur, f)
	if err != nil {
		return send(chunk{err: &FileError{Path: t.src.path, Err: err}, last: true, rows: &rows.Set{}})
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
	return readLines(r, cur, replace, head, send)
}

// traceReplaced says why a trace's earlier rows go and it is read from its
// start, "" when it is read on from where the last ingest stopped.
func traceReplaced(p *fileState, kind string, cur fileState, f io.ReaderAt) (string, error) {
	if replace := kindChange(p, kind); p == nil || replace != "" {
		return replace, nil
	}
	// Identity is the inode and the first bytes; the device number is
	// not compared, as it can change across remounts and containers.
	switch {
	case p.ino != cur.ino:
		return "the file was replaced (its inode changed)", nil
	case cur.size < p.offset:
		return fmt.Sprintf("the file shrank from %d to %d bytes", p.offset, cur.size), nil
	case cur.size == p.size && !cur.mtime.Equal(p.mtime):
		// Written to without growing: the bytes already read may have
		// changed anywhere, and only reading them again can tell. A
		// file that grew is taken as appended to (its head is checked
		// below), as a trace is while its run goes on.
		return "it was rewritten without changing size (its modification time changed), so it was read again", nil
	case p.headLen > 0:
		old, err := headHash(f, p.headLen)
		if err != nil {
			return "", err
		}
		if old != p.headHash {
			return "its first bytes changed", nil
		}
	}
	return "", nil
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

// readStream reads standard input as a trace. It has no second reading,
// so a name ingested again replaces what was read under it before.
func readStream(t task, in io.Reader, send func(chunk) bool) bool {
	cur := fileState{id: t.id, path: t.src.path, kind: KindStdin, runDir: t.src.runDir}
	replace := stdinReplaced(t)
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

// stdinReplaced says why standard input replaces what was read under its
// name before, "" when nothing was.
func stdinReplaced(t task) string {
	if t.prev == nil {
		return ""
	}
	return "standard input named " + strconv.Quote(t.src.runDir) + " was ingested again (use --stdin-name to keep both)"
}

// kindChange says why a file's rows go when it is now read as another
// kind than before (ingest --input-format names it), "" when it is not.
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

// readRunFile parses a summary, a verification report or another system's
// record file whole. Any change replaces the file's rows: these files are
// rewritten, not appended to.
func readRunFile(t task, f *os.File, cur fileState, send func(chunk) bool) bool {
	if cur.size > maxRunFile {
		return send(tooLarge(t, cur))
	}
	b := make([]byte, cur.size)
	n, err := io.ReadFull(f, b)
	if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
		err = nil // it shrank since the stat: what is there is read
	}
	if err != nil {
		return send(chunk{err: &FileError{Path: cur.path, Err: err}, last: true, rows: &rows.Set{}})
	}
	return send(parseRunFile(t, cur, b[:n], kindChange(t.prev, t.src.kind)))
}

// readWholeStream reads standard input named in an agent's format whole,
// as a file of that format: its records are grouped across lines, so the
// stream is parsed once it ends. Ingested again under the same name, it
// replaces what was read under that name.
func readWholeStream(t task, in io.Reader, send func(chunk) bool) bool {
	cur := fileState{id: t.id, path: t.src.path, kind: t.src.kind, runDir: t.src.runDir}
	if in == nil {
		in = strings.NewReader("")
	}
	if sf, ok := streamFormat(t.src.kind); ok {
		br := bufio.NewReaderSize(in, sniffHead)
		head, _ := br.Peek(sniffHead)
		if sf.Lines == nil || sf.Lines(head) {
			return readAgentStream(t, br, cur, sf, send)
		}
		in = br
	}
	b, err := io.ReadAll(io.LimitReader(in, maxRunFile+1))
	if err != nil {
		return send(chunk{err: &FileError{Path: cur.path, Err: err}, last: true, rows: &rows.Set{}})
	}
	cur.size = int64(len(b))
	if cur.size > maxRunFile {
		return send(tooLarge(t, cur))
	}
	replace := stdinReplaced(t)
	return send(parseRunFile(t, cur, b, replace))
}

// tooLarge is the chunk of a run file too large to read whole. A file of
// the same kind that grew past the bound (a record rewritten larger, a
// single OTLP payload; agents' files of lines are read on, see readAgent)
// keeps the rows read from it before: growing must not lose what was
// ingested. Its state records the new size, so the next
// ingest does not try again until it changes; a quarantine row says why.
func tooLarge(t task, cur fileState) chunk {
	grew := t.prev != nil && t.prev.kind == t.src.kind && t.prev.size > 0 && cur.size >= t.prev.size
	c := chunk{state: cur, deleteOld: t.prev != nil && !grew, rows: &rows.Set{}, last: true, replace: kindChange(t.prev, t.src.kind)}
	reason := fmt.Sprintf("file larger than %d MiB", maxRunFile>>20)
	if grew {
		reason = fmt.Sprintf("file grew past %d MiB (from %s to %s): the rows read from it before are kept; what it holds beyond is not read, "+
			"as files of this kind are read whole (docs/limits.md)", maxRunFile>>20, disk.FormatBytes(t.prev.size), disk.FormatBytes(cur.size))
		c.state.offset, c.state.lines, c.state.events = t.prev.offset, t.prev.lines, t.prev.events
		c.state.quarantined = t.prev.quarantined
	}
	quarantine(c.rows, cur, 0, 0, "", reason, nil)
	c.state.quarantined++
	return c
}

// parseRunFile is the chunk of a run file's content b: its rows, or the
// whole file quarantined when it cannot be read at all.
func parseRunFile(t task, cur fileState, b []byte, replace string) chunk {
	c := chunk{state: cur, deleteOld: t.prev != nil, rows: &rows.Set{}, last: true, replace: replace}
	c.state.offset = int64(len(b))
	c.consumed = int64(len(b))
	problems, perr := runFileRows(&c, t.src, cur, b)
	c.state.quarantined = problems
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
	return c
}

// runFileRows parses the run file b by its kind and adds its rows. It
// returns how many of a record file's records were quarantined, and why
// the file cannot be read at all, which quarantines it whole.
func runFileRows(c *chunk, src source, cur fileState, b []byte) (problems int64, err error) {
	r := c.rows
	switch src.kind {
	case KindSummary:
		s, err := runfile.ParseSummary(b)
		if err != nil {
			return 0, err
		}
		runID := src.runDir
		if s.RunID != nil && *s.RunID != "" {
			runID = *s.RunID
		}
		summaryRows(r, cur.id, runID, s, b)
	case KindVerification:
		v, err := runfile.ParseVerification(cur.path, b)
		if err != nil {
			return 0, err
		}
		verificationRows(r, cur.id, src.runDir, baseName(cur.path), v, b)
	default:
		set, err := recordKinds[src.kind].Parse(cur.path, b)
		if err != nil {
			return 0, err
		}
		recordRows(r, cur, set, b)
		c.ignored = set.Ignored
		return int64(len(set.Problems)), nil
	}
	return 0, nil
}

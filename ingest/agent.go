package ingest

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/orchstat/orchstat/ingest/trace"
	"github.com/orchstat/orchstat/model/records"
	"github.com/orchstat/orchstat/model/rows"
)

// Agents' files (Claude Code transcripts, Codex rollouts, collector files)
// grow while their agent runs and can grow past any bound on a whole
// read: a collector's file rotates at 100 MB, and one left unrotated was
// 532 MB. They are read as traces are, line by line from where the last
// ingest stopped, through the format's records.Stream. What the stream
// holds open (a response still streaming, a trace whose spans are still
// arriving) is kept in the file's state, and its rows are stored until the
// next reading replaces them; rows of what closed are never touched again.
// Memory is bounded by the longest line and what is open, not the file.

// agentCarry is what an agent file's state keeps beyond its offset, in
// file_states.pairing (a trace keeps its pairings there): the stream's
// state, and the keys of the rows stored as open, which the next reading
// replaces.
type agentCarry struct {
	V      int      `json:"v"`
	Stream string   `json:"stream"` // base64 of Stream.State
	Calls  []string `json:"calls,omitempty"`
	Runs   []string `json:"runs,omitempty"`
	// Tail is the number of a last line that had no newline yet and was
	// read as open: its quarantine rows are replaced too.
	Tail int64 `json:"tail,omitempty"`
}

const agentCarryVersion = 1

func decodeCarry(s string) (*agentCarry, []byte, error) {
	var c agentCarry
	if err := json.Unmarshal([]byte(s), &c); err != nil {
		return nil, nil, err
	}
	if c.V != agentCarryVersion {
		return nil, nil, fmt.Errorf("state version %d", c.V)
	}
	st, err := base64.StdEncoding.DecodeString(c.Stream)
	return &c, st, err
}

// openRows are the rows an earlier reading stored as open, to delete
// before this reading stores what they have become.
type openRows struct {
	calls, runs []string
	tail        int64
}

func (o *openRows) empty() bool {
	return o == nil || len(o.calls) == 0 && len(o.runs) == 0 && o.tail == 0
}

// streamFormat is the line-by-line reader of a kind, if it has one.
func streamFormat(kind string) (records.StreamFormat, bool) {
	f, ok := recordKinds[kind]
	if !ok || f.Stream == nil {
		return records.StreamFormat{}, false
	}
	return *f.Stream, true
}

// readAgent reads an agent's file on from where the last ingest stopped,
// or from its start when the rows read before no longer describe it (it
// was replaced, shrank, was rewritten, or its state is of another
// version). A file its format does not read as lines is read whole.
func readAgent(t task, f *os.File, cur fileState, sf records.StreamFormat, send func(chunk) bool) bool {
	if sf.Lines != nil {
		head := make([]byte, sniffHead)
		n, _ := f.ReadAt(head, 0)
		if !sf.Lines(head[:n]) {
			return readRunFile(t, f, cur, send)
		}
	}
	p := t.prev
	replace, err := traceReplaced(p, t.src.kind, cur, f)
	if err != nil {
		return send(chunk{err: &FileError{Path: t.src.path, Err: err}, last: true, rows: &rows.Set{}})
	}
	var s records.Stream
	var drop *openRows
	if p != nil && replace == "" {
		carry, state, err := decodeCarry(p.pairing)
		if err == nil {
			s, err = sf.Resume(cur.path, state)
		}
		if err != nil {
			// A state this version cannot go on from (a store written
			// before agents' files were read a line at a time keeps
			// none): the file is read again from its start, and its
			// rows replaced.
			replace = "the state its last reading left cannot be gone on from (an earlier version of orchstat wrote it, or the file was not yet readable as its format), so it was read again from its start"
		} else {
			cur.offset, cur.lines, cur.events, cur.quarantined = p.offset, p.lines, p.events, p.quarantined
			cur.headLen, cur.headHash = p.headLen, p.headHash
			drop = &openRows{calls: carry.Calls, runs: carry.Runs, tail: carry.Tail}
		}
	}
	if s == nil {
		s = sf.New(cur.path)
	}
	r := trace.NewReader(io.NewSectionReader(f, cur.offset, cur.size-cur.offset), cur.offset, cur.lines)
	defer r.Close()
	ar := &agentReader{r: r, s: s, f: f, cur: cur, start: cur.offset, send: send,
		c: chunk{replace: replace, deleteOld: p != nil && replace != "", drop: drop, rows: &rows.Set{}}}
	return ar.read()
}

// readAgentStream reads standard input named in an agent's format through
// its stream, in bounded memory as a file is. A stream has no second
// reading: named again, it replaces what was read under its name.
func readAgentStream(t task, in io.Reader, cur fileState, sf records.StreamFormat, send func(chunk) bool) bool {
	replace := stdinReplaced(t)
	r := trace.NewStreamReader(in)
	defer r.Close()
	ar := &agentReader{r: r, s: sf.New(cur.path), cur: cur, send: func(c chunk) bool {
		c.state.size = c.state.offset
		return send(c)
	}, c: chunk{replace: replace, deleteOld: replace != "", rows: &rows.Set{}}}
	return ar.read()
}

// agentReader is readAgent's state: the chunk being filled and the file's
// state as of the last line fed.
type agentReader struct {
	r     *trace.Reader
	s     records.Stream
	f     io.ReaderAt
	cur   fileState
	start int64
	c     chunk
	lines int // fed in this reading
	send  func(chunk) bool
}

func (ar *agentReader) read() bool {
	for {
		l, err := ar.r.Next()
		if errors.Is(err, io.EOF) {
			return ar.finish()
		}
		if err != nil {
			if !ar.flush() {
				return false
			}
			return ar.send(chunk{state: ar.cur, err: &FileError{Path: ar.cur.path, Err: err}, last: true, rows: &rows.Set{}})
		}
		if l.TooLong {
			ar.tooLong(l)
		} else {
			ar.s.Line(int(l.Num), l.Offset, l.Bytes)
		}
		ar.cur.offset, ar.cur.lines = ar.r.Offset(), ar.r.LineNum()
		if ar.lines++; ar.lines%1024 == 0 {
			ar.add(ar.s.Final())
			if ar.c.payloadBytes >= chunkBytes || ar.c.quarantined >= chunkRows {
				if !ar.flush() {
					return false
				}
			}
		}
	}
}

// tooLong quarantines a line longer than any record is read whole.
func (ar *agentReader) tooLong(l trace.Line) {
	p := records.Error{Line: int(l.Num), Offset: l.Offset, Msg: fmt.Sprintf("line longer than %d MiB", trace.MaxLine>>20)}
	ar.quarantine(p, l.Bytes, l.Len)
}

// add puts a stream's rows into the chunk.
func (ar *agentReader) add(set *records.Set) {
	c := &ar.c
	before := len(c.rows.Calls) + len(c.rows.CallAttempts) + len(c.rows.RecordRuns)
	problems := set.Problems
	set.Problems = nil
	recordRows(c.rows, ar.cur, set, nil)
	for _, p := range problems {
		ar.quarantine(p, ar.lineAt(p), -1)
	}
	after := len(c.rows.Calls) + len(c.rows.CallAttempts) + len(c.rows.RecordRuns)
	c.payloadBytes += (after - before) * 256
	for why, n := range set.Ignored {
		if c.ignored == nil {
			c.ignored = map[string]int{}
		}
		c.ignored[why] += n
	}
}

// quarantine adds a problem's row, within the file's bound on kept rows
// (see maxQuarantinedRows); n < 0 means raw is the whole line.
func (ar *agentReader) quarantine(p records.Error, raw []byte, n int64) {
	if n < 0 {
		n = int64(len(raw))
	}
	// The row keeps the line and the offset in columns of their own: the
	// reason does not say the line again ("line 47, byte 17030: line 47:").
	reason := p.Msg
	if p.Field != "" {
		reason = p.Field + ": " + p.Msg
	}
	keepQuarantined(&ar.c, &ar.cur, "records", int64(p.Line), p.Offset, p.Field, reason, raw, n)
}

// lineAt reads the line a problem names, up to what quarantine keeps.
func (ar *agentReader) lineAt(p records.Error) []byte {
	if ar.f == nil || p.Line <= 0 || p.Offset < 0 {
		return nil
	}
	b := make([]byte, trace.MaxRaw)
	n, _ := ar.f.ReadAt(b, p.Offset)
	b = b[:n]
	for i, c := range b {
		if c == '\n' {
			b = b[:i]
			break
		}
	}
	if len(b) > 0 && b[len(b)-1] == '\r' {
		b = b[:len(b)-1]
	}
	return b
}

// flush sends the chunk with the file's state as of the last line fed: the
// stream's state, and no open rows (only the last chunk of a reading
// stores them). It returns false when cancelled.
func (ar *agentReader) flush() bool {
	ar.add(ar.s.Final())
	state, err := ar.s.State()
	if err != nil {
		return ar.fail(err)
	}
	ar.cur.pairing = encodeCarry(state, nil)
	return ar.sendChunk(false)
}

// fail ends a reading that cannot go on. The chunk it sends carries no
// state, so nothing of what was read since the last chunk is committed:
// the next ingest reads it again from the last state committed.
func (ar *agentReader) fail(err error) bool {
	return ar.send(chunk{err: &FileError{Path: ar.cur.path, Err: err}, last: true, rows: &rows.Set{}})
}

func (ar *agentReader) sendChunk(last bool) bool {
	// The head hash covers committed bytes only, as a trace's does, so a
	// file rewritten under the same inode is told from one appended to.
	// A head that cannot be read now is left as it was: the next reading
	// checks the bytes it covers.
	if n := int(min(ar.cur.offset, headSize)); ar.f != nil && n != ar.cur.headLen {
		if h, err := headHash(ar.f, n); err == nil {
			ar.cur.headLen, ar.cur.headHash = n, h
		}
	}
	c := &ar.c
	c.state, c.last = ar.cur, last
	if !last {
		c.state.size = c.state.offset // see lineReader.flush
	}
	c.consumed = ar.cur.offset - ar.start
	ar.start = ar.cur.offset
	if !ar.send(*c) {
		return false
	}
	ar.c = chunk{rows: &rows.Set{}}
	return true
}

// finish ends a reading: the rows that closed, then the open part (what
// is still open, and a last line without its newline when it is already
// a whole JSON value), whose keys the state keeps for the next reading
// to replace.
func (ar *agentReader) finish() bool {
	ar.add(ar.s.Final())
	state, err := ar.s.State()
	if err != nil {
		return ar.fail(err)
	}
	mark, quarantined := ar.mark(), ar.cur.quarantined
	var tail int64
	if b := ar.r.Pending(); len(b) > 0 && json.Valid(b) {
		tail = ar.cur.lines + 1
		ar.s.Line(int(tail), ar.cur.offset, b)
		ar.add(ar.s.Final())
	}
	open, err := ar.s.Open()
	if err != nil {
		// Not the format at all, as far as it was read: one row says
		// so for the whole file, beside any lines quarantined.
		var re *records.Error
		if !errors.As(err, &re) {
			re = &records.Error{Msg: err.Error()}
		}
		// The next reading starts over, replacing this row.
		ar.quarantine(*re, ar.lineAt(*re), -1)
		ar.cur.pairing = ""
		return ar.sendChunk(true)
	}
	ar.add(open)
	calls, runs := ar.keysSince(mark)
	// The open part is read again next time: what it quarantined is
	// replaced then, not counted twice.
	ar.cur.quarantined = quarantined
	ar.cur.pairing = encodeCarry(state, &openRows{calls: calls, runs: runs, tail: tail})
	return ar.sendChunk(true)
}

// mark is where the open part of the chunk's rows begins.
type mark struct{ calls, runs int }

func (ar *agentReader) mark() mark {
	return mark{len(ar.c.rows.Calls), len(ar.c.rows.RecordRuns)}
}

// keysSince are the call and run ids of the rows added since m, as the
// store holds them.
func (ar *agentReader) keysSince(m mark) (calls, runs []string) {
	for _, r := range ar.c.rows.Calls[m.calls:] {
		var id string
		if r.CallID != nil {
			id = *r.CallID
		}
		calls = append(calls, rows.OpenCallKey(id, r.Line))
	}
	for _, r := range ar.c.rows.RecordRuns[m.runs:] {
		runs = append(runs, rows.StoreString(r.RunID))
	}
	return calls, runs
}

func encodeCarry(state []byte, open *openRows) string {
	c := agentCarry{V: agentCarryVersion, Stream: base64.StdEncoding.EncodeToString(state)}
	if open != nil {
		c.Calls, c.Runs, c.Tail = open.calls, open.runs, open.tail
	}
	b, _ := json.Marshal(c)
	return string(b)
}

// callIDsOf are the call ids of OpenCallKeys.
func callIDsOf(keys []string) []string {
	out := make([]string, len(keys))
	for i, k := range keys {
		out[i] = k[:strings.LastIndexByte(k, '@')]
	}
	return out
}

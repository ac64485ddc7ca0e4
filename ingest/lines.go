package ingest

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"time"
	"unsafe"

	"github.com/orchstat/orchstat/ingest/trace"
	"github.com/orchstat/orchstat/model/rows"
)

// readLines turns complete lines into chunks. Each chunk carries the file
// state as of its last line, which is what makes partial commits safe.
func readLines(r *trace.Reader, cur fileState, replace string, head func(*fileState) error, send func(chunk) bool) bool {
	lr := &lineReader{
		r: r, cur: cur, start: cur.offset, head: head, send: send,
		c:     chunk{replace: replace, deleteOld: replace != "", rows: &rows.Set{}},
		spans: map[string]*span{},
		pair:  decodePairing(cur.pairing),
	}
	for {
		l, err := r.Next()
		if errors.Is(err, io.EOF) {
			return lr.flush(true)
		}
		if err != nil {
			// Keep what was read; the rest is retried next time.
			if !lr.flush(false) {
				return false
			}
			return send(chunk{state: lr.cur, err: &FileError{Path: lr.cur.path, Err: err}, last: true, rows: &rows.Set{}})
		}
		lr.line(l)
		if lr.c.payloadBytes >= chunkBytes || len(lr.c.rows.Events)+lr.c.quarantined >= chunkRows {
			// Flushing mid-file records the offset after this line.
			if !lr.flush(false) {
				return false
			}
		}
	}
}

// lineReader is readLines' state: the chunk being filled and the file's
// state as of the last line read.
type lineReader struct {
	r     *trace.Reader
	cur   fileState
	start int64 // the offset the chunk being filled starts at
	c     chunk
	spans map[string]*span // the chunk's runs
	pair  pairing
	// A chunk's payloads are gathered back to back and made one string
	// when it is sent, which the events' payloads then share: a string per
	// payload was a visible share of ingest time, in allocation and in the
	// collector's work. The arena is sized once per chunk from what is
	// left of the file (newArena), and a full one becomes the string
	// without a copy (flush): growing it by doubling and copying it into
	// the string were two of the copies each payload byte went through.
	arena   []byte
	spansOf [][2]int // each event's payload in arena
	head    func(*fileState) error
	send    func(chunk) bool
}

// line adds one line to the chunk: an event, a quarantined line, or
// nothing for a blank one.
func (lr *lineReader) line(l trace.Line) {
	if l.TooLong {
		lr.quarantine(l, "", fmt.Sprintf("line longer than %d MiB", trace.MaxLine>>20))
		return
	}
	if trace.Blank(l.Bytes) {
		return
	}
	ev, perr := trace.Parse(l.Bytes)
	if perr != nil {
		lr.quarantine(l, perr.Field, perr.Error())
		return
	}
	lr.event(l.Num, &ev)
}

// maxQuarantinedRows bounds the quarantine rows one file keeps: a file of
// junk (8M bad lines) once held gigabytes of rows in memory, and crashed
// the ingest of the good runs beside it at every retry. Past the bound its
// lines are counted in its state (files.quarantined), not kept.
const maxQuarantinedRows = 10000

// quarantine adds a bad line's row, or past maxQuarantinedRows only
// counts it, and weighs it in the chunk so that a file of bad lines is
// committed in chunks as a file of events is.
func (lr *lineReader) quarantine(l trace.Line, field, reason string) {
	keepQuarantined(&lr.c, &lr.cur, "lines", l.Num, l.Offset, field, reason, l.Bytes, l.Len)
}

// keepQuarantined adds a bad line's or record's row to c, or past
// maxQuarantinedRows of the file only counts it, and weighs it in the
// chunk; what names what the file's bad units are in the row that says
// the rest are only counted.
func keepQuarantined(c *chunk, cur *fileState, what string, line, offset int64, field, reason string, raw []byte, n int64) {
	switch q := cur.quarantined; {
	case q < maxQuarantinedRows:
		quarantineLen(c.rows, *cur, line, offset, field, reason, raw, n)
		c.payloadBytes += min(len(raw), trace.MaxRaw) + len(reason)
	case q == maxQuarantinedRows:
		quarantineLen(c.rows, *cur, line, offset, "", fmt.Sprintf(
			"more than %d %s of this file are quarantined: this one and the rest are counted (orchstat sql \"SELECT quarantined FROM files\"), not kept", maxQuarantinedRows, what),
			nil, n)
	}
	cur.quarantined++
	c.quarantined++
}

// event adds a parsed event: its events row, its run's span, and the
// typed row of a metric-bearing event.
func (lr *lineReader) event(line int64, ev *trace.Event) {
	c := &lr.c
	var sv *int32
	if ev.HasSchema && ev.SchemaVersion >= -1<<31 && ev.SchemaVersion < 1<<31 {
		n := int32(ev.SchemaVersion)
		sv = &n
	}
	if lr.arena == nil {
		lr.arena = lr.newArena()
	}
	lr.spansOf = append(lr.spansOf, [2]int{len(lr.arena), len(lr.arena) + len(ev.Payload)})
	lr.arena = append(lr.arena, ev.Payload...)
	c.rows.Events = append(c.rows.Events, rows.Event{EventKey: rows.EventKey{FileID: lr.cur.id, Line: line, RunID: ev.RunID, TS: ev.Time},
		Type: ev.Type, SchemaVersion: sv})
	if sp := lr.spans[ev.RunID]; sp == nil {
		lr.spans[ev.RunID] = &span{first: ev.Time, last: ev.Time, events: 1}
	} else {
		sp.add(ev.Time)
	}
	c.payloadBytes += len(ev.Payload)
	c.maxPayload = max(c.maxPayload, len(ev.Payload))
	extractEvent(c.rows, lr.pair, lr.cur.id, line, ev)
	lr.cur.events++
}

// flush sends the chunk with the file's state after the last line read,
// and starts the next one. It returns false when cancelled.
func (lr *lineReader) flush(last bool) bool {
	c, cur := &lr.c, &lr.cur
	if len(lr.spansOf) > 0 {
		all := lr.payloads()
		for i, sp := range lr.spansOf {
			c.rows.Events[i].Payload = all[sp[0]:sp[1]]
		}
		lr.spansOf = lr.spansOf[:0]
	}
	cur.pairing = lr.pair.encode()
	for run, sp := range lr.spans {
		c.rows.RunSpans = append(c.rows.RunSpans, rows.RunSpan{FileID: cur.id, RunID: run, FirstTS: sp.first, LastTS: sp.last, Events: sp.events})
	}
	clear(lr.spans)
	cur.offset, cur.lines = lr.r.Offset(), lr.r.LineNum()
	if lr.head != nil {
		if err := lr.head(cur); err != nil {
			c.err = &FileError{Path: cur.path, Err: err}
		}
	}
	c.state, c.last = *cur, last
	if !last {
		// A reading stopped after this commit must go on next time, and
		// unchanged skips a file whose size is the one recorded: the
		// size recorded mid-file is what was read so far.
		c.state.size = c.state.offset
	}
	c.consumed = cur.offset - lr.start
	lr.start = cur.offset
	if !lr.send(*c) {
		return false
	}
	lr.c = chunk{rows: &rows.Set{}}
	return true
}

// arenaSlack is room past chunkBytes for the payload that fills a chunk.
const arenaSlack = 64 << 10

// newArena makes the arena of a chunk starting at lr.start: a chunk's
// payloads are at most the bytes left in the file, and a chunk is sent
// once it holds chunkBytes of them. A file that grew since its size was
// taken, or a stream, whose size is not known, grows the arena by append.
func (lr *lineReader) newArena() []byte {
	n := min(lr.cur.size-lr.start, chunkBytes+arenaSlack)
	if n <= 0 {
		n = arenaSlack
	}
	return make([]byte, 0, n)
}

// payloads turns the chunk's arena into the string its events' payloads
// share. An arena at least three quarters full becomes that string as it
// is, and the next chunk gets a new one; a mostly empty one (a file whose
// lines are more envelope than payload) is copied into a string of its
// length and kept for the next chunk, so the store's rows never hold
// memory that no payload uses.
func (lr *lineReader) payloads() string {
	a := lr.arena
	if len(a) >= cap(a)-cap(a)/4 {
		lr.arena = nil
		// The arena is never written again: lr.arena was its only other
		// reference.
		return unsafe.String(unsafe.SliceData(a), len(a))
	}
	lr.arena = a[:0]
	return string(a)
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

func quarantine(r *rows.Set, f fileState, line, offset int64, field, reason string, raw []byte) {
	quarantineLen(r, f, line, offset, field, reason, raw, int64(len(raw)))
}

// quarantineLen is quarantine of a line of n bytes of which raw is the
// start: raw_bytes is always the line's full length.
func quarantineLen(r *rows.Set, f fileState, line, offset int64, field, reason string, raw []byte, n int64) {
	if len(raw) > trace.MaxRaw {
		raw = raw[:trace.MaxRaw]
	}
	var fieldV *string
	if field != "" {
		fieldV = &field
	}
	r.Quarantine = append(r.Quarantine, rows.Quarantined{FileID: f.id, Path: f.path, Line: line, ByteOffset: offset, Field: fieldV,
		Reason: reason, Raw: strings.ToValidUTF8(string(raw), "\uFFFD"), RawBytes: n})
}

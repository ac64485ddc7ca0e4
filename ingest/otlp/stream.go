package otlp

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"

	"github.com/orchstat/orchstat/model/records"
)

// Stream reads a collector file a line at a time (see records.Stream);
// Parse is the same stream fed a whole file. A file that is one
// pretty-printed object is not lines: Lines refuses it, and it is read
// whole.
var Stream = streamFormat(defaults)

func streamFormat(lim limits) records.StreamFormat {
	return records.StreamFormat{
		New: func(string) records.Stream { return newStream(lim) },
		Resume: func(_ string, state []byte) (records.Stream, error) {
			return resume(lim, state)
		},
		Lines: isLines,
	}
}

// limits bound what a stream holds open. Every closure they cause depends
// only on the sequence of lines, so a file read in any number of pieces
// gives the rows one whole reading gives.
type limits struct {
	// afterRoot: a trace whose root span (no parentSpanId) has been read
	// closes once this many lines pass without a span of it.
	afterRoot int
	// idle: any trace, or agent session, closes once this many lines
	// pass without a span or event of it.
	idle int
	// maxOpen: past this many spans and events held open, the groups
	// least recently added to close, however recent.
	maxOpen int
	// runIDs, callIDs: how many run and call ids of closed groups are
	// remembered to keep the ids of later groups apart.
	runIDs, callIDs int
}

var defaults = limits{afterRoot: 32, idle: 4096, maxOpen: 50_000, runIDs: 128, callIDs: 64}

// group is what is open of one trace (its spans) or one agent session
// (its events): lines later in the file can still change its rows.
type group struct {
	key         string // trace id; agent and session for events
	first, last int    // lines of its first and last span or event
	root        bool   // a span without a parent was read
	rootQueued  int    // the line it was last queued on as rooted
	spans       []*span
	seen        map[string]bool // span ids
	logs        []*logRec
	closed      bool
}

func (g *group) size() int { return len(g.spans) + len(g.logs) }

// touch is a queue entry: g was added to on line.
type touch struct {
	g    *group
	line int
}

type stream struct {
	lim      limits
	st       stats
	head     []byte // the file's first bytes past blanks, for the binary test
	traces   map[string]*group
	sessions map[string]*group
	open     int     // spans and events held
	all      []touch // every touch, in line order
	rooted   []touch // touches of rooted traces, in line order
	runs     *ring   // run ids handed out by closed groups
	calls    *ring   // call ids likewise
	out      *records.Set
}

func newStream(lim limits) *stream {
	return &stream{lim: lim, traces: map[string]*group{}, sessions: map[string]*group{},
		runs: newRing(lim.runIDs), calls: newRing(lim.callIDs), out: &records.Set{}}
}

// MetricsIgnored is why a line of metrics gives no row: agents' metrics
// (claude_code.token.usage, claude_code.cost.usage and the like) count
// what their log events already carry, so they would count it twice.
const MetricsIgnored = "lines of OpenTelemetry metrics, kept in their files but not counted: the agents' events already carry the tokens and cost they would count twice"

// Line reads one line: a batch of spans or events, metrics, or a Problem.
func (s *stream) Line(no int, off int64, b []byte) {
	text := bytes.TrimSpace(b)
	if len(text) == 0 {
		return
	}
	s.keepHead(text)
	if ps, ok := lineEnvelope(text); ok {
		for _, p := range ps {
			s.record(no, off+int64(p.off), p.text)
		}
	} else {
		s.record(no, off, text)
	}
	s.closeDue(no)
}

// lineEnvelope is envelope for a line that does not start as an OTLP
// object, so that collector lines are decoded once.
func lineEnvelope(text []byte) ([]payload, bool) {
	dec := json.NewDecoder(bytes.NewReader(text))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil, false
	}
	if k, err := dec.Token(); err != nil || topKeys[fmt.Sprint(k)] != 0 {
		return nil, false
	}
	return envelope(text)
}

// record reads one OTLP object: a line, or a payload of an envelope.
func (s *stream) record(no int, off int64, text []byte) {
	s.st.lines++
	r := readLine(no, off, text)
	switch r.kind {
	case kindTraces:
		s.st.traces++
	case kindLogs:
		s.st.logs++
	case kindMetrics:
		s.st.metrics++
		s.out.Ignore(MetricsIgnored)
	default:
		s.st.bad++
	}
	s.out.Problems = append(s.out.Problems, r.problems...)
	for i, sp := range r.spans {
		if !s.addSpan(sp) {
			s.out.Problems = append(s.out.Problems, records.Error{Line: no, Offset: off,
				Field: r.fields[i] + ".spanId", Msg: "span " + sp.id + " of trace " + sp.trace + " seen before; first kept"})
		}
	}
	for _, l := range r.logs {
		s.addLog(l)
	}
}

func (s *stream) keepHead(text []byte) {
	const n = 64
	if len(s.head) >= n {
		return
	}
	if len(s.head) == 0 {
		text = bytes.TrimLeft(text, " \t\r\n\ufeff")
	} else {
		s.head = append(s.head, '\n')
	}
	s.head = append(s.head, text[:min(len(text), n-len(s.head))]...)
}

// addSpan adds a span to its trace, false when the trace has one of that
// id open already.
func (s *stream) addSpan(sp *span) bool {
	g := s.traces[sp.trace]
	if g == nil {
		g = &group{key: sp.trace, first: sp.line, seen: map[string]bool{}}
		s.traces[sp.trace] = g
	}
	if g.seen[sp.id] {
		return false
	}
	g.seen[sp.id] = true
	g.spans = append(g.spans, sp)
	g.root = g.root || sp.parent == ""
	s.touched(g, sp.line)
	return true
}

func (s *stream) addLog(l *logRec) {
	k := sessionKey(l)
	g := s.sessions[k]
	if g == nil {
		g = &group{key: k, first: l.line}
		s.sessions[k] = g
	}
	g.logs = append(g.logs, l)
	s.touched(g, l.line)
}

// sessionKey is the agent and session an event belongs to.
func sessionKey(l *logRec) string {
	agent, name := eventName(l)
	return agent + "\x00" + sessionOf(&event{logRec: l, agent: agent, name: name})
}

// touched queues g once per line it is added to, in each queue it is due
// from.
func (s *stream) touched(g *group, line int) {
	s.open++
	if g.last != line {
		g.last = line
		s.all = append(s.all, touch{g, line})
	}
	if g.root && g.rootQueued != line {
		g.rootQueued = line
		s.rooted = append(s.rooted, touch{g, line})
	}
}

// closeDue closes, after line no, the groups whose window has passed, then
// the least recently added to while more than maxOpen is held. Groups
// closing on one line are mapped together.
func (s *stream) closeDue(no int) {
	var due []*group
	live := func(t touch) bool { return !t.g.closed && t.g.last == t.line }
	for len(s.rooted) > 0 && no-s.rooted[0].line >= s.lim.afterRoot {
		if t := s.rooted[0]; live(t) {
			t.g.closed = true
			due = append(due, t.g)
		}
		s.rooted = s.rooted[1:]
	}
	for len(s.all) > 0 && no-s.all[0].line >= s.lim.idle {
		if t := s.all[0]; live(t) {
			t.g.closed = true
			due = append(due, t.g)
		}
		s.all = s.all[1:]
	}
	held := s.open
	for _, g := range due {
		held -= g.size()
	}
	for held > s.lim.maxOpen && len(s.all) > 0 {
		// Every group last added to on the oldest line closes at once,
		// so that which one goes first does not matter.
		line := s.all[0].line
		for len(s.all) > 0 && s.all[0].line == line {
			if t := s.all[0]; live(t) {
				t.g.closed = true
				due = append(due, t.g)
				held -= t.g.size()
			}
			s.all = s.all[1:]
		}
	}
	if len(due) > 0 {
		s.close(due)
	}
	s.all, s.rooted = compact(s.all), compact(s.rooted)
}

// compact lets a queue's consumed front be collected.
func compact(q []touch) []touch {
	if cap(q) > 64 && len(q) < cap(q)/4 {
		return append([]touch(nil), q...)
	}
	return q
}

// close maps closed groups to rows for Final, and forgets them.
func (s *stream) close(gs []*group) {
	for _, g := range gs {
		s.open -= g.size()
		if g.logs != nil {
			delete(s.sessions, g.key)
		} else {
			delete(s.traces, g.key)
		}
	}
	set := buildGroups(gs)
	s.claim(set, true)
	s.out.Merge(set)
}

// buildGroups maps groups together, their spans and events in the order
// read.
func buildGroups(gs []*group) *records.Set {
	var spans []*span
	var logs []*logRec
	for _, g := range gs {
		spans = append(spans, g.spans...)
		logs = append(logs, g.logs...)
	}
	sort.Slice(spans, func(i, j int) bool {
		a, b := spans[i], spans[j]
		return a.line < b.line || a.line == b.line && a.pos < b.pos
	})
	sort.Slice(logs, func(i, j int) bool {
		a, b := logs[i], logs[j]
		return a.line < b.line || a.line == b.line && a.index < b.index
	})
	return build(spans, logs)
}

// Final returns the rows of the groups closed so far, the problems of the
// lines read and the spans ignored in closed groups.
func (s *stream) Final() *records.Set {
	out := s.out
	s.out = &records.Set{}
	return out
}

// Open maps every open group as if the file ended here.
func (s *stream) Open() (*records.Set, error) {
	if err := s.err(); err != nil {
		return nil, err
	}
	set := buildGroups(s.openGroups())
	s.claim(set, false)
	return set, nil
}

// openGroups are the open groups in the order of their first line.
func (s *stream) openGroups() []*group {
	var gs []*group
	for _, g := range s.traces {
		gs = append(gs, g)
	}
	for _, g := range s.sessions {
		gs = append(gs, g)
	}
	sort.Slice(gs, func(i, j int) bool {
		return gs[i].first < gs[j].first || gs[i].first == gs[j].first && gs[i].key < gs[j].key
	})
	return gs
}

// err is the whole-file verdict on the lines read so far.
func (s *stream) err() error {
	if len(s.head) > 0 && s.head[0] != '{' && looksBinary(s.head) {
		return &records.Error{Line: 1, Field: "format",
			Msg: "binary or length-prefixed content (collector format: proto or compression), not read"}
	}
	if s.st.lines > 0 && s.st.traces+s.st.logs+s.st.metrics == 0 {
		return &records.Error{Line: 1, Field: "resourceSpans",
			Msg: "not OTLP JSON: no line holds resourceSpans, resourceLogs or resourceMetrics"}
	}
	return nil
}

// isLines tells a collector file (a JSON object per line) from one
// pretty-printed object by its first line: a whole JSON value, or a line
// followed by another object, is a line of a collector file; a first line
// that is not a whole value ("{" alone) with the object's inside after it
// is a pretty-printed payload. A first line longer than the head is
// taken for a line: a one-line object reads the same either way.
func isLines(head []byte) bool {
	h := bytes.TrimLeft(head, " \t\r\n\ufeff")
	i := bytes.IndexByte(h, '\n')
	if i < 0 {
		return true
	}
	if json.Valid(bytes.TrimSpace(h[:i])) {
		return true
	}
	next := bytes.TrimLeft(h[i+1:], " \t\r\n")
	return len(next) > 0 && next[0] == '{' && !bytes.HasPrefix(h[i+1:], []byte(" ")) && !bytes.HasPrefix(h[i+1:], []byte("\t"))
}

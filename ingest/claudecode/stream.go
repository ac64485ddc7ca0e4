package claudecode

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"strconv"

	"github.com/orchstat/orchstat/model/records"
)

// Stream reads a transcript a line at a time (see records.Stream and the
// package doc for what stays open and when it closes). Every line of a
// transcript is a JSON object, so there are no non-line files: Lines is
// nil.
var Stream = records.StreamFormat{
	New:    func(path string) records.Stream { return newStream(path) },
	Resume: resume,
}

// ParseTranscript reads one whole transcript file: a session's or a
// sub-agent's. It is Stream fed every line.
func ParseTranscript(path string, b []byte) (*records.Set, error) {
	return Stream.Feed(path, b)
}

// stateVersion is the version of State's encoding; Resume refuses others.
const stateVersion = 1

// maxIDs is how many of the file's last CallIDs a new call's id is
// checked against, to keep ids unique when a message id comes again.
const maxIDs = 256

// stream is a transcript read so far. Everything in it is exported for
// State, and bounded by what is open (see the bounds in the package doc).
type stream struct {
	path string
	V    int   `json:"v"`
	No   int   `json:"no"` // the last line read
	T    tally `json:"tally"`
	// Known says a line was a record Claude Code writes; until one is,
	// FirstErr is the first problem, for the whole-file error.
	Known    bool            `json:"known,omitempty"`
	FirstErr *records.Error  `json:"firstErr,omitempty"`
	Problems []records.Error `json:"problems,omitempty"` // not yet given by Final
	Run      runInfo         `json:"run"`
	// LastModel is the last assistant line with a real model.
	LastModel *modelAt `json:"lastModel,omitempty"`
	// Done are closed calls not yet committed, in the order they began:
	// their model or the run's identity may still be unknown.
	Done []*call `json:"done,omitempty"`
	// Cur is the open response, whose streamed lines share CurKey.
	Cur    *call  `json:"cur,omitempty"`
	CurKey string `json:"curKey,omitempty"`
	// Chain is the failed attempts waiting for the call's outcome.
	Chain *call `json:"chain,omitempty"`
	// Sent counts the api-request lines since the last api_error or
	// assistant line: Claude Code 2.1.332 writes one before each HTTP
	// request it sends (see retry).
	Sent int `json:"sent,omitempty"`
	// IDs are hashes of the last maxIDs committed CallIDs, a ring that
	// Next writes into next.
	IDs  []byte `json:"ids,omitempty"`
	Next int    `json:"next,omitempty"`
}

// tally counts what became of a file's lines.
type tally struct{ used, ignored, problems, blank int }

// The state holds a tally as [used, ignored, problems, blank].
func (t tally) MarshalJSON() ([]byte, error) {
	return json.Marshal([4]int{t.used, t.ignored, t.problems, t.blank})
}

func (t *tally) UnmarshalJSON(b []byte) error {
	var a [4]int
	if err := json.Unmarshal(b, &a); err != nil {
		return err
	}
	t.used, t.ignored, t.problems, t.blank = a[0], a[1], a[2], a[3]
	return nil
}

func newStream(path string) *stream { return &stream{path: path, V: stateVersion} }

func resume(path string, state []byte) (records.Stream, error) {
	s := &stream{}
	if err := json.Unmarshal(state, s); err != nil {
		return nil, fmt.Errorf("claude code stream state: %w", err)
	}
	if s.V != stateVersion {
		return nil, fmt.Errorf("claude code stream state: version %d, want %d", s.V, stateVersion)
	}
	if err := s.valid(); err != nil {
		return nil, fmt.Errorf("claude code stream state: %w", err)
	}
	s.path = path
	return s, nil
}

// valid rejects a decoded state that no stream writes, so that garbage
// that happens to be JSON cannot make a later line panic.
func (s *stream) valid() error {
	if s.No < 0 || len(s.IDs)%8 != 0 || len(s.IDs) > 8*maxIDs || s.Next < 0 || s.Next >= maxIDs {
		return errors.New("line or call id ring out of range")
	}
	if s.Chain != nil && (len(s.Chain.Chain) == 0 || s.Chain.Final != nil) {
		return errors.New("a pending chain without attempts, or with an outcome")
	}
	if s.Cur != nil && s.Cur.Final == nil {
		return errors.New("an open response without lines")
	}
	for _, c := range s.Done {
		if c == nil || (c.Final == nil && len(c.Chain) == 0) {
			return errors.New("a closed call without lines")
		}
	}
	return nil
}

func (s *stream) State() ([]byte, error) { return json.Marshal(s) }

// Line reads the file's next line.
func (s *stream) Line(no int, off int64, b []byte) {
	s.No = no
	e, kind, ferr := decodeLine(b, no)
	switch kind {
	case lineBlank:
		s.T.blank++
	case lineIgnored:
		s.T.ignored++
		s.Known = s.Known || isKnownType(b)
		if isAPIRequest(b) {
			s.Sent++
		}
	case lineUsed:
		s.T.used++
		s.Known = true
		s.entry(e)
	case lineProblem:
		s.T.problems++
		p := records.Error{Line: no, Offset: off, Field: ferr.field, Msg: ferr.msg}
		if s.FirstErr == nil && !s.Known {
			s.FirstErr = &p
		}
		s.Problems = append(s.Problems, p)
	}
}

// entry reads a conversation line into the run and its calls.
func (s *stream) entry(e *entry) {
	s.Run.see(e)
	switch {
	case e.retry != nil:
		s.retry(e)
	case e.asst != nil && e.asst.failed:
		s.Sent = 0
		s.closeCur()
		s.close(s.start(e))
	case e.asst != nil:
		s.Sent = 0
		s.response(e)
	case e.typ == "user":
		// The user spoke (or a tool answered) before any response:
		// the retried request was abandoned.
		s.flush()
	}
	if e.asst != nil && e.asst.model != "" && e.asst.model != synthetic {
		m := modelAt{e.line, e.asst.model}
		if s.Cur != nil {
			s.Cur.sawModel(m)
		}
		// Done is in the order the calls began, so by their first lines,
		// and a model line gives every earlier call its Next: only the
		// last calls can lack one.
		for i := len(s.Done) - 1; i >= 0 && s.Done[i].Next == nil; i-- {
			s.Done[i].sawModel(m)
		}
		s.LastModel = &m
	}
	s.Run.settle(s.path)
}

// retry adds a failed attempt to the pending chain; it closes the open
// response, as a line of another call. An attempt number lower than the
// last starts another call. The same number again is either a repeated
// notice of the same attempt (persistent mode's keep-alive), which is not
// another attempt, or, when an api-request line came between, another
// request sent under the same number: Claude Code 2.1.332 retries a
// connection reset at once without counting it (measured against
// ingest/fakeprovider: a cut stream, then a timeout, both written as
// retryAttempt 1, four requests in all). Such an attempt is numbered one
// above the last, so that attempts count requests.
func (s *stream) retry(e *entry) {
	sent := s.Sent
	s.Sent = 0
	s.closeCur()
	if s.Chain != nil {
		ch := s.Chain.Chain
		last := ch[len(ch)-1].N
		if e.retry.attempt == last && sent == 0 {
			return
		}
		if e.retry.attempt < last || len(ch) >= maxChain {
			s.flush()
		}
	}
	if s.Chain == nil {
		s.Chain = newCall(e, s.LastModel)
	}
	s.Chain.addRetry(e)
}

// response adds a line of a model response. The lines of one streamed
// response share message.id and requestId, and follow each other: user,
// system and bookkeeping lines may come between them (tool results do),
// but a line of another call closes the response.
func (s *stream) response(e *entry) {
	k := key(e)
	if s.Cur != nil && k != "" && k == s.CurKey {
		s.Cur.addLine(e)
		return
	}
	s.closeCur()
	c := s.start(e)
	if k == "" {
		s.close(c)
		return
	}
	s.Cur, s.CurKey = c, k
}

// start begins a call with line e, taking the pending retries as its
// failed attempts.
func (s *stream) start(e *entry) *call {
	c := s.Chain
	s.Chain = nil
	if c == nil {
		prev := s.LastModel
		if m := e.asst.model; m != "" && m != synthetic {
			prev = &modelAt{e.line, m}
		}
		c = newCall(e, prev)
	}
	c.addLine(e)
	return c
}

func (s *stream) closeCur() {
	if s.Cur != nil {
		s.close(s.Cur)
		s.Cur, s.CurKey = nil, ""
	}
}

// flush ends a pending chain that no response or failure followed.
func (s *stream) flush() {
	if s.Chain != nil {
		s.close(s.Chain)
		s.Chain = nil
	}
}

func (s *stream) close(c *call) { s.Done = append(s.Done, c) }

// Final commits the closed calls whose rows no later line can change, in
// the order they began, and the problems of the lines read.
func (s *stream) Final() *records.Set {
	set := &records.Set{Problems: s.Problems}
	s.Problems = nil
	if !s.Run.Settled {
		return set
	}
	id := s.Run.describe(s.path)
	n := 0
	for _, c := range s.Done {
		if !c.modelKnown(s.No) {
			break
		}
		s.IDs = commit(set, c, id, &s.Run, s.IDs, &s.Next)
		n++
	}
	s.Done = append([]*call(nil), s.Done[n:]...)
	return set
}

// commit adds a call's rows to set, naming it against ids (a ring of
// recent CallIDs' hashes, written at *next) and counting it into ri. It
// returns the ring.
func commit(set *records.Set, c *call, id ident, ri *runInfo, ids []byte, next *int) []byte {
	cid := c.id()
	if seen(ids, cid) {
		cid += "@" + strconv.Itoa(c.First)
	}
	ids = remember(ids, next, cid)
	rc, atts := c.convert(id.runID, id.session, cid)
	set.Calls = append(set.Calls, rc)
	set.CallAttempts = append(set.CallAttempts, atts...)
	ri.add(c, rc)
	return ids
}

func hashID(id string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(id))
	return h.Sum64()
}

func seen(ids []byte, id string) bool {
	h := hashID(id)
	for i := 0; i+8 <= len(ids); i += 8 {
		if binary.LittleEndian.Uint64(ids[i:]) == h {
			return true
		}
	}
	return false
}

// remember writes id's hash into the ring at *next, growing it until it
// holds maxIDs.
func remember(ids []byte, next *int, id string) []byte {
	h := hashID(id)
	if len(ids) < 8*maxIDs {
		ids = binary.LittleEndian.AppendUint64(ids, h)
		*next = len(ids) / 8 % maxIDs
		return ids
	}
	binary.LittleEndian.PutUint64(ids[8**next:], h)
	*next = (*next + 1) % maxIDs
	return ids
}

// Open returns the calls not yet committed and the file's run as if the
// file ended here, without changing the stream.
func (s *stream) Open() (*records.Set, error) {
	if !s.Known && (s.T.problems > 0 || s.T.ignored > 0) {
		e := records.Error{Line: 1, Field: "type", Msg: "not a Claude Code transcript: no user, assistant, system or other known record"}
		if s.FirstErr != nil && s.T.ignored == 0 {
			e.Line, e.Offset = s.FirstErr.Line, s.FirstErr.Offset
		}
		return nil, &e
	}
	set := &records.Set{}
	if s.Run.Entries == 0 {
		return set, nil
	}
	ri := s.Run
	ri.Sessions = append([]string(nil), s.Run.Sessions...)
	ri.Models = append([]string(nil), s.Run.Models...)
	if u := s.Run.Usage; u != nil {
		cp := *u
		ri.Usage = &cp
	}
	ids := append([]byte(nil), s.IDs...)
	next := s.Next
	id := ri.describe(s.path)
	open := append([]*call(nil), s.Done...)
	for _, c := range []*call{s.Cur, s.Chain} {
		if c != nil {
			open = append(open, c)
		}
	}
	for _, c := range open {
		ids = commit(set, c, id, &ri, ids, &next)
	}
	set.Runs = append(set.Runs, ri.run(id))
	return set, nil
}

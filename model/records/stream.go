package records

import "bytes"

// A Stream reads a line-oriented record file (an agent's transcript, a
// rollout, a collector's file) one line at a time, so that a file that
// grows is read on from where the last reading stopped, in memory bounded
// by what is still open rather than by the file. Whole-file parsing is the
// same stream fed every line: one code path, whether a file is read once
// or in a thousand pieces.
//
// The ingest feeds every complete line it has not fed before, takes Final
// as it goes (committing those rows for good), and at the end of what is
// there takes State (kept with the file's offset) and Open (stored until
// the next reading replaces them). The contract, which each format's tests
// check at random cut points: for any split of a file's lines into
// readings, with State and Resume between them, the Final rows of every
// reading plus the Open rows of the last equal what one whole reading
// gives.
type Stream interface {
	// Line reads the file's next complete line: no is its 1-based number,
	// off the byte offset it starts at, b its bytes without "\n" or a
	// trailing "\r" (and without a byte-order mark on line 1). b is valid
	// only during the call.
	Line(no int, off int64, b []byte)
	// Final returns, and forgets, the rows no later line can change:
	// calls and call attempts of groups that are closed, runs that are
	// closed (a format whose run is the file never closes it), problems
	// of the lines read, and the lines ignored by reason.
	Final() *Set
	// Open returns what is still open as if the file ended here: the
	// calls and call attempts of open groups, and the runs not closed.
	// It returns no Problems and does not change the stream. Every call
	// it returns has a CallID, and every run a RunID, unique within the
	// file, by which the next reading replaces it.
	// err is the whole-file error the format's Parser gives (not this
	// format at all), judged on the lines read so far.
	Open() (*Set, error)
	// State is what the stream holds, for Resume to go on after the last
	// line read. Its size is bounded by what is open, not by the lines
	// read.
	State() ([]byte, error)
}

// StreamFormat makes the Streams of one format.
type StreamFormat struct {
	// New starts reading the file at path from its first line.
	New func(path string) Stream
	// Resume goes on from a State. An error means the state cannot be
	// used (another version wrote it), and the file is read again from
	// its start.
	Resume func(path string, state []byte) (Stream, error)
	// Lines, when set, says from a file's first bytes whether it is read
	// as lines at all; a file it refuses (a single pretty-printed OTLP
	// payload, say) is read whole by the format's Parser.
	Lines func(head []byte) bool
}

// Feed reads all of b through a new stream of f, as a whole-file Parser
// does: the rows of Final and of Open together. Lines are split as the
// ingest splits them: at "\n", a trailing "\r" and a first line's
// byte-order mark removed, a last line without "\n" read as a line.
func (f StreamFormat) Feed(path string, b []byte) (*Set, error) {
	s := f.New(path)
	FeedLines(s, b, 0, 0)
	out := s.Final()
	open, err := s.Open()
	if err != nil {
		return nil, err
	}
	out.Merge(open)
	return out, nil
}

// FeedLines feeds b's lines to s, b starting at byte offset off after line
// number no (0 and 0 for a whole file). It returns the offset and line
// number after the last line fed.
func FeedLines(s Stream, b []byte, off int64, no int) (int64, int) {
	for len(b) > 0 {
		start := off
		line, rest := b, []byte(nil)
		if i := bytes.IndexByte(b, '\n'); i >= 0 {
			line, rest = b[:i], b[i+1:]
		}
		off += int64(len(b) - len(rest))
		b = rest
		no++
		if start == 0 && len(line) >= 3 && line[0] == 0xEF && line[1] == 0xBB && line[2] == 0xBF {
			line = line[3:]
		}
		if n := len(line); n > 0 && line[n-1] == '\r' {
			line = line[:n-1]
		}
		s.Line(no, start, line)
	}
	return off, no
}

// Merge appends o's rows to s's and adds its ignored counts.
func (s *Set) Merge(o *Set) {
	if o == nil {
		return
	}
	s.Runs = append(s.Runs, o.Runs...)
	s.Attempts = append(s.Attempts, o.Attempts...)
	s.Stages = append(s.Stages, o.Stages...)
	s.Configs = append(s.Configs, o.Configs...)
	s.Calls = append(s.Calls, o.Calls...)
	s.CallAttempts = append(s.CallAttempts, o.CallAttempts...)
	s.Problems = append(s.Problems, o.Problems...)
	for k, v := range o.Ignored {
		if s.Ignored == nil {
			s.Ignored = map[string]int{}
		}
		s.Ignored[k] += v
	}
}

package recordstest

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"sort"
	"strconv"
	"testing"

	"github.com/orchstat/orchstat/model/records"
)

// CheckStream holds a StreamFormat to the Stream contract on the file b:
// for tries random splits of its lines into readings, with State and
// Resume between them, the Final rows of every reading plus the Open rows
// of the last equal one whole reading (Feed), and every call Open returns
// has a CallID unique within the file, and every run a RunID. Order is not compared: the store
// has none. seed makes the splits repeatable.
func CheckStream(t testing.TB, f records.StreamFormat, path string, b []byte, tries int, seed uint64) {
	t.Helper()
	if testing.Short() {
		// The fast lane (go test -short) keeps the contract on every file
		// and a few splits of each; the full run tries them all.
		tries = min(tries, shortTries)
	}
	whole, werr := f.Feed(path, b)
	lines := splitAt(b)
	rng := rand.New(rand.NewPCG(seed, 0x5eed))
	for try := 0; try < tries; try++ {
		cuts := map[int]bool{}
		for n := rng.IntN(len(lines) + 1); n > 0; n-- {
			cuts[rng.IntN(len(lines)+1)] = true
		}
		got, err, why := readInPieces(f, path, lines, cuts)
		if why != "" {
			t.Fatalf("%s, cut before lines %v: %s", path, sortedCuts(cuts), why)
		}
		if (err == nil) != (werr == nil) {
			t.Fatalf("%s, cut before lines %v: error %v, whole reading's %v", path, sortedCuts(cuts), err, werr)
		}
		if err != nil {
			continue
		}
		if a, w := canonical(got), canonical(whole); a != w {
			t.Fatalf("%s, cut before lines %v: pieces differ from the whole reading\npieces: %s\nwhole:  %s", path, sortedCuts(cuts), a, w)
		}
	}
}

// shortTries bounds CheckStream's random splits under -short.
const shortTries = 5

// line is one line as FeedLines splits it, with where it starts.
type line struct {
	no  int
	off int64
	b   []byte
}

// splitAt splits b into lines exactly as FeedLines feeds them, by being
// the stream it feeds.
func splitAt(b []byte) []line {
	var rec recorder
	records.FeedLines(&rec, b, 0, 0)
	return rec.lines
}

// recorder is a Stream that keeps the lines it is fed.
type recorder struct{ lines []line }

func (r *recorder) Line(no int, off int64, b []byte) {
	r.lines = append(r.lines, line{no, off, bytes.Clone(b)})
}
func (r *recorder) Final() *records.Set         { return &records.Set{} }
func (r *recorder) Open() (*records.Set, error) { return &records.Set{}, nil }
func (r *recorder) State() ([]byte, error)      { return nil, nil }

// readInPieces reads lines with a State and Resume before each cut, and
// says what broke the contract, if anything.
func readInPieces(f records.StreamFormat, path string, lines []line, cuts map[int]bool) (*records.Set, error, string) {
	s := f.New(path)
	out := &records.Set{}
	for i, l := range lines {
		if cuts[i] {
			out.Merge(s.Final())
			st, err := s.State()
			if err != nil {
				return nil, nil, "State: " + err.Error()
			}
			if s, err = f.Resume(path, st); err != nil {
				return nil, nil, "Resume: " + err.Error()
			}
		}
		s.Line(l.no, l.off, l.b)
	}
	out.Merge(s.Final())
	open, err := s.Open()
	if err != nil {
		return nil, err, ""
	}
	if len(open.Problems) > 0 {
		return nil, nil, "Open returned problems"
	}
	ids := map[string]bool{}
	for _, c := range append(append([]records.Call{}, out.Calls...), open.Calls...) {
		if ids[c.CallID] && c.CallID != "" {
			return nil, nil, "call id " + c.CallID + " twice"
		}
		ids[c.CallID] = true
	}
	for _, c := range open.Calls {
		if c.CallID == "" {
			return nil, nil, "Open returned a call without a CallID"
		}
	}
	runs := map[string]bool{}
	for _, r := range append(append([]records.Run{}, out.Runs...), open.Runs...) {
		if runs[r.RunID] || r.RunID == "" {
			return nil, nil, "run id " + strconv.Quote(r.RunID) + " empty or twice"
		}
		runs[r.RunID] = true
	}
	out.Merge(open)
	return out, nil, ""
}

// canonical is a set as sorted JSON rows, to compare sets without order.
func canonical(s *records.Set) string {
	var rows []string
	add := func(kind string, v any) {
		b, _ := json.Marshal(v)
		rows = append(rows, kind+" "+string(b))
	}
	for _, x := range s.Runs {
		add("run", x)
	}
	for _, x := range s.Calls {
		add("call", x)
	}
	for _, x := range s.CallAttempts {
		add("attempt", x)
	}
	for _, x := range s.Problems {
		add("problem", x)
	}
	ig, _ := json.Marshal(s.Ignored)
	sort.Strings(rows)
	var buf bytes.Buffer
	for _, r := range rows {
		buf.WriteString(r)
		buf.WriteByte('\n')
	}
	buf.WriteString("ignored " + string(ig))
	return buf.String()
}

func sortedCuts(m map[int]bool) []int {
	var out []int
	for k := range m {
		out = append(out, k+1)
	}
	sort.Ints(out)
	return out
}

package orchestr8

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/orchstat/orchstat/ingest/records"
)

const fixtures = "../../testdata/orchestr8"

func parseFixture(t *testing.T, parse records.Parser, rel string) *records.Set {
	t.Helper()
	p := filepath.Join(fixtures, rel)
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	set, err := parse(p, b)
	if err != nil {
		t.Fatalf("%s: %v", rel, err)
	}
	checkSet(t, set, nil)
	return set
}

func ts(s string) *time.Time {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		panic(err)
	}
	return &t
}

var (
	yes = records.Bool(true)
	no  = records.Bool(false)
)

func ms(v float64) *float64 { return records.Float(v) }

// sum adds as the parser does, left to right, so that float rounding
// agrees.
func sum(vs ...float64) *float64 {
	s := 0.0
	for _, v := range vs {
		s += v
	}
	return &s
}

func js(t testing.TB, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func noDetail(rs []records.Run) []records.Run {
	out := make([]records.Run, len(rs))
	for i, r := range rs {
		r.Detail = nil
		out[i] = r
	}
	return out
}

func compare(t *testing.T, what string, got, want any) {
	t.Helper()
	g, w := js(t, got), js(t, want)
	if g == w {
		return
	}
	var gl, wl []json.RawMessage
	if json.Unmarshal([]byte(g), &gl) == nil && json.Unmarshal([]byte(w), &wl) == nil {
		for i := range max(len(gl), len(wl)) {
			var a, b string
			if i < len(gl) {
				a = string(gl[i])
			}
			if i < len(wl) {
				b = string(wl[i])
			}
			if a != b {
				t.Errorf("%s[%d]:\n got %s\nwant %s", what, i, a, b)
			}
		}
		return
	}
	t.Errorf("%s:\n got %s\nwant %s", what, g, w)
}

func problems(set *records.Set) []string {
	var out []string
	for _, p := range set.Problems {
		out = append(out, strings.TrimSpace(fmt.Sprintf("%d %s", p.Line, p.Field)))
	}
	return out
}

// checkSet holds what every parse must (see the claudestrator package's).
func checkSet(t testing.TB, set *records.Set, err error) {
	t.Helper()
	if err != nil {
		var re *records.Error
		if !errors.As(err, &re) {
			t.Fatalf("error is %T, not *records.Error: %v", err, err)
		}
		if set != nil || re.Line < 1 || re.Field == "" {
			t.Fatalf("error %+v with set %v", re, set)
		}
		return
	}
	if set == nil {
		t.Fatal("nil set and nil error")
	}
	runs := map[string]records.Run{}
	for _, r := range set.Runs {
		if r.System != records.Orchestr8 || r.RunID == "" || r.Source == "" {
			t.Fatalf("run without system, id or source: %+v", r)
		}
		if _, dup := runs[r.RunID]; dup {
			t.Fatalf("run %q twice", r.RunID)
		}
		runs[r.RunID] = r
		if len(r.Detail) > 0 && !json.Valid(r.Detail) {
			t.Fatalf("run %q: Detail is not JSON: %s", r.RunID, r.Detail)
		}
	}
	type ak struct {
		run string
		n   int
	}
	attempts := map[ak]bool{}
	perRun := map[string]int{}
	for _, a := range set.Attempts {
		r, ok := runs[a.RunID]
		if !ok || r.Source != a.Source || a.Attempt < 1 || attempts[ak{a.RunID, a.Attempt}] {
			t.Fatalf("attempt of no run, or twice: %+v", a)
		}
		attempts[ak{a.RunID, a.Attempt}] = true
		perRun[a.RunID]++
	}
	for id, n := range perRun {
		if r := runs[id]; r.Attempts == nil || *r.Attempts != n {
			t.Fatalf("run %q has %d attempts, says %v", id, n, r.Attempts)
		}
	}
	seqs := map[string]bool{}
	for _, s := range set.Stages {
		key := fmt.Sprintf("%s\x00%d\x00%d", s.RunID, s.Attempt, s.Seq)
		if _, ok := runs[s.RunID]; !ok || s.Seq < 1 || s.Name == "" || !attempts[ak{s.RunID, s.Attempt}] || seqs[key] {
			t.Fatalf("stage of no attempt, or twice: %+v", s)
		}
		seqs[key] = true
	}
	for _, c := range set.Configs {
		if c.System != records.Orchestr8 || !json.Valid(c.JSON) {
			t.Fatalf("config: %+v", c)
		}
	}
	for _, p := range set.Problems {
		if p.Line < 1 || p.Msg == "" || p.Field == "" {
			t.Fatalf("problem: %+v", p)
		}
	}
}

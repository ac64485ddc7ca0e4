package claudestrator

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

// fixtures is the repository's claudestrator fixtures; real is the data
// copied from github.com/bladehstream/claudestrator, which tests read
// where it is and skip without.
const (
	fixtures = "../../testdata/claudestrator"
	real     = "../../../shared/testdata-external/claudestrator/.orchestrator"
)

func read(t testing.TB, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func readReal(t *testing.T, name string) (string, []byte) {
	t.Helper()
	p := filepath.Join(real, name)
	b, err := os.ReadFile(p)
	if err != nil {
		t.Skipf("real claudestrator data not present: %v", err)
	}
	return p, b
}

func parseFixture(t *testing.T, parse records.Parser, rel string) *records.Set {
	t.Helper()
	p := filepath.Join(fixtures, rel)
	set, err := parse(p, read(t, p))
	if err != nil {
		t.Fatalf("%s: %v", rel, err)
	}
	checkSet(t, set, nil)
	return set
}

func ts(s string) *time.Time {
	t, err := time.Parse(time.RFC3339, s)
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

// js renders records for comparison: pointers followed, times in UTC,
// Detail left out (tests check it on its own).
func js(t testing.TB, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func utc(p *time.Time) *time.Time {
	if p == nil {
		return nil
	}
	u := p.UTC()
	return &u
}

func normRuns(rs []records.Run) []records.Run {
	out := make([]records.Run, len(rs))
	for i, r := range rs {
		r.Detail = nil
		r.StartedAt, r.FinishedAt = utc(r.StartedAt), utc(r.FinishedAt)
		out[i] = r
	}
	return out
}

func normAttempts(as []records.Attempt) []records.Attempt {
	out := make([]records.Attempt, len(as))
	for i, a := range as {
		a.TS = utc(a.TS)
		out[i] = a
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

// problems renders problems as "line field".
func problems(set *records.Set) []string {
	var out []string
	for _, p := range set.Problems {
		out = append(out, strings.TrimSpace(fmt.Sprintf("%d %s", p.Line, p.Field)))
	}
	return out
}

// checkSet holds what every parse must: an error is a *records.Error with
// no set; a set's rows name their system, run and source, each run once;
// attempts and stages belong to a run of the set; Detail and configs are
// JSON.
func checkSet(t testing.TB, set *records.Set, err error) {
	t.Helper()
	if err != nil {
		var re *records.Error
		if !errors.As(err, &re) {
			t.Fatalf("error is %T, not *records.Error: %v", err, err)
		}
		if set != nil {
			t.Fatalf("error %v with a set", err)
		}
		if re.Line < 0 || re.Field == "" {
			t.Fatalf("error without line or field: %+v", re)
		}
		return
	}
	if set == nil {
		t.Fatal("nil set and nil error")
	}
	runs := map[string]records.Run{}
	for _, r := range set.Runs {
		if r.System != records.Claudestrator || r.RunID == "" || r.Source == "" {
			t.Fatalf("run without system, id or source: %+v", r)
		}
		if _, dup := runs[r.RunID]; dup {
			t.Fatalf("run %q twice", r.RunID)
		}
		runs[r.RunID] = r
		if len(r.Detail) > 0 && !json.Valid(r.Detail) {
			t.Fatalf("run %q: Detail is not JSON: %s", r.RunID, r.Detail)
		}
		if (r.Attempts != nil && *r.Attempts < 0) || (r.MaxAttempts != nil && *r.MaxAttempts < 1) {
			t.Fatalf("run %q: attempts %v of %v", r.RunID, r.Attempts, r.MaxAttempts)
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
		if !ok || r.Source != a.Source || a.System != r.System || a.Attempt < 1 {
			t.Fatalf("attempt of no run of the set: %+v", a)
		}
		if attempts[ak{a.RunID, a.Attempt}] {
			t.Fatalf("attempt %d of %q twice", a.Attempt, a.RunID)
		}
		attempts[ak{a.RunID, a.Attempt}] = true
		perRun[a.RunID]++
	}
	for id, n := range perRun {
		if r := runs[id]; r.Attempts == nil || *r.Attempts != n {
			t.Fatalf("run %q has %d attempts, says %v", id, n, r.Attempts)
		}
	}
	for _, s := range set.Stages {
		r, ok := runs[s.RunID]
		if !ok || r.Source != s.Source || s.Seq < 1 || s.Name == "" || !attempts[ak{s.RunID, s.Attempt}] {
			t.Fatalf("stage of no attempt of the set: %+v", s)
		}
	}
	for _, c := range set.Configs {
		if c.System != records.Claudestrator || !json.Valid(c.JSON) {
			t.Fatalf("config: %+v", c)
		}
	}
	for _, p := range set.Problems {
		if p.Line < 0 || p.Msg == "" {
			t.Fatalf("problem: %+v", p)
		}
	}
}

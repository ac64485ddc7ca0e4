// Package recordstest holds what every record parser's tests check: the
// invariants of the records contract, and a readable comparison.
package recordstest

import (
	"encoding/json"
	"errors"
	"fmt"
	"testing"

	"github.com/orchstat/orchstat/model/records"
)

// Rules are what a format promises beyond the contract.
type Rules struct {
	System string
	// MinLine is the least line an error or problem may name: 1 for
	// formats where every problem has a line, 0 where some concern the
	// whole file.
	MinLine int
	// ProblemField requires every problem to name its field.
	ProblemField bool
}

// Check holds what every parse must: an error is a *records.Error with no
// set; a set's rows name their system, run and source, each run once;
// attempts and stages belong to a run of the set, each once; a run's
// attempt count agrees with its attempts; Detail and configs are JSON.
func Check(t testing.TB, rules Rules, set *records.Set, err error) {
	t.Helper()
	if err != nil {
		var re *records.Error
		if !errors.As(err, &re) {
			t.Fatalf("error is %T, not *records.Error: %v", err, err)
		}
		if set != nil || re.Line < rules.MinLine || re.Field == "" {
			t.Fatalf("error %+v with set %v", re, set)
		}
		return
	}
	if set == nil {
		t.Fatal("nil set and nil error")
	}
	runs := map[string]records.Run{}
	for _, r := range set.Runs {
		if r.System != rules.System || r.RunID == "" || r.Source == "" {
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
	seqs := map[string]bool{}
	for _, s := range set.Stages {
		r, ok := runs[s.RunID]
		key := fmt.Sprintf("%s\x00%d\x00%d", s.RunID, s.Attempt, s.Seq)
		if !ok || r.Source != s.Source || s.Seq < 1 || s.Name == "" || !attempts[ak{s.RunID, s.Attempt}] || seqs[key] {
			t.Fatalf("stage of no attempt of the set, or twice: %+v", s)
		}
		seqs[key] = true
	}
	for _, c := range set.Configs {
		if c.System != rules.System || !json.Valid(c.JSON) {
			t.Fatalf("config: %+v", c)
		}
	}
	for _, p := range set.Problems {
		if p.Line < rules.MinLine || p.Msg == "" || rules.ProblemField && p.Field == "" {
			t.Fatalf("problem: %+v", p)
		}
	}
}

// JSON is v as compact JSON.
func JSON(t testing.TB, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// Compare reports where got and want differ as JSON, element by element
// when both are lists.
func Compare(t testing.TB, what string, got, want any) {
	t.Helper()
	g, w := JSON(t, got), JSON(t, want)
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

package otlp

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/orchstat/orchstat/model/records"
	"github.com/orchstat/orchstat/model/records/recordstest"
)

// base is the fixtures' time zero, 2024-11-07T17:20:00Z.
var base = time.Unix(1731000000, 0).UTC()

// at is base plus ms milliseconds.
func at(ms float64) *time.Time {
	t := base.Add(time.Duration(ms * float64(time.Millisecond)))
	return &t
}

func f(v float64) *float64 { return records.Float(v) }
func n(v int) *int         { return records.Int(v) }

var (
	yes = records.Bool(true)
	no  = records.Bool(false)
)

func parseFixture(t *testing.T, name string) (*records.Set, stats) {
	t.Helper()
	p := filepath.Join("testdata", name)
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	set, st, err := parse(b)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	checkSet(t, set, nil)
	return set, st
}

// checkSet holds the records contract, and what calls promise: ids
// unique, each call's run in the set, attempts known exactly when there
// is evidence, and every attempt row belonging to a call that counts at
// least as many.
func checkSet(t testing.TB, set *records.Set, err error) {
	t.Helper()
	recordstest.Check(t, recordstest.Rules{System: records.OTel, MinLine: 1, ProblemField: true}, set, err)
	if err != nil {
		return
	}
	runs := map[string]bool{}
	for _, r := range set.Runs {
		runs[r.RunID] = true
	}
	calls := map[string]records.Call{}
	for _, c := range set.Calls {
		if _, dup := calls[c.CallID]; dup || c.CallID == "" || c.System != records.OTel || !runs[c.RunID] || c.Line < 1 {
			t.Fatalf("call twice, without id, or of no run: %+v", c)
		}
		if (c.Attempts == nil) != (c.Evidence == records.EvidenceNone) || c.Attempts != nil && *c.Attempts < 1 {
			t.Fatalf("call %s: attempts %v with evidence %q", c.CallID, c.Attempts, c.Evidence)
		}
		calls[c.CallID] = c
	}
	per := map[string]int{}
	for _, a := range set.CallAttempts {
		c, ok := calls[a.CallID]
		per[a.CallID]++
		if !ok || c.RunID != a.RunID || c.Source != a.Source || a.Attempt != per[a.CallID] || *c.Attempts < a.Attempt {
			t.Fatalf("attempt of no call, or out of order: %+v", a)
		}
	}
}

// problems renders problems as "line field".
func problems(set *records.Set) []string {
	var out []string
	for _, p := range set.Problems {
		out = append(out, strings.TrimSpace(fmt.Sprintf("%d %s", p.Line, p.Field)))
	}
	return out
}

func compare(t *testing.T, what string, got, want any) {
	t.Helper()
	recordstest.Compare(t, what, got, want)
}

// detail is a run's Detail as a string, and the run without it.
func detail(r records.Run) (records.Run, string) {
	d := string(r.Detail)
	r.Detail = nil
	return r, d
}

package orchestr8

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

func noDetail(rs []records.Run) []records.Run {
	out := make([]records.Run, len(rs))
	for i, r := range rs {
		r.Detail = nil
		out[i] = r
	}
	return out
}

func problems(set *records.Set) []string {
	var out []string
	for _, p := range set.Problems {
		out = append(out, strings.TrimSpace(fmt.Sprintf("%d %s", p.Line, p.Field)))
	}
	return out
}

func checkSet(t testing.TB, set *records.Set, err error) {
	t.Helper()
	recordstest.Check(t, recordstest.Rules{System: records.Orchestr8, MinLine: 1, ProblemField: true}, set, err)
}

func compare(t *testing.T, what string, got, want any) {
	t.Helper()
	recordstest.Compare(t, what, got, want)
}

func js(t testing.TB, v any) string { return recordstest.JSON(t, v) }

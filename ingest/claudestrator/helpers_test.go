package claudestrator

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

// problems renders problems as "line field".
func problems(set *records.Set) []string {
	var out []string
	for _, p := range set.Problems {
		out = append(out, strings.TrimSpace(fmt.Sprintf("%d %s", p.Line, p.Field)))
	}
	return out
}

func checkSet(t testing.TB, set *records.Set, err error) {
	t.Helper()
	recordstest.Check(t, recordstest.Rules{System: records.Claudestrator, MinLine: 0, ProblemField: false}, set, err)
}

func compare(t *testing.T, what string, got, want any) {
	t.Helper()
	recordstest.Compare(t, what, got, want)
}

func js(t testing.TB, v any) string { return recordstest.JSON(t, v) }

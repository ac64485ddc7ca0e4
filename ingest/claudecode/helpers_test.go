package claudecode

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

const session = "3f6a2c1e-8b4d-4e2a-9c7f-1a2b3c4d5e6f"

// subagentFixture is the sub-agent file, in the layout current versions use.
var subagentFixture = filepath.Join(session, "subagents", "agent-a4f2e91.jsonl")

func readFixture(t testing.TB, name string) (string, []byte) {
	t.Helper()
	p := filepath.Join("testdata", name)
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return p, b
}

// parseFixture parses a fixture under a path like the one Claude Code
// writes, and checks the set's invariants.
func parseFixture(t *testing.T, name string) (*records.Set, tally) {
	t.Helper()
	_, b := readFixture(t, name)
	path := "/home/dev/.claude/projects/-home-dev-shop/" + name
	if !strings.Contains(name, "/") {
		path = "/home/dev/.claude/projects/-home-dev-shop/" + session + ".jsonl"
	}
	set, tl, err := parse(path, b)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	checkSet(t, set, nil)
	return set, tl
}

// checkSet holds the records contract, and what it says of calls: each
// call once, named and of this system; attempts belong to a call that
// counts them, each once, numbered from 1 up to the call's count.
func checkSet(t testing.TB, set *records.Set, err error) {
	t.Helper()
	recordstest.Check(t, recordstest.Rules{System: records.ClaudeCode, MinLine: 1, ProblemField: false}, set, err)
	if err != nil {
		return
	}
	calls := map[string]records.Call{}
	for _, c := range set.Calls {
		if c.System != records.ClaudeCode || c.CallID == "" || c.RunID == "" || c.Source != Source || c.Line < 1 {
			t.Fatalf("bad call %+v", c)
		}
		if _, dup := calls[c.CallID]; dup {
			t.Fatalf("call %q twice", c.CallID)
		}
		if (c.Attempts == nil) != (c.Evidence == records.EvidenceNone) || c.Success == nil {
			t.Fatalf("call %q: attempts %v evidence %q success %v", c.CallID, c.Attempts, c.Evidence, c.Success)
		}
		calls[c.CallID] = c
	}
	seen := map[string]bool{}
	for _, a := range set.CallAttempts {
		c, ok := calls[a.CallID]
		key := fmt.Sprintf("%s/%d", a.CallID, a.Attempt)
		if !ok || a.RunID != c.RunID || a.Attempt < 1 || c.Attempts == nil || a.Attempt > *c.Attempts || seen[key] {
			t.Fatalf("attempt of no call, or twice: %+v", a)
		}
		seen[key] = true
	}
	for _, p := range set.Problems {
		if len(p.Msg) > 2*maxExcerpt {
			t.Fatalf("problem message too long: %d bytes", len(p.Msg))
		}
	}
}

func f(p *float64) string {
	if p == nil {
		return "-"
	}
	return strings.TrimSuffix(strings.TrimRight(fmt.Sprintf("%.3f", *p), "0"), ".")
}

func i(p *int) string {
	if p == nil {
		return "-"
	}
	return fmt.Sprint(*p)
}

func b(p *bool) string {
	switch {
	case p == nil:
		return "?"
	case *p:
		return "ok"
	}
	return "FAIL"
}

func clock(t *time.Time) string {
	if t == nil {
		return "-"
	}
	if t.Location() != time.UTC {
		return "not-UTC"
	}
	return t.Format("15:04:05.000")
}

// callLine renders a call's fields on one line, for exact comparisons.
// in= is everything the model read: the uncached input and the cache's
// reads and writes, which the call keeps apart (TestCacheTokensApart).
func callLine(c records.Call) string {
	return fmt.Sprintf("%s L%d %s %s %s %s att=%s/%s backoff=%s in=%s out=%s status=%s type=%s err=%q",
		c.CallID, c.Line, clock(c.TS), c.Provider, c.Model, b(c.Success), i(c.Attempts), c.Evidence,
		f(c.BackoffMS), f(wholeInput(c.InputTokens, c.CacheReadTokens, c.CacheWriteTokens)), f(c.OutputTokens), i(c.StatusCode), c.ErrorType, c.Error)
}

func wholeInput(in, read, write *float64) *float64 {
	if in == nil {
		return nil
	}
	sum := *in
	for _, p := range []*float64{read, write} {
		if p != nil {
			sum += *p
		}
	}
	return &sum
}

func callLines(set *records.Set) []string {
	var out []string
	for _, c := range set.Calls {
		out = append(out, callLine(c))
	}
	return out
}

// attemptLines renders attempts as "call#n time result status backoff in out err".
func attemptLines(set *records.Set) []string {
	var out []string
	for _, a := range set.CallAttempts {
		out = append(out, fmt.Sprintf("%s#%d %s %s status=%s backoff=%s in=%s out=%s err=%q",
			a.CallID, a.Attempt, clock(a.TS), b(a.Success), i(a.StatusCode), f(a.BackoffMS),
			f(wholeInput(a.InputTokens, a.CacheReadTokens, a.CacheWriteTokens)), f(a.OutputTokens), a.Error))
	}
	return out
}

// runLine renders a run with its Detail.
func runLine(r records.Run) string {
	return fmt.Sprintf("%s item=%q batch=%s %s %s..%s dur=%s tokens=%s cost=%s %s",
		r.RunID, r.Item, r.Batch, r.Status, clock(r.StartedAt), clock(r.FinishedAt), f(r.DurationMS), f(r.Tokens), f(r.CostUSD), r.Detail)
}

func problemLines(set *records.Set) []string {
	var out []string
	for _, p := range set.Problems {
		out = append(out, fmt.Sprintf("%d@%d %s: %s", p.Line, p.Offset, p.Field, p.Msg))
	}
	return out
}

func compare(t *testing.T, what string, got, want any) {
	t.Helper()
	recordstest.Compare(t, what, got, want)
}

package codex

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/orchstat/orchstat/model/records"
	"github.com/orchstat/orchstat/model/records/recordstest"
)

// sessions is where the tests pretend the fixtures sit, so that file names
// carry session ids as Codex's do.
const sessions = "/home/u/.codex/sessions/2026/05/13/"

func read(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func ts(s string) *time.Time {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		panic(err)
	}
	t = t.UTC()
	return &t
}

var (
	yes = records.Bool(true)
	no  = records.Bool(false)
)

func num(v float64) *float64 { return records.Float(v) }

// check holds what every parse must: the records contract, and for calls,
// that each names the run, is in it once, and that its attempts agree
// with its evidence and attempt rows.
func check(t testing.TB, set *records.Set, err error) {
	t.Helper()
	recordstest.Check(t, recordstest.Rules{System: records.Codex, MinLine: 1}, set, err)
	if err != nil {
		return
	}
	if len(set.Runs) == 0 && len(set.Calls)+len(set.Problems) == 0 {
		return // an empty file
	}
	if len(set.Runs) != 1 {
		t.Fatalf("%d runs, want 1", len(set.Runs))
	}
	run := set.Runs[0]
	if run.Batch != run.RunID || run.Status != "unfinished" {
		t.Fatalf("run %+v", run)
	}
	ids := map[string]records.Call{}
	for _, c := range set.Calls {
		if c.System != records.Codex || c.RunID != run.RunID || c.Session != run.RunID || c.Source != Source || c.Line < 1 || c.TS == nil || c.Operation != "chat" {
			t.Fatalf("call %+v", c)
		}
		if _, dup := ids[c.CallID]; dup {
			t.Fatalf("call %q twice", c.CallID)
		}
		ids[c.CallID] = c
		switch {
		case c.Evidence == records.EvidenceNone && c.Attempts == nil:
		case c.Evidence == records.EvidenceTranscript && c.Attempts != nil && *c.Attempts >= 2:
		default:
			t.Fatalf("call %s: attempts %v, evidence %q", c.CallID, c.Attempts, c.Evidence)
		}
	}
	rows := map[string]int{}
	for _, a := range set.CallAttempts {
		c, ok := ids[a.CallID]
		if !ok || a.RunID != run.RunID || a.System != records.Codex || a.Source != Source || a.Attempt != rows[a.CallID]+1 || c.Attempts == nil || a.Attempt > *c.Attempts {
			t.Fatalf("attempt of no call, or out of order: %+v", a)
		}
		rows[a.CallID]++
	}
	for id, c := range ids {
		if c.Attempts != nil && rows[id] < *c.Attempts-1 {
			t.Fatalf("call %s: %d attempts, %d rows", id, *c.Attempts, rows[id])
		}
	}
}

func parse(t *testing.T, path, name string) *records.Set {
	t.Helper()
	set, err := ParseRollout(path, read(t, name))
	check(t, set, err)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return set
}

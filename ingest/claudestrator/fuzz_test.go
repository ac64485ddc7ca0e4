package claudestrator

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/orchstat/orchstat/model/records"
)

// seed adds every fixture and real file of a name to a fuzzer's corpus.
func seed(f *testing.F, name string) {
	paths, _ := filepath.Glob(filepath.Join(fixtures, "*", ".orchestrator", name))
	paths = append(paths, filepath.Join(real, name))
	for _, p := range paths {
		if b, err := os.ReadFile(p); err == nil {
			f.Add(b)
		}
	}
}

func fuzzParser(f *testing.F, name string, parse records.Parser) {
	seed(f, name)
	f.Fuzz(func(t *testing.T, b []byte) {
		set, err := parse("proj/.orchestrator/"+name, b)
		checkSet(t, set, err)
	})
}

func FuzzParseHistory(f *testing.F) {
	f.Add([]byte("run_id,task_id,loop,build_passed\nr,t,1,false\nr,t,1,true\n"))
	fuzzParser(f, "history.csv", ParseHistory)
}

func FuzzParseSessionState(f *testing.F) { fuzzParser(f, "session_state.md", ParseSessionState) }

func FuzzParseTaskQueue(f *testing.F) { fuzzParser(f, "task_queue.md", ParseTaskQueue) }

func FuzzParseIssueQueue(f *testing.F) {
	f.Add([]byte("## ISSUE-1\n| Retry-Count | 999999999999 |\n| Max-Retries | 99999999999999999999 |\n"))
	fuzzParser(f, "issue_queue.md", ParseIssueQueue)
}

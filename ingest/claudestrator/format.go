package claudestrator

import (
	"bytes"

	"github.com/orchstat/orchstat/model/records"
	"github.com/orchstat/orchstat/model/systems"
)

// Format is how claudestrator's record files are found and read.
var Format = records.Format{
	System: records.Claudestrator,
	Kinds: []records.Kind{
		{Name: systems.KindClaudeHistory, File: "history.csv", Parse: ParseHistory},
		{Name: systems.KindClaudeSession, File: "session_state.md", Parse: ParseSessionState},
		{Name: systems.KindClaudeTasks, File: "task_queue.md", Parse: ParseTaskQueue},
		{Name: systems.KindClaudeIssues, File: "issue_queue.md", Parse: ParseIssueQueue},
	},
	Home:  ".orchestrator",
	Guess: guess,
}

// guess names a claudestrator file by its extension and words; the task
// queue has none of its own, so it is what is left.
func guess(ext string, head []byte) (string, bool) {
	switch {
	case ext == ".csv":
		return systems.KindClaudeHistory, true
	case bytes.Contains(head, []byte("Retry-Count")) || bytes.Contains(head, []byte("Auto-Retry")):
		return systems.KindClaudeIssues, true
	case bytes.Contains(head, []byte("loop_count:")):
		return systems.KindClaudeSession, true
	default:
		return systems.KindClaudeTasks, true
	}
}

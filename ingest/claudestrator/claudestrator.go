// Package claudestrator reads claudestrator's records (its auto-retry
// among them): .orchestrator/history.csv, session_state.md, task_queue.md
// and issue_queue.md.
//
// Each file says something the others do not, and the attempt_runs view
// keeps one source per (system, run_id), so each file names its runs in a
// way of its own and only for what it knows best:
//
//   - history.csv (Source "history") knows every task that ran: the
//     analysis agent appends a row per task per loop from every report,
//     failures included (the auto-retry document, lines 26-28). Its runs are
//     "<run_id>/<task_id>".
//   - task_queue.md (Source "tasks") knows the tasks that have not run to
//     an end: pending, in progress, blocked. Completed and failed tasks are
//     left to history.csv, so a task is not counted twice. The queue names
//     no orchestrator run, and task ids (BUILD-001, TASK-001) repeat from
//     project to project, so its runs are "<project>/<task_id>", the
//     project being the directory that holds .orchestrator/.
//   - issue_queue.md (Source "issues") knows the auto-retry chain of each
//     issue: its retry count, limits and failure signatures. Its runs are
//     "<project>/<issue_id>". The loops that worked on an issue also ran
//     tasks, which history.csv counts as runs of their own: an issue and
//     its remediation tasks are two views of the same work.
//   - session_state.md knows the orchestrator run itself: its run_id, loop
//     count and total_auto_retries (the global cap's counter, auto-retry
//     line 128). A run of the records model is a task, not an orchestrator
//     run, so the session is kept as a records.Config rather than a Run
//     that would count as one more task.
package claudestrator

import (
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/orchstat/orchstat/model/records"
)

// Sources, as stored in the source columns.
const (
	srcHistory = "history"
	srcTasks   = "tasks"
	srcIssues  = "issues"
)

// maxExcerpt bounds failure text kept in an attempt's Error.
const maxExcerpt = 2000

// project names the project a record file belongs to: the directory that
// holds .orchestrator/, or the file's own directory when it is elsewhere.
func project(path string) string {
	if path == "" {
		return ""
	}
	dir := filepath.Dir(path)
	if filepath.Base(dir) == ".orchestrator" {
		dir = filepath.Dir(dir)
	}
	base := filepath.Base(dir)
	if base == "." || base == string(filepath.Separator) || base == ".orchestrator" {
		return ""
	}
	return base
}

// scoped prefixes an id with its project, when there is one.
func scoped(proj, id string) string {
	if proj == "" {
		return id
	}
	return proj + "/" + id
}

// parseBool reads the booleans the files hold. ok is false for text that
// is not a boolean; known is false for the values that say "no result"
// (N/A, null, empty), which are not errors.
func parseBool(s string) (v, known, ok bool) {
	switch strings.ToLower(strings.Trim(strings.TrimSpace(s), "`*")) {
	case "true", "yes", "pass", "passed", "y":
		return true, true, true
	case "false", "no", "fail", "failed", "n":
		return false, true, true
	case "", "n/a", "na", "null", "none", "nil", "-", "not_run", "not run", "skipped", "undefined":
		return false, false, true
	}
	return false, false, false
}

// maxCount bounds the counts the files hold (loops, retries, limits):
// auto-retry's limits are 10 and 15, and a count past this is a typo.
const maxCount = 1_000_000

// parseInt reads a non-negative count. Empty text is absent, not an error.
func parseInt(s string) (n int, present, ok bool) {
	s = strings.Trim(strings.TrimSpace(s), "`*")
	if s == "" || strings.EqualFold(s, "null") || s == "-" {
		return 0, false, true
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 || n > maxCount {
		return 0, true, false
	}
	return n, true, true
}

// excerpt cuts failure text to maxExcerpt bytes.
func excerpt(s string) string { return records.Excerpt(s, maxExcerpt) }

// statusWord normalises a status as the agents write it ("completed",
// "`in_progress`", "In Progress", "pending ✅") to one lower-case word.
func statusWord(s string) string {
	s = strings.ToLower(strings.TrimSpace(strings.Trim(strings.TrimSpace(s), "`*_")))
	for _, p := range []string{"in progress", "in-progress", "won't fix", "wont fix", "won't-fix"} {
		if strings.HasPrefix(s, p) {
			return strings.NewReplacer(" ", "_", "-", "_", "'", "").Replace(p)
		}
	}
	if f := strings.Fields(s); len(f) > 0 {
		s = f[0]
	}
	return strings.Trim(strings.ReplaceAll(s, "-", "_"), ".,;:!()[]`*")
}

// sortProblems puts a set's problems in file order.
func sortProblems(set *records.Set) {
	sort.SliceStable(set.Problems, func(i, j int) bool { return set.Problems[i].Line < set.Problems[j].Line })
}

// problem makes a records.Error for Set.Problems.
func problem(line int, field, msg string) records.Error {
	return records.Error{Line: line, Field: field, Msg: msg}
}

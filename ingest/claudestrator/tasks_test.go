package claudestrator

import (
	"encoding/json"
	"errors"
	"regexp"
	"strings"
	"testing"

	"github.com/orchstat/orchstat/model/records"
)

func TestParseTaskQueueWebshop(t *testing.T) {
	set := parseFixture(t, ParseTaskQueue, "webshop/.orchestrator/task_queue.md")
	run := func(id, status, verdict string) records.Run {
		return records.Run{System: records.Claudestrator, RunID: "webshop/" + id, Item: id, Source: "tasks", Status: status, Verdict: verdict}
	}
	// Tasks that have not begun are queued work, not runs; the verdict
	// keeps the queue's word.
	fromIssue := run("TASK-010", records.StatusQueued, "pending")
	fromIssue.MaxAttempts = records.Int(11)
	// TASK-001 and TASK-002 (completed) and TASK-003 (failed) are
	// history.csv's.
	compare(t, "runs", normRuns(set.Runs), []records.Run{
		run("TASK-005", "unfinished", "in_progress"),
		run("TASK-006", records.StatusQueued, "blocked"),
		run("TEST-UNIT-001", records.StatusQueued, "pending"),
		fromIssue,
	})
	if len(set.Attempts)+len(set.Stages)+len(set.Problems)+len(set.Configs) != 0 {
		t.Errorf("only runs expected: %+v", set)
	}
	var d struct {
		ID, Title, Section string
		Line               int
		Fields, Sections   map[string]string
	}
	if err := json.Unmarshal(set.Runs[0].Detail, &d); err != nil || d.Title != "Order History Page" || d.Section != "BUILD Tasks" ||
		d.Line != 30 || d.Fields["Description"] != "Lists a customer's past orders,\nwith reorder buttons." || d.Fields["Depends On"] != "[TASK-003]" {
		t.Errorf("TASK-005 detail: %s", set.Runs[0].Detail)
	}
	if err := json.Unmarshal(set.Runs[2].Detail, &d); err != nil || d.Sections["Steps"] != "1. Add items priced 0.105 and 0.115\n2. Compare the cart total" ||
		d.Fields["Expected Result"] != "0.22" {
		t.Errorf("TEST-UNIT-001 detail: %s", set.Runs[2].Detail)
	}
	if err := json.Unmarshal(set.Runs[3].Detail, &d); err != nil || d.Fields["Source Issue"] != "ISSUE-20260106-004" || d.Fields["Retry-Count"] != "1" {
		t.Errorf("TASK-010 detail: %s", set.Runs[3].Detail)
	}
}

func TestParseTaskQueueBroken(t *testing.T) {
	set := parseFixture(t, ParseTaskQueue, "broken/.orchestrator/task_queue.md")
	compare(t, "problems", problems(set), []string{"3 T-7.Status", "10 T-8", "18 T-9.Max-Retries"})
	if len(set.Runs) != 2 || set.Runs[0].RunID != "broken/T-8" || set.Runs[0].Status != records.StatusQueued ||
		set.Runs[1].RunID != "broken/T-9" || set.Runs[1].MaxAttempts != nil {
		t.Errorf("runs: %+v", normRuns(set.Runs))
	}
}

func TestParseTaskQueueEmptyAndNot(t *testing.T) {
	set := parseFixture(t, ParseTaskQueue, "fresh/.orchestrator/task_queue.md")
	if len(set.Runs)+len(set.Problems) != 0 {
		t.Errorf("a queue with no tasks: %+v", set)
	}
	for _, in := range []string{string(read(t, fixtures+"/not-records/.orchestrator/task_queue.md")), "", "\x00binary"} {
		set, err := ParseTaskQueue("task_queue.md", []byte(in))
		checkSet(t, set, err)
		var re *records.Error
		if !errors.As(err, &re) || re.Line != 1 || re.Field != "heading" {
			t.Errorf("%q: got %v", in, err)
		}
	}
}

// The real queue, counted here with a regular expression: its tasks that
// are not completed are its rows, and its pending ones are queued work.
func TestParseTaskQueueReal(t *testing.T) {
	p, b := readReal(t, "task_queue.md")
	set, err := ParseTaskQueue(p, b)
	checkSet(t, set, err)
	if err != nil {
		t.Fatal(err)
	}
	re := regexp.MustCompile(`(?m)^#{3,4} ([A-Z][A-Z0-9]*(?:-[A-Z0-9]+)*-\d+):[^\n]*\n(?:\*\*[^\n]*\n)*?\*\*Status:\*\* (\w+)`)
	want := map[string]string{}
	statuses := map[string]int{}
	for _, m := range re.FindAllStringSubmatch(string(b), -1) {
		statuses[m[2]]++
		if m[2] != "completed" {
			want["claudestrator/"+m[1]] = m[2]
		}
	}
	if statuses["completed"] != 17 || statuses["pending"] != 101 || strings.Count(string(b), "**Status:**") != 118 {
		t.Fatalf("the real queue is not the one this test counted: %v", statuses)
	}
	if len(set.Runs) != len(want) || len(set.Problems) != 0 {
		t.Fatalf("%d runs, want %d; problems %v", len(set.Runs), len(want), set.Problems)
	}
	for _, r := range set.Runs {
		if want[r.RunID] != r.Verdict || r.Status != records.StatusQueued || r.Source != "tasks" || !strings.HasSuffix(r.RunID, "/"+r.Item) {
			t.Errorf("run %+v", r)
		}
	}
}

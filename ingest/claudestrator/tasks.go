package claudestrator

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"

	"github.com/orchstat/orchstat/model/records"
)

// entryHeading is a task or issue heading: "BUILD-001: Title",
// "TEST-UNIT-001: Title", "TASK-T01", "ISSUE-20241213-001". An id has a
// dash and a digit, so section headings ("BUILD Tasks") are not entries.
var entryHeading = regexp.MustCompile(`^([A-Za-z][A-Za-z0-9_]*(?:-[A-Za-z0-9_]+)+)(?:\s*(?::|—|–|\s-\s)\s*(.*))?$`)

func entryID(text string) (id, title string, ok bool) {
	m := entryHeading.FindStringSubmatch(text)
	if m == nil || !strings.ContainsAny(m[1], "0123456789") {
		return "", "", false
	}
	return m[1], strings.TrimSpace(m[2]), true
}

// entry is a task or an issue as written: its heading, fields and, for
// issues, its sections ("### Summary", "**Details:**").
type entry struct {
	id, title, section string
	line, level        int
	fields             fields
	sections           map[string]string
	sectionOrder       []string
}

// readEntries collects the entries under headings whose id matches keep.
// An entry ends at a heading of its level or above, at the next entry, or
// at a "---" rule. Inside it, table rows and bold labels with one-line
// values are fields; deeper headings and bold labels with nothing after
// them start sections, whose text runs to the next label or heading.
func readEntries(lines []mdLine, keep func(id string) bool) (entries []*entry, headings []string) {
	var cur *entry
	// section is the section being read; label the bold-label field whose
	// value runs on to the next lines.
	section, label, outer := "", "", ""
	// headed is whether the section began with a heading: its bold labels
	// ("**Task:** TASK-005" under "### Failure Details") are its text.
	headed := false
	closeEntry := func() {
		if cur != nil {
			entries = append(entries, cur)
			cur = nil
		}
		section, label, headed = "", "", false
	}
	for _, l := range lines {
		if l.fence {
			if cur != nil && section != "" && !l.delim {
				cur.appendSection(section, l.text)
			}
			continue
		}
		if level, text, ok := heading(l.text); ok {
			headings = append(headings, text)
			if id, title, ok := entryID(text); ok && keep(id) {
				closeEntry()
				cur = &entry{id: id, title: title, section: outer, line: l.n, level: level}
				continue
			}
			if cur != nil && level > cur.level {
				section, label, headed = text, "", true
				cur.startSection(section)
				continue
			}
			closeEntry()
			outer = text
			continue
		}
		if cur == nil {
			continue
		}
		t := strings.TrimSpace(l.text)
		if strings.Trim(t, "-") == "" && len(t) >= 3 {
			closeEntry()
			continue
		}
		if k, v, ok := fieldRow(l.text); ok && !headed {
			cur.fields.add(k, v, l.n)
			label = ""
			continue
		}
		if _, ok := tableRow(l.text); ok && !headed {
			continue // a table's header or separator row
		}
		if k, v, ok := boldLabel(l.text); ok && !headed {
			if v == "" {
				section, label = k, ""
				cur.startSection(section)
			} else {
				cur.fields.add(k, v, l.n)
				section, label = "", k
			}
			continue
		}
		switch {
		case t == "":
		case section != "":
			cur.appendSection(section, l.text)
		case label != "":
			cur.fields.appendTo(label, l.text)
		}
	}
	closeEntry()
	return entries, headings
}

func (e *entry) startSection(name string) {
	if e.sections == nil {
		e.sections = map[string]string{}
	}
	if _, ok := e.sections[name]; !ok {
		e.sectionOrder = append(e.sectionOrder, name)
		e.sections[name] = ""
	}
}

func (e *entry) appendSection(name, text string) {
	e.startSection(name)
	if e.sections[name] == "" {
		e.sections[name] = text
	} else {
		e.sections[name] += "\n" + text
	}
}

// sectionText is the text of the first of the named sections, or bold
// labels written with their value on the same line, that has any.
func (e *entry) sectionText(names ...string) string {
	for _, n := range names {
		for _, s := range e.sectionOrder {
			if strings.EqualFold(s, n) && strings.TrimSpace(e.sections[s]) != "" {
				return strings.TrimSpace(e.sections[s])
			}
		}
		if v := e.fields.value(n); v != "" {
			return v
		}
	}
	return ""
}

// runStatus maps a task's or issue's status word to the records model's.
func runStatus(word string) string {
	switch word {
	case "completed", "complete", "done", "resolved", "fixed", "success", "passed":
		return "success"
	case "failed", "failure", "error":
		return "failure"
	case "in_progress", "running", "active", "accepted":
		return "unfinished"
	case "wont_fix", "cancelled", "canceled", "skipped", "aborted", "rejected":
		return "cancelled"
	}
	return word
}

// notStarted are the status words of a queued task that has not begun
// (statusWord's form). In progress, done, failed and cancelled tasks are
// not queued.
var notStarted = map[string]bool{"pending": true, "blocked": true, "queued": true, "todo": true, "ready": true,
	"not_started": true, "waiting": true, "open": true, "new": true}

// ParseTaskQueue reads .orchestrator/task_queue.md, in either of the
// shapes claudestrator writes: bold labels ("**Status:** pending", the
// real file) or a field table ("| Status | pending |", the decomposition
// agent's task format, RFC-001 in github.com/bladehstream/claudestrator).
// Only tasks that have not run to an end give runs; see the package
// comment. Those that have not begun are queued work (records.StatusQueued),
// which the report counts apart from runs.
func ParseTaskQueue(path string, b []byte) (*records.Set, error) {
	lines, err := mdLines(b, "heading")
	if err != nil {
		return nil, err
	}
	entries, headings := readEntries(lines, func(id string) bool { return true })
	if len(entries) == 0 && !anyContains(headings, "task") {
		return nil, &records.Error{Line: 1, Field: "heading", Msg: "no tasks and no task heading: not a claudestrator task_queue.md"}
	}
	proj := project(path)
	set := &records.Set{}
	seen := map[string]int{}
	for _, e := range entries {
		if first, dup := seen[e.id]; dup {
			set.Problems = append(set.Problems, problem(e.line, e.id, fmt.Sprintf("task %s again (first at line %d); skipped", e.id, first)))
			continue
		}
		seen[e.id] = e.line
		st, ok := e.fields.get("Status")
		word := statusWord(st.val)
		if !ok || word == "" {
			set.Problems = append(set.Problems, problem(e.line, e.id+".Status", "no status; task skipped"))
			continue
		}
		status := runStatus(word)
		if status == "success" || status == "failure" {
			continue // history.csv has its loops
		}
		if notStarted[word] {
			// Waiting work, not a run: counting it as one would make a
			// queue of 100 pending tasks look like 100 runs that did
			// nothing. The verdict keeps the queue's word.
			status = records.StatusQueued
		}
		run := records.Run{System: records.Claudestrator, RunID: scoped(proj, e.id), Item: e.id, Source: srcTasks,
			Status: status, Verdict: strings.TrimSpace(st.val)}
		if f, ok := e.fields.get("Max-Retries"); ok {
			if n, present, valid := parseInt(f.val); !valid {
				set.Problems = append(set.Problems, problem(f.line, e.id+".Max-Retries", fmt.Sprintf("%q is not a count", f.val)))
			} else if present {
				run.MaxAttempts = records.Int(n + 1)
			}
		}
		detail := map[string]any{"id": e.id, "title": e.title, "section": e.section, "line": e.line, "fields": e.fields.raw()}
		if len(e.sections) > 0 {
			detail["sections"] = e.sections
		}
		run.Detail, _ = json.Marshal(detail)
		set.Runs = append(set.Runs, run)
	}
	sortProblems(set)
	return set, nil
}

func anyContains(ss []string, sub string) bool {
	for _, s := range ss {
		if strings.Contains(strings.ToLower(s), sub) {
			return true
		}
	}
	return false
}

package claudestrator

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/orchstat/orchstat/model/failure"
	"github.com/orchstat/orchstat/model/records"
)

// issueDetail is an issue's Detail: its auto-retry fields typed, so that
// auto-retry's caps can be replayed from the store (per issue
// Max-Retries and Signature-Repeat-Count >= 3; the global cap is the
// session's total_auto_retries), and everything else as written.
type issueDetail struct {
	ID                   string            `json:"id"`
	Title                string            `json:"title,omitempty"`
	Line                 int               `json:"line"`
	Status               string            `json:"status,omitempty"`
	AutoRetry            *bool             `json:"auto_retry,omitempty"`
	RetryCount           *int              `json:"retry_count,omitempty"`
	MaxRetries           *int              `json:"max_retries,omitempty"`
	FailureSignature     string            `json:"failure_signature,omitempty"`
	PreviousSignatures   []string          `json:"previous_signatures,omitempty"`
	SignatureRepeatCount *int              `json:"signature_repeat_count,omitempty"`
	Halted               *bool             `json:"halted,omitempty"`
	HaltReason           string            `json:"halt_reason,omitempty"`
	Blocking             *bool             `json:"blocking,omitempty"`
	SourceTask           string            `json:"source_task,omitempty"`
	Loop                 *int              `json:"loop,omitempty"`
	Fields               map[string]string `json:"fields"`
	Sections             map[string]string `json:"sections,omitempty"`
}

// ParseIssueQueue reads .orchestrator/issue_queue.md: entries headed
// "## ISSUE-YYYYMMDD-NNN" (the auto-retry document, line 44) or "### ISSUE-..." (the
// queue template and the failure analysis agent), with a field table and
// sections ("### Summary", "**Summary:**").
//
// Each issue is a run whose attempts are rebuilt from its fields: the loop in
// which QA flagged it is attempt 1 and each auto-retry loop one more
// (Retry-Count is incremented as a retry loop starts, the auto-retry
// document, lines 134-136), so an issue has Retry-Count + 1 attempts. Every
// attempt but the last failed, or the issue would not have been retried; the
// last failed too unless the issue is complete (passed) or in progress (still
// running). Signatures come from the issue's own Failure-Signature and
// Previous-Signatures, as reconstructSignatures explains.
func ParseIssueQueue(path string, b []byte) (*records.Set, error) {
	lines, err := mdLines(b, "heading")
	if err != nil {
		return nil, err
	}
	isIssue := func(id string) bool { return strings.HasPrefix(strings.ToUpper(id), "ISSUE-") }
	entries, headings := readEntries(lines, isIssue)
	if len(entries) == 0 && !anyContains(headings, "issue") {
		return nil, &records.Error{Line: 1, Field: "heading", Msg: "no issues and no issue heading: not a claudestrator issue_queue.md"}
	}
	proj := project(path)
	set := &records.Set{}
	seen := map[string]int{}
	for _, e := range entries {
		if first, dup := seen[e.id]; dup {
			set.Problems = append(set.Problems, problem(e.line, e.id, fmt.Sprintf("issue %s again (first at line %d); skipped", e.id, first)))
			continue
		}
		seen[e.id] = e.line
		issueRun(set, proj, e)
	}
	sortProblems(set)
	return set, nil
}

func issueRun(set *records.Set, proj string, e *entry) {
	fr := issueFields{set: set, e: e}
	d, retryCount, rcOK := fr.detail()
	st, _ := e.fields.get("Status")
	run := records.Run{System: records.Claudestrator, RunID: scoped(proj, e.id), Item: e.id, Source: srcIssues,
		Status: runStatus(d.Status), Verdict: strings.TrimSpace(st.val)}
	if d.Halted != nil && *d.Halted {
		run.Status = "halted"
	}
	run.StartedAt = fr.when("Created")
	run.FinishedAt = fr.when("Completed", "Resolved", "Closed")
	if d.MaxRetries != nil {
		run.MaxAttempts = records.Int(*d.MaxRetries + 1)
	}

	// An issue with no auto-retry fields was never retried: it has no
	// attempts to count. One with Auto-Retry but no count is at 0.
	rc, hasCount := e.fields.get("Retry-Count")
	if rcOK && (hasCount || d.AutoRetry != nil) {
		retries := 0
		if retryCount != nil {
			retries = *retryCount
		}
		if retries > maxRebuilt {
			set.Problems = append(set.Problems, problem(rc.line, e.id+".Retry-Count",
				fmt.Sprintf("%d retries: more than %d, attempts not rebuilt", retries, maxRebuilt)))
		} else {
			issueAttempts(set, &run, e, d, retries)
		}
	}
	run.Detail, _ = json.Marshal(d)
	set.Runs = append(set.Runs, run)
}

// issueFields reads an issue's fields, reporting a value it cannot read as
// a problem.
type issueFields struct {
	set *records.Set
	e   *entry
}

func (r issueFields) bad(f field, what string) {
	r.set.Problems = append(r.set.Problems, problem(f.line, r.e.id+"."+f.key, fmt.Sprintf("%q is not %s", f.val, what)))
}

// detail reads the issue's auto-retry fields, and its Retry-Count with
// whether that was readable.
func (r issueFields) detail() (d issueDetail, retryCount *int, rcOK bool) {
	e := r.e
	d = issueDetail{ID: e.id, Title: e.title, Line: e.line, Fields: e.fields.raw(), Sections: e.sections}
	st, _ := e.fields.get("Status")
	d.Status = statusWord(st.val)
	d.AutoRetry = r.flag("Auto-Retry")
	retryCount, rcOK = r.count("Retry-Count")
	d.RetryCount = retryCount
	d.MaxRetries, _ = r.count("Max-Retries")
	d.SignatureRepeatCount, _ = r.count("Signature-Repeat-Count")
	d.Loop, _ = r.count("Loop")
	d.Halted = r.flag("Halted")
	d.Blocking = r.flag("Blocking")
	d.FailureSignature = cleanSignature(e.fields.value("Failure-Signature"))
	d.PreviousSignatures = signatureList(e.fields.value("Previous-Signatures"))
	d.HaltReason = e.fields.value("Halt-Reason")
	d.SourceTask = strings.Trim(e.fields.value("Source Task", "Source-Task"), "`*")
	return d, retryCount, rcOK
}

// count reads a whole number; nil when absent or empty, and false when
// unreadable.
func (r issueFields) count(name string) (*int, bool) {
	f, ok := r.e.fields.get(name)
	if !ok {
		return nil, true
	}
	n, present, valid := parseInt(f.val)
	if !valid {
		r.bad(f, "a count")
		return nil, false
	}
	if !present {
		return nil, true
	}
	return records.Int(n), true
}

// flag reads true or false; nil when absent or unknown.
func (r issueFields) flag(name string) *bool {
	f, ok := r.e.fields.get(name)
	if !ok {
		return nil
	}
	v, known, valid := parseBool(f.val)
	if !valid {
		r.bad(f, "true or false")
		return nil
	}
	if !known {
		return nil
	}
	return records.Bool(v)
}

// when reads the first of names the issue has as a time; nil when absent
// or empty.
func (r issueFields) when(names ...string) *time.Time {
	f, ok := r.e.fields.get(names...)
	if !ok || strings.TrimSpace(f.val) == "" || isNull(f.val) {
		return nil
	}
	t, ok := parseTime(f.val)
	if !ok {
		r.bad(f, "a time")
		return nil
	}
	return &t
}

// maxRebuilt bounds the attempts rebuilt for one issue, a hundred times
// auto-retry's Max-Retries.
const maxRebuilt = 1000

// issueAttempts rebuilds an issue's retries+1 attempts.
func issueAttempts(set *records.Set, run *records.Run, e *entry, d issueDetail, retries int) {
	n := retries + 1
	run.Attempts = records.Int(n)
	var last *bool // the last attempt: failed unless complete or running
	switch run.Status {
	case "success":
		last = records.Bool(true)
	case "unfinished":
	default:
		last = records.Bool(false)
	}
	failed := n
	if last == nil || *last {
		failed = n - 1
	}
	r := -1
	if d.SignatureRepeatCount != nil {
		r = *d.SignatureRepeatCount
	}
	sigs := reconstructSignatures(failed, d.PreviousSignatures, d.FailureSignature, r)
	stage := firstLine(e.sectionText("Verification Step", "Verification"))
	text := e.sectionText("Failure Details", "Error", "Evidence", "Root Cause Analysis", "Details", "Bugs Found")
	for i := 1; i <= n; i++ {
		a := records.Attempt{System: records.Claudestrator, RunID: run.RunID, Item: run.Item, Source: srcIssues, Attempt: i}
		if i == 1 {
			a.TS = run.StartedAt
		}
		if i <= failed {
			a.Passed = records.Bool(false)
			a.Signature = sigs[i-1]
			if i == failed {
				// Only the latest failure is described.
				a.Stage, a.Error = stage, excerpt(text)
				if a.Signature == "" && (stage != "" || text != "") {
					a.Signature = failure.Signature(stage, text)
				}
				if i == n {
					run.EndedStage = stage
				}
			}
		} else {
			a.Passed = last
			if i == n && run.FinishedAt != nil && i > 1 {
				a.TS = run.FinishedAt
			}
		}
		set.Attempts = append(set.Attempts, a)
	}
}

// reconstructSignatures gives the signatures of an issue's failed
// attempts, oldest first, from what the issue keeps. Claudestrator writes
// Previous-Signatures two ways:
//   - auto-retry (lines 161-165): a new signature pushes the old one onto
//     Previous-Signatures and resets Signature-Repeat-Count to 1, so the
//     list holds one entry per change and the last Signature-Repeat-Count
//     failures had the current signature;
//   - RFC-001 (docs/RFC-001-TDD-WORKFLOW-IMPROVEMENTS.md in the
//     claudestrator repository): each retry appends the current
//     signature, so the list holds one entry per retry, the failure that
//     triggered it.
//
// With one entry per retry the list is the history itself: it has as many
// entries as failed attempts (an issue in progress, whose latest failure
// was appended as its retry started), or one fewer (the latest failure is
// the current signature). A shorter list is auto-retry's: the last
// Signature-Repeat-Count attempts (at least one) get the current
// signature and the attempt before them the last previous one; earlier
// attempts are known only when each previous signature failed once.
// Unknown signatures are "".
func reconstructSignatures(failed int, prev []string, cur string, repeats int) []string {
	sigs := make([]string, max(failed, 0))
	switch {
	case failed <= 0:
		return sigs
	case len(prev) >= failed:
		copy(sigs, prev[len(prev)-failed:])
		if cur != "" {
			sigs[failed-1] = cur
		}
		return sigs
	case len(prev) == failed-1:
		copy(sigs, prev)
		sigs[failed-1] = cur
		return sigs
	}
	nCur := 0
	if cur != "" {
		nCur = min(max(repeats, 1), failed)
	}
	for i := failed - nCur; i < failed; i++ {
		sigs[i] = cur
	}
	rest := failed - nCur
	switch {
	case rest == 0 || len(prev) == 0:
	case len(prev) == rest:
		copy(sigs, prev)
	default:
		sigs[rest-1] = prev[len(prev)-1]
	}
	return sigs
}

// cleanSignature strips the markup around a signature and drops the
// templates' placeholders.
func cleanSignature(s string) string {
	s = strings.Trim(strings.TrimSpace(s), "`*\"' ")
	if s == "" || isNull(s) || strings.HasPrefix(s, "{") || strings.HasPrefix(s, "[") {
		return ""
	}
	return s
}

// signatureList reads Previous-Signatures: "[]", "[a, b]", `["a","b"]`.
func signatureList(s string) []string {
	s = strings.Trim(strings.TrimSpace(s), "`")
	var list []string
	if json.Unmarshal([]byte(s), &list) == nil {
		out := list[:0]
		for _, x := range list {
			if x = cleanSignature(x); x != "" {
				out = append(out, x)
			}
		}
		return out
	}
	s = strings.TrimSuffix(strings.TrimPrefix(s, "["), "]")
	var out []string
	for _, x := range strings.Split(s, ",") {
		if x = cleanSignature(x); x != "" {
			out = append(out, x)
		}
	}
	return out
}

// listMarker is a list item's bullet or number.
var listMarker = regexp.MustCompile(`^\s*(?:[-*+]|\d+[.)])\s+`)

// firstLine is a section's first line of text, without its list marker.
func firstLine(s string) string {
	for _, l := range strings.Split(s, "\n") {
		l = strings.TrimSpace(listMarker.ReplaceAllString(l, ""))
		if l != "" {
			return records.Cut(l, 200)
		}
	}
	return ""
}

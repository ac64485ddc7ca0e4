package claudestrator

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/orchstat/orchstat/model/failure"
	"github.com/orchstat/orchstat/model/records"
)

func TestParseIssueQueueWebshop(t *testing.T) {
	set := parseFixture(t, ParseIssueQueue, "webshop/.orchestrator/issue_queue.md")
	run := func(id, start, status, verdict string, n *int, ended string) records.Run {
		r := records.Run{System: records.Claudestrator, RunID: "webshop/" + id, Item: id, Source: "issues", StartedAt: ts(start),
			Status: status, Verdict: verdict, Attempts: n, EndedStage: ended}
		if n != nil {
			r.MaxAttempts = records.Int(11)
		}
		return r
	}
	done := run("ISSUE-20260105-001", "2026-01-05T09:45:00Z", "success", "complete", records.Int(3), "")
	done.FinishedAt = ts("2026-01-05T11:05:00Z")
	compare(t, "runs", normRuns(set.Runs), []records.Run{
		done,
		run("ISSUE-20260105-002", "2026-01-05T10:30:00Z", "halted", "pending", records.Int(4), "Step 2: npm run lint"),
		run("ISSUE-20260106-003", "2026-01-06T14:20:00Z", "pending", "pending", records.Int(11), ""),
		run("ISSUE-20260106-004", "2026-01-06T14:40:00Z", "unfinished", "in_progress", records.Int(2), ""),
		run("ISSUE-20260106-005", "2026-01-06T15:01:00Z", "unfinished", "accepted", nil, ""),
	})
	att := func(id string, n int, passed *bool, sig string) records.Attempt {
		return records.Attempt{System: records.Claudestrator, RunID: "webshop/" + id, Item: id, Source: "issues", Attempt: n,
			Passed: passed, Signature: sig}
	}
	var want []records.Attempt
	// Complete after two retries; Previous-Signatures holds one entry per
	// retry (RFC-001).
	a := att("ISSUE-20260105-001", 1, no, "92eb5ffee6ae2fec")
	a.TS = ts("2026-01-05T09:45:00Z")
	b := att("ISSUE-20260105-001", 2, no, "0cc175b9c0f1b6a8")
	b.Stage, b.Error = "Step 1: npm run build", "src/payments/stripe.ts(42,7): error TS2339: Property 'sessionId' does not exist on type 'Checkout'."
	c := att("ISSUE-20260105-001", 3, yes, "")
	c.TS = ts("2026-01-05T11:05:00Z")
	want = append(want, a, b, c)
	// Halted: one earlier signature, then the same failure three times
	// (the auto-retry document, lines 161-165).
	a = att("ISSUE-20260105-002", 1, no, "8277e0910d750195")
	a.TS = ts("2026-01-05T10:30:00Z")
	d := att("ISSUE-20260105-002", 4, no, "4a8a08f09d37b737")
	d.Stage, d.Error = "Step 2: npm run lint", "src/payments/webhook.ts:17:3  error  'event' is possibly 'undefined'  @typescript-eslint/no-unsafe-member-access"
	want = append(want, a, att("ISSUE-20260105-002", 2, no, "4a8a08f09d37b737"), att("ISSUE-20260105-002", 3, no, "4a8a08f09d37b737"), d)
	// Exhausted: ten retries, each after a different failure.
	prev := []string{"a87ff679a2f3e71d", "e4da3b7fbbce2345", "1679091c5a880faf", "8f14e45fceea167a", "c9f0f895fb98ab91",
		"45c48cce2e2d7fbd", "d3d9446802a44259", "6512bd43d9caa6e0", "c20ad4d76fe97759", "c51ce410c124a10e"}
	for i, s := range prev {
		a := att("ISSUE-20260106-003", i+1, no, s)
		if i == 0 {
			a.TS = ts("2026-01-06T14:20:00Z")
		}
		want = append(want, a)
	}
	e := att("ISSUE-20260106-003", 11, no, "c81e728d9d4c2f63")
	e.Error = "**Task:** TASK-005\n**Criteria Failed:** 1 of 4\n- **Renders on Safari 17**: blank page, TypeError: Intl.Segmenter is not a constructor"
	want = append(want, e)
	// In progress: the first retry is running.
	a = att("ISSUE-20260106-004", 1, no, "3c59dc048e885024")
	a.TS = ts("2026-01-06T14:40:00Z")
	a.Stage, a.Error = "Step 4: curl -i http://localhost:3000/checkout",
		"GET /checkout -> 500 Internal Server Error (TypeError: Cannot read properties of undefined (reading 'total'))"
	want = append(want, a, att("ISSUE-20260106-004", 2, nil, ""))
	compare(t, "attempts", normAttempts(set.Attempts), want)
	if len(set.Stages)+len(set.Problems)+len(set.Configs) != 0 {
		t.Errorf("stages %d, problems %v", len(set.Stages), set.Problems)
	}

	// The Detail keeps what a replay of auto-retry's caps needs.
	var det issueDetail
	if err := json.Unmarshal(set.Runs[1].Detail, &det); err != nil {
		t.Fatal(err)
	}
	if det.ID != "ISSUE-20260105-002" || *det.RetryCount != 3 || *det.MaxRetries != 10 || *det.SignatureRepeatCount != 3 || !*det.Halted ||
		*det.AutoRetry || det.FailureSignature != "4a8a08f09d37b737" || len(det.PreviousSignatures) != 1 || det.HaltReason != "Repeated identical failure (3x)" ||
		det.SourceTask != "TASK-003" || !*det.Blocking || det.Line != 74 || det.Fields["Priority"] != "critical" ||
		det.Sections["Summary"] != "Lint fails on the webhook handler" {
		t.Errorf("detail: %s", set.Runs[1].Detail)
	}
	if err := json.Unmarshal(set.Runs[4].Detail, &det); err != nil || det.Fields["Task Ref"] != "TASK-011" ||
		det.Fields["Summary"] != "Show estimated delivery dates in the cart" {
		t.Errorf("template-style detail: %s", set.Runs[4].Detail)
	}
}

func TestParseIssueQueueBroken(t *testing.T) {
	set := parseFixture(t, ParseIssueQueue, "broken/.orchestrator/issue_queue.md")
	compare(t, "problems", problems(set), []string{"8 ISSUE-20260301-001.Created", "10 ISSUE-20260301-001.Retry-Count",
		"12 ISSUE-20260301-001.Halted", "24 ISSUE-20260301-002.Signature-Repeat-Count", "29 ISSUE-20260301-001"})
	// An unreadable Retry-Count leaves the attempts unknown.
	if r := set.Runs[0]; r.Attempts != nil || *r.MaxAttempts != 11 || r.StartedAt != nil || r.Status != "pending" {
		t.Errorf("garbled issue: %+v", r)
	}
	text := "Error: ECONNREFUSED 127.0.0.1:5432"
	if n := len(set.Attempts); n != 3 || set.Attempts[2].Signature != failure.Signature("", text) || set.Attempts[2].Error != text ||
		set.Attempts[0].Signature != "" {
		t.Errorf("attempts: %+v", set.Attempts)
	}
}

func TestParseIssueQueueEmptyAndNot(t *testing.T) {
	// The template: its example entry is in a code fence.
	set := parseFixture(t, ParseIssueQueue, "fresh/.orchestrator/issue_queue.md")
	if len(set.Runs)+len(set.Problems) != 0 {
		t.Errorf("template: %+v", set)
	}
	for _, in := range []string{"", "# Notes\n\nnothing\n", "\xff\xfe", string(read(t, fixtures+"/not-records/.orchestrator/task_queue.md"))} {
		set, err := ParseIssueQueue("issue_queue.md", []byte(in))
		checkSet(t, set, err)
		var re *records.Error
		if !errors.As(err, &re) || re.Line != 1 || re.Field != "heading" {
			t.Errorf("%q: got %v", in, err)
		}
	}
}

func TestReconstructSignatures(t *testing.T) {
	for _, tc := range []struct {
		name    string
		failed  int
		prev    []string
		cur     string
		repeats int
		want    []string
	}{
		{"none failed", 0, []string{"a"}, "a", 1, []string{}},
		{"per retry, pending", 3, []string{"a", "b"}, "c", 1, []string{"a", "b", "c"}},
		{"per retry, in progress", 2, []string{"a", "b"}, "b", 1, []string{"a", "b"}},
		{"longer list", 1, []string{"a", "b", "c"}, "c", 1, []string{"c"}},
		{"seed, halted", 4, []string{"a"}, "b", 3, []string{"a", "b", "b", "b"}},
		{"seed, each once", 4, []string{"a", "b"}, "c", 2, []string{"a", "b", "c", "c"}},
		{"seed, runs unknown", 5, []string{"a"}, "b", 2, []string{"", "", "a", "b", "b"}},
		{"no count", 3, nil, "c", -1, []string{"", "", "c"}},
		{"count past attempts", 2, nil, "c", 5, []string{"c", "c"}},
		{"nothing known", 2, nil, "", 0, []string{"", ""}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			compare(t, "signatures", reconstructSignatures(tc.failed, tc.prev, tc.cur, tc.repeats), tc.want)
		})
	}
}

func TestSignatureList(t *testing.T) {
	for in, want := range map[string][]string{
		"[]": nil, "": nil, "[a1, b2]": {"a1", "b2"}, `["a1","b2"]`: {"a1", "b2"}, "`[a1]`": {"a1"}, "a1, `b2`": {"a1", "b2"},
		"[{generated}]": nil,
	} {
		if got := signatureList(in); js(t, got) != js(t, want) && !(len(got) == 0 && len(want) == 0) {
			t.Errorf("%q: %q, want %q", in, got, want)
		}
	}
}

package claudestrator

import (
	"encoding/csv"
	"encoding/json"
	"errors"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/orchstat/orchstat/model/failure"
	"github.com/orchstat/orchstat/model/records"
)

// gates is a loop's build, lint and tests results: T, F or - (N/A).
func stagesOf(run, task string, attempt int, gates string) []records.Stage {
	var out []records.Stage
	for i, name := range []string{"build", "lint", "tests"} {
		if i >= len(gates) || gates[i] == ' ' {
			continue
		}
		var p *bool
		switch gates[i] {
		case 'T':
			p = yes
		case 'F':
			p = no
		}
		out = append(out, records.Stage{System: records.Claudestrator, RunID: run + "/" + task, Item: task, Source: "history",
			Attempt: attempt, Seq: len(out) + 1, Name: name, Passed: p})
	}
	return out
}

func TestParseHistoryWebshop(t *testing.T) {
	set := parseFixture(t, ParseHistory, "webshop/.orchestrator/history.csv")
	const r1, r2 = "run-20260105-091500", "run-20260106-140000"
	run := func(batch, task, start, end, status string, n int, dur float64, ended string) records.Run {
		return records.Run{System: records.Claudestrator, RunID: batch + "/" + task, Item: task, Source: "history", Batch: batch,
			StartedAt: ts(start), FinishedAt: ts(end), Status: status, Attempts: records.Int(n), EndedStage: ended, DurationMS: ms(dur)}
	}
	compare(t, "runs", normRuns(set.Runs), []records.Run{
		run(r1, "TASK-001", "2026-01-05T09:16:00Z", "2026-01-05T09:31:00Z", "success", 1, 900000, ""),
		run(r1, "TASK-002", "2026-01-05T09:20:00Z", "2026-01-05T10:12:00Z", "success", 2, 1680000, ""),
		run(r1, "TASK-003", "2026-01-05T09:16:30Z", "2026-01-05T10:58:00Z", "failure", 3, 2160000, "lint"),
		run(r1, "TASK-004", "2026-01-05T10:20:00Z", "2026-01-05T10:25:00Z", "success", 1, 300000, ""),
		run(r2, "TASK-001", "2026-01-06T14:05:00Z", "2026-01-06T14:12:00Z", "success", 1, 420000, ""),
	})
	att := func(batch, task string, n int, at string, passed *bool, stage string, dur float64) records.Attempt {
		a := records.Attempt{System: records.Claudestrator, RunID: batch + "/" + task, Item: task, Source: "history", Attempt: n,
			TS: ts(at), Passed: passed, Stage: stage, DurationMS: ms(dur)}
		if stage != "" {
			a.Signature = failure.Signature(stage, "")
		}
		return a
	}
	compare(t, "attempts", normAttempts(set.Attempts), []records.Attempt{
		att(r1, "TASK-001", 1, "2026-01-05T09:31:00Z", yes, "", 900000),
		att(r1, "TASK-002", 1, "2026-01-05T09:40:00Z", no, "tests", 1200000),
		att(r1, "TASK-002", 2, "2026-01-05T10:12:00Z", yes, "", 480000),
		att(r1, "TASK-003", 1, "2026-01-05T09:26:30Z", no, "build", 600000),
		att(r1, "TASK-003", 2, "2026-01-05T10:20:00Z", no, "build", 720000),
		att(r1, "TASK-003", 3, "2026-01-05T10:58:00Z", no, "lint", 840000),
		att(r1, "TASK-004", 1, "2026-01-05T10:25:00Z", yes, "", 300000),
		att(r2, "TASK-001", 1, "2026-01-06T14:12:00Z", yes, "", 420000),
	})
	var want []records.Stage
	for _, s := range []struct {
		run, task string
		n         int
		gates     string
	}{
		{r1, "TASK-001", 1, "TTT"}, {r1, "TASK-002", 1, "T-F"}, {r1, "TASK-002", 2, "TTT"},
		{r1, "TASK-003", 1, "F--"}, {r1, "TASK-003", 2, "F--"}, {r1, "TASK-003", 3, "TFT"},
		{r1, "TASK-004", 1, "T-T"}, {r2, "TASK-001", 1, "TT-"},
	} {
		want = append(want, stagesOf(s.run, s.task, s.n, s.gates)...)
	}
	compare(t, "stages", set.Stages, want)
	if len(set.Problems) != 0 || len(set.Configs) != 0 {
		t.Errorf("problems %v, configs %d", set.Problems, len(set.Configs))
	}
	// The same failure twice has one signature: the build of TASK-003.
	if set.Attempts[3].Signature != set.Attempts[4].Signature || set.Attempts[4].Signature == set.Attempts[5].Signature {
		t.Error("signatures should repeat for the repeated build failure only")
	}
	var d struct {
		Loops []int               `json:"loops"`
		Rows  []map[string]any    `json:"rows"`
		Extra map[string]struct{} `json:"-"`
	}
	if err := json.Unmarshal(set.Runs[3].Detail, &d); err != nil || len(d.Loops) != 1 || d.Loops[0] != 2 ||
		len(d.Rows) != 1 || d.Rows[0]["model"] != "claude-haiku-4-5-20251001" || d.Rows[0]["line"] != float64(7) {
		t.Errorf("TASK-004 detail: %s (%v)", set.Runs[3].Detail, err)
	}
}

// A history written another way: byte order mark, CRLF, columns in
// another order and case, lint_passed missing, extra columns (failure
// text, tokens, cost), a quoted field over two lines, a zone offset.
func TestParseHistoryReordered(t *testing.T) {
	set := parseFixture(t, ParseHistory, "reordered/.orchestrator/history.csv")
	const batch = "run-20260201-080000"
	text1 := "FAIL src/api.test.ts > returns 404 for unknown id\r\nexpected 404, got 500"
	text2 := strings.Replace(text1, "500", "502", 1)
	// encoding/csv turns a quoted CRLF into LF.
	text1, text2 = strings.ReplaceAll(text1, "\r\n", "\n"), strings.ReplaceAll(text2, "\r\n", "\n")
	compare(t, "runs", normRuns(set.Runs), []records.Run{
		{System: records.Claudestrator, RunID: batch + "/API-7", Item: "API-7", Source: "history", Batch: batch,
			StartedAt: ts("2026-02-01T07:08:24.5Z"), FinishedAt: ts("2026-02-01T07:45:00Z"), Status: "success", Attempts: records.Int(3),
			DurationMS: ms(196500), Tokens: ms(101000), CostUSD: ms(0.63 + 0.57 + 0.31)},
		{System: records.Claudestrator, RunID: batch + "/UI-2", Item: "UI-2", Source: "history", Batch: batch,
			StartedAt: ts("2026-02-01T08:04:30Z"), FinishedAt: ts("2026-02-01T08:05:00Z"), Status: "success", Attempts: records.Int(1),
			DurationMS: ms(30000)},
	})
	sig := failure.Signature("tests", text1)
	if sig != failure.Signature("tests", text2) {
		t.Error("failures that differ only in a number should share a signature")
	}
	compare(t, "attempts", normAttempts(set.Attempts), []records.Attempt{
		{System: records.Claudestrator, RunID: batch + "/API-7", Item: "API-7", Source: "history", Attempt: 1, TS: ts("2026-02-01T07:10:00Z"),
			Passed: no, Stage: "tests", Error: text1, Signature: sig, DurationMS: ms(95500), Tokens: ms(42000), CostUSD: ms(0.63)},
		{System: records.Claudestrator, RunID: batch + "/API-7", Item: "API-7", Source: "history", Attempt: 2, TS: ts("2026-02-01T07:30:00Z"),
			Passed: no, Stage: "tests", Error: text2, Signature: sig, DurationMS: ms(61000), Tokens: ms(38000), CostUSD: ms(0.57)},
		{System: records.Claudestrator, RunID: batch + "/API-7", Item: "API-7", Source: "history", Attempt: 3, TS: ts("2026-02-01T07:45:00Z"),
			Passed: yes, DurationMS: ms(40000), Tokens: ms(21000), CostUSD: ms(0.31)},
		{System: records.Claudestrator, RunID: batch + "/UI-2", Item: "UI-2", Source: "history", Attempt: 1, TS: ts("2026-02-01T08:05:00Z"),
			Passed: yes, DurationMS: ms(30000)},
	})
	var want []records.Stage
	for _, s := range []struct {
		task  string
		n     int
		gates string
	}{{"API-7", 1, "T F"}, {"API-7", 2, "T F"}, {"API-7", 3, "T T"}, {"UI-2", 1, "T -"}} {
		want = append(want, stagesOf(batch, s.task, s.n, s.gates)...)
	}
	compare(t, "stages", set.Stages, want)
	if len(set.Problems) != 0 {
		t.Errorf("problems: %v", set.Problems)
	}
}

func TestParseHistoryBroken(t *testing.T) {
	set := parseFixture(t, ParseHistory, "broken/.orchestrator/history.csv")
	compare(t, "problems", problems(set), []string{
		"3 loop", "4 task_id", "5 duration_sec", "5 build_passed", "6 build_passed", "7 lint_passed", "7 timestamp", "8 loop", "10 run_id"})
	var ids []string
	for _, r := range set.Runs {
		ids = append(ids, r.RunID+":"+r.Status+":"+strconv.Itoa(*r.Attempts))
	}
	const b = "run-20260301-120000/"
	compare(t, "runs", ids, []string{b + "T-1:success:2", b + "T-3:failure:1", b + "T-5:success:1"})
	// Line 9 rewrote loop 2 of T-1, which line 8 had failed: the later
	// row stands.
	if a := set.Attempts[1]; a.RunID != b+"T-1" || a.Attempt != 2 || !*a.Passed || *a.DurationMS != 130000 {
		t.Errorf("T-1 loop 2: %+v", a)
	}
	// An unreadable gate is unknown; the others still decide.
	if st := set.Stages[6]; st.RunID != b+"T-3" || st.Name != "build" || st.Passed != nil {
		t.Errorf("T-3 build: %+v", st)
	}
	// A short row keeps the columns it has.
	if n := len(set.Stages); n != 10 || set.Stages[9].Name != "build" || set.Runs[2].StartedAt != nil {
		t.Errorf("T-5: %d stages, %+v", n, set.Runs[2])
	}
}

func TestParseHistoryNotHistory(t *testing.T) {
	for _, tc := range []struct {
		name, in, field string
		line            int
	}{
		{"empty", "", "run_id", 1},
		{"json", string(read(t, fixtures+"/not-records/.orchestrator/history.csv")), "run_id", 1},
		{"no task column", "run_id,loop\nr,1\n", "task_id", 1},
		{"other csv", "name,age\nann,3\n", "run_id", 1},
		{"binary", "\x00\x01\x02,\xff\n", "run_id", 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			set, err := ParseHistory("history.csv", []byte(tc.in))
			checkSet(t, set, err)
			var re *records.Error
			if !errors.As(err, &re) || re.Line != tc.line || re.Field != tc.field {
				t.Fatalf("got %v, want line %d field %s", err, tc.line, tc.field)
			}
		})
	}
	// A header alone is a history with nothing in it yet.
	set, err := ParseHistory("history.csv", []byte("run_id,timestamp,task_id,loop\n"))
	if err != nil || len(set.Runs) != 0 {
		t.Errorf("header only: %v, %+v", err, set)
	}
}

// The real history, counted here with encoding/csv alone.
func TestParseHistoryReal(t *testing.T) {
	p, b := readReal(t, "history.csv")
	set, err := ParseHistory(p, b)
	checkSet(t, set, err)
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	col := map[string]int{}
	for i, h := range rows[0] {
		col[h] = i
	}
	runs := map[string]bool{}
	passed, dur := 0, 0.0
	for _, r := range rows[1:] {
		runs[r[col["run_id"]]+"/"+r[col["task_id"]]] = true
		if r[col["build_passed"]] != "false" && r[col["lint_passed"]] != "false" && r[col["tests_passed"]] != "false" {
			passed++
		}
		d, _ := strconv.ParseFloat(r[col["duration_sec"]], 64)
		dur += d * 1000
	}
	gotPassed, gotDur := 0, 0.0
	for _, a := range set.Attempts {
		if *a.Passed {
			gotPassed++
		}
		gotDur += *a.DurationMS
	}
	if len(set.Runs) != len(runs) || len(set.Attempts) != len(rows)-1 || len(set.Stages) != 3*(len(rows)-1) ||
		gotPassed != passed || gotDur != dur || len(set.Problems) != 0 {
		t.Errorf("runs %d (want %d), attempts %d (want %d), stages %d, passed %d (want %d), duration %v (want %v), problems %v",
			len(set.Runs), len(runs), len(set.Attempts), len(rows)-1, len(set.Stages), gotPassed, passed, gotDur, dur, set.Problems)
	}
	for _, r := range set.Runs {
		if !runs[r.RunID] || r.Batch != strings.SplitN(r.RunID, "/", 2)[0] || r.Status != "success" {
			t.Errorf("run %+v", r)
		}
	}
	// "null" in lint_passed and tests_passed is no result, like N/A.
	unknown := 0
	for _, s := range set.Stages {
		if s.Passed == nil {
			unknown++
		}
	}
	want := strings.Count(string(b), ",N/A") + strings.Count(string(b), ",null")
	if unknown != want {
		t.Errorf("%d stages with no result, want %d", unknown, want)
	}
}

package factory_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/orchstat/orchstat/ingest/factory"
	"github.com/orchstat/orchstat/model/failure"
	"github.com/orchstat/orchstat/model/records"
)

const fixtures = "../../testdata/factory"

// runLine and attemptLine render records compactly, so a table can list
// what a file must yield.
func runLine(r records.Run) string {
	return fmt.Sprintf("%s item=%s src=%s batch=%s status=%s verdict=%s attempts=%s max=%s ended=%s start=%s end=%s",
		r.RunID, r.Item, r.Source, r.Batch, r.Status, r.Verdict, intText(r.Attempts), intText(r.MaxAttempts), r.EndedStage,
		timeText(r.StartedAt), timeText(r.FinishedAt))
}

func attemptLine(a records.Attempt) string {
	sig := "-"
	if a.Signature != "" {
		sig = a.Signature[:8]
	}
	return fmt.Sprintf("#%d passed=%s stage=%s class=%s exit=%s cmd=%q err=%q sig=%s ts=%s",
		a.Attempt, boolText(a.Passed), a.Stage, a.Class, intText(a.ExitCode), a.Command, a.Error, sig, timeText(a.TS))
}

func stageLine(s records.Stage) string {
	return fmt.Sprintf("#%d.%d %s passed=%s exit=%s cmd=%q ms=%s", s.Attempt, s.Seq, s.Name, boolText(s.Passed),
		intText(s.ExitCode), s.Command, floatText(s.DurationMS))
}

func problemLine(e records.Error) string { return e.Error() }

func intText(p *int) string {
	if p == nil {
		return "nil"
	}
	return fmt.Sprint(*p)
}

func floatText(p *float64) string {
	if p == nil {
		return "nil"
	}
	return fmt.Sprint(*p)
}

func boolText(p *bool) string {
	if p == nil {
		return "nil"
	}
	return fmt.Sprint(*p)
}

func timeText(p *time.Time) string {
	if p == nil {
		return "nil"
	}
	return p.UTC().Format(time.RFC3339Nano)
}

func sig(stage, excerpt string) string { return failure.Signature(stage, excerpt)[:8] }

type want struct {
	err      string // the *records.Error's text, when the file is refused
	runs     []string
	attempts []string
	stages   []string // checked when not nil
	problems []string
}

func TestParsers(t *testing.T) {
	pre := "PLANNER-CONTRACT BUG: precondition file_exists failed: src/a.py does not exist. This is a plan-level error."
	tests := []struct {
		file  string
		parse records.Parser
		want  want
	}{
		{"audit/artifacts/f1-preflight/run_summary.json", factory.ParseSummary, want{
			runs: []string{"f1-preflight item=WO-01 src=run_summary batch= status=failure verdict=FAIL attempts=3 max=3 ended=preflight start=2026-03-01T10:00:00Z end=2026-03-01T10:00:09Z"},
			attempts: []string{
				`#1 passed=false stage=preflight class=preflight exit=nil cmd="" err="` + pre + `" sig=` + sig("preflight", pre) + ` ts=nil`,
				`#2 passed=false stage=preflight class=preflight exit=nil cmd="" err="` + pre + `" sig=` + sig("preflight", pre) + ` ts=nil`,
				`#3 passed=false stage=preflight class=preflight exit=nil cmd="" err="` + pre + `" sig=` + sig("preflight", pre) + ` ts=nil`,
			},
			stages: []string{"#1.1 write passed=false exit=nil cmd=\"\" ms=nil", "#2.1 write passed=false exit=nil cmd=\"\" ms=nil",
				"#3.1 write passed=false exit=nil cmd=\"\" ms=nil"},
		}},
		// The write factory's shape: no times, total_attempts,
		// max_attempts only in the run's config.
		{"audit/artifacts/f2-exceptions/run_summary.json", factory.ParseSummary, want{
			runs: []string{"f2-exceptions item=WO-02 src=run_summary batch= status=success verdict=PASS attempts=3 max=5 ended= start=nil end=nil"},
			attempts: []string{
				`#1 passed=false stage=exception class=exception exit=nil cmd="" err="Error code: 429 - {'error': {'message': 'Rate limit reached for gpt-4o', 'type': 'requests'}}" sig=` +
					sig("exception", "Error code: 429 - {'error': {'message': 'Rate limit reached for gpt-4o', 'type': 'requests'}}") + ` ts=nil`,
				`#2 passed=false stage=exception class=exception exit=nil cmd="" err="OPENAI_API_KEY environment variable is not set. Set it before running the factory harness." sig=` +
					sig("exception", "OPENAI_API_KEY environment variable is not set. Set it before running the factory harness.") + ` ts=nil`,
				`#3 passed=true stage= class= exit=nil cmd="" err="" sig=- ts=nil`,
			},
			stages: []string{
				`#1.1 write passed=false exit=nil cmd="" ms=nil`,
				`#2.1 write passed=false exit=nil cmd="" ms=nil`,
				`#3.1 write passed=true exit=nil cmd="" ms=nil`,
				`#3.2 verify passed=true exit=0 cmd="bash scripts/verify.sh" ms=500`,
				`#3.3 acceptance passed=true exit=0 cmd="python -m pytest tests/test_a.py -q" ms=250`,
			},
		}},
		// T2: the excerpt lost the [TIMEOUT] marker; the command result
		// kept it.
		{"audit/artifacts/t2-timeout/run_summary.json", factory.ParseSummary, want{
			runs: []string{"t2-timeout item=WO-05 src=run_summary batch= status=success verdict=PASS attempts=3 max=3 ended= start=2026-03-03T08:00:00Z end=2026-03-03T08:25:00Z"},
			attempts: []string{
				`#1 passed=false stage=verify_failed class=command_timeout exit=-1 cmd="bash scripts/verify.sh" err="[stderr]\nrunning 40 tests" sig=` +
					sig("verify_failed", "[stderr]\nrunning 40 tests") + ` ts=nil`,
				`#2 passed=false stage=verify_failed class=verify_failed exit=1 cmd="bash scripts/verify.sh" err="[stderr]\nFAILED tests/test_a.py::test_x - assert 1 == 2" sig=` +
					sig("verify_failed", "[stderr]\nFAILED tests/test_a.py::test_x - assert 1 == 2") + ` ts=nil`,
				`#3 passed=true stage= class= exit=nil cmd="" err="" sig=- ts=nil`,
			},
		}},
		// The patch factory, before ALLOWED_STAGES: patch_apply_failed,
		// apply_ok.
		{"audit/artifacts/old-patch/run_summary.json", factory.ParseSummary, want{
			runs: []string{"old-patch item=WO-06 src=run_summary batch= status=failure verdict=FAIL attempts=2 max=2 ended=patch_apply_failed start=2026-03-04T12:00:00Z end=2026-03-04T12:00:30Z"},
			attempts: []string{
				`#1 passed=false stage=patch_apply_failed class=patch_apply_failed exit=128 cmd="git apply --whitespace=nowarn /x/attempt_1/proposed_patch.diff" err="error: corrupt patch at line 10" sig=` +
					sig("patch_apply_failed", "error: corrupt patch at line 1") + ` ts=nil`,
				`#2 passed=false stage=patch_apply_failed class=patch_apply_failed exit=128 cmd="git apply --whitespace=nowarn /x/attempt_2/proposed_patch.diff" err="error: corrupt patch at line 12" sig=` +
					sig("patch_apply_failed", "error: corrupt patch at line 99") + ` ts=nil`,
			},
			stages: []string{`#1.1 apply passed=false exit=nil cmd="" ms=nil`, `#2.1 apply passed=false exit=nil cmd="" ms=nil`},
		}},
		// One broken attempt: the others are kept.
		{"audit/artifacts/broken-attempt/run_summary.json", factory.ParseSummary, want{
			runs: []string{"broken-attempt item=WO-07 src=run_summary batch= status=success verdict=PASS attempts=3 max=nil ended= start=nil end=nil"},
			attempts: []string{
				`#1 passed=false stage=verify_failed class=verify_failed exit=1 cmd="bash scripts/verify.sh" err="E   AssertionError" sig=` + sig("verify_failed", "E   AssertionError") + ` ts=nil`,
				`#3 passed=true stage= class= exit=nil cmd="" err="" sig=- ts=nil`,
			},
			problems: []string{"line 43: attempts[1].failure_brief.stage: want a string, got a number"},
		}},
		{"audit/artifacts/brief-only/attempt_2/failure_brief.json", factory.ParseBrief, want{
			runs: []string{"brief-only item= src=brief batch= status=unfinished verdict= attempts=nil max=nil ended= start=nil end=nil"},
			attempts: []string{`#2 passed=false stage=llm_output_invalid class=llm_output_invalid exit=nil cmd="" err="Parse error: Expecting value: line 1 column 1 (char 0)" sig=` +
				sig("llm_output_invalid", "Parse error: Expecting value: line 1 column 1 (char 0)") + ` ts=nil`},
		}},
		{"audit/runs/01FIXTUREPIPE00000000000000/events.jsonl", factory.ParseEvents, want{
			runs: []string{
				"01FIXTUREPIPE00000000000000/WO-01 item=WO-01 src=events batch=01FIXTUREPIPE00000000000000 status=success verdict=pass attempts=1 max=nil ended= start=2026-03-05T10:00:04Z end=2026-03-05T10:00:07Z",
				"01FIXTUREPIPE00000000000000/WO-02 item=WO-02 src=events batch=01FIXTUREPIPE00000000000000 status=failure verdict=fail attempts=2 max=nil ended=verify_failed start=2026-03-05T10:00:08Z end=2026-03-05T10:00:12Z",
			},
			attempts: []string{
				`#1 passed=true stage= class= exit=nil cmd="" err="" sig=- ts=2026-03-05T10:00:05Z`,
				`#1 passed=false stage= class=unknown exit=nil cmd="" err="" sig=- ts=2026-03-05T10:00:09Z`,
				`#2 passed=false stage=verify_failed class=verify_failed exit=nil cmd="" err="FAILED tests/test_b.py::test_y" sig=` +
					sig("verify_failed", "FAILED tests/test_b.py::test_y") + ` ts=2026-03-05T10:00:11Z`,
			},
			problems: []string{
				"line 11: not JSON: invalid character 'h' in literal true (expecting 'r')",
				"line 14: attempt: want an integer, got a string",
			},
		}},
		// meta.json repeats the events' work orders: checked, no rows.
		{"audit/runs/01FIXTUREPIPE00000000000000/meta.json", factory.ParseMeta, want{}},

		// Odd and partial records.
		{"odd/no-run-id/run_summary.json", factory.ParseSummary, want{
			runs: []string{"no-run-id item=WO-09 src=run_summary batch= status=failure verdict=FAIL attempts=2 max=4 ended=verify_failed start=nil end=nil"},
			attempts: []string{
				`#1 passed=false stage=verify_failed class=verify_failed exit=2 cmd="python -m pytest 'tests/it'\"'\"'s here.py'" err="no tests ran" sig=` + sig("verify_failed", "no tests ran") + ` ts=nil`,
				`#2 passed=nil stage= class= exit=nil cmd="" err="" sig=- ts=nil`,
			},
			stages: []string{`#1.1 verify passed=false exit=2 cmd="bash scripts/verify.sh" ms=250`},
		}},
		{"odd/dup-attempt/run_summary.json", factory.ParseSummary, want{
			runs: []string{"dup-attempt item=WO-10 src=run_summary batch= status=failure verdict=FAIL attempts=2 max=nil ended=stale_context start=nil end=nil"},
			attempts: []string{`#1 passed=false stage=stale_context class=stale_context exit=nil cmd="" err="Hash mismatch for src/a.py" sig=` +
				sig("stale_context", "Hash mismatch for src/a.py") + ` ts=nil`},
			problems: []string{"line 17: attempts[1].attempt_index: attempt 1 appears twice; the first is kept"},
		}},
		{"odd/wrong-verdict/run_summary.json", factory.ParseSummary, want{err: "line 4: verdict: want a string, got a number"}},
		{"odd/nested/run_summary.json", factory.ParseSummary, want{
			runs:     []string{"nested item=WO-11 src=run_summary batch= status=success verdict=PASS attempts=2 max=nil ended= start=nil end=nil"},
			attempts: []string{`#2 passed=true stage= class= exit=nil cmd="" err="" sig=- ts=nil`},
			stages:   []string{`#2.1 write passed=true exit=nil cmd="" ms=nil`, `#2.2 verify passed=true exit=0 cmd="bash scripts/verify.sh" ms=100`},
			problems: []string{"line 20: attempts[0].verify[0].exit_code: want an integer, got a string"},
		}},
		{"odd/truncated/run_summary.json", factory.ParseSummary, want{err: "line 5: not JSON: unexpected end of input"}},
		// The newest factory's emergency summary: verdict ERROR, no attempts.
		{"odd/emergency/run_summary.json", factory.ParseSummary, want{
			runs: []string{"01JEMERGENCY0000000000000 item=WO-12 src=run_summary batch= status=error verdict=ERROR attempts=0 max=5 ended= start=nil end=nil"},
		}},
		{"odd/brief-not-in-attempt/failure_brief.json", factory.ParseBrief, want{
			err: "line 1: failure brief: cannot tell its attempt: it is not in an attempt_N directory (brief-not-in-attempt)"}},
		{"odd/brief-bad/attempt_3/failure_brief.json", factory.ParseBrief, want{err: "line 3: exit_code: want an integer, got a string"}},
		{"odd/runs/01ALLBAD/events.jsonl", factory.ParseEvents, want{err: "line 1: not JSON: invalid character 'o' in literal null (expecting 'u')"}},
		{"odd/runs/01ALLBAD/meta.json", factory.ParseMeta, want{err: "line 1: work_order_verdicts.WO-01: want a string, got a number"}},
		// A pipeline cut off mid-run, with a BOM and CRLF line ends. WO-01
		// passed: the pipeline went on to WO-02.
		{"odd/runs/01CRASH/events.jsonl", factory.ParseEvents, want{
			runs: []string{
				"01CRASH/WO-01 item=WO-01 src=events batch=01CRASH status=success verdict= attempts=1 max=nil ended= start=2026-03-06T10:00:01Z end=nil",
				"01CRASH/WO-02 item=WO-02 src=events batch=01CRASH status=unfinished verdict= attempts=2 max=nil ended= start=2026-03-06T10:00:04Z end=nil",
			},
			attempts: []string{
				`#1 passed=true stage= class= exit=nil cmd="" err="" sig=- ts=2026-03-06T10:00:02Z`,
				`#1 passed=false stage= class=unknown exit=nil cmd="" err="" sig=- ts=2026-03-06T10:00:05Z`,
				`#2 passed=nil stage= class= exit=nil cmd="" err="" sig=- ts=2026-03-06T10:00:06Z`,
			},
			problems: []string{`line 8: ts: not a timestamp: "yesterday"`},
		}},
		// pipeline.py writes no pass or fail per work order: the outcome
		// follows from the pipeline going on, and from its failure.
		{"odd/runs/01NOVERDICTS/events.jsonl", factory.ParseEvents, want{
			runs: []string{
				"01NOVERDICTS/WO-01 item=WO-01 src=events batch=01NOVERDICTS status=success verdict= attempts=nil max=nil ended= start=2026-03-07T10:00:01Z end=nil",
				"01NOVERDICTS/WO-02 item=WO-02 src=events batch=01NOVERDICTS status=failure verdict= attempts=nil max=nil ended= start=2026-03-07T10:00:09Z end=2026-03-07T10:00:20Z",
			},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			path := filepath.Join(fixtures, tt.file)
			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			set, err := tt.parse(path, b)
			if tt.want.err != "" {
				var re *records.Error
				if !errors.As(err, &re) {
					t.Fatalf("err = %v (%T), want *records.Error %q", err, err, tt.want.err)
				}
				if re.Error() != tt.want.err {
					t.Errorf("err = %q, want %q", re.Error(), tt.want.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			check(t, "runs", mapped(set.Runs, runLine), tt.want.runs)
			check(t, "attempts", mapped(set.Attempts, attemptLine), tt.want.attempts)
			if tt.want.stages != nil {
				check(t, "stages", mapped(set.Stages, stageLine), tt.want.stages)
			}
			check(t, "problems", mapped(set.Problems, problemLine), tt.want.problems)
		})
	}
}

func mapped[T any](xs []T, f func(T) string) []string {
	var out []string
	for _, x := range xs {
		out = append(out, f(x))
	}
	return out
}

func check(t *testing.T, what string, got, want []string) {
	t.Helper()
	if !slices.Equal(got, want) {
		t.Errorf("%s:\n got  %s\n want %s", what, strings.Join(got, "\n      "), strings.Join(want, "\n      "))
	}
}

// Every row a parser emits carries the system, and rows of one run agree
// on its id, item and source, so the views can join them.
func TestRowsAgree(t *testing.T) {
	err := filepath.WalkDir(fixtures, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		parse := parserFor(p)
		if parse == nil {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		set, perr := parse(p, b)
		if perr != nil {
			return nil
		}
		runs := map[string]records.Run{}
		for _, r := range set.Runs {
			if r.System != records.Factory || r.RunID == "" || r.Source == "" {
				t.Errorf("%s: run %+v", p, r)
			}
			runs[r.RunID] = r
		}
		for _, a := range set.Attempts {
			r, ok := runs[a.RunID]
			if !ok || a.System != r.System || a.Item != r.Item || a.Source != r.Source || a.Attempt < 1 {
				t.Errorf("%s: attempt %+v does not match its run", p, a)
			}
		}
		for _, s := range set.Stages {
			r, ok := runs[s.RunID]
			if !ok || s.System != r.System || s.Item != r.Item || s.Source != r.Source || s.Seq < 1 {
				t.Errorf("%s: stage %+v does not match its run", p, s)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func parserFor(p string) records.Parser {
	switch filepath.Base(p) {
	case "run_summary.json":
		return factory.ParseSummary
	case "failure_brief.json":
		return factory.ParseBrief
	case "events.jsonl":
		return factory.ParseEvents
	case "meta.json":
		return factory.ParseMeta
	}
	return nil
}

func TestRefused(t *testing.T) {
	tests := []struct {
		name  string
		parse records.Parser
		path  string
		in    string
		want  string
	}{
		{"summary empty", factory.ParseSummary, "r/run_summary.json", "", "line 1: empty"},
		{"summary array", factory.ParseSummary, "r/run_summary.json", "\n[1]", "line 2: run summary: want a JSON object, got an array"},
		{"summary trailing", factory.ParseSummary, "r/run_summary.json", `{"run_id": "x"} {}`, "line 1: data after the JSON value"},
		{"summary attempts not a list", factory.ParseSummary, "r/run_summary.json", "{\n\"attempts\": {}}", "line 2: attempts: want an array, got an object"},
		{"summary huge exit", factory.ParseSummary, "r/run_summary.json", `{"total_attempts": 1e10}`,
			"line 1: total_attempts: want an integer from -2147483648 to 2147483647, got 1e10"},
		{"summary no run id, no directory", factory.ParseSummary, "run_summary.json", `{"verdict": "PASS"}`,
			"line 1: run_id: missing, and the file's directory does not name the run"},
		{"summary bad time", factory.ParseSummary, "r/run_summary.json", `{"started_utc": "noon"}`, `line 1: started_utc: not a timestamp: "noon"`},
		{"summary deep", factory.ParseSummary, "r/run_summary.json", strings.Repeat("[", 20000), "line 1: nested too deep (more than 10000 levels)"},
		{"brief string", factory.ParseBrief, "r/attempt_1/failure_brief.json", `"x"`, "line 1: failure brief: want a JSON object, got a string"},
		{"brief attempt 0", factory.ParseBrief, "r/attempt_0/failure_brief.json", `{}`, "line 1: failure brief: attempt number out of range: 0"},
		{"brief no run dir", factory.ParseBrief, "attempt_1/failure_brief.json", `{}`, "line 1: failure brief: its attempt directory is not in a run directory"},
		{"events no pipeline", factory.ParseEvents, "events.jsonl", `{}`, "pipeline events: the file's directory does not name the pipeline"},
		{"meta no id", factory.ParseMeta, "p/meta.json", `{"status": "complete"}`, "line 1: pipeline_run_id: missing"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			set, err := tt.parse(tt.path, []byte(tt.in))
			var re *records.Error
			if !errors.As(err, &re) {
				t.Fatalf("got %v, %v; want *records.Error", set, err)
			}
			if re.Error() != tt.want {
				t.Errorf("err = %q, want %q", re.Error(), tt.want)
			}
		})
	}
}

// Extra keys are ignored and missing ones leave fields nil.
func TestPartial(t *testing.T) {
	set, err := factory.ParseSummary("x/r1/run_summary.json", []byte(`{"whatever": [1, {"a": null}], "attempts": [{}]}`))
	if err != nil {
		t.Fatal(err)
	}
	check(t, "runs", mapped(set.Runs, runLine), []string{"r1 item= src=run_summary batch= status= verdict= attempts=1 max=nil ended= start=nil end=nil"})
	check(t, "attempts", mapped(set.Attempts, attemptLine), []string{`#1 passed=nil stage= class= exit=nil cmd="" err="" sig=- ts=nil`})

	// A brief that records nothing has no signature: it is not known to
	// repeat anything.
	set, err = factory.ParseBrief("x/r2/attempt_4/failure_brief.json", []byte(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	check(t, "attempts", mapped(set.Attempts, attemptLine), []string{`#4 passed=false stage= class=unknown exit=nil cmd="" err="" sig=- ts=nil`})
}

package claudestrator

import (
	"errors"
	"testing"

	"github.com/orchstat/orchstat/model/records"
)

func TestParseSessionState(t *testing.T) {
	for _, tc := range []struct {
		name, rel, config string
		problems          []string
	}{
		{"webshop", "webshop/.orchestrator/session_state.md",
			`{"kind":"session_state","run_id":"run-20260106-140000","loop_count":4,"total_auto_retries":3,"auto_retry_enabled":true,` +
				`"last_retry_reason":"ISSUE-20260106-004: Checkout page returns 500","fields":{"auto_retry_enabled":"true",` +
				`"initial_prd_tasks_complete":"true","last_retry_reason":"ISSUE-20260106-004: Checkout page returns 500","loop_count":"4",` +
				`"run_id":"run-20260106-140000","source_type":"prd","total_auto_retries":"3"}}`, nil},
		{"broken", "broken/.orchestrator/session_state.md",
			`{"kind":"session_state","run_id":"run-20260301-120000","fields":{"auto_retry_enabled":"sometimes","loop_count":"many",` +
				`"run_id":"run-20260301-120000"}}`, []string{"2 loop_count", "3 auto_retry_enabled"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			set := parseFixture(t, ParseSessionState, tc.rel)
			if len(set.Runs)+len(set.Attempts)+len(set.Stages) != 0 || len(set.Configs) != 1 {
				t.Fatalf("want one config: %+v", set)
			}
			if got := string(set.Configs[0].JSON); got != tc.config {
				t.Errorf("config:\n got %s\nwant %s", got, tc.config)
			}
			compare(t, "problems", problems(set), tc.problems)
		})
	}
}

func TestParseSessionStateReal(t *testing.T) {
	p, b := readReal(t, "session_state.md")
	set, err := ParseSessionState(p, b)
	checkSet(t, set, err)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"kind":"session_state","run_id":"run-20251222-220437","loop_count":3,"fields":{"initial_prd_tasks_complete":"true",` +
		`"loop_count":"3","run_id":"run-20251222-220437","source_type":"external_spec"}}`
	if len(set.Configs) != 1 || string(set.Configs[0].JSON) != want || len(set.Problems) != 0 {
		t.Errorf("got %+v", set)
	}
}

func TestParseSessionStateNotSession(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		line     int
	}{
		{"template without run_id", string(read(t, fixtures+"/not-records/.orchestrator/session_state.md")), 1},
		{"empty", "", 1},
		{"prose", "Just some notes.\nNothing here.\n", 1},
		{"null run_id", "loop_count: 2\nrun_id: null\n", 2},
		{"binary", "run_id: \x00\x01", 1},
		{"fenced only", "```\nrun_id: r1\n```\n", 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			set, err := ParseSessionState("session_state.md", []byte(tc.in))
			checkSet(t, set, err)
			var re *records.Error
			if !errors.As(err, &re) || re.Line != tc.line || re.Field != "run_id" {
				t.Fatalf("got %v, want line %d field run_id", err, tc.line)
			}
		})
	}
	// Bold labels and tables read like key: value lines.
	set, err := ParseSessionState("s.md", []byte("**Run ID:** r9\n\n| Field | Value |\n|---|---|\n| total_auto_retries | 15 |\n"))
	if err != nil || len(set.Configs) != 1 || string(set.Configs[0].JSON) !=
		`{"kind":"session_state","run_id":"r9","total_auto_retries":15,"fields":{"Run ID":"r9","total_auto_retries":"15"}}` {
		t.Errorf("labels and tables: %v %+v", err, set)
	}
}

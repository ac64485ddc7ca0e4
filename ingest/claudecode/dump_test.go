package claudecode

import "testing"

func TestDump(t *testing.T) {
	for _, n := range []string{"clean.jsonl", "streaming.jsonl", "retry529.jsonl", "exhausted.jsonl", "network.jsonl", subagentFixture, "unknown.jsonl", "bad.jsonl"} {
		set, tl := parseFixture(t, n)
		t.Logf("== %s %+v", n, tl)
		for _, r := range set.Runs {
			t.Logf("run %s", runLine(r))
		}
		for _, l := range callLines(set) {
			t.Logf("call %s", l)
		}
		for _, l := range attemptLines(set) {
			t.Logf("att %s", l)
		}
		for _, l := range problemLines(set) {
			t.Logf("prob %s", l)
		}
	}
}

package runfile

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestParseSummary(t *testing.T) {
	current := `{"schemaVersion":1,"runId":"r1","command":["run"],"startedAt":"2026-01-29T17:48:11.416Z","finishedAt":"2026-01-29T17:50:11.416Z",
	"durationMs":120000,"status":"failure","stopReason":"non_improving","thinkLevel":"L2","escalated":true,
	"verification":{"enabled":true,"passed":false,"failedChecks":["tests","lint"]},
	"costs":{"perProvider":{"openai":{"inputTokens":10,"outputTokens":5,"totalTokens":15,"estimatedCostUsd":null},"anthropic":{"inputTokens":1,"outputTokens":2,"totalTokens":3,"estimatedCostUsd":0.25}},"totals":{"inputTokens":11,"outputTokens":7,"totalTokens":18,"estimatedCostUsd":0.25}},
	"l3":{"bestOfN":3,"candidatesGenerated":6,"candidatesEvaluated":6,"passingCandidateSelected":false,"reviewerInvoked":true,"judgeInvoked":true,"judgeInvocationReason":"no_passing_candidates"}}`
	s, err := ParseSummary([]byte(current))
	if err != nil {
		t.Fatal(err)
	}
	if *s.RunID != "r1" || *s.Status != "failure" || *s.StopReason != "non_improving" || !*s.Escalated || *s.DurationMs != 120000 ||
		s.StartedAt.Format("15:04:05") != "17:48:11" || *s.VerificationPassed || strings.Join(s.FailedChecks, ",") != "tests,lint" {
		t.Errorf("summary fields: %+v", s)
	}
	if len(s.Costs) != 2 || s.Costs[0].Provider != "anthropic" || *s.Costs[0].CostUSD != 0.25 || s.Costs[1].CostUSD != nil || *s.TotalTokens != 18 {
		t.Errorf("costs: %+v", s.Costs)
	}
	if s.L3 == nil || *s.L3.CandidatesGenerated != 6 || *s.L3.JudgeInvocationReason != "no_passing_candidates" {
		t.Errorf("l3: %+v", s.L3)
	}

	old, err := ParseSummary([]byte(`{"providers":{"mock-claude":{"inputTokens":24,"totalTokens":48,"estimatedCostUsd":null}},"total":{"totalTokens":48}}`))
	if err != nil || len(old.Costs) != 1 || *old.TotalTokens != 48 || old.Status != nil {
		t.Errorf("cost-only shape: %+v, %v", old, err)
	}
	numeric, err := ParseSummary([]byte(`{"thinkLevel":2,"verification":{"enabled":true,"passed":false,"failedChecks":3}}`))
	if err != nil || *numeric.ThinkLevel != "L2" || *numeric.FailedCheckCount != 3 || numeric.FailedChecks != nil {
		t.Errorf("run-summary.ts shape: %+v, %v", numeric, err)
	}
	odd, err := ParseSummary([]byte(`{"status":7,"escalated":"yes","durationMs":"12","startedAt":"soon","costs":[],"l3":null,"verification":{"failedChecks":[{"name":"x"},3]}}`))
	if err != nil || odd.Status != nil || odd.Escalated != nil || odd.DurationMs != nil || odd.StartedAt != nil || odd.L3 != nil || strings.Join(odd.FailedChecks, ",") != "x" {
		t.Errorf("odd shape should read as absent fields: %+v, %v", odd, err)
	}
}

func TestParseErrors(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"{\n  \"status\": \"ok\",\n  \"x\": ]\n}", "line 3, column 8"},
		{`[1,2]`, "not a JSON object"},
		{`null`, "not a JSON object"},
		{``, "not JSON"},
		{`{"a":1`, "not JSON"},
	} {
		_, err := ParseSummary([]byte(tc.in))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: got %v, want %q", tc.in, err, tc.want)
		}
	}
}

func TestVerification(t *testing.T) {
	for _, tc := range []struct {
		name, phase string
		iter        int64
	}{
		{"verification_report_initial.json", "initial", -1},
		{"verification_report_iter_3.json", "l2", 3},
		{"verification_iter_2_final.json", "l3_final", 2},
		{"verification_other.json", "other", -1},
	} {
		p, it := Phase("/x/" + tc.name)
		if p != tc.phase || (tc.iter < 0) != (it == nil) || (it != nil && *it != tc.iter) {
			t.Errorf("%s: %s %v", tc.name, p, it)
		}
	}
	v, err := ParseVerification("verification_report_iter_2.json", []byte(`{"passed":false,"checks":[{"name":"tests","command":"npm test","exitCode":1,"durationMs":5,"passed":false},{"name":"lint","passed":true},"junk"],"summary":"1 failed","failureSignature":"abc","failureSummary":"tests failed"}`))
	obj, _ := ParseVerification("verification_report_iter_1.json", []byte(`{"failureSummary":{"failedChecks":["tests"]}}`))
	if obj.FailureSummary == nil || *obj.FailureSummary != `{"failedChecks":["tests"]}` {
		t.Errorf("object failureSummary: %v", obj.FailureSummary)
	}
	if err != nil || *v.Passed || *v.FailureSignature != "abc" || strings.Join(v.FailedChecks, ",") != "tests" || len(v.Checks) != 2 || v.Phase != "l2" || *v.Iteration != 2 {
		t.Errorf("%+v %v", v, err)
	}
}

func TestRealSummaries(t *testing.T) {
	files, _ := filepath.Glob("../../../shared/testdata-external/orchestrator/runs/*/summary.json")
	if len(files) == 0 {
		t.Skip("../shared/testdata-external is absent")
	}
	for _, f := range files {
		b, _ := os.ReadFile(f)
		if _, err := ParseSummary(b); err != nil {
			t.Errorf("%s: %v", f, err)
		}
	}
}

func FuzzParse(f *testing.F) {
	f.Add([]byte(`{"costs":{"perProvider":{"a":{"inputTokens":1}}},"l3":{"bestOfN":3}}`), "summary.json")
	f.Add([]byte(`{"checks":[{"name":"t","passed":false}]}`), "verification_report_iter_1.json")
	f.Fuzz(func(t *testing.T, b []byte, name string) {
		_, _ = ParseSummary(b)
		_, _ = ParseVerification(name, b)
	})
}

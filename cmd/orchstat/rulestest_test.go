package main

import (
	"encoding/xml"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The shipped tests of the default rules pass, and cover every rule.
func TestRulesTestShipped(t *testing.T) {
	files, err := filepath.Glob("../../testdata/rules/*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no rule tests: %v", err)
	}
	all := ""
	for _, f := range files {
		b, _ := os.ReadFile(f)
		all += string(b)
	}
	for _, rule := range []string{"provider_retry_rate_high", "l2_escalation_rate_high", "avg_repair_iterations_high",
		"l3_diagnosis_rate_high", "provider_failure_rate_high", "run_failure_cascade", "candidate_validity_low"} {
		if !strings.Contains(all, "rule: "+rule+", state: firing") {
			t.Errorf("no rule test shows %s firing", rule)
		}
	}
	code, out, stderr := runCLI(t, "", append([]string{"rules", "test"}, files...)...)
	if code != 0 || strings.Contains(out, "FAIL") {
		t.Fatalf("exit %d:\n%s%s", code, out, stderr)
	}
}

const wrongTests = `tests:
  - name: right
    input:
      events:
        - {run: r1, at: "2026-11-21T11:00:00Z", type: RunFinished, payload: {status: failure}}
        - {run: r2, at: "2026-11-21T11:01:00Z", type: RunFinished, payload: {status: failure}}
        - {run: r3, at: "2026-11-21T12:01:00Z", type: RunFinished, payload: {status: failure}}
    evaluations:
      - at: "2026-11-21T12:00:00Z"
        alerts: []
      - at: "2026-11-21T12:05:00Z"
        rules: [run_failure_cascade]
        alerts: [{rule: run_failure_cascade, state: firing}]
  - name: wrong
    input:
      events:
        - {run: r1, at: "2026-11-21T11:00:00Z", type: RunFinished, payload: {status: failure}}
    evaluations:
      - at: "2026-11-21T12:00:00Z"
        alerts: [{rule: run_failure_cascade, state: firing, labels: {}}]
`

func writeTestFile(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "tests.yaml")
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// A wrong expectation fails with a diff naming the test and the time, and
// --junit records it.
func TestRulesTestFailureAndJUnit(t *testing.T) {
	p := writeTestFile(t, wrongTests)
	junit := filepath.Join(t.TempDir(), "junit.xml")
	code, out, stderr := runCLI(t, "", "rules", "test", "--junit", junit, p)
	if code != 1 {
		t.Fatalf("exit %d:\n%s%s", code, out, stderr)
	}
	for _, want := range []string{"FAIL " + p + ": wrong", "at 2026-11-21T12:00:00Z", "missing:    run_failure_cascade firing {}", "1 of 2 tests failed"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, ": right") {
		t.Errorf("the passing test is reported:\n%s", out)
	}
	b, err := os.ReadFile(junit)
	if err != nil {
		t.Fatal(err)
	}
	var x struct {
		Tests    int `xml:"tests,attr"`
		Failures int `xml:"failures,attr"`
		Suites   []struct {
			Name     string `xml:"name,attr"`
			Tests    int    `xml:"tests,attr"`
			Failures int    `xml:"failures,attr"`
			Cases    []struct {
				Name    string `xml:"name,attr"`
				Failure *struct {
					Message string `xml:"message,attr"`
					Text    string `xml:",chardata"`
				} `xml:"failure"`
			} `xml:"testcase"`
		} `xml:"testsuite"`
	}
	if err := xml.Unmarshal(b, &x); err != nil {
		t.Fatalf("%v:\n%s", err, b)
	}
	if x.Tests != 2 || x.Failures != 1 || len(x.Suites) != 1 || x.Suites[0].Name != p || x.Suites[0].Tests != 2 ||
		x.Suites[0].Failures != 1 || len(x.Suites[0].Cases) != 2 || x.Suites[0].Cases[0].Failure != nil ||
		x.Suites[0].Cases[1].Failure == nil || !strings.Contains(x.Suites[0].Cases[1].Failure.Text, "missing:") {
		t.Fatalf("junit:\n%s", b)
	}
}

// Unexpected alerts are shown too, and a traces directory works as input.
func TestRulesTestUnexpectedAndTraces(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "tests.yaml")
	os.WriteFile(p, []byte(`tests:
  - name: traces
    input: {traces: runs}
    evaluations:
      - at: "2026-11-21T12:00:00Z"
        alerts: []
`), 0o644)
	for i, s := range []string{"failure", "failure", "failure"} {
		d := filepath.Join(dir, "runs", "r"+string(rune('0'+i)))
		os.MkdirAll(d, 0o755)
		os.WriteFile(filepath.Join(d, "trace.jsonl"), []byte(`{"type":"RunFinished","schemaVersion":1,"timestamp":"2026-11-21T11:0`+string(rune('0'+i))+`:00Z","runId":"r`+string(rune('0'+i))+`","payload":{"status":"`+s+`"}}`+"\n"), 0o644)
	}
	code, out, stderr := runCLI(t, "", "rules", "test", p)
	if code != 1 || !strings.Contains(out, "unexpected: run_failure_cascade firing {}") {
		t.Fatalf("exit %d:\n%s%s", code, out, stderr)
	}
}

// Unreadable and invalid files, and no files, are usage errors (2).
func TestRulesTestInvalid(t *testing.T) {
	for _, tc := range []struct {
		name, body, want string
	}{
		{"yaml", "tests:\n  - name: x\n    bogus: 1\n", ":3:"},
		{"state", strings.Replace(wrongTests, "state: firing, labels", "state: burning, labels", 1), `state "burning"`},
		{"rule", strings.Replace(wrongTests, "rules: [run_failure_cascade]", "rules: [nope]", 1), `no rule named "nope"`},
		{"order", strings.Replace(wrongTests, `"2026-11-21T12:05:00Z"`, `"2026-11-21T11:05:00Z"`, 1), "before the evaluation before it"},
		{"rule file", "rule_files: [missing.yaml]\n" + wrongTests, "missing.yaml"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := writeTestFile(t, tc.body)
			code, _, stderr := runCLI(t, "", "rules", "test", p)
			if code != 2 || !strings.Contains(stderr, p) || !strings.Contains(stderr, tc.want) {
				t.Fatalf("exit %d: %s", code, stderr)
			}
		})
	}
	if code, _, stderr := runCLI(t, "", "rules", "test", filepath.Join(t.TempDir(), "none.yaml")); code != 2 {
		t.Fatalf("unreadable: exit %d: %s", code, stderr)
	}
	if code, _, _ := runCLI(t, "", "rules", "test"); code != 2 {
		t.Fatalf("no files: exit %d", code)
	}
}

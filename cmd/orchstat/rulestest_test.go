package main

import (
	"context"
	"encoding/xml"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/orchstat/orchstat/rules/ruletest"
)

// The shipped tests of the default rules pass, and cover every rule.
func TestRulesTestShipped(t *testing.T) {
	endToEnd(t, "runs rule tests against real stores")
	t.Parallel()
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
	endToEnd(t, "runs rule tests against real stores")
	t.Parallel()
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
	endToEnd(t, "runs rule tests against real stores")
	t.Parallel()
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
	t.Parallel()
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

// laughs defines a8, which stands for 10^9 strings.
var laughs = func() string {
	var b strings.Builder
	b.WriteString("a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n")
	for i := 1; i <= 8; i++ {
		fmt.Fprintf(&b, "a%d: &a%d [%s]\n", i, i, strings.TrimSuffix(strings.Repeat(fmt.Sprintf("*a%d, ", i-1), 10), ", "))
	}
	return b.String()
}()

// A rule test file is bounded as rule files are: deep nesting (20 KB and
// 200 KB of brackets, flow mappings in an event's payload), /dev/zero and
// a huge file are a usage error (2) naming the file and where, found in
// bounded memory; so are aliases that expand to a billion values. A rule
// file it names is bounded too.
func TestRulesTestHostileFiles(t *testing.T) {
	event := "tests:\n  - name: x\n    input:\n      events:\n        - {run: r1, at: \"2026-11-21T11:00:00Z\", type: RunStarted, payload: "
	cases := map[string]string{
		"/dev/zero": "/dev/zero: more than 1048576 bytes (1 MiB)",
	}
	for _, tc := range []struct{ body, want string }{
		{"tests: " + strings.Repeat("[", 10000) + strings.Repeat("]", 10000) + "\n", ":1:71: YAML: nested too deep: more than 64 levels"},
		{"tests: " + strings.Repeat("[", 100000) + strings.Repeat("]", 100000) + "\n", ":1:71: YAML: nested too deep"},
		{event + strings.Repeat("{a: ", 50000) + "1" + strings.Repeat("}", 50000) + "}\n", ":5:304: YAML: nested too deep"},
		{"tests: []\n# " + strings.Repeat("x", 4<<20) + "\n", ": 4194317 bytes, more than the 1048576 (1 MiB)"},
		{"rule_files: [nested.yaml]\n" + wrongTests, ": rule file nested.yaml: 1 problem in rule file:\n"},
		// A billion laughs: 4 GB and minutes in the decoder before.
		{laughs + strings.Replace(wrongTests, "rules: [run_failure_cascade]", "rules: *a8", 1),
			":6:10: YAML: the file expands (through aliases) to more than 200000 values"},
	} {
		p := writeTestFile(t, tc.body)
		os.WriteFile(filepath.Join(filepath.Dir(p), "nested.yaml"), []byte("rules: "+strings.Repeat("[", 100000)+"\n"), 0o644)
		cases[p] = p + tc.want
	}
	for p, want := range cases {
		var code int
		var stderr string
		bytes := allocatedBy(func() { code, _, stderr = runCLI(t, "", "rules", "test", p) })
		if code != 2 || !strings.Contains(stderr, want) {
			t.Errorf("%s: exit %d, stderr %.300q; want 2 and %q", p, code, stderr, want)
		}
		if bytes > 16<<20 {
			t.Errorf("%s: allocated %d bytes", p, bytes)
		}
	}
}

// TestRulesTestSharesStores: the tests share a store per worker, emptied
// between tests, instead of a new store (and schema) per test, which was
// most of the 9.4 s the 29 shipped tests took.
func TestRulesTestSharesStores(t *testing.T) {
	endToEnd(t, "runs rule tests against real stores")
	t.Parallel()
	files, _ := filepath.Glob("../../testdata/rules/*.yaml")
	var opened atomic.Int32
	d := defaultDeps()
	open := d.openTestStore
	d.openTestStore = func(ctx context.Context, path string) (ruletest.Store, error) {
		opened.Add(1)
		return open(ctx, path)
	}
	code, out, stderr := runCLIWith(t, fixedNow, d, "", append([]string{"rules", "test"}, files...)...)
	if code != 0 {
		t.Fatalf("exit %d:\n%s%s", code, out, stderr)
	}
	if n := int(opened.Load()); n == 0 || n > d.ruleTestWorkers {
		t.Errorf("%d stores opened for %d test files, want 1 to %d (one per worker)", n, len(files), d.ruleTestWorkers)
	}
}

// TestRulesTestIsolated: on a shared store, a test sees none of the
// events, alerts or state of the tests before it.
func TestRulesTestIsolated(t *testing.T) {
	endToEnd(t, "runs rule tests against real stores")
	t.Parallel()
	d := defaultDeps()
	d.ruleTestWorkers = 1
	var b strings.Builder
	b.WriteString("tests:\n")
	for i := range 3 {
		fmt.Fprintf(&b, `  - name: cascade %d
    input:
      events:
        - {run: a%d, at: "2026-11-21T11:00:00Z", type: RunFinished, payload: {status: failure}}
        - {run: b%d, at: "2026-11-21T11:01:00Z", type: RunFinished, payload: {status: failure}}
        - {run: c%d, at: "2026-11-21T11:02:00Z", type: RunFinished, payload: {status: failure}}
    evaluations:
      - at: "2026-11-21T12:00:00Z"
        rules: [run_failure_cascade]
        alerts: [{rule: run_failure_cascade, state: firing}]
  - name: quiet after cascade %d
    input:
      events:
        - {run: ok%d, at: "2026-11-21T11:00:00Z", type: RunFinished, payload: {status: success}}
    evaluations:
      - at: "2026-11-21T12:00:00Z"
        alerts: []
`, i, i, i, i, i, i)
	}
	code, out, stderr := runCLIWith(t, fixedNow, d, "", "rules", "test", writeTestFile(t, b.String()))
	if code != 0 || !strings.Contains(out, "6 tests, OK") {
		t.Fatalf("exit %d:\n%s%s", code, out, stderr)
	}
}

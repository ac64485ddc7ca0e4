package reference

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// line builds one trace line (with its "\n").
func line(typ, run, ts, payload string) string {
	return fmt.Sprintf(`{"type":%q,"schemaVersion":1,"timestamp":%q,"runId":%q,"payload":%s}`+"\n", typ, ts, run, payload)
}

func run(t *testing.T, f Filter, files ...string) *Result {
	t.Helper()
	var names []string
	var rs []io.Reader
	for i, s := range files {
		names = append(names, fmt.Sprintf("file%d", i))
		rs = append(rs, strings.NewReader(s))
	}
	res, err := ComputeReaders(names, rs, f)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// c is the expected Metric for a count, r for a ratio.
func c(v float64) Metric { return count(v) }
func r(num, den float64) Metric {
	return ratio(num, den)
}

func show(m Metric) string {
	p := func(x *float64) string {
		if x == nil {
			return "nil"
		}
		return fmt.Sprint(*x)
	}
	return fmt.Sprintf("value=%s num=%s den=%s", p(m.Value), p(m.Numerator), p(m.Denominator))
}

func checkMetrics(t *testing.T, got map[string]Metric, want map[string]Metric) {
	t.Helper()
	for name, w := range want {
		g, ok := got[name]
		if !ok {
			t.Errorf("%s: missing", name)
			continue
		}
		if show(g) != show(w) {
			t.Errorf("%s: got %s, want %s", name, show(g), show(w))
		}
	}
}

var allMetrics = []string{
	"runs", "provider_requests", "provider_retry_rate", "provider_failure_rate",
	"provider_retries_total", "l2_runs", "l2_escalation_rate", "avg_repair_iterations",
	"l3_steps", "l3_diagnosis_rate", "diagnoses_per_l3_run", "judge_invocations_per_l3_run",
	"candidate_validity_rate", "failed_runs",
}

const (
	day1 = "2026-01-29T10:00:00.000Z"
	day2 = "2026-01-30T09:00:00.000Z"
)

// fullTrace exercises every metric over three runs.
var fullTrace = "" +
	// Run A, starts on day 1.
	line("RunStarted", "A", day1, `{"taskId":"A","goal":"g"}`) +
	line("ProviderRequestStarted", "A", day1, `{"provider":"anthropic","model":"claude"}`) +
	line("ProviderRequestFinished", "A", day1, `{"provider":"anthropic","success":true,"retries":0}`) +
	line("ProviderRequestFinished", "A", day1, `{"provider":"anthropic","success":false,"retries":3}`) +
	line("ProviderRequestFinished", "A", day1, `{"provider":"openai","success":"false","retries":"2"}`) + // neither a number nor false
	line("IterationStarted", "A", day1, `{"iteration":1,"goal":"g"}`) +
	line("RepairAttempted", "A", day1, `{"iteration":1,"patchPath":"p"}`) +
	line("IterationStarted", "A", day1, `{"iteration":2,"goal":"g"}`) +
	line("RepairAttempted", "A", day1, `{"iteration":2,"patchPath":"p"}`) +
	line("RunEscalated", "A", day1, `{"from":"L2","to":"L3","reason":"non_improving"}`) +
	line("CandidateGenerated", "A", day1, `{"iteration":0,"candidateIndex":0,"valid":true}`) +
	line("CandidateGenerated", "A", day1, `{"iteration":0,"candidateIndex":1,"valid":true}`) +
	line("CandidateGenerated", "A", day1, `{"iteration":0,"candidateIndex":2,"valid":"true"}`) + // not boolean true
	line("CandidateGenerated", "A", day1, `{"iteration":1,"candidateIndex":0,"valid":false}`) +
	line("DiagnosisStarted", "A", day1, `{"iteration":1,"reason":"r"}`) +
	line("DiagnosisStarted", "A", day1, `{"iteration":1.0,"reason":"r"}`) + // same step as 1
	line("JudgeInvoked", "A", day1, `{"iteration":0,"reason":"objective_near_tie","candidateCount":3}`) +
	// Run B, starts on day 2.
	line("ProviderRequestFinished", "B", day2, `{"provider":"anthropic","success":true,"retries":1}`) +
	line("IterationStarted", "B", day2, `{"iteration":1,"goal":"g"}`) +
	line("RepairAttempted", "B", day2, `{"iteration":"3","patchPath":"p"}`) + // not a number: B does not qualify
	line("RunEscalated", "B", day2, `{"from":"L1","to":"L2"}`) +
	// Run C, starts on day 2; escalated from L2 without an IterationStarted.
	line("RunEscalated", "C", day2, `{"from":"L2","to":"L3"}`) +
	line("RepairAttempted", "C", day2, `{"iteration":4,"patchPath":"p"}`) +
	line("CandidateGenerated", "C", day2, `{"candidateIndex":0,"valid":true}`) + // null iteration
	line("CandidateGenerated", "C", day2, `{"iteration":null,"candidateIndex":1,"valid":true}`) // same null step

func TestMetricsFullTrace(t *testing.T) {
	res := run(t, Filter{}, fullTrace)
	if res.Events != 25 || res.Quarantined != 0 {
		t.Fatalf("events %d quarantined %d, want 25 and 0", res.Events, res.Quarantined)
	}
	checkMetrics(t, res.Metrics, map[string]Metric{
		"runs":                         c(3),    // A, B, C
		"provider_requests":            c(4),    // A: 3, B: 1
		"provider_retry_rate":          r(2, 4), // A retries 3, B retries 1
		"provider_failure_rate":        r(1, 4), // A's success:false only
		"provider_retries_total":       c(4),    // 0 + 3 + 1 ("2" is a string)
		"l2_runs":                      c(2),    // A, B
		"l2_escalation_rate":           r(2, 3), // {A, C} / {A, B} ∪ {A, C}
		"avg_repair_iterations":        r(6, 2), // A max 2, C max 4; B has no numeric iteration
		"l3_steps":                     c(3),    // (A,0) (A,1) (C,null)
		"l3_diagnosis_rate":            r(1, 3), // (A,1)
		"diagnoses_per_l3_run":         r(2, 2), // 2 DiagnosisStarted / {A, C}
		"judge_invocations_per_l3_run": r(1, 2),
		"candidate_validity_rate":      r(4, 6), // A: 2 of 4, C: 2 of 2
	})
	for _, name := range allMetrics {
		if _, ok := res.Metrics[name]; !ok {
			t.Errorf("metric %s missing", name)
		}
	}
	if len(res.Metrics) != len(allMetrics) {
		t.Errorf("got %d metrics, want %d", len(res.Metrics), len(allMetrics))
	}

	// By day: A on the 29th; B and C on the 30th.
	if len(res.ByDay) != 2 {
		t.Fatalf("ByDay has %d days, want 2", len(res.ByDay))
	}
	checkMetrics(t, res.ByDay["2026-01-29"], map[string]Metric{
		"runs":                  c(1),
		"provider_requests":     c(3),
		"provider_retry_rate":   r(1, 3),
		"l2_escalation_rate":    r(1, 1),
		"avg_repair_iterations": r(2, 1),
		"l3_steps":              c(2),
		"l3_diagnosis_rate":     r(1, 2),
	})
	checkMetrics(t, res.ByDay["2026-01-30"], map[string]Metric{
		"runs":                         c(2),
		"provider_requests":            c(1),
		"provider_retry_rate":          r(1, 1),
		"provider_retries_total":       c(1),
		"l2_runs":                      c(1),    // B
		"l2_escalation_rate":           r(1, 2), // {C} / {B, C}
		"avg_repair_iterations":        r(4, 1), // C
		"l3_steps":                     c(1),    // (C,null)
		"l3_diagnosis_rate":            r(0, 1),
		"diagnoses_per_l3_run":         r(0, 1),
		"judge_invocations_per_l3_run": r(0, 1),
		"candidate_validity_rate":      r(2, 2),
	})

	// By provider: A's two anthropic requests pair with "claude"; A's openai
	// request and B's anthropic request have no preceding Started.
	claude := "claude"
	want := []ProviderRow{
		{Provider: "anthropic", Requests: 1, Retried: 1, RetriesTotal: 1},
		{Provider: "anthropic", Model: &claude, Requests: 2, Retried: 1, Failed: 1, RetriesTotal: 3},
		{Provider: "openai", Requests: 1},
	}
	checkRows(t, res.ByProvider, want)
}

func TestMetricsEach(t *testing.T) {
	tests := []struct {
		name  string
		trace string
		want  map[string]Metric
	}{
		{
			name:  "empty input: counts 0, ratios nil",
			trace: "",
			want: map[string]Metric{
				"runs": c(0), "provider_requests": c(0), "provider_retries_total": c(0),
				"l2_runs": c(0), "l3_steps": c(0),
				"provider_retry_rate": r(0, 0), "provider_failure_rate": r(0, 0),
				"l2_escalation_rate": r(0, 0), "avg_repair_iterations": r(0, 0),
				"l3_diagnosis_rate": r(0, 0), "diagnoses_per_l3_run": r(0, 0),
				"judge_invocations_per_l3_run": r(0, 0), "candidate_validity_rate": r(0, 0),
			},
		},
		{
			name:  "unknown types count toward runs only",
			trace: line("SomethingNew", "x", day1, `{}`) + line("RunStarted", "y", day1, `{}`) + line("SomethingNew", "x", day1, `{}`),
			want: map[string]Metric{
				"runs": c(2), "provider_requests": c(0), "provider_retry_rate": r(0, 0),
			},
		},
		{
			name: "retries: numbers only, fractional and negative summed",
			trace: line("ProviderRequestFinished", "x", day1, `{"retries":0.5}`) + // > 0
				line("ProviderRequestFinished", "x", day1, `{"retries":-1}`) + // not > 0
				line("ProviderRequestFinished", "x", day1, `{"retries":true}`) +
				line("ProviderRequestFinished", "x", day1, `{"retries":null}`) +
				line("ProviderRequestFinished", "x", day1, `{}`) +
				line("ProviderRequestFinished", "x", day1, `{"retries":2e0}`),
			want: map[string]Metric{
				"provider_requests":      c(6),
				"provider_retry_rate":    r(2, 6), // 0.5 and 2e0
				"provider_retries_total": c(1.5),  // 0.5 - 1 + 2
				"provider_failure_rate":  r(0, 6),
			},
		},
		{
			name: "success: only JSON false is a failure",
			trace: line("ProviderRequestFinished", "x", day1, `{"success":false}`) +
				line("ProviderRequestFinished", "x", day1, `{"success":0}`) +
				line("ProviderRequestFinished", "x", day1, `{"success":"false"}`) +
				line("ProviderRequestFinished", "x", day1, `{"success":null}`) +
				line("ProviderRequestStarted", "x", day1, `{"success":false}`), // not a Finished
			want: map[string]Metric{"provider_failure_rate": r(1, 4)},
		},
		{
			name: "l2 escalation: from must be the string L2",
			trace: line("RunEscalated", "a", day1, `{"from":"L2"}`) +
				line("RunEscalated", "a", day1, `{"from":"L2"}`) + // same run
				line("RunEscalated", "b", day1, `{"from":"l2"}`) +
				line("RunEscalated", "c", day1, `{"from":["L2"]}`) +
				line("IterationStarted", "d", day1, `{"iteration":1}`) +
				line("IterationStarted", "d", day1, `{"iteration":2}`),
			want: map[string]Metric{
				"l2_runs":            c(1),    // d
				"l2_escalation_rate": r(1, 2), // {a} / {d} ∪ {a}
			},
		},
		{
			name: "avg repair iterations: max per run, by numeric value",
			trace: line("RepairAttempted", "a", day1, `{"iteration":3}`) +
				line("RepairAttempted", "a", day1, `{"iteration":1}`) +
				line("RepairAttempted", "b", day1, `{"iteration":-2}`) +
				line("RepairAttempted", "b", day1, `{"iteration":"9"}`) + // ignored
				line("RepairAttempted", "c", day1, `{}`) + // c does not qualify
				line("IterationStarted", "e", day1, `{"iteration":7}`), // not a RepairAttempted
			want: map[string]Metric{"avg_repair_iterations": r(1, 2)}, // (3 + -2) / 2
		},
		{
			name:  "avg repair iterations: none numeric gives nil",
			trace: line("RepairAttempted", "a", day1, `{"iteration":null}`),
			want:  map[string]Metric{"avg_repair_iterations": r(0, 0)},
		},
		{
			name: "l3 steps and diagnosis rate: distinct by run and numeric iteration",
			trace: line("CandidateGenerated", "a", day1, `{"iteration":0}`) +
				line("CandidateGenerated", "a", day1, `{"iteration":0.0}`) + // same as 0
				line("CandidateGenerated", "a", day1, `{"iteration":-0}`) + // same as 0
				line("CandidateGenerated", "a", day1, `{"iteration":1}`) +
				line("CandidateGenerated", "a", day1, `{"iteration":"1"}`) + // null step of a
				line("CandidateGenerated", "a", day1, `{}`) + // null step of a again
				line("CandidateGenerated", "b", day1, `{"iteration":0}`) + // other run
				line("DiagnosisStarted", "a", day1, `{"iteration":1}`) +
				line("DiagnosisStarted", "a", day1, `{"iteration":10e-1}`) + // same step
				line("DiagnosisStarted", "a", day1, `{"iteration":true}`) + // null step
				line("DiagnosisStarted", "z", day1, `{"iteration":5}`), // run without candidates
			want: map[string]Metric{
				"l3_steps":                c(4),    // (a,0) (a,1) (a,null) (b,0)
				"l3_diagnosis_rate":       r(3, 4), // (a,1) (a,null) (z,5)
				"diagnoses_per_l3_run":    r(4, 2), // 4 events / {a, b}
				"candidate_validity_rate": r(0, 7),
			},
		},
		{
			name:  "diagnoses without candidates: nil",
			trace: line("DiagnosisStarted", "a", day1, `{"iteration":1}`) + line("JudgeInvoked", "a", day1, `{}`),
			want: map[string]Metric{
				"l3_steps": c(0), "l3_diagnosis_rate": r(1, 0),
				"diagnoses_per_l3_run": r(1, 0), "judge_invocations_per_l3_run": r(1, 0),
			},
		},
		{
			name: "judge invocations per l3 run",
			trace: line("CandidateGenerated", "a", day1, `{"iteration":0,"valid":true}`) +
				line("CandidateGenerated", "b", day1, `{"iteration":0,"valid":1}`) +
				line("CandidateGenerated", "c", day1, `{"iteration":0,"valid":true}`) +
				line("JudgeInvoked", "a", day1, `{}`) + line("JudgeInvoked", "a", day1, `{}`) +
				line("JudgeDecided", "a", day1, `{}`),
			want: map[string]Metric{
				"judge_invocations_per_l3_run": r(2, 3),
				"candidate_validity_rate":      r(2, 3),
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			checkMetrics(t, run(t, Filter{}, tt.trace).Metrics, tt.want)
		})
	}
}

const good = `{"type":"RunStarted","runId":"r","timestamp":"2026-01-29T10:00:00.000Z","payload":{}}`

func TestLineRules(t *testing.T) {
	tests := []struct {
		name        string
		file        string
		events      int64
		quarantined int64
	}{
		{"good line", good + "\n", 1, 0},
		{"invalid utf-8", `{"type":"RunStarted","runId":"r","timestamp":"2026-01-29T10:00:00Z","payload":{"g":"` + "\xff" + `"}}` + "\n", 0, 1},
		{"not json", "{not json\n", 0, 1},
		{"trailing garbage", good + " x\n", 0, 1},
		{"two objects", good + good + "\n", 0, 1},
		{"array", "[1,2]\n", 0, 1},
		{"string", "\"x\"\n", 0, 1},
		{"null", "null\n", 0, 1},
		{"number", "1\n", 0, 1},
		{"type missing", `{"runId":"r","timestamp":"2026-01-29T10:00:00Z","payload":{}}` + "\n", 0, 1},
		{"type is a number", `{"type":1,"runId":"r","timestamp":"2026-01-29T10:00:00Z","payload":{}}` + "\n", 0, 1},
		{"type empty", `{"type":"","runId":"r","timestamp":"2026-01-29T10:00:00Z","payload":{}}` + "\n", 0, 1},
		{"type null", `{"type":null,"runId":"r","timestamp":"2026-01-29T10:00:00Z","payload":{}}` + "\n", 0, 1},
		{"type key case differs", `{"Type":"RunStarted","runId":"r","timestamp":"2026-01-29T10:00:00Z","payload":{}}` + "\n", 0, 1},
		{"type blank but non-empty", `{"type":" ","runId":"r","timestamp":"2026-01-29T10:00:00Z","payload":{}}` + "\n", 1, 0},
		{"runId missing", `{"type":"RunStarted","timestamp":"2026-01-29T10:00:00Z","payload":{}}` + "\n", 0, 1},
		{"runId number", `{"type":"RunStarted","runId":1769708630839,"timestamp":"2026-01-29T10:00:00Z","payload":{}}` + "\n", 0, 1},
		{"runId empty", `{"type":"RunStarted","runId":"","timestamp":"2026-01-29T10:00:00Z","payload":{}}` + "\n", 0, 1},
		{"timestamp missing", `{"type":"RunStarted","runId":"r","payload":{}}` + "\n", 0, 1},
		{"timestamp number", `{"type":"RunStarted","runId":"r","timestamp":1769708630839,"payload":{}}` + "\n", 0, 1},
		{"timestamp without zone", `{"type":"RunStarted","runId":"r","timestamp":"2026-01-29T10:00:00","payload":{}}` + "\n", 0, 1},
		{"timestamp with a space", `{"type":"RunStarted","runId":"r","timestamp":"2026-01-29 10:00:00Z","payload":{}}` + "\n", 0, 1},
		{"timestamp date only", `{"type":"RunStarted","runId":"r","timestamp":"2026-01-29","payload":{}}` + "\n", 0, 1},
		{"timestamp nonsense", `{"type":"RunStarted","runId":"r","timestamp":"yesterday","payload":{}}` + "\n", 0, 1},
		{"timestamp offset", `{"type":"RunStarted","runId":"r","timestamp":"2026-01-29T12:00:00+02:00","payload":{}}` + "\n", 1, 0},
		{"timestamp nanoseconds", `{"type":"RunStarted","runId":"r","timestamp":"2026-01-29T10:00:00.123456789Z","payload":{}}` + "\n", 1, 0},
		{"payload missing", `{"type":"RunStarted","runId":"r","timestamp":"2026-01-29T10:00:00Z"}` + "\n", 0, 1},
		{"payload null", `{"type":"RunStarted","runId":"r","timestamp":"2026-01-29T10:00:00Z","payload":null}` + "\n", 0, 1},
		{"payload array", `{"type":"RunStarted","runId":"r","timestamp":"2026-01-29T10:00:00Z","payload":[]}` + "\n", 0, 1},
		{"payload string", `{"type":"RunStarted","runId":"r","timestamp":"2026-01-29T10:00:00Z","payload":"{}"}` + "\n", 0, 1},
		{"surrounding whitespace", "  \t" + good + " \n", 1, 0},
		{"duplicate type, last not a string", `{"type":"RunStarted","runId":"r","timestamp":"2026-01-29T10:00:00Z","payload":{},"type":5}` + "\n", 0, 1},
		{"duplicate type, last a string", `{"type":5,"runId":"r","timestamp":"2026-01-29T10:00:00Z","payload":{},"type":"RunStarted"}` + "\n", 1, 0},
		{"duplicate payload, last not an object", `{"type":"RunStarted","runId":"r","timestamp":"2026-01-29T10:00:00Z","payload":{},"payload":1}` + "\n", 0, 1},
		{"BOM at start of file", "\xEF\xBB\xBF" + good + "\n" + good + "\n", 2, 0},
		{"BOM on a later line", good + "\n" + "\xEF\xBB\xBF" + good + "\n", 1, 1},
		{"CRLF", good + "\r\n" + good + "\r\n", 2, 0},
		{"blank and whitespace lines", "\n" + good + "\n\r\n   \n\t\n" + good + "\n \r\n", 2, 0},
		{"incomplete last line", good + "\n" + good, 1, 0},
		{"incomplete garbage last line", good + "\n" + `{"type":"Run`, 1, 0},
		{"only an incomplete line", good, 0, 0},
		{"only a BOM", "\xEF\xBB\xBF", 0, 0},
		{"empty file", "", 0, 0},
		{"quarantined between good lines", good + "\n{oops\n" + good + "\n", 2, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := run(t, Filter{}, tt.file)
			if res.Events != tt.events || res.Quarantined != tt.quarantined {
				t.Errorf("events %d quarantined %d, want %d and %d", res.Events, res.Quarantined, tt.events, tt.quarantined)
			}
		})
	}
}

func TestLineLength(t *testing.T) {
	if testing.Short() {
		t.Skip("allocates 64 MiB lines; go test ./... runs it (skipped under -short)")
	}
	// A line of exactly MaxLineBytes is accepted; one byte more is quarantined.
	prefix := `{"type":"RunStarted","runId":"r","timestamp":"2026-01-29T10:00:00Z","payload":{"pad":"`
	suffix := `"}}`
	exact := prefix + strings.Repeat("a", MaxLineBytes-len(prefix)-len(suffix)) + suffix
	if len(exact) != MaxLineBytes {
		t.Fatalf("built %d bytes", len(exact))
	}
	res := run(t, Filter{}, exact+"\r\n") // the "\r" is not part of the line
	if res.Events != 1 || res.Quarantined != 0 {
		t.Errorf("exact: events %d quarantined %d, want 1 and 0", res.Events, res.Quarantined)
	}
	over := prefix + "a" + exact[len(prefix):]
	res = run(t, Filter{}, over+"\n")
	if res.Events != 0 || res.Quarantined != 1 {
		t.Errorf("over: events %d quarantined %d, want 0 and 1", res.Events, res.Quarantined)
	}
}

func TestDuplicateKeys(t *testing.T) {
	trace := `{"type":"RunStarted","type":"CandidateGenerated","runId":"a","runId":"b","timestamp":"2026-01-29T10:00:00Z",` +
		`"payload":{"valid":false,"iteration":1,"valid":true,"iteration":2},"payload":{"valid":false,"valid":true}}` + "\n" +
		`{"type":"CandidateGenerated","runId":"b","timestamp":"2026-01-29T10:00:00Z","payload":{"iteration":"x","valid":true,"valid":"no"}}` + "\n"
	res := run(t, Filter{}, trace)
	checkMetrics(t, res.Metrics, map[string]Metric{
		"runs":                    c(1),    // b only
		"l3_steps":                c(1),    // (b,null): the last payload has no iteration
		"candidate_validity_rate": r(1, 2), // first line valid:true wins, second "no" wins
	})
	if got := run(t, Filter{Runs: []string{"a"}}, trace).Metrics["runs"]; show(got) != show(c(0)) {
		t.Errorf("run a should not exist: %s", show(got))
	}
}

func TestFilters(t *testing.T) {
	at := func(h int) string { return time.Date(2026, 1, 29, h, 0, 0, 0, time.UTC).Format(time.RFC3339Nano) }
	trace := "" +
		line("RunStarted", "r10", at(10), `{}`) +
		line("ProviderSelected", "r10", at(10), `{"role":"planner","providerId":"mock"}`) +
		line("ProviderRequestFinished", "r10", at(13), `{"provider":"other","retries":1}`) + // r10 still starts at 10
		line("RunStarted", "r11", at(11), `{}`) +
		line("ProviderRequestStarted", "r11", at(11), `{"provider":"mock","model":"m"}`) +
		line("RunStarted", "r12", at(12), `{}`) +
		line("ProviderRequestFinished", "r12", at(12), `{"provider":"mock","retries":0}`) +
		line("RunStarted", "r13", at(13), `{}`) +
		line("ProviderSelected", "r13", at(13), `{"provider":"mock","providerId":"mock2"}`) + // wrong field for ProviderSelected
		line("ProviderRequestStarted", "r13", at(13), `{"providerId":"mock"}`) + // wrong field for requests
		line("ProviderRequestFinished", "r13", at(13), `{"provider":"other","retries":2}`)
	// Run r14's events come in a second file, earliest first in the second file.
	second := line("RunStarted", "r14", "2026-01-30T00:30:00+01:00", `{}`) + // 2026-01-29T23:30Z
		line("RunFinished", "r14", "2026-01-30T05:00:00Z", `{}`)

	tests := []struct {
		name string
		f    Filter
		runs float64
		reqs float64
		days []string
	}{
		{"no filter", Filter{}, 5, 3, []string{"2026-01-29"}},
		{"since is inclusive", Filter{Since: mustTime(at(11))}, 4, 2, nil},
		{"until is exclusive", Filter{Until: mustTime(at(12))}, 2, 1, nil},
		{"window by start, not by later events", Filter{Since: mustTime(at(11)), Until: mustTime(at(13))}, 2, 1, nil},
		{"window on a run's converted start", Filter{Since: mustTime("2026-01-29T23:00:00Z")}, 1, 0, []string{"2026-01-29"}},
		{"runs", Filter{Runs: []string{"r10", "r13", "nope"}}, 2, 2, nil},
		// Runs r10 r11 r12; of their requests only r12's is mock's: r10's
		// "other" request is not the provider's.
		{"provider: selected, started or finished", Filter{Provider: "mock"}, 3, 1, nil},
		{"provider: in any case", Filter{Provider: "MoCk"}, 3, 1, nil},
		{"provider: finished only", Filter{Provider: "other"}, 2, 2, nil},                  // r10 r13
		{"provider: providerId of ProviderSelected", Filter{Provider: "mock2"}, 1, 0, nil}, // r13 asked "other" only
		{"provider: none", Filter{Provider: "absent"}, 0, 0, []string{}},
		{"all filters", Filter{Since: mustTime(at(11)), Until: mustTime(at(13)), Runs: []string{"r11", "r12", "r10"}, Provider: "mock"}, 2, 1, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := run(t, tt.f, trace, second)
			checkMetrics(t, res.Metrics, map[string]Metric{"runs": c(tt.runs), "provider_requests": c(tt.reqs)})
			if tt.days != nil {
				var got []string
				for d := range res.ByDay {
					got = append(got, d)
				}
				if fmt.Sprint(got) != fmt.Sprint(tt.days) {
					t.Errorf("days %v, want %v", got, tt.days)
				}
			}
			if res.Events != 13 {
				t.Errorf("events %d, want 13 whatever the filter", res.Events)
			}
		})
	}
}

func TestByDayUsesRunStart(t *testing.T) {
	// Run x starts late on the 29th and goes on into the 30th: all its events are on the 29th.
	trace := line("RunStarted", "x", "2026-01-29T23:59:59.999Z", `{}`) +
		line("ProviderRequestFinished", "x", "2026-01-30T00:00:01Z", `{"retries":1}`) +
		line("RunStarted", "y", "2026-01-30T00:00:00Z", `{}`) +
		line("ProviderRequestFinished", "y", "2026-01-30T01:00:00Z", `{"retries":0}`) +
		// z's first line is later than its second: the start is the earliest timestamp.
		line("ProviderRequestFinished", "z", "2026-01-31T00:00:00Z", `{"retries":0}`) +
		line("RunStarted", "z", "2026-01-30T12:00:00Z", `{}`)
	res := run(t, Filter{}, trace)
	if len(res.ByDay) != 2 {
		t.Fatalf("days: %d, want 2", len(res.ByDay))
	}
	checkMetrics(t, res.ByDay["2026-01-29"], map[string]Metric{"runs": c(1), "provider_retry_rate": r(1, 1)})
	checkMetrics(t, res.ByDay["2026-01-30"], map[string]Metric{"runs": c(2), "provider_retry_rate": r(0, 2)})
}

func mustTime(s string) time.Time {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		panic(err)
	}
	return t
}

func checkRows(t *testing.T, got, want []ProviderRow) {
	t.Helper()
	showRow := func(r ProviderRow) string {
		m := "nil"
		if r.Model != nil {
			m = fmt.Sprintf("%q", *r.Model)
		}
		return fmt.Sprintf("{%q %s req=%d retried=%d failed=%d total=%v}", r.Provider, m, r.Requests, r.Retried, r.Failed, r.RetriesTotal)
	}
	var g, w []string
	for _, r := range got {
		g = append(g, showRow(r))
	}
	for _, r := range want {
		w = append(w, showRow(r))
	}
	if strings.Join(g, "\n") != strings.Join(w, "\n") {
		t.Errorf("ByProvider:\ngot\n%s\nwant\n%s", strings.Join(g, "\n"), strings.Join(w, "\n"))
	}
}

func TestModelPairing(t *testing.T) {
	file1 := "" +
		line("ProviderRequestFinished", "r", day1, `{"provider":"a","retries":0}`) + // before any Started: nil
		line("ProviderRequestStarted", "r", day1, `{"provider":"a","model":"m1"}`) +
		line("ProviderRequestStarted", "r", day1, `{"provider":"b","model":"m2"}`) +
		line("ProviderRequestFinished", "r", day1, `{"provider":"a","retries":1}`) + // m1
		line("ProviderRequestStarted", "r", day1, `{"provider":"a","model":"m3"}`) +
		line("ProviderRequestFinished", "r", day1, `{"provider":"b","retries":0,"success":false}`) + // m2
		line("ProviderRequestFinished", "r", day1, `{"provider":"a","retries":2}`) + // m3 (nearest, not m1)
		line("ProviderRequestFinished", "r", day1, `{"provider":"a","retries":0}`) + // m3 again: Started is not consumed
		line("ProviderRequestStarted", "r", "bad time", `{"provider":"b","model":"quarantined"}`) +
		line("ProviderRequestFinished", "r", day1, `{"provider":"b","retries":0}`) + // m2: the quarantined line does not count
		line("ProviderRequestStarted", "r", day1, `{"provider":"a","model":7}`) +
		line("ProviderRequestFinished", "r", day1, `{"provider":"a","retries":0}`) + // nil: nearest Started has no string model
		line("ProviderRequestStarted", "s", day1, `{"provider":"b","model":"s-model"}`) +
		line("ProviderRequestFinished", "s", day1, `{"provider":"a","retries":0}`) + // nil: no Started for s and a
		line("ProviderRequestStarted", "r", day1, `{"provider":1,"model":"x"}`) +
		line("ProviderRequestFinished", "r", day1, `{"provider":1,"retries":0}`) + // provider "", model nil
		line("ProviderRequestFinished", "r", day1, `{"retries":0}`) // provider "", model nil
	file2 := line("ProviderRequestFinished", "r", day1, `{"provider":"b","retries":0}`) // nil: Started was in another file

	m := func(s string) *string { return &s }
	res := run(t, Filter{}, file1, file2)
	checkRows(t, res.ByProvider, []ProviderRow{
		{Provider: "", Requests: 2},
		{Provider: "a", Requests: 3}, // first, after model 7, run s
		{Provider: "a", Model: m("m1"), Requests: 1, Retried: 1, RetriesTotal: 1},
		{Provider: "a", Model: m("m3"), Requests: 2, Retried: 1, RetriesTotal: 2},
		{Provider: "b", Requests: 1}, // file2
		{Provider: "b", Model: m("m2"), Requests: 2, Failed: 1},
	})
	if res.Quarantined != 1 {
		t.Errorf("quarantined %d, want 1", res.Quarantined)
	}

	// Filtering to run s keeps only s's requests; pairing is unchanged.
	res = run(t, Filter{Runs: []string{"s"}}, file1, file2)
	checkRows(t, res.ByProvider, []ProviderRow{{Provider: "a", Requests: 1}})

	// No requests: an empty, non-nil list.
	res = run(t, Filter{}, "")
	if res.ByProvider == nil || len(res.ByProvider) != 0 {
		t.Errorf("ByProvider = %#v, want empty", res.ByProvider)
	}
}

func TestRealTraces(t *testing.T) {
	dir := filepath.Join("..", "..", "..", "shared", "testdata-external", "orchestrator", "runs")
	if _, err := os.Stat(filepath.Join("..", "..", "..", "shared")); err != nil {
		t.Skipf("shared data absent: %v", err)
	}
	files, err := filepath.Glob(filepath.Join(dir, "*", "trace.jsonl"))
	if err != nil || len(files) == 0 {
		t.Skipf("no real traces under %s", dir)
	}
	res, err := Compute(files, Filter{})
	if err != nil {
		t.Fatal(err)
	}
	// As of writing: 7 runs, 41 lines, all on 2026-01-29, no provider requests,
	// no L2 or L3 events.
	if res.Quarantined != 0 {
		t.Errorf("quarantined %d, want 0", res.Quarantined)
	}
	if res.Events == 0 {
		t.Errorf("no events")
	}
	if got, want := *res.Metrics["runs"].Value, float64(len(files)); got != want {
		t.Errorf("runs %v, want %v (one run per directory)", got, want)
	}
	t.Logf("%d files: %d events, %d quarantined, days %d", len(files), res.Events, res.Quarantined, len(res.ByDay))
	for _, name := range allMetrics {
		t.Logf("%-30s %s", name, show(res.Metrics[name]))
	}

	// Each file's run id is its directory name, and ProviderSelected names providers.
	for _, file := range files {
		id := filepath.Base(filepath.Dir(file))
		one, err := Compute(files, Filter{Runs: []string{id}})
		if err != nil {
			t.Fatal(err)
		}
		if show(one.Metrics["runs"]) != show(c(1)) {
			t.Errorf("run %s: %s", id, show(one.Metrics["runs"]))
		}
	}
	mock, err := Compute(files, Filter{Provider: "mock-claude"})
	if err != nil {
		t.Fatal(err)
	}
	if v := *mock.Metrics["runs"].Value; v < 1 {
		t.Errorf("runs with provider mock-claude: %v, want at least 1", v)
	}

	// Invariants: a ratio has no value exactly when its denominator is 0.
	for _, name := range allMetrics {
		m := res.Metrics[name]
		if m.Denominator != nil && (*m.Denominator == 0) != (m.Value == nil) {
			t.Errorf("%s: %s", name, show(m))
		}
	}
}

// TestComputeMissingFile checks that an unreadable file is an error, not an empty result.
func TestComputeMissingFile(t *testing.T) {
	if _, err := Compute([]string{filepath.Join(t.TempDir(), "absent.jsonl")}, Filter{}); err == nil {
		t.Error("want an error")
	}
}

func TestComputeFileMatchesReader(t *testing.T) {
	path := filepath.Join(t.TempDir(), "trace.jsonl")
	if err := os.WriteFile(path, []byte(fullTrace), 0o644); err != nil {
		t.Fatal(err)
	}
	a, err := Compute([]string{path}, Filter{})
	if err != nil {
		t.Fatal(err)
	}
	b, err := ComputeReader("x", strings.NewReader(fullTrace), Filter{})
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range allMetrics {
		if show(a.Metrics[name]) != show(b.Metrics[name]) {
			t.Errorf("%s: file %s, reader %s", name, show(a.Metrics[name]), show(b.Metrics[name]))
		}
	}
}

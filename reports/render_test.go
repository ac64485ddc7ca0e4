package reports

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func renderPtr[T any](v T) *T { return &v }

// renderCount and renderRatio build metrics the way the report builder does:
// a ratio with a zero denominator has no value.
func renderCount(v float64) Metric { return Metric{Value: &v} }

func renderRatio(num, den float64) Metric {
	m := Metric{Numerator: &num, Denominator: &den}
	if den != 0 {
		m.Value = renderPtr(num / den)
	}
	return m
}

// renderTestReport covers what the renderers must get right: nil ratios,
// zero denominators, crossed and uncrossed thresholds (two on one metric),
// an unknown model, a metric MetricNames does not list, empty and non-empty
// breakdowns, a reason needing Markdown escaping, and a non-UTC time.
func renderTestReport() *Report {
	cet := time.FixedZone("CET", 3600)
	return &Report{
		GeneratedAt: time.Date(2026, 2, 1, 10, 0, 0, 0, cet),
		Database:    "/var/lib/orchstat/orchstat.duckdb",
		Filters: Filters{
			Since:    renderPtr(time.Date(2026, 1, 28, 0, 0, 0, 0, time.UTC)),
			Provider: renderPtr("anthropic"),
		},
		Overview: Overview{
			Runs:        400,
			FirstEvent:  renderPtr(time.Date(2026, 1, 28, 9, 1, 2, 0, time.UTC)),
			LastEvent:   renderPtr(time.Date(2026, 1, 29, 17, 48, 11, 250e6, time.UTC)),
			Success:     351,
			Failure:     30,
			Cancelled:   4,
			Unfinished:  12,
			OtherStatus: 3,
			Events:      48213,
			Quarantined: 2,
		},
		Metrics: Metrics{
			"runs":                         renderCount(400),
			"provider_requests":            renderCount(1921),
			"provider_retry_rate":          renderRatio(383, 1921),
			"provider_failure_rate":        renderRatio(17, 1921),
			"provider_retries_total":       renderCount(512),
			"l2_runs":                      renderCount(40),
			"l2_escalation_rate":           renderRatio(14, 40),
			"avg_repair_iterations":        renderRatio(97, 38),
			"l3_steps":                     renderCount(0),
			"l3_diagnosis_rate":            renderRatio(0, 0),
			"diagnoses_per_l3_run":         renderRatio(0, 0),
			"judge_invocations_per_l3_run": renderRatio(0, 0),
			"candidate_validity_rate":      renderRatio(0, 0),
			"zz_experimental":              renderCount(1.5),
		},
		Thresholds: []Threshold{
			{Metric: "provider_retry_rate", Rule: "provider_retry_rate_high", Severity: "warning", Threshold: 0.2, Condition: "value > threshold && denominator >= 20", Value: renderPtr(383.0 / 1921)},
			{Metric: "l2_escalation_rate", Rule: "l2_escalation_high", Severity: "warning", Threshold: 0.3, Condition: "value > threshold && denominator >= 5", Value: renderPtr(0.35), Crossed: true},
			{Metric: "l2_escalation_rate", Rule: "l2_escalation_critical", Severity: "critical", Threshold: 0.5, Condition: "value > threshold", Value: renderPtr(0.35)},
			{Metric: "l3_diagnosis_rate", Rule: "l3_diagnosis_high", Severity: "warning", Threshold: 0.1},
		},
		Breakdowns: Breakdowns{
			ByProvider: []ProviderRow{
				{Provider: "anthropic", Model: renderPtr("claude-sonnet-4"), Requests: 1900, Retried: 380, Failed: 17, RetriesTotal: 509,
					RetryRate: renderRatio(380, 1900), FailureRate: renderRatio(17, 1900), AvgDuration: renderPtr(2345.678)},
				{Provider: "anthropic", Requests: 21, Retried: 3, RetriesTotal: 3,
					RetryRate: renderRatio(3, 21), FailureRate: renderRatio(0, 21), AvgDuration: renderPtr(1200.0)},
				{Provider: "openai", Model: renderPtr("gpt-5"),
					RetryRate: renderRatio(0, 0), FailureRate: renderRatio(0, 0)},
			},
			ByDay: []DayRow{
				{Day: "2026-01-28", Metrics: Metrics{
					"runs": renderCount(250), "provider_requests": renderCount(1200),
					"provider_retry_rate": renderRatio(250, 1200), "l3_diagnosis_rate": renderRatio(0, 0),
				}},
				{Day: "2026-01-29", Metrics: Metrics{
					"runs": renderCount(150), "provider_requests": renderCount(721),
					"provider_retry_rate": renderRatio(133, 721), "l3_diagnosis_rate": renderRatio(0, 0),
				}},
			},
			WorstByRetries: []RunRow{
				{RunID: "run-7f3a", StartedAt: time.Date(2026, 1, 29, 18, 48, 11, 0, cet), Status: "failure",
					ProviderRequests: 41, ProviderRetries: 19, RepairIterations: renderPtr(4.0), Escalated: true, StopReason: renderPtr("max_iterations")},
				{RunID: "run-01bc", StartedAt: time.Date(2026, 1, 28, 9, 1, 2, 0, time.UTC), Status: "unfinished",
					ProviderRequests: 12, ProviderRetries: 9},
			},
			WorstByIterations: nil,
			StopReasons: []CountRow{
				{Key: "success", Count: 351, Runs: 351},
				{Key: "(none)", Count: 49, Runs: 49},
			},
			EscalationReasons: []CountRow{},
			JudgeReasons: []CountRow{
				{Key: "tests fail | lint ok", Count: 3, Runs: 2},
			},
			CandidateValidity: []ValidityRow{
				{ProviderID: "anthropic", Candidates: 0, Valid: 0, Rate: renderRatio(0, 0)},
			},
		},
	}
}

// renderGolden compares got with testdata/render/name, or rewrites the file
// under -update.
func renderGolden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", "render", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./reports -run Render -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("output differs from %s (run go test ./reports -run Render -update if the change is intended)\n--- got:\n%s\n--- want:\n%s", path, got, want)
	}
}

func TestRenderGolden(t *testing.T) {
	for _, f := range Formats {
		t.Run(string(f), func(t *testing.T) {
			r := renderTestReport()
			var buf bytes.Buffer
			if err := Render(&buf, r, f); err != nil {
				t.Fatal(err)
			}
			renderGolden(t, "report."+string(f)+".golden", buf.Bytes())

			// Rendering reads the report only.
			if !renderEqualJSON(t, r, renderTestReport()) {
				t.Error("Render modified the report")
			}
		})
	}
}

func renderEqualJSON(t *testing.T, a, b any) bool {
	t.Helper()
	ja, err := json.Marshal(a)
	if err != nil {
		t.Fatal(err)
	}
	jb, err := json.Marshal(b)
	if err != nil {
		t.Fatal(err)
	}
	return bytes.Equal(ja, jb)
}

// TestRenderJSONShape checks the METRICS.md contract on the decoded output
// rather than on bytes: counts carry only value, ratios carry numerator and
// denominator, and a zero denominator gives a null value.
func TestRenderJSONShape(t *testing.T) {
	var buf bytes.Buffer
	if err := Render(&buf, renderTestReport(), FormatJSON); err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(buf.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	metrics := doc["metrics"].(map[string]any)
	metric := func(name string) map[string]any {
		t.Helper()
		m, ok := metrics[name].(map[string]any)
		if !ok {
			t.Fatalf("metrics.%s missing: %v", name, metrics)
		}
		return m
	}

	zero := metric("l3_diagnosis_rate")
	if v, ok := zero["value"]; !ok || v != nil {
		t.Errorf("metrics.l3_diagnosis_rate.value = %v (present %v), want null", v, ok)
	}
	if zero["numerator"] != 0.0 || zero["denominator"] != 0.0 {
		t.Errorf("metrics.l3_diagnosis_rate = %v, want numerator and denominator 0", zero)
	}

	runs := metric("runs")
	if len(runs) != 1 || runs["value"] != 400.0 {
		t.Errorf("metrics.runs = %v, want {value: 400} alone", runs)
	}

	retry := metric("provider_retry_rate")
	if retry["value"] != 383.0/1921 || retry["numerator"] != 383.0 || retry["denominator"] != 1921.0 {
		t.Errorf("metrics.provider_retry_rate = %v, want the unrounded 383/1921", retry)
	}
	if !strings.Contains(buf.String(), `"numerator": 383,`) {
		t.Error("integral numerator not printed as 383")
	}

	// Empty breakdowns are [] rather than null, so consumers can iterate.
	b := doc["breakdowns"].(map[string]any)
	for _, k := range []string{"worst_runs_by_iterations", "escalation_reasons"} {
		if l, ok := b[k].([]any); !ok || len(l) != 0 {
			t.Errorf("breakdowns.%s = %#v, want []", k, b[k])
		}
	}
	if doc["generated_at"] != "2026-02-01T09:00:00Z" {
		t.Errorf("generated_at = %v, want UTC", doc["generated_at"])
	}
}

func TestRenderEmptyReport(t *testing.T) {
	for _, f := range Formats {
		t.Run(string(f), func(t *testing.T) {
			var buf bytes.Buffer
			if err := Render(&buf, &Report{}, f); err != nil {
				t.Fatal(err)
			}
			if f == FormatTable && strings.Count(buf.String(), "(none)\n") != 8 {
				t.Errorf("want (none) under each of the 8 breakdowns:\n%s", buf.String())
			}
		})
	}
}

func TestRenderErrors(t *testing.T) {
	var buf bytes.Buffer
	if err := Render(&buf, renderTestReport(), "yaml"); err == nil || !strings.Contains(err.Error(), "table, markdown, json, csv") {
		t.Errorf("Render(yaml) error = %v, want one listing the formats", err)
	}
	if err := Render(&buf, nil, FormatTable); err == nil {
		t.Error("Render(nil) succeeded")
	}
	if err := RenderTable(&buf, Table{Columns: []string{"a"}, Rows: [][]any{{1, 2}}}, FormatCSV); err == nil {
		t.Error("RenderTable with a row longer than the columns succeeded")
	}
	if buf.Len() != 0 {
		t.Errorf("failed renders wrote %q", buf.String())
	}
}

func TestRenderParseFormat(t *testing.T) {
	tests := []struct {
		in      string
		want    Format
		wantErr bool
	}{
		{"table", FormatTable, false},
		{"markdown", FormatMarkdown, false},
		{"json", FormatJSON, false},
		{"csv", FormatCSV, false},
		{"", "", true},
		{"JSON", "", true},
		{"md", "", true},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := ParseFormat(tt.in)
			if tt.wantErr {
				if err == nil || !strings.Contains(err.Error(), "valid formats are table, markdown, json, csv") {
					t.Errorf("ParseFormat(%q) error = %v, want one listing the valid formats", tt.in, err)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Errorf("ParseFormat(%q) = %q, %v; want %q", tt.in, got, err, tt.want)
			}
		})
	}
}

// renderStringer prints itself; RenderTable must use its String method.
type renderStringer struct{}

func (s renderStringer) String() string { return "stringer" }

func TestRenderTable(t *testing.T) {
	when := time.Date(2026, 1, 29, 18, 48, 11, 500e6, time.FixedZone("CET", 3600))
	tbl := Table{
		Title:   "Quarantine",
		Columns: []string{"id", "line", "at", "raw", "rate", "ok", "note"},
		Rows: [][]any{
			{int32(1), "a|b", when, []byte("{\"x\":1}"), 0.25, true, nil},
			{uint8(2), (*string)(nil), (*time.Time)(nil), []byte{0xff, 0x00}, 383.0, false, renderStringer{}},
		},
	}
	tests := []struct {
		format Format
		want   string
	}{
		{FormatTable, `Quarantine
+----+------+----------------------+---------+------+-------+----------+
| id | line | at                   | raw     | rate | ok    | note     |
+----+------+----------------------+---------+------+-------+----------+
|  1 | a|b  | 2026-01-29T17:48:11Z | {"x":1} | 0.25 | true  | -        |
|  2 | -    | -                    | 0xff00  |  383 | false | stringer |
+----+------+----------------------+---------+------+-------+----------+
`},
		{FormatMarkdown, `## Quarantine

| id | line | at                   | raw     | rate | ok    | note     |
|---:|:-----|:---------------------|:--------|-----:|:------|:---------|
|  1 | a\|b | 2026-01-29T17:48:11Z | {"x":1} | 0.25 | true  | -        |
|  2 | -    | -                    | 0xff00  |  383 | false | stringer |
`},
		{FormatJSON, `[
  {
    "id": 1,
    "line": "a|b",
    "at": "2026-01-29T17:48:11.5Z",
    "raw": "{\"x\":1}",
    "rate": 0.25,
    "ok": true,
    "note": null
  },
  {
    "id": 2,
    "line": null,
    "at": null,
    "raw": "0xff00",
    "rate": 383,
    "ok": false,
    "note": "stringer"
  }
]
`},
		{FormatCSV, `id,line,at,raw,rate,ok,note
1,a|b,2026-01-29T17:48:11.5Z,"{""x"":1}",0.25,true,
2,,,0xff00,383,false,stringer
`},
	}
	for _, tt := range tests {
		t.Run(string(tt.format), func(t *testing.T) {
			var buf bytes.Buffer
			if err := RenderTable(&buf, tbl, tt.format); err != nil {
				t.Fatal(err)
			}
			if got := buf.String(); got != tt.want {
				t.Errorf("got:\n%s\nwant:\n%s", got, tt.want)
			}
		})
	}
}

// renderDecimal converts itself on the pointer only, like duckdb.Decimal.
type renderDecimal struct{ units, scale int64 }

func (d *renderDecimal) Float64() float64 { return float64(d.units) / math.Pow10(int(d.scale)) }

type renderLevel int

func TestRenderPlainCell(t *testing.T) {
	when := time.Date(2026, 1, 29, 18, 48, 11, 0, time.FixedZone("CET", 3600))
	tests := []struct {
		name string
		in   any
		want any
	}{
		{"nil", nil, nil},
		{"int32", int32(-3), int64(-3)},
		{"uint16", uint16(3), uint64(3)},
		{"named int", renderLevel(2), int64(2)},
		{"float32", float32(0.5), 0.5},
		{"nil pointer", (*int)(nil), nil},
		{"pointer", renderPtr("x"), "x"},
		{"time to UTC", when, when.UTC()},
		{"time pointer", &when, when.UTC()},
		{"utf-8 bytes", []byte("héllo"), "héllo"},
		{"binary bytes", []byte{0, 0xfe}, "0x00fe"},
		{"value Stringer", renderStringer{}, "stringer"},
		{"pointer Stringer", big.NewInt(12345678901234567), "12345678901234567"},
		{"pointer Float64", renderDecimal{30, 1}, 3.0},
		{"error", errors.New("boom"), "boom"},
		{"slice", []int{1, 2}, "[1 2]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := plainCell(tt.in); got != tt.want {
				t.Errorf("plainCell(%#v) = %#v, want %#v", tt.in, got, tt.want)
			}
		})
	}
}

func TestRenderTableEmpty(t *testing.T) {
	tbl := Table{Columns: []string{"id", "line"}}
	tests := []struct {
		format Format
		want   string
	}{
		{FormatTable, "(none)\n"},
		{FormatMarkdown, "(none)\n"},
		{FormatJSON, "[]\n"},
		{FormatCSV, "id,line\n"},
	}
	for _, tt := range tests {
		t.Run(string(tt.format), func(t *testing.T) {
			var buf bytes.Buffer
			if err := RenderTable(&buf, tbl, tt.format); err != nil {
				t.Fatal(err)
			}
			if got := buf.String(); got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

func TestRenderFormatFloat(t *testing.T) {
	tests := []struct {
		in   float64
		want string
	}{
		{383, "383"},
		{0.1994, "0.1994"},
		{383.0 / 1921, "0.1993753253513795"},
		{1e7, "10000000"},
		{1e-7, "1e-07"},
		{0, "0"},
	}
	for _, tt := range tests {
		if got := formatFloat(tt.in); got != tt.want {
			t.Errorf("formatFloat(%v) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

package render

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"errors"
	"io"
	"math"
	"math/big"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/orchstat/orchstat/model/reports"
)

func renderPtr[T any](v T) *T { return &v }

// renderCount and renderRatio build metrics the way the report builder does:
// a ratio with a zero denominator has no value.
func renderCount(v float64) reports.Metric { return reports.Metric{Value: &v} }

func renderRatio(num, den float64) reports.Metric {
	m := reports.Metric{Numerator: &num, Denominator: &den}
	if den != 0 {
		m.Value = renderPtr(num / den)
	}
	return m
}

// renderTestReport covers what the renderers must get right: nil ratios,
// zero denominators, crossed and uncrossed thresholds (two on one metric),
// an unknown model, a metric MetricNames does not list, empty and non-empty
// breakdowns, a reason needing Markdown escaping, and a non-UTC time.
func renderTestReport() *reports.Report {
	cet := time.FixedZone("CET", 3600)
	return &reports.Report{
		GeneratedAt: time.Date(2026, 2, 1, 10, 0, 0, 0, cet),
		Database:    "/var/lib/orchstat/orchstat.duckdb",
		Filters: reports.Filters{
			Since:    renderPtr(time.Date(2026, 1, 28, 0, 0, 0, 0, time.UTC)),
			Provider: renderPtr("anthropic"),
		},
		Overview: reports.Overview{
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
		Metrics: reports.Metrics{
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
		Thresholds: []reports.Threshold{
			{Metric: "provider_retry_rate", Rule: "provider_retry_rate_high", Severity: "warning", Threshold: 0.2, Condition: "value > threshold && denominator >= 20", Value: renderPtr(383.0 / 1921)},
			{Metric: "l2_escalation_rate", Rule: "l2_escalation_high", Severity: "warning", Threshold: 0.3, Condition: "value > threshold && denominator >= 5", Value: renderPtr(0.35), Crossed: true},
			{Metric: "l2_escalation_rate", Rule: "l2_escalation_critical", Severity: "critical", Threshold: 0.5, Condition: "value > threshold", Value: renderPtr(0.35)},
			{Metric: "l3_diagnosis_rate", Rule: "l3_diagnosis_high", Severity: "warning", Threshold: 0.1},
		},
		Breakdowns: reports.Breakdowns{
			ByProvider: []reports.ProviderRow{
				{Provider: "anthropic", Model: renderPtr("claude-sonnet-4"), Requests: 1900, Retried: 380, Failed: 17, RetriesTotal: 509,
					RetryRate: renderRatio(380, 1900), FailureRate: renderRatio(17, 1900), AvgDuration: renderPtr(2345.678)},
				{Provider: "anthropic", Requests: 21, Retried: 3, RetriesTotal: 3,
					RetryRate: renderRatio(3, 21), FailureRate: renderRatio(0, 21), AvgDuration: renderPtr(1200.0)},
				{Provider: "openai", Model: renderPtr("gpt-5"),
					RetryRate: renderRatio(0, 0), FailureRate: renderRatio(0, 0)},
			},
			ByDay: []reports.DayRow{
				{Day: "2026-01-28", Metrics: reports.Metrics{
					"runs": renderCount(250), "provider_requests": renderCount(1200),
					"provider_retry_rate": renderRatio(250, 1200), "l3_diagnosis_rate": renderRatio(0, 0),
				}},
				{Day: "2026-01-29", Metrics: reports.Metrics{
					"runs": renderCount(150), "provider_requests": renderCount(721),
					"provider_retry_rate": renderRatio(133, 721), "l3_diagnosis_rate": renderRatio(0, 0),
				}},
			},
			WorstByRetries: []reports.RunRow{
				{RunID: "run-7f3a", StartedAt: time.Date(2026, 1, 29, 18, 48, 11, 0, cet), Status: "failure",
					ProviderRequests: 41, ProviderRetries: 19, RepairIterations: renderPtr(4.0), Escalated: true, StopReason: renderPtr("max_iterations")},
				{RunID: "run-01bc", StartedAt: time.Date(2026, 1, 28, 9, 1, 2, 0, time.UTC), Status: "unfinished",
					ProviderRequests: 12, ProviderRetries: 9},
			},
			WorstByIterations: nil,
			StopReasons: []reports.CountRow{
				{Key: "success", Count: 351, Runs: 351},
				{Key: "(none)", Count: 49, Runs: 49},
			},
			EscalationReasons: []reports.CountRow{},
			JudgeReasons: []reports.CountRow{
				{Key: "tests fail | lint ok", Count: 3, Runs: 2},
			},
			CandidateValidity: []reports.ValidityRow{
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
	for _, f := range PageFormats {
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
	for _, f := range PageFormats {
		t.Run(string(f), func(t *testing.T) {
			var buf bytes.Buffer
			if err := Render(&buf, &reports.Report{}, f); err != nil {
				t.Fatal(err)
			}
			if f == FormatTable && !strings.Contains(buf.String(), "Left out, with no data in scope: sections: the orchestrator's breakdowns") {
				t.Errorf("want the left-out line to name the breakdowns:\n%s", buf.String())
			}
			buf.Reset()
			if err := RenderReport(&buf, &reports.Report{}, f, Options{Sections: []string{"all"}}); err != nil {
				t.Fatal(err)
			}
			if f == FormatTable && strings.Count(buf.String(), "(none)\n") < 8 {
				t.Errorf("--section all: want (none) under each of the 8 breakdowns:\n%s", buf.String())
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
	if err := RenderTable(&buf, reports.Table{Columns: []string{"a"}, Rows: [][]any{{1, 2}}}, FormatCSV); err == nil {
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
	tbl := reports.Table{
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

// renderDuckMap has the shape of duckdb-go's Map (a map[any]any), which
// the store hands over with its keys and values made plain.
type renderDuckMap map[any]any

func renderBig(s string) *big.Int {
	n, ok := new(big.Int).SetString(s, 10)
	if !ok {
		panic(s)
	}
	return n
}

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
		{"big.Int is an exact number", big.NewInt(12345678901234567), json.Number("12345678901234567")},
		{"nil big.Int", (*big.Int)(nil), nil},
		{"pointer Float64", renderDecimal{30, 1}, 3.0},
		{"error", errors.New("boom"), "boom"},
		{"typed slice is a list", []int{1, 2}, []any{int64(1), int64(2)}},
		{"nil slice", []int(nil), nil},
		{"list of any", []any{int32(1), nil, "a", []any{}}, []any{int64(1), nil, "a", []any{}}},
		{"array", [2]string{"a", "b"}, []any{"a", "b"}},
		{"byte array", [3]byte{'a', 'b', 'c'}, "abc"},
		{"struct", map[string]any{"a": int32(1), "t": when}, map[string]any{"a": int64(1), "t": when.UTC()}},
		{"map keys to text", renderDuckMap{int32(1): "x", true: uint8(2)}, map[string]any{"1": "x", "true": uint64(2)}},
		{"nil map", renderDuckMap(nil), nil},
		{"json.Number kept", json.Number("1.50"), json.Number("1.50")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := plainCell(tt.in); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("plainCell(%#v) = %#v, want %#v", tt.in, got, tt.want)
			}
		})
	}
}

func TestRenderTableEmpty(t *testing.T) {
	tbl := reports.Table{Columns: []string{"id", "line"}}
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

// renderJSONPath returns the value at a dotted path ("a.0.b") of decoded
// JSON.
func renderJSONPath(t *testing.T, doc any, path string) any {
	t.Helper()
	v := doc
	for _, k := range strings.Split(path, ".") {
		switch x := v.(type) {
		case map[string]any:
			var ok bool
			if v, ok = x[k]; !ok {
				t.Fatalf("%s: no key %q", path, k)
			}
		case []any:
			i, err := strconv.Atoi(k)
			if err != nil || i >= len(x) {
				t.Fatalf("%s: no index %q", path, k)
			}
			v = x[i]
		default:
			t.Fatalf("%s: %q in a %T", path, k, v)
		}
	}
	return v
}

// renderSetJSONPath sets the value at a dotted path of decoded JSON.
func renderSetJSONPath(t *testing.T, doc any, path string, val any) {
	t.Helper()
	i := strings.LastIndexByte(path, '.')
	switch x := renderJSONPath(t, doc, path[:i]).(type) {
	case map[string]any:
		x[path[i+1:]] = val
	case []any:
		n, _ := strconv.Atoi(path[i+1:])
		x[n] = val
	}
}

// renderCSVField returns the given column of the report CSV record for
// section, key and metric.
func renderCSVField(t *testing.T, out []byte, section, key, metric string, col int) string {
	t.Helper()
	recs, err := csv.NewReader(bytes.NewReader(out)).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range recs {
		if r[0] == section && r[1] == key && r[2] == metric {
			return r[col]
		}
	}
	t.Fatalf("no CSV record %s,%s,%s in\n%s", section, key, metric, out)
	return ""
}

func renderAll(t *testing.T, r *reports.Report) map[Format][]byte {
	t.Helper()
	out := map[Format][]byte{}
	for _, f := range PageFormats {
		var buf bytes.Buffer
		if err := Render(&buf, r, f); err != nil {
			t.Fatalf("Render(%s): %v", f, err)
		}
		out[f] = buf.Bytes()
	}
	return out
}

// TestRenderNonFinite puts +Inf, -Inf and NaN into each kind of float the
// report carries (an overflowed sum, a 0/0 computed elsewhere). JSON must
// hold null there (it held the strings "+Inf", "-Inf" and "NaN", which break
// readers expecting a number or null) and nothing else may change; the
// other formats print the words.
func TestRenderNonFinite(t *testing.T) {
	tests := []struct {
		name     string
		set      func(r *reports.Report, v float64)
		jsonPath string
		csv      [3]string // section, key, metric
		csvCol   int       // 3 value, 4 numerator, 5 denominator
		inGrid   bool      // table and markdown show this float
	}{
		{"count value", func(r *reports.Report, v float64) { r.Metrics["runs"] = renderCount(v) },
			"metrics.runs.value", [3]string{"metrics", "", "runs"}, 3, true},
		{"ratio value", func(r *reports.Report, v float64) {
			m := r.Metrics["provider_retry_rate"]
			m.Value = &v
			r.Metrics["provider_retry_rate"] = m
		}, "metrics.provider_retry_rate.value", [3]string{"metrics", "", "provider_retry_rate"}, 3, true},
		{"numerator", func(r *reports.Report, v float64) {
			m := r.Metrics["provider_retry_rate"]
			m.Numerator = &v
			r.Metrics["provider_retry_rate"] = m
		}, "metrics.provider_retry_rate.numerator", [3]string{"metrics", "", "provider_retry_rate"}, 4, true},
		{"denominator", func(r *reports.Report, v float64) {
			m := r.Metrics["avg_repair_iterations"]
			m.Denominator = &v
			r.Metrics["avg_repair_iterations"] = m
		}, "metrics.avg_repair_iterations.denominator", [3]string{"metrics", "", "avg_repair_iterations"}, 5, true},
		{"threshold", func(r *reports.Report, v float64) { r.Thresholds[0].Threshold = v },
			"thresholds.0.threshold", [3]string{"thresholds", "provider_retry_rate_high", "threshold"}, 3, true},
		{"threshold value", func(r *reports.Report, v float64) { r.Thresholds[0].Value = &v },
			"thresholds.0.value", [3]string{"thresholds", "provider_retry_rate_high", "value"}, 3, false},
		{"provider retries total", func(r *reports.Report, v float64) { r.Breakdowns.ByProvider[0].RetriesTotal = v },
			"breakdowns.by_provider.0.retries_total", [3]string{"by_provider", "anthropic/claude-sonnet-4", "retries_total"}, 3, true},
		{"provider retry rate", func(r *reports.Report, v float64) { r.Breakdowns.ByProvider[0].RetryRate.Value = &v },
			"breakdowns.by_provider.0.retry_rate.value", [3]string{"by_provider", "anthropic/claude-sonnet-4", "retry_rate"}, 3, true},
		{"provider failure denominator", func(r *reports.Report, v float64) { r.Breakdowns.ByProvider[1].FailureRate.Denominator = &v },
			"breakdowns.by_provider.1.failure_rate.denominator", [3]string{"by_provider", "anthropic/-", "failure_rate"}, 5, false},
		{"avg duration", func(r *reports.Report, v float64) { r.Breakdowns.ByProvider[0].AvgDuration = &v },
			"breakdowns.by_provider.0.avg_duration_ms", [3]string{"by_provider", "anthropic/claude-sonnet-4", "avg_duration_ms"}, 3, true},
		{"by day", func(r *reports.Report, v float64) { r.Breakdowns.ByDay[1].Metrics["runs"] = renderCount(v) },
			"breakdowns.by_day.1.metrics.runs.value", [3]string{"by_day", "2026-01-29", "runs"}, 3, true},
		{"run retries", func(r *reports.Report, v float64) { r.Breakdowns.WorstByRetries[0].ProviderRetries = v },
			"breakdowns.worst_runs_by_retries.0.provider_retries", [3]string{"worst_runs_by_retries", "run-7f3a", "provider_retries"}, 3, true},
		{"run iterations", func(r *reports.Report, v float64) { r.Breakdowns.WorstByRetries[1].RepairIterations = &v },
			"breakdowns.worst_runs_by_retries.1.repair_iterations", [3]string{"worst_runs_by_retries", "run-01bc", "repair_iterations"}, 3, true},
		{"validity rate", func(r *reports.Report, v float64) { r.Breakdowns.CandidateValidity[0].Rate.Value = &v },
			"breakdowns.candidate_validity.0.rate.value", [3]string{"candidate_validity", "anthropic", "rate"}, 3, true},
	}
	values := []struct {
		name string
		v    float64
	}{{"+Inf", math.Inf(1)}, {"-Inf", math.Inf(-1)}, {"NaN", math.NaN()}}

	golden, err := os.ReadFile(filepath.Join("testdata", "render", "report.json.golden"))
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range tests {
		for _, val := range values {
			t.Run(tt.name+"/"+val.name, func(t *testing.T) {
				r := renderTestReport()
				tt.set(r, val.v)
				out := renderAll(t, r)

				// JSON: the string at that path, every other value as in
				// the golden file.
				var got, want any
				if err := json.Unmarshal(out[FormatJSON], &got); err != nil {
					t.Fatal(err)
				}
				if err := json.Unmarshal(golden, &want); err != nil {
					t.Fatal(err)
				}
				if v := renderJSONPath(t, got, tt.jsonPath); v != nil {
					t.Errorf("%s = %#v, want null", tt.jsonPath, v)
				}
				renderSetJSONPath(t, want, tt.jsonPath, nil)
				if !reflect.DeepEqual(got, want) {
					t.Errorf("JSON differs elsewhere than %s:\n%s", tt.jsonPath, out[FormatJSON])
				}

				if f := renderCSVField(t, out[FormatCSV], tt.csv[0], tt.csv[1], tt.csv[2], tt.csvCol); f != val.name {
					t.Errorf("CSV %v column %d = %q, want %q", tt.csv, tt.csvCol, f, val.name)
				}
				if tt.inGrid {
					for _, f := range []Format{FormatTable, FormatMarkdown} {
						if !bytes.Contains(out[f], []byte(val.name)) {
							t.Errorf("%s output lacks %s:\n%s", f, val.name, out[f])
						}
					}
				}
			})
		}
	}
}

// TestRenderOutOfRangeTimes puts times that time.Time.MarshalJSON refuses
// (and its edges) everywhere the report has a time.
func TestRenderOutOfRangeTimes(t *testing.T) {
	cet := time.FixedZone("CET", 3600)
	tests := []struct {
		name    string
		at      time.Time
		nano    string // JSON and CSV
		seconds string // table and markdown
	}{
		{"year -1", time.Date(-1, 1, 2, 3, 4, 5, 0, time.UTC), "-0001-01-02T03:04:05Z", "-0001-01-02T03:04:05Z"},
		{"year -12345", time.Date(-12345, 6, 7, 8, 9, 10, 250e6, time.UTC), "-12345-06-07T08:09:10.25Z", "-12345-06-07T08:09:10Z"},
		{"year 0", time.Date(0, 12, 31, 23, 59, 59, 0, time.UTC), "0000-12-31T23:59:59Z", "0000-12-31T23:59:59Z"},
		{"year 1", time.Time{}, "0001-01-01T00:00:00Z", "0001-01-01T00:00:00Z"},
		{"year 9999", time.Date(9999, 12, 31, 23, 59, 59, 999999999, time.UTC), "9999-12-31T23:59:59.999999999Z", "9999-12-31T23:59:59Z"},
		{"year 10000 via UTC", time.Date(10000, 1, 1, 1, 30, 0, 5e8, cet), "10000-01-01T00:30:00.5Z", "10000-01-01T00:30:00Z"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := renderTestReport()
			r.GeneratedAt = tt.at
			r.Filters.Until = &tt.at
			r.Overview.LastEvent = &tt.at
			r.Breakdowns.WorstByRetries[1].StartedAt = tt.at
			out := renderAll(t, r)

			var doc any
			if err := json.Unmarshal(out[FormatJSON], &doc); err != nil {
				t.Fatal(err)
			}
			for _, p := range []string{"generated_at", "filters.until", "overview.last_event", "breakdowns.worst_runs_by_retries.1.started_at"} {
				if v := renderJSONPath(t, doc, p); v != tt.nano {
					t.Errorf("JSON %s = %#v, want %q", p, v, tt.nano)
				}
			}
			for _, m := range []string{"generated_at", "filter_until", "last_event"} {
				if v := renderCSVField(t, out[FormatCSV], "overview", "", m, 3); v != tt.nano {
					t.Errorf("CSV overview %s = %q, want %q", m, v, tt.nano)
				}
			}
			if v := renderCSVField(t, out[FormatCSV], "worst_runs_by_retries", "run-01bc", "started_at", 3); v != tt.nano {
				t.Errorf("CSV started_at = %q, want %q", v, tt.nano)
			}
			for _, f := range []Format{FormatTable, FormatMarkdown} {
				// generated_at, filter_until, last_event and the run.
				if n := bytes.Count(out[f], []byte(tt.seconds)); n != 4 {
					t.Errorf("%s shows %s %d times, want 4:\n%s", f, tt.seconds, n, out[f])
				}
			}

			tbl := reports.Table{Columns: []string{"at"}, Rows: [][]any{{tt.at}, {[]any{tt.at}}}}
			for _, f := range PageFormats {
				var buf bytes.Buffer
				if err := RenderTable(&buf, tbl, f); err != nil {
					t.Fatalf("RenderTable(%s): %v", f, err)
				}
				want := tt.nano
				if f == FormatTable || f == FormatMarkdown {
					want = tt.seconds
				}
				if !strings.Contains(buf.String(), want) || !strings.Contains(buf.String(), `"`+tt.nano+`"`) {
					t.Errorf("RenderTable(%s) lacks %s or the nested %q:\n%s", f, want, tt.nano, buf.String())
				}
			}
		})
	}
}

func TestRenderEscapeControls(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{"plain", "run-7f3a", "run-7f3a"},
		{"empty", "", ""},
		{"ANSI colour", "\x1b[31mred\x1b[0m", `\x1b[31mred\x1b[0m`},
		{"OSC title", "\x1b]0;pwned\x07", `\x1b]0;pwned\a`},
		{"newline", "a\nb", `a\nb`},
		{"CRLF", "a\r\nb", `a\r\nb`},
		{"tab", "a\tb", `a\tb`},
		{"NUL", "\x00", `\x00`},
		{"backspace, form feed, vertical tab", "\b\f\v", `\b\f\v`},
		{"unit separator", "\x1f", `\x1f`},
		{"DEL", "\x7f", `\x7f`},
		{"C1 NEL", "a\u0085b", `a\u0085b`},
		{"C1 CSI", "\u009b31m", `\u009b31m`},
		{"first after C1 kept", "\u00a0é—✓", "\u00a0é—✓"},
		{"replacement character kept", "\ufffd", "\ufffd"},
		{"invalid UTF-8", "a\xffb\x9b", `a\xffb\x9b`},
		{"backslash kept", `C:\x1b`, `C:\x1b`},
		{"pipe kept", "a|b", "a|b"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := escapeControls(tt.in); got != tt.want {
				t.Errorf("escapeControls(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
	// Every control shows as strconv.Quote shows it; nothing else changes.
	for r := rune(0); r < 0x100; r++ {
		q := strconv.Quote(string(r))
		want := string(r)
		if r < 0x20 || r == 0x7f || (r >= 0x80 && r <= 0x9f) {
			want = q[1 : len(q)-1]
		}
		if got := escapeControls(string(r)); got != want {
			t.Errorf("escapeControls(%q) = %q, want %q", string(r), got, want)
		}
	}
}

// renderRawControl reports a control character or invalid UTF-8 in output
// other than the newlines ending its lines.
func renderRawControl(out string) bool {
	for _, r := range out {
		if r != '\n' && (isControl(r) || r == utf8.RuneError) {
			return true
		}
	}
	return false
}

func TestRenderTableControlCharacters(t *testing.T) {
	cells := []string{"\x1b[2J\x1b[31mred", "two\nlines\r\n", "tab\there", "nel\u0085csi\u009b", "bad\xff"}
	tbl := reports.Table{Title: "Quarantine\x1b[0m", Columns: []string{"id", "raw\nline"}}
	for i, c := range cells {
		tbl.Rows = append(tbl.Rows, []any{i, c})
	}
	tests := []struct {
		format Format
		want   string
	}{
		{FormatTable, `Quarantine\x1b[0m
+----+--------------------+
| id | raw\nline          |
+----+--------------------+
|  0 | \x1b[2J\x1b[31mred |
|  1 | two\nlines\r\n     |
|  2 | tab\there          |
|  3 | nel\u0085csi\u009b |
|  4 | bad\xff            |
+----+--------------------+
`},
		{FormatMarkdown, `## Quarantine\x1b[0m

| id | raw\nline          |
|---:|:-------------------|
|  0 | \x1b[2J\x1b[31mred |
|  1 | two\nlines\r\n     |
|  2 | tab\there          |
|  3 | nel\u0085csi\u009b |
|  4 | bad\xff            |
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
			if renderRawControl(buf.String()) {
				t.Errorf("raw control character in %q", buf.String())
			}
		})
	}

	// JSON and CSV escape by their own rules and keep the exact text.
	t.Run("json", func(t *testing.T) {
		var buf bytes.Buffer
		if err := RenderTable(&buf, tbl, FormatJSON); err != nil {
			t.Fatal(err)
		}
		var rows []map[string]any
		if err := json.Unmarshal(buf.Bytes(), &rows); err != nil {
			t.Fatal(err)
		}
		for i, c := range cells {
			want := strings.ToValidUTF8(c, "\ufffd") // JSON strings are UTF-8
			if got := rows[i]["raw\nline"]; got != want {
				t.Errorf("row %d = %q, want %q", i, got, want)
			}
		}
	})
	t.Run("csv", func(t *testing.T) {
		var buf bytes.Buffer
		if err := RenderTable(&buf, tbl, FormatCSV); err != nil {
			t.Fatal(err)
		}
		recs, err := csv.NewReader(&buf).ReadAll()
		if err != nil {
			t.Fatal(err)
		}
		if recs[0][1] != "raw\nline" {
			t.Errorf("header = %q", recs[0])
		}
		for i, c := range cells {
			// encoding/csv reads \r\n inside a quoted field as \n; the
			// other controls are escaped as tables escape them.
			if want := strings.ReplaceAll(csvText(c), "\r\n", "\n"); recs[i+1][1] != want {
				t.Errorf("row %d = %q, want %q", i, recs[i+1][1], want)
			}
		}
	})
}

// TestRenderReportControlCharacters checks the report's user text: run ids,
// stop reasons, reason keys, provider names and the database path.
func TestRenderReportControlCharacters(t *testing.T) {
	tests := []struct {
		name    string
		set     func(r *reports.Report, s string)
		jsonKey string
		csv     [3]string // section, key, metric of a record holding s (key "" means s is the key)
		csvCol  int
	}{
		{"run id", func(r *reports.Report, s string) { r.Breakdowns.WorstByRetries[0].RunID = s },
			"breakdowns.worst_runs_by_retries.0.run_id", [3]string{"worst_runs_by_retries", "", "status"}, 1},
		{"stop reason", func(r *reports.Report, s string) { r.Breakdowns.WorstByRetries[0].StopReason = &s },
			"breakdowns.worst_runs_by_retries.0.stop_reason", [3]string{"worst_runs_by_retries", "run-7f3a", "stop_reason"}, 3},
		{"reason key", func(r *reports.Report, s string) { r.Breakdowns.JudgeReasons[0].Key = s },
			"breakdowns.judge_reasons.0.key", [3]string{"judge_reasons", "", "count"}, 1},
		{"database", func(r *reports.Report, s string) { r.Database = s },
			"database", [3]string{"overview", "", "database"}, 3},
		{"provider filter", func(r *reports.Report, s string) { r.Filters.Provider = &s },
			"filters.provider", [3]string{"overview", "", "filter_provider"}, 3},
	}
	const raw = "x\x1b]0;pwned\x07\n|\t\u009by"
	const escaped = `x\x1b]0;pwned\a\n|\t\u009by`
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := renderTestReport()
			tt.set(r, raw)
			out := renderAll(t, r)
			for f, want := range map[Format]string{FormatTable: escaped, FormatMarkdown: strings.ReplaceAll(escaped, "|", `\|`)} {
				if renderRawControl(string(out[f])) {
					t.Errorf("%s: raw control character in\n%s", f, out[f])
				}
				if !strings.Contains(string(out[f]), want) {
					t.Errorf("%s lacks %s:\n%s", f, want, out[f])
				}
			}
			var doc any
			if err := json.Unmarshal(out[FormatJSON], &doc); err != nil {
				t.Fatal(err)
			}
			if v := renderJSONPath(t, doc, tt.jsonKey); v != raw {
				t.Errorf("JSON %s = %q, want %q", tt.jsonKey, v, raw)
			}
			// CSV keeps newlines and tabs, which a quoted field holds, and
			// escapes the other controls as tables do.
			const csvWant = "x\\x1b]0;pwned\\a\n|\t\\u009by"
			key := tt.csv[1]
			if key == "" && tt.csv[0] != "overview" {
				key = csvWant
			}
			if v := renderCSVField(t, out[FormatCSV], tt.csv[0], key, tt.csv[2], tt.csvCol); v != csvWant {
				t.Errorf("CSV %v = %q, want %q", tt.csv, v, csvWant)
			}
		})
	}
}

// TestRenderTableDriverTypes feeds RenderTable what the store's tables hold
// for each DuckDB type (query.plainValue converts the driver's own types;
// query's TestPlainValueFromDuckDB checks that half).
func TestRenderTableDriverTypes(t *testing.T) {
	uuid := []byte{0x28, 0x63, 0x32, 0xba, 0xd9, 0x12, 0x40, 0x78, 0xa4, 0x5a, 0xc1, 0x3b, 0x2c, 0xca, 0xfb, 0xcd}
	date := time.Date(2026, 1, 2, 0, 0, 0, 0, time.UTC)
	tests := []struct {
		name string
		cell any
		text string // CSV field; table and markdown show it too ("-" for "")
		json string // compact
	}{
		{"LIST", []any{int32(1), int32(2)}, "[1,2]", `[1,2]`},
		{"empty LIST", []any{}, "[]", `[]`},
		{"nested LIST with NULL", []any{[]any{"a", nil}, []any{true}}, `[["a",null],[true]]`, `[["a",null],[true]]`},
		{"LIST of DOUBLE with inf", []any{1.5, math.Inf(1), math.NaN()}, `[1.5,null,null]`, `[1.5,null,null]`},
		{"STRUCT", map[string]any{"b": []any{1.5}, "a": int32(1)}, `{"a":1,"b":[1.5]}`, `{"a":1,"b":[1.5]}`},
		{"STRUCT with HTML characters", map[string]any{"k": "<a&b>"}, `{"k":"<a&b>"}`, `{"k":"<a&b>"}`},
		{"MAP", renderDuckMap{int32(2): "y", int32(1): "x"}, `{"1":"x","2":"y"}`, `{"1":"x","2":"y"}`},
		{"MAP of STRUCT", renderDuckMap{"k": map[string]any{"n": nil}}, `{"k":{"n":null}}`, `{"k":{"n":null}}`},
		{"NULL MAP", renderDuckMap(nil), "", `null`},
		{"UUID as bytes", uuid, "0x286332bad9124078a45ac13b2ccafbcd", `"0x286332bad9124078a45ac13b2ccafbcd"`},
		{"UUID as the store gives it", "286332ba-d912-4078-a45a-c13b2ccafbcd", "286332ba-d912-4078-a45a-c13b2ccafbcd", `"286332ba-d912-4078-a45a-c13b2ccafbcd"`},
		{"INTERVAL as the store gives it", "1 month 2 days 00:00:03", "1 month 2 days 00:00:03", `"1 month 2 days 00:00:03"`},
		{"LIST of INTERVAL", []any{"1 day"}, `["1 day"]`, `["1 day"]`},
		{"DATE", date, "2026-01-02T00:00:00Z", `"2026-01-02T00:00:00Z"`},
		{"TIME", time.Date(1970, 1, 1, 12, 34, 56, 0, time.UTC), "1970-01-01T12:34:56Z", `"1970-01-01T12:34:56Z"`},
		{"LIST of DATE", []any{date}, `["2026-01-02T00:00:00Z"]`, `["2026-01-02T00:00:00Z"]`},
		{"DECIMAL as the store gives it", json.Number("0.3"), "0.3", `0.3`},
		{"DECIMAL(4,2) negative", json.Number("-0.05"), "-0.05", `-0.05`},
		{"DECIMAL(38,10)", json.Number("1234567890123456789012345678.0000000000"),
			"1234567890123456789012345678.0000000000", `1234567890123456789012345678.0000000000`},
		{"HUGEINT", renderBig("123456789012345678901234567890"), "123456789012345678901234567890", `123456789012345678901234567890`},
		{"negative HUGEINT", renderBig("-170141183460469231731687303715884105728"), "-170141183460469231731687303715884105728", `-170141183460469231731687303715884105728`},
		{"LIST of HUGEINT", []any{big.NewInt(7)}, `[7]`, `[7]`},
		{"BLOB in LIST", []any{[]byte("hi"), []byte{0xff}}, `["hi","0xff"]`, `["hi","0xff"]`},
		{"DOUBLE -inf", math.Inf(-1), "-Inf", `null`},
		{"FLOAT inf", float32(math.Inf(1)), "+Inf", `null`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// Two columns: encoding/csv writes a lone empty field as a blank
			// line, which readers skip.
			tbl := reports.Table{Columns: []string{"id", "v"}, Rows: [][]any{{1, tt.cell}}}
			var buf bytes.Buffer
			if err := RenderTable(&buf, tbl, FormatCSV); err != nil {
				t.Fatal(err)
			}
			recs, err := csv.NewReader(&buf).ReadAll()
			if err != nil {
				t.Fatal(err)
			}
			if recs[1][1] != tt.text {
				t.Errorf("csv = %q, want %q", recs[1][1], tt.text)
			}

			buf.Reset()
			if err := RenderTable(&buf, tbl, FormatJSON); err != nil {
				t.Fatal(err)
			}
			var rows []map[string]json.RawMessage
			if err := json.Unmarshal(buf.Bytes(), &rows); err != nil {
				t.Fatalf("%v in\n%s", err, buf.String())
			}
			var got bytes.Buffer
			if err := json.Compact(&got, rows[0]["v"]); err != nil {
				t.Fatal(err)
			}
			if got.String() != tt.json {
				t.Errorf("json = %s, want %s", got.String(), tt.json)
			}

			show := tt.text
			if show == "" {
				show = "-"
			}
			for _, f := range []Format{FormatTable, FormatMarkdown} {
				buf.Reset()
				if err := RenderTable(&buf, tbl, f); err != nil {
					t.Fatal(err)
				}
				if !strings.Contains(buf.String(), "| "+markdownEscaper.Replace(show)+" ") {
					t.Errorf("%s lacks %s:\n%s", f, show, buf.String())
				}
			}
		})
	}
}

// TestRenderTableNested shows the store's values side by side: exact
// numbers are right-aligned like other numbers, nested values are JSON
// text, and JSON output nests them.
func TestRenderTableNested(t *testing.T) {
	tbl := reports.Table{
		Columns: []string{"list", "struct", "span", "amount", "big"},
		Rows: [][]any{
			{[]any{int32(1), int32(2)}, map[string]any{"a": "x|y"}, "1 year 2 months 1 day 00:00:01.5",
				json.Number("0.30"), renderBig("123456789012345678901234567890")},
			{nil, map[string]any{}, "00:00:00", json.Number("-0.05"), big.NewInt(-1)},
		},
	}
	tests := []struct {
		format Format
		want   string
	}{
		{FormatTable, `+-------+-------------+----------------------------------+--------+--------------------------------+
| list  | struct      | span                             | amount |                            big |
+-------+-------------+----------------------------------+--------+--------------------------------+
| [1,2] | {"a":"x|y"} | 1 year 2 months 1 day 00:00:01.5 |   0.30 | 123456789012345678901234567890 |
| -     | {}          | 00:00:00                         |  -0.05 |                             -1 |
+-------+-------------+----------------------------------+--------+--------------------------------+
`},
		{FormatMarkdown, `| list  | struct       | span                             | amount |                            big |
|:------|:-------------|:---------------------------------|-------:|-------------------------------:|
| [1,2] | {"a":"x\|y"} | 1 year 2 months 1 day 00:00:01.5 |   0.30 | 123456789012345678901234567890 |
| -     | {}           | 00:00:00                         |  -0.05 |                             -1 |
`},
		{FormatJSON, `[
  {
    "list": [
      1,
      2
    ],
    "struct": {
      "a": "x|y"
    },
    "span": "1 year 2 months 1 day 00:00:01.5",
    "amount": 0.30,
    "big": 123456789012345678901234567890
  },
  {
    "list": null,
    "struct": {},
    "span": "00:00:00",
    "amount": -0.05,
    "big": -1
  }
]
`},
		{FormatCSV, `list,struct,span,amount,big
"[1,2]","{""a"":""x|y""}",1 year 2 months 1 day 00:00:01.5,0.30,123456789012345678901234567890
,{},00:00:00,-0.05,-1
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

// renderJSONShape exercises the encoding/json features jsonWriter mirrors.
type renderJSONShape struct {
	Name     string    `json:"name"`
	Omitted  string    `json:"omitted,omitempty"`
	NegZero  float64   `json:"neg_zero,omitempty"`
	Zero     time.Time `json:"zero,omitzero"`
	Ptr      *float64  `json:"ptr"`
	Skipped  int       `json:"-"`
	untagged int       // unexported: never written
	NoTag    bool
	Small    float32                   `json:"small"`
	IntKeys  map[int]string            `json:"int_keys"`
	Bytes    []byte                    `json:"bytes"`
	Big      *big.Int                  `json:"big"`
	Any      any                       `json:"any"`
	Nested   map[string]reports.Metric `json:"nested"`
}

// renderPtrMarshaler marshals on the pointer only; encoding/json uses that
// when the value is addressable.
type renderPtrMarshaler struct{ N int }

func (p *renderPtrMarshaler) MarshalJSON() ([]byte, error) { return []byte(`"marshaled"`), nil }

type renderHasPtrMarshaler struct {
	M renderPtrMarshaler `json:"m"`
}

// TestRenderJSONWriter checks that jsonWriter writes finite values byte for
// byte as encoding/json does, and only non-finite floats differently.
func TestRenderJSONWriter(t *testing.T) {
	f := 2.5
	huge := 1.7e308
	finite := []struct {
		name string
		v    any
	}{
		{"floats", []float64{383, 0.1994, 383.0 / 1921, 1e7, 1e-7, 1e21, 123456789e-15, -0.0, 5e-324, math.MaxFloat64}},
		{"float32", []float32{0.1, 1e-7, 3.4e38}},
		{"strings", []string{"<a&b>", "x\u2028y", "bad\xff", "\x1b[0m\n\t", `"q"\`}},
		{"ints", []any{int8(-3), uint64(math.MaxUint64), int64(math.MinInt64)}},
		{"struct", renderJSONShape{Name: "n", NegZero: math.Copysign(0, -1), Ptr: &f, Small: 0.1,
			IntKeys: map[int]string{10: "b", 9: "a"}, Bytes: []byte{0, 1, 2}, Big: renderBig("123456789012345678901234567890"),
			Any: []any{nil, map[string]any{"z": 1, "a": 2}}, Nested: reports.Metrics{"r": renderRatio(1, 3)}}},
		{"empty struct fields", renderJSONShape{}},
		{"pointer Marshaler, addressable", &renderHasPtrMarshaler{}},
		{"pointer Marshaler, not addressable", renderHasPtrMarshaler{}},
		{"times", []time.Time{{}, time.Date(2026, 1, 2, 3, 4, 5, 6, time.FixedZone("X", 5*3600+30*60))}},
		{"report", jsonReport(renderTestReport())},
		{"empty report", jsonReport(&reports.Report{})},
	}
	for _, tt := range finite {
		t.Run(tt.name, func(t *testing.T) {
			var want, got bytes.Buffer
			enc := json.NewEncoder(&want)
			enc.SetEscapeHTML(false)
			if err := enc.Encode(tt.v); err != nil {
				t.Fatal(err)
			}
			if err := newJSONWriter(&got).value(reflect.ValueOf(tt.v)); err != nil {
				t.Fatal(err)
			}
			got.WriteByte('\n')
			if got.String() != want.String() {
				t.Errorf("got  %s\nwant %s", got.String(), want.String())
			}
		})
	}

	nonFinite := []struct {
		name string
		v    any
		want string
	}{
		{"+Inf", math.Inf(1), `null`},
		{"-Inf", math.Inf(-1), `null`},
		{"NaN", math.NaN(), `null`},
		{"float32", []float32{float32(math.Inf(-1)), 0.5}, `[null,0.5]`},
		{"in a pointer", reports.Metric{Value: renderPtr(math.NaN()), Numerator: renderPtr(huge + huge), Denominator: renderPtr(0.0)},
			`{"value":null,"numerator":null,"denominator":0}`},
		{"in a map", map[string]any{"a": math.Inf(1)}, `{"a":null}`},
		{"year -1", time.Date(-1, 1, 1, 0, 0, 0, 0, time.UTC), `"-0001-01-01T00:00:00Z"`},
		{"year 10000", time.Date(10000, 1, 1, 0, 0, 0, 1, time.UTC), `"10000-01-01T00:00:00.000000001Z"`},
		{"time pointer", renderPtr(time.Date(-1, 1, 1, 0, 0, 0, 0, time.UTC)), `"-0001-01-01T00:00:00Z"`},
		{"time in a struct", reports.Filters{Until: renderPtr(time.Date(12345, 1, 1, 0, 0, 0, 0, time.UTC))},
			`{"since":null,"until":"12345-01-01T00:00:00Z","runs":null,"provider":null}`},
	}
	for _, tt := range nonFinite {
		t.Run(tt.name, func(t *testing.T) {
			var got bytes.Buffer
			if err := newJSONWriter(&got).value(reflect.ValueOf(tt.v)); err != nil {
				t.Fatal(err)
			}
			if got.String() != tt.want {
				t.Errorf("got %s, want %s", got.String(), tt.want)
			}
		})
	}

	refused := []struct {
		name string
		v    any
	}{
		{"channel", make(chan int)},
		{"embedded struct", struct{ reports.Metric }{}},
		{",string option", struct {
			N int `json:"n,string"`
		}{}},
		{"invalid json.Number", json.Number("0x10")},
	}
	for _, tt := range refused {
		t.Run(tt.name, func(t *testing.T) {
			var got bytes.Buffer
			if err := newJSONWriter(&got).value(reflect.ValueOf(tt.v)); err == nil {
				t.Errorf("encoded %T as %s, want an error", tt.v, got.String())
			}
		})
	}
}

// A right-to-left override would reorder what the terminal shows after
// it ("Trojan Source"): tables show it escaped, as other controls.
func TestBidiControlsEscaped(t *testing.T) {
	for _, r := range []rune{0x202e, 0x202a, 0x2066, 0x2069, 0x200f} {
		got := escapeControls("run-" + string(r) + "1")
		if strings.ContainsRune(got, r) || !strings.Contains(got, strconv.QuoteRune(r)[1:7]) {
			t.Errorf("%U shown as %q", r, got)
		}
	}
	if got := csvText("a\x1bb\x00c\x07\td\n"); got != `a\x1bb\x00c\a`+"\td\n" {
		t.Errorf("CSV cell %q", got)
	}
}

// Render is RenderReport with every cell in full.
func Render(w io.Writer, r *reports.Report, f Format) error { return RenderWidth(w, r, f, 0) }

// RenderWidth is RenderReport fitted to a terminal width columns wide.
func RenderWidth(w io.Writer, r *reports.Report, f Format, width int) error {
	return RenderReport(w, r, f, Options{Width: width})
}

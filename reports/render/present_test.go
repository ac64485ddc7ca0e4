package render

import (
	"bytes"
	"encoding/csv"
	"fmt"
	"strings"
	"testing"

	"github.com/orchstat/orchstat/model/reports"

	"github.com/olekukonko/tablewriter/pkg/twwidth"
)

// Values a person reads are rounded with units; JSON and CSV keep full
// precision.
func TestRenderReadableValues(t *testing.T) {
	r := renderTestReport()
	out := renderAll(t, r)
	for _, f := range []Format{FormatTable, FormatMarkdown} {
		for _, want := range []string{
			"19.9%", // provider_retry_rate 383/1921
			"35.0%", // l2_escalation_rate 14/40
			"2.55",  // avg_repair_iterations 97/38, an average
			"2.3 s", // avg_duration_ms 2345.678
			"20.8%", // a day's rate
		} {
			if !bytes.Contains(out[f], []byte(want)) {
				t.Errorf("%s output lacks %q", f, want)
			}
		}
		for _, raw := range []string{"0.1994", "0.3500", "2345.6780", "2.5526"} {
			if bytes.Contains(out[f], []byte(raw)) {
				t.Errorf("%s output shows the raw number %q", f, raw)
			}
		}
	}
	if !bytes.Contains(out[FormatCSV], []byte(fmt.Sprint(383.0/1921))) || !bytes.Contains(out[FormatJSON], []byte(fmt.Sprint(383.0/1921))) {
		t.Error("CSV or JSON lost the full precision of provider_retry_rate")
	}
}

func TestRenderMetricText(t *testing.T) {
	tests := []struct {
		name string
		v    *float64
		want string
	}{
		{"provider_retry_rate", renderPtr(0.2808988764044944), "28.1%"},
		{"wasted_attempt_rate", renderPtr(1.0), "100.0%"},
		{"avg_repair_iterations", renderPtr(10.0 / 3), "3.33"},
		{"failed_runs", renderPtr(3.0), "3"},
		{"runs", nil, "-"},
		{"sql", renderPtr(12.5), "12.50"},
	}
	for _, tt := range tests {
		if got := MetricText(tt.name, tt.v); got != tt.want {
			t.Errorf("MetricText(%s) = %q, want %q", tt.name, got, tt.want)
		}
	}
	short := []struct {
		metric, cond string
		threshold    float64
		want         string
	}{
		{"provider_retry_rate", "value > threshold && denominator >= 20", 0.2, "> 20%"},
		{"candidate_validity_rate", "value < threshold && denominator >= 20", 0.5, "< 50%"},
		{"avg_repair_iterations", "threshold < value", 3, "> 3"},
		{"l3_diagnosis_rate", "", 0.1, "10%"},
		{"record_failure_rate", "numerator >= threshold", 3, "numerator >= 3"},
		{"failed_runs", "", 3, "3"},
		{"x", "labels.a == 'b'", 1, "labels.a == 'b'"},
	}
	for _, tt := range short {
		if got := ThresholdShort(tt.metric, tt.cond, tt.threshold); got != tt.want {
			t.Errorf("ThresholdShort(%s, %q) = %q, want %q", tt.metric, tt.cond, got, tt.want)
		}
	}
}

// wideLines returns the lines of out wider than width display columns.
func wideLines(out string, width int) []string {
	var bad []string
	for _, l := range strings.Split(out, "\n") {
		if twwidth.Width(l) > width {
			bad = append(bad, fmt.Sprintf("%d: %s", twwidth.Width(l), l))
		}
	}
	return bad
}

// At a terminal every line fits its width; elsewhere (width 0) the output
// is exactly Render's.
func TestRenderFitsWidth(t *testing.T) {
	r := renderTestReport()
	r.Scope = reports.Scope{Paths: []string{"/home/someone/projects/with/a/rather/long/path/to/its/runs/directory-that-goes-on-and-on"}, RunsInStore: 40, RunsLeftOut: 28}
	r.Breakdowns.WorstByRetries[0].RunID = "run-" + strings.Repeat("日本", 30) // wide characters count twice
	for _, f := range []Format{FormatTable, FormatMarkdown} {
		var whole bytes.Buffer
		if err := Render(&whole, r, f); err != nil {
			t.Fatal(err)
		}
		if len(wideLines(whole.String(), 120)) == 0 {
			t.Fatalf("%s: the test report fits 120 columns unfitted; it tests nothing", f)
		}
		var zero bytes.Buffer
		if err := RenderWidth(&zero, r, f, 0); err != nil {
			t.Fatal(err)
		}
		if zero.String() != whole.String() {
			t.Errorf("%s at width 0 differs from Render", f)
		}
		for _, width := range []int{80, 120} {
			var buf bytes.Buffer
			if err := RenderWidth(&buf, r, f, width); err != nil {
				t.Fatal(err)
			}
			out := buf.String()
			if bad := wideLines(out, width); len(bad) > 0 {
				t.Errorf("%s at %d columns: %d lines too wide:\n%s\n%s", f, width, len(bad), strings.Join(bad, "\n"), out)
			}
			// Nothing is lost that fits: every metric name and day is shown.
			wants := []string{"judge_invocations_per_l3_run", "candidate_validity_rate", "2026-01-29", "> 20%", "19.9%"}
			if f == FormatTable {
				// A cell of several items wraps onto lines, item by item.
				wants = append(wants, "ALERT;", "> 50%")
			}
			for _, want := range wants {
				if !strings.Contains(out, want) {
					t.Errorf("%s at %d columns lacks %q:\n%s", f, width, want, out)
				}
			}
			if strings.Contains(out, "denominator >= 20 (provider_retry_rate_high)") {
				t.Errorf("%s at %d columns shows the whole condition", f, width)
			}
		}
	}
}

// A generic table is fitted the same way; one that fits is untouched.
func TestRenderTableFitsWidth(t *testing.T) {
	tbl := reports.Table{Title: "t", Columns: []string{"rule", "state", "labels", "value", "threshold", "active_since", "changed"}}
	for i := range 5 {
		tbl.Rows = append(tbl.Rows, []any{fmt.Sprintf("provider_retry_rate_high_%d", i), "firing",
			"provider=" + strings.Repeat("x", 40), 0.25, "value > 0.2 && denominator >= 20", "2026-11-21T12:00:00Z", "pending→firing"})
	}
	var whole bytes.Buffer
	if err := RenderTable(&whole, tbl, FormatTable); err != nil {
		t.Fatal(err)
	}
	for _, width := range []int{80, 120} {
		tbl.Width = width
		var buf bytes.Buffer
		if err := RenderTable(&buf, tbl, FormatTable); err != nil {
			t.Fatal(err)
		}
		if bad := wideLines(buf.String(), width); len(bad) > 0 {
			t.Errorf("%d columns: too wide:\n%s", width, buf.String())
		}
		if width == 120 && !strings.Contains(buf.String(), "provider_retry_rate_high_4") {
			t.Errorf("%d columns: the first column was cut:\n%s", width, buf.String())
		}
	}
	tbl.Width = 400
	var wide bytes.Buffer
	RenderTable(&wide, tbl, FormatTable)
	if wide.String() != whole.String() {
		t.Errorf("a table that fits changed:\n%s", wide.String())
	}
}

// sql shows NULL as NULL, so it differs from the string "-".
func TestRenderTableNull(t *testing.T) {
	tbl := reports.Table{Columns: []string{"a", "b"}, Rows: [][]any{{nil, "-"}}, Null: "NULL"}
	for _, f := range []Format{FormatTable, FormatMarkdown} {
		var buf bytes.Buffer
		if err := RenderTable(&buf, tbl, f); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(buf.String(), "| NULL | - |") {
			t.Errorf("%s:\n%s", f, buf.String())
		}
	}
	tbl.Null = ""
	var buf bytes.Buffer
	RenderTable(&buf, tbl, FormatTable)
	if !strings.Contains(buf.String(), "| - | - |") {
		t.Errorf("default null:\n%s", buf.String())
	}
}

// Every format says which store and which of its runs a report covers.
func TestRenderScope(t *testing.T) {
	r := renderTestReport()
	r.Scope = reports.Scope{Paths: []string{"/a", "/b"}, RunsInStore: 40, RunsLeftOut: 28}
	r.Overview.Undated = 3
	r.Overview.QueuedTasks = 101
	out := renderAll(t, r)
	for _, f := range []Format{FormatTable, FormatMarkdown} {
		for _, want := range []string{
			"Store: /var/lib/orchstat/orchstat.duckdb — scope: runs under /a, /b (12 of 40 runs in the store; 28 left out)",
			"3 runs undated (in no time window)",
			"101 queued tasks never ran (not runs)",
		} {
			if !bytes.Contains(out[f], []byte(want)) {
				t.Errorf("%s lacks %q:\n%s", f, want, out[f])
			}
		}
	}
	recs, err := csv.NewReader(bytes.NewReader(out[FormatCSV])).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string][]string{}
	for _, rec := range recs {
		got[rec[0]+"."+rec[2]] = append(got[rec[0]+"."+rec[2]], rec[3])
	}
	for k, want := range map[string]string{"scope.path": "/a,/b", "scope.runs_in_store": "40", "scope.runs_left_out": "28",
		"overview.undated": "3", "overview.queued_tasks": "101"} {
		if g := strings.Join(got[k], ","); g != want {
			t.Errorf("CSV %s = %q, want %q", k, g, want)
		}
	}
	for _, want := range []string{`"runs_left_out": 28`, `"undated": 3`, `"queued_tasks": 101`} {
		if !bytes.Contains(out[FormatJSON], []byte(want)) {
			t.Errorf("JSON lacks %s", want)
		}
	}

	whole := renderTestReport()
	whole.Scope.RunsInStore = 1
	var buf bytes.Buffer
	Render(&buf, whole, FormatTable)
	if !strings.HasPrefix(buf.String(), "Store: /var/lib/orchstat/orchstat.duckdb — scope: the whole store (1 run)\n") ||
		strings.Contains(buf.String(), "runs undated") || strings.Contains(buf.String(), "never ran") {
		t.Errorf("whole store:\n%s", buf.String())
	}
}

// Fitting never cuts two different cells to the same text, and keeps the
// columns that tell the rows apart, leaving out value columns first.
func TestRenderTableFitKeepsRowsApart(t *testing.T) {
	tbl := reports.Table{Title: "By provider and model",
		Columns: []string{"provider", "model", "requests", "retried", "failed", "retries_total", "retry_rate", "failure_rate", "avg_duration_ms"}}
	for _, m := range [][2]string{{"anthropic", "claude-haiku-4-5"}, {"anthropic", "claude-sonnet-4-5"}, {"gemini", "gemini-2.5-flash"},
		{"gemini", "gemini-2.5-pro"}, {"ollama", "qwen2.5-coder:32b"}, {"openai", "gpt-5"}, {"openai", "gpt-5-mini"}} {
		tbl.Rows = append(tbl.Rows, []any{m[0], m[1], 52, 14, 0, 17, "26.9%", "0.0%", "11.9 s"})
	}
	for _, width := range []int{80, 100, 120} {
		tbl.Width = width
		var buf bytes.Buffer
		if err := RenderTable(&buf, tbl, FormatTable); err != nil {
			t.Fatal(err)
		}
		out := buf.String()
		if bad := wideLines(out, width); len(bad) > 0 {
			t.Errorf("%d columns: too wide:\n%s", width, out)
		}
		for _, want := range []string{"gemini-2.5-flash", "gemini-2.5-pro", "claude-haiku-4-5"} {
			if !strings.Contains(out, want) {
				t.Errorf("%d columns: %q was cut:\n%s", width, want, out)
			}
		}
		// Every table drawn carries the model, so each row can be told.
		if n, m := strings.Count(out, "| provider "), strings.Count(out, "| model "); n != m {
			t.Errorf("%d columns: %d tables, %d with the model column:\n%s", width, n, m, out)
		}
	}
}

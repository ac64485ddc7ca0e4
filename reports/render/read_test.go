package render

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/orchstat/orchstat/model/reports"
)

// TestSplitTableKeepsSortColumnFirst: at 80 columns the worst runs' tables
// split, and the first part held run_id, started_at, status and
// provider_requests, not the column its rows are sorted by.
func TestSplitTableKeepsSortColumnFirst(t *testing.T) {
	r := renderTestReport()
	// Ten runs, as the store lists: too many to turn the table round.
	var runs []reports.RunRow
	for i := range 10 {
		iters := float64(12 - i)
		runs = append(runs, reports.RunRow{RunID: fmt.Sprintf("17622669884%02d", i), StartedAt: time.Date(2025, 11, 4, 14, i, 0, 0, time.UTC),
			Status: "failure", ProviderRequests: 22, ProviderRetries: float64(9 - i), RepairIterations: &iters, StopReason: renderPtr("repeated_failure")})
	}
	r.Breakdowns.WorstByRetries, r.Breakdowns.WorstByIterations = runs, runs
	for _, f := range []Format{FormatTable, FormatMarkdown} {
		var buf bytes.Buffer
		if err := RenderWidth(&buf, r, f, 80); err != nil {
			t.Fatal(err)
		}
		out := buf.String()
		for title, sorted := range map[string]string{
			"Worst runs by retries":    "provider_retries",
			"Worst runs by iterations": "repair_iterations",
		} {
			i := strings.Index(out, title+"\n")
			if i < 0 {
				t.Fatalf("%s: no %q in\n%s", f, title, out)
			}
			first := firstHeaderLine(out[i+len(title)+1:])
			if !strings.Contains(first, "run_id") || !strings.Contains(first, sorted) {
				t.Errorf("%s: %s's first table's header %q lacks run_id or %s:\n%s", f, title, first, sorted, out[i:])
			}
		}
	}
}

// firstHeaderLine is the first line of s that names columns ("| a | b |").
func firstHeaderLine(s string) string {
	for _, l := range strings.Split(s, "\n") {
		if strings.HasPrefix(l, "|") && strings.Contains(l, "_") {
			return l
		}
	}
	return ""
}

// A table too wide for the terminal is one table, never pieces: its last
// columns are left out, never the keys nor the column sorted by, and the
// line under it names them. Before, the per-model table at 80 columns was
// cut into eight pieces of one value column each.
func TestFitLeavesOutColumnsAndSaysSo(t *testing.T) {
	p := fitPart{
		header:  []string{"id", "aaaaaaaaaa", "bbbbbbbbbb", "cccccccccc", "dddddddddd"},
		numeric: make([]bool, 5),
	}
	for i := range 6 {
		p.rows = append(p.rows, []string{fmt.Sprintf("run-%04d", i), "a", "b", "c", "d"})
	}
	parts := fitTable(p.header, p.rows, p.numeric, 3, 40, true, false)
	if len(parts) != 1 {
		t.Fatalf("%d parts, want one table", len(parts))
	}
	if got := strings.Join(parts[0].header, ","); got != "id,aaaaaaaaaa,cccccccccc" {
		t.Errorf("columns %s, want id, aaaaaaaaaa and the sorted cccccccccc", got)
	}
	if got := strings.Join(parts[0].leftOut, ","); got != "bbbbbbbbbb,dddddddddd" {
		t.Errorf("left out %q", got)
	}
	var buf bytes.Buffer
	g := grid{title: "T", columns: p.header, numeric: p.numeric, rows: p.rows, sorted: "cccccccccc"}
	if err := writeGrids(&buf, []grid{g}, FormatTable, 40); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(strings.ReplaceAll(buf.String(), "\n", " "), "(left out at 40 columns: bbbbbbbbbb, dddddddddd; --wide shows every column)") {
		t.Errorf("no line names the columns left out:\n%s", buf.String())
	}
	for _, l := range strings.Split(strings.TrimSpace(buf.String()), "\n")[1:] {
		if len([]rune(l)) > 40 && !strings.HasPrefix(l, "(left out") {
			t.Errorf("line wider than 40: %q", l)
		}
	}
}

func TestCutMiddle(t *testing.T) {
	for _, tt := range []struct {
		s    string
		w    int
		want string
	}{
		{"bedrock/au.anthropic.claude-sonnet-4-5-20250929-v1:0", 26, "bedrock/au.an…0250929-v1:0"},
		{"claude-sonnet-4-5", 20, "claude-sonnet-4-5"},
		{"tests fail and lint is ok", 10, "tests fai…"},
	} {
		got := cut(tt.s, tt.w)
		if got != tt.want && tt.w >= len([]rune(tt.want)) {
			t.Errorf("cut(%q, %d) = %q, want %q", tt.s, tt.w, got, tt.want)
		}
		if len([]rune(got)) > tt.w {
			t.Errorf("cut(%q, %d) = %q is wider", tt.s, tt.w, got)
		}
	}
}

// TestHTMLThresholdsReadAsAtTerminal: the page's metrics table showed
// "value > 0.2 && denominator >= 20 (provider_retry_rate_high) ALERT",
// ALERT a word like the others. It shows "> 20%" (the whole condition its
// title) and a crossed one marked with more than a colour.
func TestHTMLThresholdsReadAsAtTerminal(t *testing.T) {
	page := htmlRender(t, htmlTestReport())
	i := strings.Index(page, `<section id="metrics"`)
	j := strings.Index(page[i:], "</section>")
	metrics := page[i : i+j]
	if strings.Contains(metrics, ">value &gt;") || strings.Contains(metrics, "&amp;&amp; denominator &gt;= 20 (provider_retry_rate_high)<") {
		t.Errorf("a threshold shows its whole condition:\n%s", metrics)
	}
	for _, want := range []string{
		`title="value &gt; 0.2 &amp;&amp; denominator &gt;= 20 (provider_retry_rate_high)"`,
		`>&gt; 20%<`,
		`<tr class="alert"><th scope="row">l2_escalation_rate<`,
		`&gt; 30% <strong class="alert-mark"><span aria-hidden="true">▲ </span>ALERT</strong>; &gt; 50%`,
	} {
		if !strings.Contains(metrics, want) {
			t.Errorf("metrics lack %s:\n%s", want, metrics)
		}
	}
	if !strings.Contains(page, ".alert-mark {") {
		t.Error("no style for the ALERT mark")
	}
}

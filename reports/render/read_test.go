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

func TestSplitColumnsSorted(t *testing.T) {
	p := fitPart{
		header:  []string{"id", "aaaaaaaaaa", "bbbbbbbbbb", "cccccccccc", "dddddddddd"},
		rows:    [][]string{{"1", "a", "b", "c", "d"}, {"2", "a", "b", "c", "d"}},
		numeric: make([]bool, 5),
	}
	parts := splitColumns(p, 3, 35)
	var got []string
	for _, part := range parts {
		got = append(got, strings.Join(part.header, ","))
	}
	want := "id,aaaaaaaaaa,cccccccccc id,bbbbbbbbbb,dddddddddd"
	if strings.Join(got, " ") != want {
		t.Errorf("parts %q, want %q", got, want)
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

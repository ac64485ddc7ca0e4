package render

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/orchstat/orchstat/model/reports"
)

func TestSparkline(t *testing.T) {
	days := func(counts ...int64) []reports.DayPoint {
		var out []reports.DayPoint
		for _, c := range counts {
			out = append(out, reports.DayPoint{Count: c})
		}
		return out
	}
	for _, tt := range []struct {
		name string
		days []reports.DayPoint
		g    glyphs
		want string
	}{
		{"rising", days(1, 2, 4, 8), unicodeGlyphs, "▁▂▄█"},
		{"a gap shows", days(8, 0, 0, 8), unicodeGlyphs, "█  █"},
		{"ascii", days(1, 2, 4, 8), asciiGlyphs, ".:=@"},
		{"nothing", days(0, 0), unicodeGlyphs, ""},
		// 28 days in 14 characters: two days a character.
		{"folded", days(1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 4, 4), unicodeGlyphs, "▂            █"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := sparkline(tt.days, tt.g); got != tt.want {
				t.Errorf("sparkline = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestCutMiddleText(t *testing.T) {
	for _, tt := range []struct {
		s    string
		w    int
		want string
	}{
		{"bedrock/au.anthropic.claude-sonnet-4-5-20250929-v1:0", 20, "bedrock/au…0929-v1:0"},
		{"short", 20, "short"},
		{"abcdefghij", 5, "ab…ij"},
	} {
		if got := cutMiddleText(tt.s, tt.w, "…"); got != tt.want || len([]rune(got)) > tt.w {
			t.Errorf("cutMiddleText(%q, %d) = %q, want %q", tt.s, tt.w, got, tt.want)
		}
	}
}

// A change whose interval includes zero is shown as ~, never ▲ or ▼; one
// that excludes it is marked; a change not shown is blank.
func TestChangeText(t *testing.T) {
	f := func(v float64) *float64 { return &v }
	for _, tt := range []struct {
		metric string
		c      *reports.Change
		want   string
	}{
		{"call_retry_rate", &reports.Change{Delta: f(0.05), Low: f(0.01), High: f(0.09), Significant: true}, "▲+5.0 [1.0, 9.0] pts"},
		{"call_retry_rate", &reports.Change{Delta: f(-0.05), Low: f(-0.09), High: f(-0.01), Significant: true}, "▼-5.0 [-9.0, -1.0] pts"},
		{"call_retry_rate", &reports.Change{Delta: f(0.02), Low: f(-0.01), High: f(0.05)}, "~+2.0 [-1.0, 5.0] pts"},
		{"calls", &reports.Change{Delta: f(12), Significant: true}, "+12"},
		{"call_retry_rate", &reports.Change{Reason: "fewer than 20 samples"}, ""},
		{"call_retry_rate", nil, ""},
	} {
		if got := changeText(tt.metric, tt.c, unicodeGlyphs, true); got != tt.want {
			t.Errorf("changeText(%s, %+v) = %q, want %q", tt.metric, tt.c, got, tt.want)
		}
	}
}

// The summary leads the table and Markdown formats; --section picks
// sections and leaves the summary out unless named.
func TestSummaryFirstAndSections(t *testing.T) {
	r := renderTestReport()
	at := time.Date(2026, 1, 30, 0, 0, 0, 0, time.UTC)
	r.Summary = &reports.Summary{Window: reports.Period{Until: at}, Attention: reports.Attention{At: at, Rules: 3, Counts: map[string]int{"inactive": 3}},
		Systems: []reports.SystemSummary{{System: "orchestrator", Unit: "runs", Count: reports.Figure{Metric: "runs", Value: func() *float64 { v := 400.0; return &v }()}}}}
	for _, f := range []Format{FormatTable, FormatMarkdown} {
		var buf bytes.Buffer
		if err := RenderReport(&buf, r, f, Options{Width: 80}); err != nil {
			t.Fatal(err)
		}
		out := buf.String()
		w, a, o := strings.Index(out, "Window: all data"), strings.Index(out, "nothing firing or pending"), strings.Index(out, "Overview")
		if w < 0 || a < w || o < a {
			t.Errorf("%s: want the window, then attention, then the overview:\n%s", f, out)
		}
		buf.Reset()
		if err := RenderReport(&buf, r, f, Options{Width: 80, Sections: []string{"metrics"}}); err != nil {
			t.Fatal(err)
		}
		if out := buf.String(); strings.Contains(out, "Window:") || strings.Contains(out, "Overview") || !strings.Contains(out, "Metrics") {
			t.Errorf("%s --section metrics:\n%s", f, out)
		}
	}
	if _, err := ParseSections([]string{"summary,by_day", "all"}); err != nil {
		t.Error(err)
	}
	if _, err := ParseSections([]string{"nope"}); err == nil || !strings.Contains(err.Error(), "summary") {
		t.Errorf("ParseSections(nope) = %v, want the names listed", err)
	}
}

// Days months apart are drawn apart: the days between are filled in as
// gaps, not joined as neighbours.
func TestEveryDay(t *testing.T) {
	days := []reports.DayRow{{Day: "2025-09-03"}, {Day: "2025-09-05"}, {Day: "2026-08-03"}}
	all := everyDay(days)
	if len(all) != 335 || all[0].Day != "2025-09-03" || all[1].Day != "2025-09-04" || all[1].Metrics != nil || all[334].Day != "2026-08-03" {
		t.Errorf("everyDay: %d days, %v … %v", len(all), all[:2], all[len(all)-1])
	}
	if got := everyDay([]reports.DayRow{{Day: "x"}}); len(got) != 1 {
		t.Errorf("not dates: %v", got)
	}
}

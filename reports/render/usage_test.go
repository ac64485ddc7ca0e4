package render

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/olekukonko/tablewriter/pkg/twwidth"
	"github.com/orchstat/orchstat/model/reports"
)

func f64(v float64) *float64 { return &v }

// usageTestReport is two days of calls, one model without a price.
func usageTestReport() *reports.UsageReport {
	day := func(key string, calls int64, in, read, write, out, cost float64, noPrice int64) reports.UsageRow {
		return reports.UsageRow{Key: key, Calls: calls, WithAttempts: calls, Attempts: calls + 2, Retried: 2, Failed: 1,
			InputTokens: f64(in), CacheReadTokens: f64(read), CacheWriteTokens: f64(write), OutputTokens: f64(out),
			CostUSD: f64(cost), CostFromPrice: calls - noPrice, NoPriceCalls: noPrice, FailedCostUSD: f64(cost / 50)}
	}
	d1 := day("2026-02-23", 196, 920924, 19216384, 150674, 83896, 6.149, 0)
	d2 := day("2026-02-24", 125, 1458055, 14299392, 0, 66257, 5.9816, 3)
	d1.Models = []reports.UsageRow{d1}
	d1.Models[0].Provider, d1.Models[0].Model = "anthropic", "claude-sonnet-4-20250514"
	d2.Models = []reports.UsageRow{d2}
	d2.Models[0].Provider, d2.Models[0].Model = "openai", "gpt-5.3-codex"
	total := day("total", 321, 2378979, 33515776, 150674, 150153, 12.1306, 3)
	return &reports.UsageReport{GeneratedAt: time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC), Database: "orchstat.duckdb",
		Scope: reports.Scope{Paths: []string{}, RunsInStore: 5},
		Usage: reports.Usage{By: "day", Timezone: "Europe/Paris", Rows: []reports.UsageRow{d1, d2}, Total: total,
			NoPrice: []reports.NoPriceModel{{Provider: "openai", Model: "gpt-5.6-luna", Calls: 3}}}}
}

// TestUsageAt80Columns: at a terminal 80 columns wide the usage view
// abbreviates tokens, leaves out the columns least asked for, and every
// line fits.
func TestUsageAt80Columns(t *testing.T) {
	var buf bytes.Buffer
	if err := RenderUsage(&buf, usageTestReport(), FormatTable, 80); err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(buf.String(), "\n") {
		if w := twwidth.Width(line); w > 80 {
			t.Errorf("%d columns: %s", w, line)
		}
	}
	for _, want := range []string{"19.2M", "$12.13+?", "gpt-5.6-luna", "cost", "retried"} {
		if !strings.Contains(buf.String(), want) {
			t.Errorf("the 80-column view lacks %q", want)
		}
	}
	renderGolden(t, "usage-80.table.golden", buf.Bytes())
}

// TestUsageFormats: every format renders, JSON with [] for empty lists.
func TestUsageFormats(t *testing.T) {
	empty := &reports.UsageReport{Usage: reports.Usage{By: "session", Timezone: "UTC"}}
	for _, f := range PageFormats {
		for _, r := range []*reports.UsageReport{usageTestReport(), empty} {
			var buf bytes.Buffer
			if err := RenderUsage(&buf, r, f, 0); err != nil {
				t.Errorf("%s: %v", f, err)
			}
		}
	}
	var buf bytes.Buffer
	RenderUsage(&buf, empty, FormatJSON, 0)
	if !strings.Contains(buf.String(), `"rows": []`) || !strings.Contains(buf.String(), `"no_price": []`) {
		t.Errorf("empty lists are not []:\n%s", buf.String())
	}
}

// TestCopiesLines: copies left out are said, on two devices and within
// one told apart; none, nothing is said.
func TestCopiesLines(t *testing.T) {
	for _, tc := range []struct {
		c    reports.UsageCopies
		want string
	}{
		{reports.UsageCopies{}, ""},
		{reports.UsageCopies{OnSeveralDevices: 1, LeftOut: 1}, "1 call seen on two devices or more: each counted once (1 copy left out)"},
		{reports.UsageCopies{OnSeveralDevices: 2, WithinOneDevice: 1, LeftOut: 4},
			"2 calls seen on two devices or more; 1 call copied within one device (a sub-agent's replay, a resumed session, a copied file): each counted once (4 copies left out)"},
	} {
		if got := strings.Join(copiesLines(tc.c), "\n"); got != tc.want {
			t.Errorf("%+v: %q, want %q", tc.c, got, tc.want)
		}
	}
}

package chart

import (
	"strings"
	"testing"
)

// TestCategoryLabelsUseTheRoom: labels were cut at 22 runes wherever they
// stood ("anthropic/claude-haik…" beside a chart with room to spare,
// "orchestrator (baselin…" under one). Beside the bars a label takes up
// to labelWidth; under a chart it takes a second line before it is cut.
func TestCategoryLabelsUseTheRoom(t *testing.T) {
	side := categoryTicks([]string{"anthropic/claude-haiku-4-5", "ollama/qwen2.5-coder:32b"}, MaxBars, true)
	if side[0].Label != "anthropic/claude-haiku-4-5" || side[1].Label != "ollama/qwen2.5-coder:32b" {
		t.Errorf("labels beside the bars: %q, %q", side[0].Label, side[1].Label)
	}
	under := categoryTicks([]string{"orchestrator (baseline)", "auto-retry", "orchestrator with max-retries 5"}, 8, false)
	if under[0].Label != "orchestrator\n(baseline)" || under[1].Label != "auto-retry" || under[2].Label != "orchestrator with\nmax-retries 5" {
		t.Errorf("labels under the chart: %q", []string{under[0].Label, under[1].Label, under[2].Label})
	}
	long := categoryTicks([]string{strings.Repeat("x", 80)}, MaxBars, true)
	if !strings.HasSuffix(long[0].Label, "…") || len(long[0].Label) > 60 {
		t.Errorf("a label wider than labelWidth: %q", long[0].Label)
	}
}

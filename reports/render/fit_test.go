package render

import (
	"bytes"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/olekukonko/tablewriter/pkg/twwidth"
)

// TestCutKeepsHeadAndTail: an identifier loses its middle, keeping its
// head and tail around one "…", in exactly the columns given; a cell of
// words loses its end; nothing that fits changes.
func TestCutKeepsHeadAndTail(t *testing.T) {
	for _, tt := range []struct {
		name string
		s    string
		w    int
		want string
	}{
		{"fits", "claude-sonnet-4-5", 20, "claude-sonnet-4-5"},
		{"fits exactly", "claude-sonnet-4-5", 17, "claude-sonnet-4-5"},
		{"bedrock model", "bedrock/au.anthropic.claude-sonnet-4-5-20250929-v1:0", 26, "bedrock/au.an…0250929-v1:0"},
		{"dated model", "claude-sonnet-4-20250514", 20, "claude-son…-20250514"},
		{"session id", "019c8a59-e9dd-7c01-a4d2-4079fe9726a9", 28, "019c8a59-e9dd-…-4079fe9726a9"},
		{"path", "/home/ci/.codex/sessions/2026/02/23/rollout.jsonl", 24, "/home/ci/.co…llout.jsonl"},
		{"nested model keeps its mark", "└ claude-sonnet-4-20250514", 22, "└ claude-son…-20250514"},
		{"words lose their end", "tests fail and lint is ok", 10, "tests fai…"},
		{"too narrow for a middle", "abcdefghij", 4, "abc…"},
		{"wide characters", "模型-claude-sonnet-4-5-20250929", 16, "模型-cla…0250929"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got := cut(tt.s, tt.w)
			if got != tt.want {
				t.Errorf("cut(%q, %d) = %q, want %q", tt.s, tt.w, got, tt.want)
			}
			if w := twwidth.Width(got); w > tt.w {
				t.Errorf("cut(%q, %d) = %q is %d columns wide", tt.s, tt.w, got, w)
			}
			if got != tt.s && strings.Count(got, "…") != 1 {
				t.Errorf("cut(%q, %d) = %q: want one …", tt.s, tt.w, got)
			}
		})
	}
}

// TestNoColumnVanishesSilently: whatever the width, every column of a
// table is either drawn or named in the one line under it that says
// --wide shows it; the table is one table (never pieces), and no line is
// wider than the terminal.
func TestNoColumnVanishesSilently(t *testing.T) {
	model := []string{
		"bedrock/au.anthropic.claude-sonnet-4-5-20250929-v1:0", "claude-sonnet-4-20250514",
		"gpt-5.3-codex", "claude-opus-4-6", "gemini-2.5-pro", "gemini-2.5-flash",
	}
	calls := grid{title: "Agents' model calls by provider and model",
		columns: []string{"system", "provider", "model", "calls", "failed", "retried", "unknown", "retry_rate",
			"failure_rate", "input", "cache_read", "cache_write", "output", "cost"}}
	for i, m := range model {
		calls.rows = append(calls.rows, []string{"otel", fmt.Sprintf("provider-%d", i%3), m, "321", "0", "12", "0",
			"3.7%", "0.0%", "2437520", "38331616", "307698", "213830", "$12.13"})
	}
	calls.numeric = []bool{false, false, false, true, true, true, true, true, true, true, true, true, true, true}
	stages := grid{title: "Failures by stage",
		columns: []string{"class", "stage", "runs", "failed_attempts", "retry_helps", "classification"},
		numeric: []bool{false, false, true, true, false, false},
		rows: [][]string{
			{"precondition failure", "preflight", "0", "0", "no", "deterministic failure retried"},
			{"write outside allowed files", "write_scope_violation", "0", "0", "maybe", "partially justified, but fragile"},
			{"acceptance command does not parse", "acceptance_failed", "1", "2", "no", "deterministic failure retried (acceptance command does not parse)"},
		}}
	usage := grids(usageSections(usageTestReport(), 0, true))[0]
	sorted := calls
	sorted.sorted = "retried"
	oneRow := calls
	oneRow.title, oneRow.rows = "one row", calls.rows[:1]
	for _, g := range []grid{calls, stages, usage, sorted, oneRow} {
		for _, f := range []Format{FormatTable, FormatMarkdown} {
			for width := 30; width <= 200; width += 5 {
				t.Run(fmt.Sprintf("%s/%s/%d", g.title, f, width), func(t *testing.T) {
					var buf bytes.Buffer
					if err := writeGrids(&buf, []grid{g}, f, width); err != nil {
						t.Fatal(err)
					}
					checkNothingVanishes(t, g, buf.String(), width)
				})
			}
		}
	}
}

// checkNothingVanishes fails when a column of g is neither in out's
// table nor named by its left-out line.
func checkNothingVanishes(t *testing.T, g grid, out string, width int) {
	t.Helper()
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	var drawn, note []string
	headers := 0
	for i, l := range lines {
		if twwidth.Width(l) > width {
			t.Errorf("line %d is %d columns wide: %q", i+1, twwidth.Width(l), l)
		}
		switch {
		case strings.HasPrefix(l, "(left out at") || len(note) > 0:
			note = append(note, l)
		case strings.HasPrefix(l, "|") && len(drawn) == 0:
			// The first row of a table is its header (in Markdown too).
			for _, c := range strings.Split(strings.Trim(l, "|"), "|") {
				drawn = append(drawn, strings.TrimSpace(c))
			}
		}
		if strings.HasPrefix(l, "+-") || strings.HasPrefix(l, "|--") || strings.HasPrefix(l, "|:-") || strings.HasPrefix(l, "| -") {
			headers++
		}
	}
	var first []string
	for _, l := range lines {
		if strings.HasPrefix(l, "|") && !strings.HasPrefix(l, "|-") && !strings.HasPrefix(l, "|:") {
			first = append(first, strings.TrimSpace(strings.Split(strings.Trim(l, "|"), "|")[0]))
		}
	}
	turned := len(g.columns) > 2 && slices.Contains(first, g.columns[1])
	if turned {
		// A table of few rows turned round: its columns are the first
		// cells.
		if len(g.rows) > maxTurned {
			t.Errorf("a table of %d rows turned round:\n%s", len(g.rows), out)
		}
		drawn = first
	}
	text := strings.Join(note, " ")
	if len(note) > 0 && !strings.Contains(text, fmt.Sprintf("left out at %d columns:", width)) || len(note) > 0 && !strings.Contains(text, "--wide") {
		t.Errorf("the line under the table does not say the width and --wide: %q", text)
	}
	var missing []string
	for _, c := range g.columns {
		// A left-out name is followed by ", " or "; " in the line.
		if !slices.Contains(drawn, c) && !strings.Contains(text, " "+c+",") && !strings.Contains(text, " "+c+";") && !cutHeader(drawn, c) {
			missing = append(missing, c)
		}
	}
	if len(missing) > 0 {
		t.Errorf("columns %v are neither drawn nor named as left out:\n%s", missing, out)
	}
	if g.sorted != "" && !slices.Contains(drawn, g.sorted) && !cutHeader(drawn, g.sorted) {
		t.Errorf("the sorted column %s was left out:\n%s", g.sorted, out)
	}
	if !turned && len(drawn) > 0 && drawn[0] != g.columns[0] && !cutHeader(drawn[:1], g.columns[0]) {
		t.Errorf("the key column %s was left out:\n%s", g.columns[0], out)
	}
}

// cutHeader reports whether c is drawn cut, as a table whose keys alone
// are wider than the terminal cuts its headers.
func cutHeader(drawn []string, c string) bool {
	for _, d := range drawn {
		if strings.Contains(d, "…") && cut(c, twwidth.Width(d)) == d {
			return true
		}
	}
	return false
}

// TestFitCutsNoCellItCanWrap: a class of failure wraps before a stage id
// is cut, and while a column can still be left out an id keeps at least
// 60% of its width (at 80 columns Failures by stage cut its stages to
// "prec…led").
func TestFitCutsNoCellItCanWrap(t *testing.T) {
	header := []string{"class", "stage", "runs", "failed_attempts", "retry_helps", "classification"}
	rows := [][]string{
		{"precondition failure", "preflight", "0", "0", "no", "deterministic failure retried"},
		{"unparseable model output", "llm_output_invalid", "0", "0", "maybe", "partially justified"},
		{"write outside allowed files", "write_scope_violation", "0", "0", "maybe", "partially justified, but fragile"},
		{"acceptance failure", "acceptance_failed", "1", "2", "yes", "correctly retried (mostly)"},
	}
	parts := fitTable(header, rows, []bool{false, false, true, true, false, false}, -1, 80, true, false)
	if len(parts) != 1 {
		t.Fatalf("%d parts", len(parts))
	}
	p := parts[0]
	stage := slices.Index(p.header, "stage")
	if stage < 0 {
		t.Fatalf("stage left out: %v", p.header)
	}
	for i, r := range p.rows {
		if got, want := r[stage], rows[i][1]; twwidth.Width(got) < (twwidth.Width(want)*6+9)/10 {
			t.Errorf("stage %q cut to %q", want, got)
		}
		if strings.Contains(r[0], "…") {
			t.Errorf("class %q cut to %q; it can wrap", rows[i][0], r[0])
		}
	}
	if tableWidth(naturalWidths(p.header, splitLines(p.rows))) > 80 {
		t.Errorf("wider than 80: %v", p.header)
	}
}

// splitLines is rows with each wrapped cell's longest line, as drawn.
func splitLines(rows [][]string) [][]string {
	out := make([][]string, len(rows))
	for i, r := range rows {
		for _, c := range r {
			longest := ""
			for _, l := range strings.Split(c, "\n") {
				if twwidth.Width(l) > twwidth.Width(longest) {
					longest = l
				}
			}
			out[i] = append(out[i], longest)
		}
	}
	return out
}

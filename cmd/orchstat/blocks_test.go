package main

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/orchstat/orchstat/model/reports"
)

// ccusageBlock is one block of `ccusage blocks --json --offline` (ccusage
// 18.0.11) on the real transcripts of ../shared/testdata-external/claude-code,
// laid out as a Claude config dir (docs/reports.md gives the command):
// the figures only, not the output itself.
type ccusageBlock struct {
	start, end, lastCall       string
	gap                        bool
	entries                    int64
	input, output, write, read float64
	cost                       float64
	models                     []string
}

var ccusageBlocks = []ccusageBlock{
	{"2025-09-03T00:00:00Z", "2025-09-03T05:00:00Z", "2025-09-03T01:02:03.665Z", false, 177, 911, 50048, 150674, 3751073, 2.4438023999999996, []string{"claude-sonnet-4-20250514"}},
	{"2025-09-03T06:02:03.665Z", "2025-09-07T09:52:07.012Z", "", true, 0, 0, 0, 0, 0, 0, nil},
	{"2025-09-07T09:00:00Z", "2025-09-07T14:00:00Z", "2025-09-07T09:54:26.499Z", false, 20, 129, 2498, 47747, 324259, 0.31418594999999994, []string{"claude-sonnet-4-20250514"}},
	{"2025-09-07T14:54:26.499Z", "2025-12-16T00:00:20Z", "", true, 0, 0, 0, 0, 0, 0, nil},
	{"2025-12-16T00:00:00Z", "2025-12-16T05:00:00Z", "2025-12-16T00:00:20Z", false, 1, 10, 5, 0, 0, 0, []string{"claude-opus-5"}},
	{"2025-12-16T05:00:20Z", "2026-02-10T21:11:59.186Z", "", true, 0, 0, 0, 0, 0, 0, nil},
	{"2026-02-10T21:00:00Z", "2026-02-11T02:00:00Z", "2026-02-10T22:59:36.157Z", false, 17, 1633, 611, 57373, 527032, 0.6455372500000001, []string{"claude-opus-4-6"}},
}

// streamedLater is, per response of the raw transcripts, what its last
// line's usage adds to its first's: ccusage keeps a response's first
// line (its dedup keeps the first of message.id:requestId), orchstat its
// last (docs/formats/claude-code.md, "Streaming"), and Claude Code's
// streamed lines each carry the output so far. With the 1-hour cache
// writes (billed at 2x input; ccusage prices every write at 1.25x), it
// is the whole difference between the two tools' figures.
type streamedLater struct {
	ts      time.Time
	model   string
	output  float64 // last line's output_tokens less the first's
	write1h float64 // the last line's ephemeral_1h_input_tokens
}

func rawStreamed(t *testing.T, files []string) []streamedLater {
	type resp struct {
		streamedLater
		first float64
		seen  bool
	}
	var order []string
	byKey := map[string]*resp{}
	for _, f := range files {
		rawLines(t, f, func(line map[string]any) {
			msg, _ := line["message"].(map[string]any)
			usage, _ := msg["usage"].(map[string]any)
			id, _ := msg["id"].(string)
			req, _ := line["requestId"].(string)
			ts, err := time.Parse(time.RFC3339Nano, func() string { s, _ := line["timestamp"].(string); return s }())
			if usage == nil || id == "" || req == "" || err != nil {
				return
			}
			k := id + ":" + req
			r := byKey[k]
			if r == nil {
				r = &resp{}
				r.ts, r.model, r.first = ts, msg["model"].(string), rawNum(usage["output_tokens"])
				byKey[k] = r
				order = append(order, k)
			}
			r.output = rawNum(usage["output_tokens"]) - r.first
			r.write1h = 0
			if cc, ok := usage["cache_creation"].(map[string]any); ok {
				r.write1h = rawNum(cc["ephemeral_1h_input_tokens"])
			}
		})
	}
	var out []streamedLater
	for _, k := range order {
		out = append(out, byKey[k].streamedLater)
	}
	return out
}

// TestBlocksEqualCcusage: `report --by block` on the real transcripts
// cuts the blocks ccusage 18 cuts (start, end, last call, gaps, calls
// per block) and sums the same input, cache read and cache write tokens.
// Output tokens and cost differ, by exactly what the raw files say they
// must: output by what each streamed response's last line adds to its
// first (ccusage counts the first), cost by that output at the model's
// output price plus the 1-hour cache writes at 2x input rather than
// 1.25x; and the claude-opus-5 block, which ccusage's offline prices do
// not know ($0), is priced by orchstat.
func TestBlocksEqualCcusage(t *testing.T) {
	t.Parallel()
	root := filepath.Join(externalData, "claude-code")
	var files []string
	for _, d := range []string{"agent-sessions", "d-kimuson", "spotter"} {
		m, _ := filepath.Glob(filepath.Join(root, d, "*.jsonl"))
		files = append(files, m...)
	}
	if len(files) == 0 {
		t.Skip("../shared/testdata-external is absent")
	}
	db := filepath.Join(t.TempDir(), "b.duckdb")
	now := time.Date(2026, 11, 29, 0, 0, 0, 0, time.UTC)
	code, out, stderr := runCLIAt(t, now, "", "--db", db, "report", "-q", "--by", "block", "--timezone", "UTC", "--format", "json",
		filepath.Join(root, "agent-sessions"), filepath.Join(root, "d-kimuson"), filepath.Join(root, "spotter"))
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var got reports.BlocksReport
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatal(err)
	}
	rows := got.Blocks.Rows
	if len(rows) != len(ccusageBlocks) {
		t.Fatalf("%d blocks, ccusage %d", len(rows), len(ccusageBlocks))
	}
	streamed := rawStreamed(t, files)
	at := func(s string) time.Time {
		v, err := time.Parse(time.RFC3339Nano, s)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	for i, w := range ccusageBlocks {
		g := rows[i]
		if !g.Start.Equal(at(w.start)) || !g.End.Equal(at(w.end)) || g.Gap != w.gap || g.Active || g.Calls != w.entries {
			t.Errorf("block %d: %s..%s gap=%v active=%v calls=%d; ccusage %s..%s gap=%v calls=%d", i,
				g.Start.Format(time.RFC3339Nano), g.End.Format(time.RFC3339Nano), g.Gap, g.Active, g.Calls, w.start, w.end, w.gap, w.entries)
			continue
		}
		if w.gap {
			continue
		}
		if g.LastCall == nil || !g.LastCall.Equal(at(w.lastCall)) {
			t.Errorf("block %s: last call %v, ccusage %s", w.start, g.LastCall, w.lastCall)
		}
		if g.InputTokens != w.input || g.CacheWriteTokens != w.write || g.CacheReadTokens != w.read {
			t.Errorf("block %s: input %v cache write %v cache read %v; ccusage %v %v %v", w.start,
				g.InputTokens, g.CacheWriteTokens, g.CacheReadTokens, w.input, w.write, w.read)
		}
		if len(g.Models) != len(w.models) || g.Models[0] != w.models[0] {
			t.Errorf("block %s: models %v, ccusage %v", w.start, g.Models, w.models)
		}
		var later, extraCost float64
		for _, s := range streamed {
			if s.ts.Before(g.Start) || !s.ts.Before(g.End) {
				continue
			}
			later += s.output
			if p, ok := publishedPrices[s.model]; ok {
				extraCost += (s.output*p[1] + s.write1h*(p[3]-p[2])) / 1e6
			}
		}
		if g.OutputTokens != w.output+later {
			t.Errorf("block %s: output %v; ccusage %v, plus %v streamed after the first line = %v", w.start, g.OutputTokens, w.output, later, w.output+later)
		}
		t.Logf("block %s: calls %d; output ours %v, ccusage %v (+%v streamed later); cost ours $%.6f, ccusage $%.6f (+$%.6f)",
			w.start, g.Calls, g.OutputTokens, w.output, later, g.CostUSD, w.cost, extraCost)
		switch {
		case w.models[0] == "claude-opus-5":
			// ccusage's offline prices lack it: it says $0, orchstat prices it.
			if w.cost != 0 || g.CostUSD <= 0 || g.NoPriceCalls != 0 {
				t.Errorf("block %s: cost %v (%d without a price); ccusage $0 for want of a price", w.start, g.CostUSD, g.NoPriceCalls)
			}
		case math.Abs(g.CostUSD-(w.cost+extraCost)) > 1e-9:
			t.Errorf("block %s: cost $%v; ccusage $%v plus $%v = $%v", w.start, g.CostUSD, w.cost, extraCost, w.cost+extraCost)
		}
	}
	if len(got.Blocks.LeftOut) != 1 || got.Blocks.LeftOut[0].Calls != 2 {
		t.Errorf("left out %+v; want the 2 calls of agent-sessions' small.jsonl that record no usage, named", got.Blocks.LeftOut)
	}
	if os.Getenv("ORCHSTAT_CCUSAGE_LOG") != "" {
		t.Log(out)
	}
}

// blocksNow is the clock of the blocks' goldens: an hour into the block
// that testdata/agents' last Claude Code calls open at 17:00.
var blocksNow = time.Date(2026, 3, 4, 18, 0, 0, 0, time.UTC)

// blocksStore is testdata/agents and testdata/blocks (a Codex rollout
// with rate limits) in one store, as goldenStore makes it.
func blocksStore(t *testing.T) (goldenDir, db string) {
	t.Helper()
	goldenDir, db = goldenStore(t, "agents")
	// goldenStore has moved to a temporary folder: testdata is beside
	// the goldens.
	src := filepath.Join(goldenDir, "..", "blocks")
	if code, _, stderr := runCLI(t, "", "--db", db, "ingest", "-q", src); code != 0 {
		t.Fatalf("ingest exit %d: %s", code, stderr)
	}
	return goldenDir, db
}

// TestBlocksGolden: report --by block in every format, with the clock in
// the active block, against testdata/golden/blocks.*; the table at 80
// columns fits them.
func TestBlocksGolden(t *testing.T) {
	endToEnd(t, "runs orchstat against a real store")
	goldenDir, db := blocksStore(t)
	for _, c := range []struct {
		name, format string
		width        int
		more         []string
	}{{"table", "table", 0, nil}, {"table80", "table", 80, nil}, {"markdown", "markdown", 0, nil}, {"json", "json", 0, nil},
		{"csv", "csv", 0, nil}, {"html", "html", 0, nil},
		// A week reset on Mondays at 09:00 in Paris: the week from
		// 2026-03-02 08:00 UTC, projected to the 9th.
		{"weekreset", "table", 80, []string{"--week-reset", "2026-02-23T09:00:00+01:00"}}} {
		t.Run(c.name, func(t *testing.T) {
			args := append([]string{"--db", db, "report", "--no-ingest", "--by", "block", "--timezone", "UTC", "--format", c.format}, c.more...)
			code, out, stderr := runCLIWidth(t, c.width, blocksNow, args...)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, stderr)
			}
			matchGolden(t, filepath.Join(goldenDir, "blocks."+c.name), out)
			if c.width > 0 {
				for _, l := range strings.Split(out, "\n") {
					if n := utf8.RuneCountInString(l); n > c.width {
						t.Errorf("%d columns, wider than %d: %q", n, c.width, l)
					}
				}
			}
		})
	}
}

// TestBlocksFlags: --week-reset belongs to --by block and takes a time.
func TestBlocksFlags(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"report", "--week-reset", "2026-03-02"}, "--by block"},
		{[]string{"report", "--by", "day", "--week-reset", "2026-03-02"}, "--by block"},
		{[]string{"report", "--by", "block", "--week-reset", "monday"}, `--week-reset "monday"`},
		{[]string{"report", "--by", "blocks"}, "block"},
		{[]string{"report", "--by", "block", "--device", "laptop=/tmp"}, "--by block"},
	} {
		code, _, stderr := runCLI(t, "", append([]string{"--db", filepath.Join(t.TempDir(), "x.duckdb")}, tc.args...)...)
		if code != exitUsage || !strings.Contains(stderr, tc.want) {
			t.Errorf("%v: exit %d, %q; want %d naming %s", tc.args, code, stderr, exitUsage, tc.want)
		}
	}
}

// TestBlocksActiveAndRateLimits: the clock decides the active block, its
// burn rate and projection exactly; the rate limits are the record's,
// each window's latest, and a window's reset is the record's resets_at
// or its time plus resets_in_seconds.
func TestBlocksActiveAndRateLimits(t *testing.T) {
	endToEnd(t, "runs orchstat against a real store")
	_, db := blocksStore(t)
	code, out, stderr := runCLIAt(t, blocksNow, "", "--db", db, "report", "--no-ingest", "--by", "block", "--timezone", "UTC", "--format", "json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var got reports.BlocksReport
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatal(err)
	}
	b := got.Blocks
	if b.Active == nil || !b.Active.Start.Equal(time.Date(2026, 3, 4, 17, 0, 0, 0, time.UTC)) {
		t.Fatalf("active %+v, want the 17:00 block", b.Active)
	}
	a := b.Active
	if a.BurnRate == nil || a.Projection == nil {
		t.Fatalf("active block without burn rate or projection: %+v", a)
	}
	if a.Projection.RemainingMinutes != 240 || !a.Projection.At.Equal(a.End) {
		t.Errorf("projection %+v: want 240 minutes to 22:00", a.Projection)
	}
	if want := a.TotalTokens + a.BurnRate.TokensPerHour*4; a.Projection.TotalTokens != want {
		t.Errorf("projected tokens %v, want %v", a.Projection.TotalTokens, want)
	}
	want := map[string]struct {
		used     float64
		minutes  int64
		resetsAt time.Time
	}{
		"primary":   {42, 300, time.Date(2026, 3, 4, 20, 0, 0, 0, time.UTC)},
		"secondary": {85, 10080, time.Date(2026, 3, 4, 17, 30, 1, 500_000_000, time.UTC).Add(200000 * time.Second)},
		// Claude Code's "Claude AI usage limit reached|1772665200".
		"limit reached": {100, 0, time.Date(2026, 3, 4, 23, 0, 0, 0, time.UTC)},
	}
	if len(b.RateLimits) != 3 {
		t.Fatalf("rate limits %+v, want Claude Code's limit reached, Codex's primary and secondary", b.RateLimits)
	}
	if a.UsageLimitResetsAt == nil || !a.UsageLimitResetsAt.Equal(want["limit reached"].resetsAt) {
		t.Errorf("active block's usage limit resets at %v, want 23:00 as its failure says", a.UsageLimitResetsAt)
	}
	for _, r := range b.RateLimits {
		w := want[r.Window]
		if r.UsedPercent != w.used || r.WindowMinutes != w.minutes || r.ResetsAt == nil || !r.ResetsAt.Equal(w.resetsAt) {
			t.Errorf("%s: %v%% of %d minutes resetting at %v; want %+v", r.Window, r.UsedPercent, r.WindowMinutes, r.ResetsAt, w)
		}
	}
	// Before the rollout's lines, none of its figures is known yet.
	code, out, _ = runCLIAt(t, blocksNow.Add(-time.Hour), "", "--db", db, "report", "--no-ingest", "--by", "block", "--timezone", "UTC", "--format", "json")
	if code != 0 || !strings.Contains(out, `"rate_limits": []`) {
		t.Errorf("an hour earlier: exit %d, want no rate limits yet:\n%s", code, out)
	}
}

// TestPlanWindowRules: the plan-window rules alerts.yaml ships commented
// work when uncommented: on the fixture, Codex's week is at 85% (the
// record's figure), so plan_week_used_high fires, and
// plan_week_budget_high sums the week's cost without error.
func TestPlanWindowRules(t *testing.T) {
	endToEnd(t, "runs orchstat against a real store")
	shipped, err := os.ReadFile("../../alerts.yaml")
	if err != nil {
		t.Fatal(err)
	}
	// testdata/blocks alone: testdata/agents' Codex rollout states a
	// later week, at 1%, which the rule would take as the latest.
	_, db := goldenStore(t, "blocks")
	_, plan, ok := strings.Cut(string(shipped), "# Plan windows")
	if !ok {
		t.Fatal("alerts.yaml has no plan-window rules")
	}
	rules := "rules:\n"
	in := false
	for _, l := range strings.Split(plan, "\n") {
		switch {
		case strings.HasPrefix(l, "  # - name:"):
			in = true
		case !strings.HasPrefix(l, "  #   "):
			in = false
		}
		if in {
			rules += "  " + strings.TrimPrefix(l, "  # ") + "\n"
		}
	}
	if strings.Count(rules, "- name:") != 2 {
		t.Fatalf("want 2 commented rules, found:\n%s", rules)
	}
	file := filepath.Join(t.TempDir(), "plan.yaml")
	os.WriteFile(file, []byte(rules), 0o644)
	if code, out, stderr := runCLI(t, "", "rules", "check", file); code != 0 {
		t.Fatalf("rules check: exit %d\n%s%s", code, out, stderr)
	}
	// A round of cron, not check --at, which skips sql rules (they read
	// the store as it is, not as it was).
	code, out, stderr := runCLIAt(t, blocksNow, "", "--db", db, "check", "--no-ingest", "--rules", file)
	if code != 1 {
		t.Errorf("check: exit %d, want 1 (a warning fires)\n%s%s", code, out, stderr)
	}
	fired := false
	for _, l := range strings.Split(out, "\n") {
		fired = fired || strings.Contains(l, "plan_week_used_high") && strings.Contains(l, "firing") && strings.Contains(l, "| 85 ")
	}
	if !fired {
		t.Errorf("check does not fire plan_week_used_high at 85%%:\n%s%s", out, stderr)
	}
	if !strings.Contains(out, "plan_week_budget_high") {
		t.Errorf("check does not name plan_week_budget_high:\n%s%s", out, stderr)
	}
}

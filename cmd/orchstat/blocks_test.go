package main

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"testing"
	"time"

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

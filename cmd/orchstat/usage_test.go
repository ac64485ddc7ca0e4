package main

import (
	"bufio"
	"encoding/json"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/orchstat/orchstat/model/reports"
)

// rawDay is one UTC day of an independent count of agents' raw files.
type rawDay struct {
	calls                      int64
	input, read, write, output float64
	cost, cost1h               float64
}

// publishedPrices are the list prices, in USD per million tokens, of the
// models in the captures, as Anthropic's and OpenAI's pricing pages give
// them: input, output, 5-minute cache write, 1-hour cache write, cache
// read. None of the captures' prompts reaches a long-context tier.
var publishedPrices = map[string][5]float64{
	"claude-sonnet-4-20250514": {3, 15, 3.75, 6, 0.30},
	"claude-opus-4-6":          {5, 25, 6.25, 10, 0.50},
	"gpt-5.3-codex":            {1.75, 14, 1.75, 1.75, 0.175},
}

func (d *rawDay) add(model string, in, read, write, write1h, out float64) error {
	p, ok := publishedPrices[model]
	if !ok {
		return &os.PathError{Op: "price", Path: model, Err: os.ErrNotExist}
	}
	d.calls++
	d.input, d.read, d.write, d.output = d.input+in, d.read+read, d.write+write, d.output+out
	base := (in*p[0] + out*p[1] + read*p[4]) / 1e6
	d.cost += base + write*p[2]/1e6
	d.cost1h += base + ((write-write1h)*p[2]+write1h*p[3])/1e6
	return nil
}

// rawClaudeCode counts Claude Code transcripts as docs/formats/claude-code.md
// says orchstat does: one call per message id of a session, its usage that
// of the last line that has one, its time its first line's.
func rawClaudeCode(t *testing.T, files []string, days map[string]*rawDay) {
	type call struct {
		ts                            time.Time
		model                         string
		in, read, write, write1h, out float64
	}
	calls := map[string]*call{}
	for _, f := range files {
		rawLines(t, f, func(line map[string]any) {
			msg, _ := line["message"].(map[string]any)
			if line["type"] != "assistant" || msg == nil {
				return
			}
			usage, _ := msg["usage"].(map[string]any)
			id, _ := msg["id"].(string)
			if usage == nil || id == "" {
				return
			}
			key := line["sessionId"].(string) + "\x00" + id
			ts, err := time.Parse(time.RFC3339Nano, line["timestamp"].(string))
			if err != nil {
				t.Fatal(err)
			}
			c := calls[key]
			if c == nil {
				c = &call{ts: ts}
				calls[key] = c
			}
			c.model = msg["model"].(string)
			c.in, c.read, c.write = rawNum(usage["input_tokens"]), rawNum(usage["cache_read_input_tokens"]), rawNum(usage["cache_creation_input_tokens"])
			c.out = rawNum(usage["output_tokens"])
			if cc, ok := usage["cache_creation"].(map[string]any); ok {
				c.write1h = rawNum(cc["ephemeral_1h_input_tokens"])
			}
		})
	}
	for _, c := range calls {
		if err := dayOf(days, c.ts).add(c.model, c.in, c.read, c.write, c.write1h, c.out); err != nil {
			t.Fatal(err)
		}
	}
}

// rawCodex counts Codex rollouts as docs/formats/codex.md says orchstat
// does: one call per token_count whose running total changed, its tokens
// last_token_usage's, input less its cached part.
func rawCodex(t *testing.T, files []string, days map[string]*rawDay) {
	for _, f := range files {
		model, prev := "", ""
		rawLines(t, f, func(line map[string]any) {
			p, _ := line["payload"].(map[string]any)
			if p == nil {
				return
			}
			if line["type"] == "turn_context" {
				model, _ = p["model"].(string)
				return
			}
			info, _ := p["info"].(map[string]any)
			if line["type"] != "event_msg" || p["type"] != "token_count" || info == nil {
				return
			}
			total, _ := json.Marshal(info["total_token_usage"])
			if string(total) == prev {
				return
			}
			prev = string(total)
			last := info["last_token_usage"].(map[string]any)
			ts, err := time.Parse(time.RFC3339Nano, line["timestamp"].(string))
			if err != nil {
				t.Fatal(err)
			}
			cached := rawNum(last["cached_input_tokens"])
			if err := dayOf(days, ts).add(model, rawNum(last["input_tokens"])-cached, cached, 0, 0, rawNum(last["output_tokens"])); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func dayOf(days map[string]*rawDay, ts time.Time) *rawDay {
	k := ts.UTC().Format("2006-01-02")
	if days[k] == nil {
		days[k] = &rawDay{}
	}
	return days[k]
}

func rawNum(v any) float64 {
	f, _ := v.(float64)
	return f
}

func rawLines(t *testing.T, path string, each func(map[string]any)) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 64<<20)
	for sc.Scan() {
		var line map[string]any
		if json.Unmarshal(sc.Bytes(), &line) == nil {
			each(line)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
}

// TestUsageByDayEqualsRawFiles: on the real captures in
// ../shared/testdata-external, `report --by day`'s calls, input, cache
// read, cache write and output tokens and cost per day equal an
// independent count of the raw files, priced at the published prices
// above.
//
// Known gap, reported rather than hidden: Claude Code 2.x writes part of
// its cache for an hour (usage.cache_creation.ephemeral_1h_input_tokens),
// which Anthropic bills at 2× input, not 1.25×. The calls table keeps
// one cache write count (ingest does not store the 1-hour part), so
// orchstat prices every write at the 5-minute price. The test asserts
// that figure, and logs what the 1-hour writes add.
func TestUsageByDayEqualsRawFiles(t *testing.T) {
	endToEnd(t, "starts the binary on the agents' samples")
	t.Parallel()
	ccDirs := []string{filepath.Join(externalData, "claude-code", "d-kimuson"), filepath.Join(externalData, "claude-code", "spotter")}
	codexDir := filepath.Join(externalData, "codex", "localpush")
	for _, d := range append(ccDirs, codexDir) {
		if _, err := os.Stat(d); err != nil {
			t.Skip("../shared/testdata-external is absent")
		}
	}
	days := map[string]*rawDay{}
	var ccFiles, codexFiles []string
	for _, d := range ccDirs {
		m, _ := filepath.Glob(filepath.Join(d, "*.jsonl"))
		ccFiles = append(ccFiles, m...)
	}
	codexFiles, _ = filepath.Glob(filepath.Join(codexDir, "*.jsonl"))
	rawClaudeCode(t, ccFiles, days)
	rawCodex(t, codexFiles, days)

	args := append([]string{"--db", filepath.Join(t.TempDir(), "u.duckdb"), "report", "-q", "--by", "day", "--timezone", "UTC", "--format", "json"},
		append(ccDirs, codexDir)...)
	out, err := exec.Command(binary, args...).Output()
	if err != nil {
		t.Fatalf("report --by day: %v\n%s", err, out)
	}
	var got reports.UsageReport
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatal(err)
	}
	var keys []string
	for k := range days {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	if len(got.Usage.Rows) != len(keys) {
		t.Errorf("%d days, want %d (%v)", len(got.Usage.Rows), len(keys), keys)
	}
	for _, r := range got.Usage.Rows {
		want := days[r.Key]
		if want == nil {
			t.Errorf("day %s: not in the raw files", r.Key)
			continue
		}
		t.Logf("%s: %d calls, input %.0f, cache read %.0f, cache write %.0f, output %.0f, cost $%.4f (with every cache write at the 5-minute price: $%.4f)",
			r.Key, want.calls, want.input, want.read, want.write, want.output, want.cost1h, want.cost)
		if r.Calls != want.calls {
			t.Errorf("%s: %d calls, want %d", r.Key, r.Calls, want.calls)
		}
		for _, c := range []struct {
			name string
			got  *float64
			want float64
		}{
			{"input", r.InputTokens, want.input}, {"cache read", r.CacheReadTokens, want.read},
			{"cache write", r.CacheWriteTokens, want.write}, {"output", r.OutputTokens, want.output},
			{"cost", r.CostUSD, want.cost1h},
		} {
			g := 0.0
			if c.got != nil {
				g = *c.got
			}
			if math.Abs(g-c.want) > 1e-9*math.Max(1, c.want) {
				t.Errorf("%s: %s %v, want %v", r.Key, c.name, g, c.want)
			}
		}
		if r.NoPriceCalls != 0 {
			t.Errorf("%s: %d calls without a price", r.Key, r.NoPriceCalls)
		}
	}
}

// TestUsageNamesModelsWithoutPrice: a model the table does not price is
// named in every format, and its cost is not counted as $0.
func TestUsageNamesModelsWithoutPrice(t *testing.T) {
	endToEnd(t, "starts the binary on Codex samples")
	t.Parallel()
	dir := filepath.Join(externalData, "codex", "agent-sessions")
	if _, err := os.Stat(dir); err != nil {
		t.Skip("../shared/testdata-external is absent")
	}
	db := filepath.Join(t.TempDir(), "n.duckdb")
	out, err := exec.Command(binary, "--db", db, "report", "-q", "--by", "model", "--timezone", "UTC", "--format", "json", dir).Output()
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	var got reports.UsageReport
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatal(err)
	}
	named := false
	for _, m := range got.Usage.NoPrice {
		named = named || m.Model == "gpt-5.6-luna"
	}
	if !named {
		t.Errorf("no_price %+v does not name gpt-5.6-luna", got.Usage.NoPrice)
	}
	for _, r := range got.Usage.Rows {
		if r.Key == "gpt-5.6-luna" && (r.CostUSD != nil || r.NoPriceCalls == 0) {
			t.Errorf("gpt-5.6-luna: cost %v, %d calls without a price; want no cost", r.CostUSD, r.NoPriceCalls)
		}
	}
	for _, format := range []string{"table", "markdown", "csv", "html"} {
		out, err := exec.Command(binary, "--db", db, "report", "--no-ingest", "--by", "day", "--timezone", "UTC", "--format", format).Output()
		if err != nil {
			t.Fatalf("%s: %v\n%s", format, err, out)
		}
		if !strings.Contains(string(out), "gpt-5.6-luna") {
			t.Errorf("%s does not name gpt-5.6-luna", format)
		}
	}
}

// TestUsageGolden: report --by over the hand-made agents' files in
// testdata/agents, in every format and each grouping, against
// testdata/golden/usage.*.
func TestUsageGolden(t *testing.T) {
	endToEnd(t, "runs orchstat against a real store")
	goldenDir, db := goldenStore(t, "agents")
	cases := [][2]string{{"day", "table"}, {"day", "markdown"}, {"day", "json"}, {"day", "csv"}, {"day", "html"},
		{"week", "table"}, {"month", "table"}, {"session", "table"}, {"model", "table"}}
	for _, c := range cases {
		t.Run(c[0]+"/"+c[1], func(t *testing.T) {
			code, out, stderr := runCLI(t, "", "--db", db, "report", "--no-ingest", "--by", c[0], "--timezone", "UTC", "--format", c[1])
			if code != 0 {
				t.Fatalf("exit %d: %s", code, stderr)
			}
			matchGolden(t, filepath.Join(goldenDir, "usage."+c[0]+"."+c[1]), out)
		})
	}
}

// TestUsageFlags: --by and --timezone are checked before anything is
// read, and --prices names the file and the field it cannot read.
func TestUsageFlags(t *testing.T) {
	t.Parallel()
	bad := filepath.Join(t.TempDir(), "prices.json")
	os.WriteFile(bad, []byte("{\n  \"m\": {\"input_cost_per_token\": \"cheap\", \"output_cost_per_token\": 1}\n}\n"), 0o644)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"report", "--by", "year"}, `--by "year"`},
		{[]string{"report", "--timezone", "UTC"}, "--timezone"},
		{[]string{"report", "--by", "day", "--timezone", "Mars/Olympus"}, `"Mars/Olympus"`},
		{[]string{"report", "--device", "laptop=/x"}, "--device"},
		{[]string{"report", "--by", "device", "--device", "laptop"}, `"laptop": want NAME=PATH`},
		{[]string{"report", "--by", "device", "--device", "=/x"}, "want NAME=PATH"},
		{[]string{"report", "--prices", bad}, "prices.json:2:"},
		{[]string{"report", "--prices", bad}, "input_cost_per_token"},
	} {
		code, _, stderr := runCLI(t, "", append([]string{"--db", filepath.Join(t.TempDir(), "x.duckdb")}, tc.args...)...)
		if code != exitUsage || !strings.Contains(stderr, tc.want) {
			t.Errorf("%v: exit %d, %q; want %d naming %s", tc.args, code, stderr, exitUsage, tc.want)
		}
	}
}

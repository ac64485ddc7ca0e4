package prices

import (
	"bufio"
	"math"
	"os"
	"regexp"
	"sort"
	"strings"
	"testing"
)

func TestLookup(t *testing.T) {
	b := Builtin()
	for _, tc := range []struct {
		model, provider string
		key             string // "" when not found
	}{
		{"claude-sonnet-4-5-20250929", "", "claude-sonnet-4-5-20250929"},
		{"Claude-Sonnet-4-5-20250929", "", "claude-sonnet-4-5-20250929"},
		{"anthropic/claude-sonnet-4-5", "", "claude-sonnet-4-5"},
		{"claude-opus-4-6", "anthropic", "claude-opus-4-6"},
		// Bedrock ids, with and without a cross-region prefix or bedrock/.
		{"us.anthropic.claude-sonnet-4-5-20250929-v1:0", "", "claude-sonnet-4-5-20250929"},
		{"bedrock/au.anthropic.claude-sonnet-4-5-20250929-v1:0", "", "claude-sonnet-4-5-20250929"},
		{"anthropic.claude-haiku-4-5-20251001-v1:0", "bedrock", "claude-haiku-4-5-20251001"},
		{"global.anthropic.claude-opus-4-1-20250805-v1:0", "", "claude-opus-4-1-20250805"},
		{"claude-sonnet-4-5-20250929-v1:0", "", "claude-sonnet-4-5-20250929"},
		// Vertex's @date.
		{"claude-haiku-4-5@20251001", "", "claude-haiku-4-5-20251001"},
		{"vertex_ai/claude-opus-4-1@20250805", "", "claude-opus-4-1-20250805"},
		// A dated id the table lacks finds the undated entry.
		{"claude-opus-4-7-20990101", "", "claude-opus-4-7"},
		{"gpt-5.1-codex-max-2025-12-01", "", "gpt-5.1-codex-max"},
		// An undated name finds its only dated entry, or the newest of
		// several priced alike.
		{"claude-3-5-haiku", "", "claude-3-5-haiku-20241022"},
		{"claude-3-5-sonnet-latest", "", "claude-3-5-sonnet-20241022"},
		{"claude-opus-4", "", "claude-opus-4-20250514"},
		{"o1", "", "o1-2024-12-17"},
		// -latest and routing prefixes.
		{"gpt-5-chat-latest", "", "gpt-5-chat-latest"},
		{"openai/gpt-5.3-codex", "", "gpt-5.3-codex"},
		{"gemini/gemini-2.5-pro", "", "gemini-2.5-pro"},
		{"models/gemini-2.5-flash", "", "gemini-2.5-flash"},
		{"vertex_ai/gemini-2.5-flash-lite", "", "gemini-2.5-flash-lite"},
		{"o4-mini-2025-04-16", "", "o4-mini-2025-04-16"},
		{"gpt-4o", "openai", "gpt-4o"},
		// Unknown models, and no guesses across families or sizes.
		{"claude-sonnet-5", "", ""},
		{"gpt-5.6-sol", "", ""},
		{"gpt-5-codex-mini", "", ""},
		{"claude-sonnet-4-7", "", ""},
		{"gemini-2.5-ultra", "", ""},
		{"gpt-4", "", ""},
		{"o3-mini-high", "", ""},
		{"azure/gpt-4o", "", ""},
		{"mistral.mistral-large-2402-v1:0", "", ""},
		{"", "", ""},
		{"<synthetic>", "", ""},
	} {
		t.Run(tc.model, func(t *testing.T) {
			_, key, ok := b.Lookup(tc.model, tc.provider)
			if ok != (tc.key != "") || key != tc.key {
				t.Errorf("Lookup(%q, %q) = %q, %v; want %q", tc.model, tc.provider, key, ok, tc.key)
			}
		})
	}
}

// TestLookupAmbiguous: an undated name whose dated entries are priced
// differently is not found, rather than priced as one of them.
func TestLookupAmbiguous(t *testing.T) {
	tab, err := Load(strings.NewReader(`{
		"acme-1-20250101": {"input_cost_per_token": 1e-6, "output_cost_per_token": 2e-6, "mode": "chat"},
		"acme-1-20250601": {"input_cost_per_token": 3e-6, "output_cost_per_token": 2e-6, "mode": "chat"}
	}`), "ambiguous.json")
	if err != nil {
		t.Fatal(err)
	}
	if _, key, ok := tab.Lookup("acme-1", ""); ok {
		t.Errorf("acme-1 found as %q; its dated entries disagree", key)
	}
	if _, key, ok := tab.Lookup("acme-1-20250601", ""); !ok || key != "acme-1-20250601" {
		t.Errorf("acme-1-20250601 = %q, %v", key, ok)
	}
}

func near(a, b float64) bool { return math.Abs(a-b) <= 1e-12*math.Max(1, math.Abs(b)) }

// TestCost prices calls by hand. Prices used, USD per million tokens:
// claude-sonnet-4-5-20250929 input 3, output 15, cache read 0.30, cache
// write 3.75 (5m) / 6 (1h); above 200k prompt tokens input 6, output
// 22.50, cache read 0.60, cache write 7.50 / 12. gpt-5 input 1.25, output
// 10, cache read 0.125, no cache write price (input's). gemini-2.5-pro
// input 1.25, output 10, cache read 0.125; above 200k input 2.50, output
// 15, cache read 0.25. gpt-5.5-2026-04-23 input 5, output 30, cache read
// 0.50; above 272k input 10, output 45, cache read 1.
func TestCost(t *testing.T) {
	b := Builtin()
	for _, tc := range []struct {
		name, model string
		u           Usage
		want        float64
	}{
		{"sonnet plain", "claude-sonnet-4-5-20250929",
			Usage{Input: 1000, Output: 500},
			1000*3e-6 + 500*15e-6}, // 0.0105
		{"sonnet cached", "claude-sonnet-4-5-20250929",
			Usage{Input: 10, CacheRead: 50_000, CacheWrite: 2_000, Output: 800},
			10*3e-6 + 50_000*0.3e-6 + 2_000*3.75e-6 + 800*15e-6}, // 0.03453
		{"sonnet 1h writes", "claude-sonnet-4-5-20250929",
			Usage{CacheWrite: 3_000, CacheWrite1h: 1_000},
			2_000*3.75e-6 + 1_000*6e-6}, // 0.0135
		{"sonnet long prompt: the whole request at the tier", "claude-sonnet-4-5-20250929",
			Usage{Input: 150_000, CacheRead: 60_000, CacheWrite: 1_000, CacheWrite1h: 1_000, Output: 1_000},
			150_000*6e-6 + 60_000*0.6e-6 + 1_000*12e-6 + 1_000*22.5e-6}, // 0.9705
		{"reasoning is part of output", "gpt-5",
			Usage{Input: 2_000, CacheRead: 8_000, Output: 3_000},
			2_000*1.25e-6 + 8_000*0.125e-6 + 3_000*10e-6}, // 0.0335
		{"no cache write price: input's", "gpt-5",
			Usage{CacheWrite: 1_000},
			1_000 * 1.25e-6},
		{"gemini long prompt", "gemini-2.5-pro",
			Usage{Input: 250_000, Output: 2_000},
			250_000*2.5e-6 + 2_000*15e-6}, // 0.655
		{"gpt-5.5 above 272k", "gpt-5.5-2026-04-23",
			Usage{Input: 200_000, CacheRead: 100_000, Output: 1_000},
			200_000*10e-6 + 100_000*1e-6 + 1_000*45e-6}, // 2.145
		{"nothing", "gpt-5", Usage{}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, _, ok := b.Lookup(tc.model, "")
			if !ok {
				t.Fatalf("%s has no price", tc.model)
			}
			if got := p.Cost(tc.u); !near(got, tc.want) {
				t.Errorf("Cost = %.10f, want %.10f", got, tc.want)
			}
		})
	}
}

// TestTierBoundary: the tier starts strictly above its threshold, counted
// on the whole prompt (input + cache read + cache write), not on input
// alone and not on output.
func TestTierBoundary(t *testing.T) {
	p, _, _ := Builtin().Lookup("claude-sonnet-4-5-20250929", "")
	base := func(in, cr, cw, out float64) float64 { return in*3e-6 + cr*0.3e-6 + cw*3.75e-6 + out*15e-6 }
	tier := func(in, cr, cw, out float64) float64 { return in*6e-6 + cr*0.6e-6 + cw*7.5e-6 + out*22.5e-6 }
	for _, tc := range []struct {
		name string
		u    Usage
		long bool
	}{
		{"exactly 200k input", Usage{Input: 200_000, Output: 10}, false},
		{"200001 input", Usage{Input: 200_001, Output: 10}, true},
		{"200k split, exactly", Usage{Input: 100_000, CacheRead: 99_000, CacheWrite: 1_000}, false},
		{"200k split, one over", Usage{Input: 100_000, CacheRead: 99_000, CacheWrite: 1_001}, true},
		{"cache read carries it over", Usage{Input: 1, CacheRead: 200_000}, true},
		{"output does not count", Usage{Input: 199_000, Output: 50_000}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			u := tc.u
			want := base(u.Input, u.CacheRead, u.CacheWrite, u.Output)
			if tc.long {
				want = tier(u.Input, u.CacheRead, u.CacheWrite, u.Output)
			}
			if got := p.Cost(u); !near(got, want) {
				t.Errorf("Cost = %.10f, want %.10f (long=%v)", got, want, tc.long)
			}
		})
	}
}

// TestLoad reads testdata/small.json, a hand-made file in LiteLLM's
// format (not a copy of LiteLLM's): chat and responses models, a model
// with a routing prefix, and entries that must be skipped.
func TestLoad(t *testing.T) {
	f, err := os.Open("testdata/small.json")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	tab, err := Load(f, "testdata/small.json")
	if err != nil {
		t.Fatal(err)
	}
	if got, want := strings.Join(tab.Keys(), " "), "acme-chat-1 acme-long-2 acme/acme-chat-1"; got != want {
		t.Errorf("keys = %s, want %s", got, want)
	}
	var skipped []string
	for _, s := range tab.Skipped {
		skipped = append(skipped, s.Key+": "+s.Reason)
	}
	sort.Strings(skipped)
	wantSkipped := []string{
		"acme-embed: mode embedding is not a chat model",
		"acme-image: mode image_generation is not a chat model",
		"acme-per-second: no per-token input and output price",
	}
	if strings.Join(skipped, "\n") != strings.Join(wantSkipped, "\n") {
		t.Errorf("skipped:\n%s\nwant:\n%s", strings.Join(skipped, "\n"), strings.Join(wantSkipped, "\n"))
	}
	p, _, _ := tab.Lookup("acme-long-2", "")
	want := Price{Input: 2e-6, Output: 1e-5, CacheRead: 2e-7, CacheWrite: 2.5e-6, CacheWrite1h: 4e-6,
		Tiers: []Tier{{Above: 100_000, Input: 4e-6, Output: 1.5e-5, CacheRead: 2e-7, CacheWrite: 2.5e-6, CacheWrite1h: 4e-6}}}
	if !samePrice(p, want) {
		t.Errorf("acme-long-2 = %+v, want %+v", p, want)
	}
	// Missing cache prices are the input price.
	p, _, _ = tab.Lookup("acme-chat-1", "")
	if p.CacheRead != 1e-6 || p.CacheWrite != 1e-6 || p.CacheWrite1h != 1e-6 {
		t.Errorf("acme-chat-1 cache prices = %+v, want the input price", p)
	}
	// The provider picks its own entry first.
	if p, key, _ := tab.Lookup("acme-chat-1", "acme"); key != "acme/acme-chat-1" || p.Input != 3e-6 {
		t.Errorf("provider acme: %q %+v", key, p)
	}
}

func TestLoadErrors(t *testing.T) {
	for _, tc := range []struct {
		name, in, want string
	}{
		{"empty", ``, "bad.json:1:1: unexpected end of file"},
		{"array", `[1]`, "bad.json:1:1: the file is not a JSON object of models"},
		{"cut short", "{\n  \"m\": {\"input_cost_per_token\": 1e-6,\n", "bad.json:3:1:"},
		{"syntax", "{\n  \"m\": {\"input_cost_per_token\": 1e-6,,}\n}", "bad.json:2:"},
		{"price a string", "{\n\"m\": {\"input_cost_per_token\": \"cheap\", \"output_cost_per_token\": 1e-6}\n}",
			`bad.json:2:4: model "m": field input_cost_per_token: not a number: "cheap"`},
		{"negative price", "{\"m\": {\"input_cost_per_token\": -1, \"output_cost_per_token\": 1e-6}}",
			`model "m": field input_cost_per_token: not a non-negative price: -1`},
		{"bad tier even on a skipped entry", "{\"e\": {\"mode\": \"embedding\", \"input_cost_per_token_above_200k_tokens\": true}}",
			`model "e": field input_cost_per_token_above_200k_tokens: not a number: true`},
		{"entry not an object", `{"m": 3}`, `model "m": the entry is not a JSON object`},
		{"mode not a string", `{"m": {"mode": 1}}`, `model "m": field mode: not a string`},
		{"trailing data", `{} {}`, "bad.json:1:4: data after the end of the JSON object"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Load(strings.NewReader(tc.in), "bad.json")
			if err == nil {
				t.Fatalf("no error; want %q", tc.want)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q\nwant it to contain %q", err, tc.want)
			}
		})
	}
}

func TestExtend(t *testing.T) {
	b := Builtin()
	user, err := Load(strings.NewReader(`{
		"gpt-5": {"input_cost_per_token": 1e-6, "output_cost_per_token": 8e-6, "mode": "chat"},
		"my-local-model": {"input_cost_per_token": 0, "output_cost_per_token": 0, "mode": "chat"}
	}`), "mine.json")
	if err != nil {
		t.Fatal(err)
	}
	n := b.Extend(user)
	if p, _, _ := n.Lookup("gpt-5", ""); p.Input != 1e-6 {
		t.Errorf("gpt-5 input = %g; the user's file should win", p.Input)
	}
	if p, _, _ := b.Lookup("gpt-5", ""); p.Input != 1.25e-6 {
		t.Errorf("Extend changed the built-in table: gpt-5 input = %g", p.Input)
	}
	if _, _, ok := n.Lookup("claude-opus-4-6", ""); !ok {
		t.Error("the built-in entries are lost")
	}
	// A price of 0 that a user states is a price, unlike a missing one.
	if p, _, ok := n.Lookup("my-local-model", ""); !ok || p.Cost(Usage{Input: 5, Output: 5}) != 0 {
		t.Errorf("my-local-model = %+v, %v", p, ok)
	}
	if n.Len() != b.Len()+1 {
		t.Errorf("Len = %d, want %d", n.Len(), b.Len()+1)
	}
}

// TestBuiltin checks the shipped table: it loads without skipping, every
// entry has a real price, and SOURCES.tsv names a source and date for
// exactly its keys.
func TestBuiltin(t *testing.T) {
	b := Builtin()
	if len(b.Skipped) != 0 {
		t.Errorf("the built-in table skips %v", b.Skipped)
	}
	for _, k := range b.Keys() {
		p, _, _ := b.Lookup(k, "")
		if p.Input <= 0 || p.Output <= 0 || p.CacheRead > p.Input || p.Output < p.Input {
			t.Errorf("%s: implausible price %+v", k, p)
		}
	}
	f, err := os.Open("SOURCES.tsv")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	date := regexp.MustCompile(`^\d{4}-\d{2}-\d{2}$`)
	sourced := map[string]bool{}
	sc := bufio.NewScanner(f)
	for line := 1; sc.Scan(); line++ {
		if line == 1 {
			continue // header
		}
		cols := strings.Split(sc.Text(), "\t")
		if len(cols) != 6 || cols[2] == "" || !date.MatchString(cols[4]) {
			t.Errorf("SOURCES.tsv:%d: want key, provider, source, vendor page, date, note: %q", line, sc.Text())
			continue
		}
		sourced[cols[0]] = true
	}
	for _, k := range b.Keys() {
		if !sourced[k] {
			t.Errorf("%s has no line in SOURCES.tsv", k)
		}
		delete(sourced, k)
	}
	for k := range sourced {
		t.Errorf("SOURCES.tsv names %s, which the table lacks", k)
	}
}

// TestLiteLLMFile compares the built-in prices with a LiteLLM
// model_prices_and_context_window.json named by $ORCHSTAT_LITELLM_PRICES
// (skipped without one). Differences kept on purpose are listed.
func TestLiteLLMFile(t *testing.T) {
	path := os.Getenv("ORCHSTAT_LITELLM_PRICES")
	if path == "" {
		t.Skip("set ORCHSTAT_LITELLM_PRICES to a LiteLLM model_prices_and_context_window.json to compare")
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	ll, err := Load(f, path)
	if err != nil {
		t.Fatal(err)
	}
	// Kept: Anthropic's documented 1-hour cache write price (2x input),
	// where LiteLLM has none or another; vendor-only entries; Gemini tiers
	// without LiteLLM's stray tier cache write price.
	kept := map[string]bool{
		"claude-3-5-haiku-20241022": true, "claude-3-haiku-20240307": true, "claude-3-opus-20240229": true,
		"claude-4-sonnet-20250514": true, "claude-sonnet-4-20250514": true,
		"claude-opus-4-8": true, "claude-fable-5": true, "claude-mythos-5": true,
		"gemini-2.5-pro": true, "gemini-3-pro-preview": true, "gemini-3.1-pro-preview": true,
	}
	b := Builtin()
	for _, k := range b.Keys() {
		want, _, _ := b.Lookup(k, "")
		e, ok := ll.entries[strings.ToLower(k)]
		switch {
		case !ok:
			t.Logf("%s: not in %s", k, path)
		case !samePrice(e.price, want) && !kept[k]:
			t.Errorf("%s: built in %+v, LiteLLM %+v", k, want, e.price)
		}
	}
}

// TestExternalModels looks up the models named in the real records under
// ../shared/testdata-external and logs which have no price, so that a
// table update can see what users' agents call.
func TestExternalModels(t *testing.T) {
	root := "../../../../shared/testdata-external"
	if _, err := os.Stat(root); err != nil {
		t.Skip("no external testdata at", root)
	}
	re := regexp.MustCompile(`"(?:model|stringValue)"\s*:\s*"((?:claude|gpt|o[134]|gemini|codex)[^"]{0,60}|[a-z]+\.anthropic\.[^"]{0,60}|bedrock/[^"]{0,60})"`)
	// Event names (claude_code.api_request) and prose are not models.
	modelLike := regexp.MustCompile(`^[a-z0-9./:@-]*[0-9][a-z0-9./:@-]*$`)
	seen := map[string]bool{}
	err := walk(root, func(data []byte) {
		for _, m := range re.FindAllSubmatch(data, -1) {
			if modelLike.Match(m[1]) {
				seen[string(m[1])] = true
			}
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	b := Builtin()
	var priced, unpriced []string
	for m := range seen {
		if _, key, ok := b.Lookup(m, ""); ok {
			priced = append(priced, m+" → "+key)
		} else {
			unpriced = append(unpriced, m)
		}
	}
	sort.Strings(priced)
	sort.Strings(unpriced)
	t.Logf("priced: %s", strings.Join(priced, ", "))
	t.Logf("no price: %s", strings.Join(unpriced, ", "))
	if len(seen) > 0 && len(priced) == 0 {
		t.Error("no model of the external records has a price")
	}
}

func walk(dir string, fn func([]byte)) error {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	for _, e := range ents {
		p := dir + "/" + e.Name()
		if e.IsDir() {
			if err := walk(p, fn); err != nil {
				return err
			}
			continue
		}
		if info, err := e.Info(); err != nil || info.Size() > 64<<20 {
			continue
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		fn(data)
	}
	return nil
}

// FuzzLoad: Load never panics, and what it loads can be looked up and
// priced without panicking or a negative cost.
func FuzzLoad(f *testing.F) {
	if data, err := os.ReadFile("testdata/small.json"); err == nil {
		f.Add(data)
	}
	f.Add(builtinJSON[:2000])
	f.Add([]byte(`{"m": {"input_cost_per_token": 1e-6, "output_cost_per_token": 2e-6, "input_cost_per_token_above_99999999999999999999k_tokens": 1}}`))
	f.Add([]byte(`{"a-20250101": {"input_cost_per_token": 1, "output_cost_per_token": 1}, "a-20250102": {"input_cost_per_token": 1, "output_cost_per_token": 1}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		tab, err := Load(strings.NewReader(string(data)), "fuzz.json")
		if err != nil {
			if !strings.HasPrefix(err.Error(), "fuzz.json:") {
				t.Errorf("error does not name the file: %v", err)
			}
			return
		}
		for _, k := range tab.Keys() {
			p, _, ok := tab.Lookup(k, "")
			if !ok {
				t.Errorf("key %q not found by its own name", k)
			}
			if c := p.Cost(Usage{Input: 300_000, CacheRead: 1, CacheWrite: 2, CacheWrite1h: 1, Output: 3}); c < 0 || math.IsNaN(c) {
				t.Errorf("%s: cost %g", k, c)
			}
		}
	})
}

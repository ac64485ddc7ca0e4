// Package prices prices model calls: a table of per-token USD prices
// shipped in the binary, in LiteLLM's model_prices_and_context_window.json
// format, which a user's own file of that format replaces or extends.
//
// A model the table does not know has no price. Callers show it as "no
// price" by name and never count it as $0: a guessed price, or a zero,
// would make a report's cost look complete when it is not.
package prices

import (
	_ "embed"
	"math"
	"sort"
)

// builtinJSON holds the current Anthropic, OpenAI and Google models; each
// entry's source and date are in SOURCES.tsv beside it.
//
//go:embed prices.json
var builtinJSON []byte

// Price is what one model charges, in USD per token.
//
// Load fills every field: an entry without a cache read or cache write
// price is charged its input price for those tokens (the provider bills
// them as input), and one without a 1-hour cache write price is charged
// its 5-minute one.
type Price struct {
	Input, Output float64
	// CacheRead is the price of input read from a prompt cache.
	CacheRead float64
	// CacheWrite is the price of input written to a prompt cache with
	// the provider's default lifetime (Anthropic's 5 minutes).
	CacheWrite float64
	// CacheWrite1h is Anthropic's price for cache writes with a 1-hour
	// lifetime (LiteLLM's cache_creation_input_token_cost_above_1hr).
	CacheWrite1h float64
	// Tiers are long-context prices, by rising threshold. A request whose
	// prompt exceeds a tier's threshold is billed whole at that tier.
	Tiers []Tier
}

// Tier is a long-context price: Anthropic's and Google's above 200k
// prompt tokens, OpenAI's above 272k.
type Tier struct {
	// Above is the threshold in prompt tokens (input + cache read + cache
	// write); the tier applies to prompts strictly larger.
	Above                                              float64
	Input, Output, CacheRead, CacheWrite, CacheWrite1h float64
}

// Usage is one call's tokens, counted as records.Call counts them: Input
// is the input neither read from nor written to a cache, and the prompt
// is Input + CacheRead + CacheWrite.
type Usage struct {
	Input, CacheRead, CacheWrite, Output float64
	// CacheWrite1h is the part of CacheWrite written with a 1-hour
	// lifetime (Claude Code's cache_creation.ephemeral_1h_input_tokens);
	// the rest of CacheWrite is charged the default (5-minute) price.
	CacheWrite1h float64
	// Reasoning tokens are not a field: they are part of Output and are
	// billed as output by every provider in the table, so adding them
	// would count them twice.
}

// Prompt is the request's whole input, which decides its tier.
func (u Usage) Prompt() float64 { return u.Input + u.CacheRead + u.CacheWrite }

// Cost is what the call cost in USD. The tier is chosen on the whole
// prompt and then applies to every token of the request, output
// included, as Anthropic, Google and OpenAI bill it.
func (p Price) Cost(u Usage) float64 {
	in, out, cr, cw, cw1h := p.Input, p.Output, p.CacheRead, p.CacheWrite, p.CacheWrite1h
	prompt := u.Prompt()
	for _, t := range p.Tiers {
		if prompt > t.Above {
			in, out, cr, cw, cw1h = t.Input, t.Output, t.CacheRead, t.CacheWrite, t.CacheWrite1h
		}
	}
	long := math.Min(math.Max(u.CacheWrite1h, 0), math.Max(u.CacheWrite, 0))
	return u.Input*in + u.CacheRead*cr + (u.CacheWrite-long)*cw + long*cw1h + u.Output*out
}

// Table maps model names to prices.
type Table struct {
	entries map[string]entry
	// Skipped are the file's entries that were left out, and why; a
	// caller says how many and which when it loads a user's file.
	Skipped []Skip
}

type entry struct {
	key      string // as spelled in the file
	provider string // litellm_provider
	price    Price
}

// Skip is a file entry Load left out.
type Skip struct {
	Key, Reason string
}

// Len is the number of priced models.
func (t *Table) Len() int { return len(t.entries) }

// Keys are the table's keys as spelled in their files, sorted.
func (t *Table) Keys() []string {
	keys := make([]string, 0, len(t.entries))
	for _, e := range t.entries {
		keys = append(keys, e.key)
	}
	sort.Strings(keys)
	return keys
}

// Builtin is the table shipped in the binary. It is parsed on each call
// so that callers may not share, and so change, one table.
func Builtin() *Table {
	t, err := parse(builtinJSON, "prices.json (built in)")
	if err != nil {
		// The embedded file is checked by TestBuiltin; reaching this is a
		// build defect, not user input.
		panic(err)
	}
	return t
}

// Extend is t with other's entries added; other's price wins for a model
// both have. Neither table changes.
func (t *Table) Extend(other *Table) *Table {
	n := &Table{entries: make(map[string]entry, len(t.entries)+len(other.entries))}
	for k, e := range t.entries {
		n.entries[k] = e
	}
	for k, e := range other.entries {
		n.entries[k] = e
	}
	n.Skipped = append(append(n.Skipped, t.Skipped...), other.Skipped...)
	return n
}

package prices

import (
	"regexp"
	"sort"
	"strings"
)

// providerPrefixes are the routing prefixes agents and gateways put before
// a model's name. Azure's is not among them: Azure prices its own
// deployments, so an azure/ model is found only by its own key.
var providerPrefixes = []string{
	"anthropic/", "openai/", "gemini/", "google/", "vertex_ai/", "vertex/",
	"bedrock/", "bedrock_converse/", "models/",
}

var (
	// bedrockID is a Bedrock model id: an optional cross-region prefix,
	// the vendor, the model and its version (us.anthropic.claude-…-v1:0).
	bedrockID = regexp.MustCompile(`^(?:(?:us|eu|apac|au|jp|ca|global|us-gov)\.)?anthropic\.(.+?)(?:-v\d+(?::\d+)?)?$`)
	// bedrockVersion is the version Bedrock appends to a model id that is
	// sometimes recorded without its vendor (claude-…-20250929-v1:0).
	bedrockVersion = regexp.MustCompile(`-v\d+:\d+$`)
	// dated is a model name ending in a snapshot date (-20250929,
	// -2025-04-14). Gemini's -preview-06-17 and -09-2025 name versions,
	// not snapshots of one model, and are left alone.
	dated = regexp.MustCompile(`^(.+)-(\d{8}|\d{4}-\d{2}-\d{2})$`)
)

// Lookup finds a model's price and the table key it was found under. The
// provider, when given (anthropic, openai, gemini...), is tried as a
// prefix first. Names are matched without case, without a routing prefix
// (anthropic/, openai/, gemini/, vertex_ai/, bedrock/...), with Bedrock's
// ids (us.anthropic.claude-sonnet-4-5-20250929-v1:0) and Vertex's
// @20250929 suffix read as the dated name, and without -latest. A dated
// name not in the table finds its undated entry, and an undated name its
// dated entries when there is one, or several priced alike (the newest
// is named). Lookup never tries another model's name: an unknown model
// is not found.
func (t *Table) Lookup(model, provider string) (Price, string, bool) {
	m := strings.ToLower(strings.TrimSpace(model))
	if m == "" {
		return Price{}, "", false
	}
	if p := strings.ToLower(strings.TrimSpace(provider)); p != "" {
		if e, ok := t.entries[p+"/"+m]; ok {
			return e.price, e.key, true
		}
	}
	if e, ok := t.entries[m]; ok {
		return e.price, e.key, true
	}
	n := normalise(m)
	if e, ok := t.entries[n]; ok {
		return e.price, e.key, true
	}
	if d := dated.FindStringSubmatch(n); d != nil {
		if e, ok := t.entries[d[1]]; ok {
			return e.price, e.key, true
		}
		return Price{}, "", false
	}
	return t.datedOf(n)
}

// normalise strips what agents and gateways add to a model's name.
func normalise(m string) string {
	for again := true; again; {
		again = false
		for _, p := range providerPrefixes {
			if strings.HasPrefix(m, p) {
				m, again = m[len(p):], true
			}
		}
	}
	if b := bedrockID.FindStringSubmatch(m); b != nil {
		m = b[1]
	}
	m = bedrockVersion.ReplaceAllString(m, "")
	// Vertex names Claude snapshots claude-sonnet-4-5@20250929.
	m = strings.Replace(m, "@", "-", 1)
	return strings.TrimSuffix(m, "-latest")
}

// datedOf is the dated entry of an undated name: the only one, or the
// newest when all are priced alike; none when their prices differ.
func (t *Table) datedOf(n string) (Price, string, bool) {
	var found []entry
	for k, e := range t.entries {
		if d := dated.FindStringSubmatch(k); d != nil && d[1] == n {
			found = append(found, e)
		}
	}
	if len(found) == 0 {
		return Price{}, "", false
	}
	sort.Slice(found, func(i, j int) bool { return found[i].key > found[j].key })
	for _, e := range found[1:] {
		if !samePrice(e.price, found[0].price) {
			return Price{}, "", false
		}
	}
	return found[0].price, found[0].key, true
}

func samePrice(a, b Price) bool {
	if a.Input != b.Input || a.Output != b.Output || a.CacheRead != b.CacheRead ||
		a.CacheWrite != b.CacheWrite || a.CacheWrite1h != b.CacheWrite1h || len(a.Tiers) != len(b.Tiers) {
		return false
	}
	for i := range a.Tiers {
		if a.Tiers[i] != b.Tiers[i] {
			return false
		}
	}
	return true
}

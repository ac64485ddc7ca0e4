package prices

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// Load reads a table in LiteLLM's model_prices_and_context_window.json
// format; name is the file's name for errors. Entries that are not chat,
// completion or responses models, or have no per-token input and output
// price, are skipped and listed in Skipped, not errors: LiteLLM's file
// prices images, audio and embeddings too. A file that is not such a JSON
// object, or a price that is not a non-negative number, is an error
// naming the file, the position, the key and the field.
func Load(r io.Reader, name string) (*Table, error) {
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return parse(data, name)
}

// tierKey is a long-context price key: the kind of price, an optional
// 1-hour cache lifetime, and the threshold in thousands of tokens.
var tierKey = regexp.MustCompile(`^(input_cost_per_token|output_cost_per_token|cache_read_input_token_cost|cache_creation_input_token_cost)(_above_1hr)?_above_(\d+)k_tokens$`)

// chatModes are LiteLLM's modes for models that answer prompts.
var chatModes = map[string]bool{"chat": true, "completion": true, "responses": true}

func parse(data []byte, name string) (*Table, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	if tok, err := dec.Token(); err != nil {
		return nil, posErr(data, name, dec, "", "", err)
	} else if d, ok := tok.(json.Delim); !ok || d != '{' {
		return nil, fmt.Errorf("%s:%s: the file is not a JSON object of models", name, lineCol(data, 0))
	}
	t := &Table{entries: map[string]entry{}}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, posErr(data, name, dec, "", "", err)
		}
		key := tok.(string) // object keys are always strings
		start := dec.InputOffset()
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return nil, posErr(data, name, dec, key, "", err)
		}
		if key == "sample_spec" { // LiteLLM's documentation of its own format
			continue
		}
		e, skip, err := entryOf(key, raw)
		if err != nil {
			return nil, fmt.Errorf("%s:%s: model %q: %w", name, lineCol(data, int(start)), key, err)
		}
		if skip == "" && strings.TrimSpace(key) == "" {
			skip = "no model name"
		}
		if skip != "" {
			t.Skipped = append(t.Skipped, Skip{Key: key, Reason: skip})
			continue
		}
		// Lookup matches names without case or surrounding space.
		t.entries[strings.ToLower(strings.TrimSpace(key))] = e
	}
	if _, err := dec.Token(); err != nil {
		return nil, posErr(data, name, dec, "", "", err)
	}
	if dec.More() {
		return nil, fmt.Errorf("%s:%s: data after the end of the JSON object", name, lineCol(data, int(dec.InputOffset())))
	}
	return t, nil
}

// entryOf reads one model's entry: its price, or why it was skipped.
func entryOf(key string, raw json.RawMessage) (entry, string, error) {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(raw, &fields); err != nil {
		return entry{}, "", errors.New("the entry is not a JSON object")
	}
	str := func(f string) (string, error) {
		v, ok := fields[f]
		if !ok {
			return "", nil
		}
		var s string
		if err := json.Unmarshal(v, &s); err != nil {
			return "", fmt.Errorf("field %s: not a string", f)
		}
		return s, nil
	}
	mode, err := str("mode")
	if err != nil {
		return entry{}, "", err
	}
	provider, err := str("litellm_provider")
	if err != nil {
		return entry{}, "", err
	}
	// Read every price field before deciding, so that a malformed one is
	// reported even on an entry that would be skipped.
	num, err := priceFields(fields)
	if err != nil {
		return entry{}, "", err
	}
	if mode != "" && !chatModes[mode] {
		return entry{}, "mode " + mode + " is not a chat model", nil
	}
	in, okIn := num["input_cost_per_token"]
	out, okOut := num["output_cost_per_token"]
	if !okIn || !okOut {
		return entry{}, "no per-token input and output price", nil
	}
	p := Price{Input: in, Output: out}
	p.CacheRead = or(num, "cache_read_input_token_cost", in)
	p.CacheWrite = or(num, "cache_creation_input_token_cost", in)
	p.CacheWrite1h = or(num, "cache_creation_input_token_cost_above_1hr", p.CacheWrite)
	if p.Tiers, err = tiersOf(num, p); err != nil {
		return entry{}, "", err
	}
	return entry{key: key, provider: provider, price: p}, "", nil
}

// priceFields reads an entry's price fields (see priceField) as numbers,
// leaving out those that are null; a field that is not a non-negative
// number is an error.
func priceFields(fields map[string]json.RawMessage) (map[string]float64, error) {
	num := map[string]float64{}
	names := make([]string, 0, len(fields))
	for f := range fields {
		names = append(names, f)
	}
	sort.Strings(names)
	for _, f := range names {
		if !priceField(f) {
			continue
		}
		var n json.Number
		if err := json.Unmarshal(fields[f], &n); err != nil {
			if string(fields[f]) == "null" {
				continue
			}
			return nil, fmt.Errorf("field %s: not a number: %s", f, excerpt(fields[f]))
		}
		v, err := strconv.ParseFloat(string(n), 64)
		if err != nil || v < 0 {
			return nil, fmt.Errorf("field %s: not a non-negative price: %s", f, n)
		}
		num[f] = v
	}
	return num, nil
}

// tiersOf reads the price tiers an entry's _above_Nk_tokens fields give,
// in order of their thresholds, above base price p.
func tiersOf(num map[string]float64, p Price) ([]Tier, error) {
	above := map[int]bool{}
	for f := range num {
		if m := tierKey.FindStringSubmatch(f); m != nil {
			k, err := strconv.Atoi(m[3])
			if err != nil || k > 1<<30 {
				return nil, fmt.Errorf("field %s: threshold out of range", f)
			}
			above[k] = true
		}
	}
	ks := make([]int, 0, len(above))
	for k := range above {
		ks = append(ks, k)
	}
	sort.Ints(ks)
	var tiers []Tier
	for _, k := range ks {
		s := fmt.Sprintf("_above_%dk_tokens", k)
		// A tier price the entry does not give is its base price of the
		// same kind: LiteLLM lists only the prices the tier changes.
		t := Tier{Above: float64(k) * 1000}
		t.Input = or(num, "input_cost_per_token"+s, p.Input)
		t.Output = or(num, "output_cost_per_token"+s, p.Output)
		t.CacheRead = or(num, "cache_read_input_token_cost"+s, p.CacheRead)
		t.CacheWrite = or(num, "cache_creation_input_token_cost"+s, p.CacheWrite)
		// Without a tier 1-hour price, a 1-hour write costs at least the
		// tier's 5-minute write and at least the base 1-hour write.
		t.CacheWrite1h = or(num, "cache_creation_input_token_cost_above_1hr"+s, max(p.CacheWrite1h, t.CacheWrite))
		tiers = append(tiers, t)
	}
	return tiers, nil
}

// priceField says whether Load reads the field as a price.
func priceField(f string) bool {
	switch f {
	case "input_cost_per_token", "output_cost_per_token", "cache_read_input_token_cost",
		"cache_creation_input_token_cost", "cache_creation_input_token_cost_above_1hr":
		return true
	}
	return tierKey.MatchString(f)
}

func or(num map[string]float64, f string, def float64) float64 {
	if v, ok := num[f]; ok {
		return v
	}
	return def
}

func excerpt(b []byte) string {
	if len(b) > 40 {
		return string(b[:40]) + "…"
	}
	return string(b)
}

// posErr names where the decoder stopped.
func posErr(data []byte, name string, dec *json.Decoder, key, field string, err error) error {
	off := int(dec.InputOffset())
	var se *json.SyntaxError
	if errors.As(err, &se) {
		off = int(se.Offset)
	}
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		err = errors.New("unexpected end of file")
		off = len(data)
	}
	where := ""
	if key != "" {
		where = fmt.Sprintf(" model %q:", key)
	}
	return fmt.Errorf("%s:%s:%s %v", name, lineCol(data, off), where, err)
}

// lineCol is the 1-based line and column of a byte offset.
func lineCol(data []byte, off int) string {
	if off > len(data) {
		off = len(data)
	}
	if off < 0 {
		off = 0
	}
	line := 1 + bytes.Count(data[:off], []byte("\n"))
	col := off - bytes.LastIndexByte(data[:off], '\n')
	return fmt.Sprintf("%d:%d", line, col)
}

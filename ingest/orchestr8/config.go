package orchestr8

import (
	"bytes"
	"encoding/json"
	"math"

	"github.com/orchstat/orchstat/ingest/records"
)

// The keys of .claude/retry-config.json, spelled as orchestr8's retry.js
// spells them (getDefaultConfig).
const (
	KeyMaxRetries = "maxRetries"
	KeyWindowSize = "windowSize"
	KeyThreshold  = "highFailureThreshold"
	KeyStrategies = "strategies"
)

// ConfigRange is the values orchestr8's setConfigValue (retry.js) accepts
// for a numeric key of the retry configuration.
type ConfigRange struct {
	Min, Max float64
	Whole    bool // whole numbers only
}

// Allows reports whether f is within the range.
func (r ConfigRange) Allows(f float64) bool {
	if math.IsNaN(f) || f < r.Min || f > r.Max {
		return false
	}
	return !r.Whole || f == math.Trunc(f) && !math.IsInf(f, 0)
}

// The limits of the retry configuration's values, as setConfigValue
// checks them: maxRetries a whole number from 0, windowSize one from 1,
// highFailureThreshold from 0 to 1. ParseConfig and rules/adaptive, which
// reads and writes the file for recommend and retry-config, both check
// with these.
var (
	MaxRetriesRange = ConfigRange{Min: 0, Max: math.Inf(1), Whole: true}
	WindowSizeRange = ConfigRange{Min: 1, Max: math.Inf(1), Whole: true}
	ThresholdRange  = ConfigRange{Min: 0, Max: 1}
)

// ParseConfig reads .claude/retry-config.json whole, as JSON with sorted
// keys and no white space, so that two copies of one configuration store
// the same text. Values retry.js's setConfigValue would refuse (maxRetries
// a non-negative integer, windowSize a positive integer,
// highFailureThreshold from 0 to 1, strategies lists of names) are
// problems, but the file is still kept: orchestr8 reads it as it is.
// orchestr8 falls back to its defaults on a file that is not JSON; that is
// an error here, since there is nothing to keep.
func ParseConfig(path string, b []byte) (*records.Set, error) {
	b = stripBOM(b)
	root, err := parseTree(b, "config")
	if err != nil {
		return nil, err
	}
	if root.kind != '{' {
		return nil, &records.Error{Line: lineOf(b, root.start), Offset: root.start, Field: "config", Msg: "not a JSON object"}
	}
	var v any
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil {
		return nil, &records.Error{Line: 1, Field: "config", Msg: "not JSON: " + err.Error()}
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, &records.Error{Line: 1, Field: "config", Msg: err.Error()}
	}
	norm := bytes.TrimSpace(buf.Bytes())
	p := &parser{b: b, set: &records.Set{}}
	check := func(key string, r ConfigRange, want string) {
		n := root.get(key)
		if n == nil {
			return
		}
		f, isNum := n.float()
		if !isNum || !r.Allows(f) {
			p.problem(n, key, "not "+want)
		}
	}
	check(KeyMaxRetries, MaxRetriesRange, "a non-negative integer")
	check(KeyWindowSize, WindowSizeRange, "a positive integer")
	check(KeyThreshold, ThresholdRange, "a number from 0 to 1")
	if s := root.get(KeyStrategies); s != nil {
		if s.kind != '{' {
			p.problem(s, KeyStrategies, "not an object of stage to strategies")
		} else {
			for i, stage := range s.keys {
				list := s.vals[i]
				if list.kind != '[' {
					p.problem(list, KeyStrategies+"."+stage, "not a list of strategy names")
					continue
				}
				for _, x := range list.vals {
					if x.kind != '"' {
						p.problem(x, KeyStrategies+"."+stage, "not a strategy name")
					}
				}
			}
		}
	}
	p.set.Configs = append(p.set.Configs, records.Config{System: records.Orchestr8, JSON: norm})
	p.sortProblems()
	return p.set, nil
}

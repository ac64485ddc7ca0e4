package orchestr8

import (
	"bytes"
	"encoding/json"

	"github.com/orchstat/orchstat/model/orchestr8/spec"
	"github.com/orchstat/orchstat/model/records"
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
	check := func(key string, r spec.ConfigRange, want string) {
		n := root.get(key)
		if n == nil {
			return
		}
		f, isNum := n.float()
		if !isNum || !r.Allows(f) {
			p.problem(n, key, "not "+want)
		}
	}
	check(spec.KeyMaxRetries, spec.MaxRetriesRange, "a non-negative integer")
	check(spec.KeyWindowSize, spec.WindowSizeRange, "a positive integer")
	check(spec.KeyThreshold, spec.ThresholdRange, "a number from 0 to 1")
	if s := root.get(spec.KeyStrategies); s != nil {
		if s.kind != '{' {
			p.problem(s, spec.KeyStrategies, "not an object of stage to strategies")
		} else {
			for i, stage := range s.keys {
				list := s.vals[i]
				if list.kind != '[' {
					p.problem(list, spec.KeyStrategies+"."+stage, "not a list of strategy names")
					continue
				}
				for _, x := range list.vals {
					if x.kind != '"' {
						p.problem(x, spec.KeyStrategies+"."+stage, "not a strategy name")
					}
				}
			}
		}
	}
	p.set.Configs = append(p.set.Configs, records.Config{System: records.Orchestr8, JSON: norm})
	p.sortProblems()
	return p.set, nil
}

// Package spec holds what orchestr8 itself defines, written once: its
// pipeline's stages, and the keys, defaults, limits and strategy names of
// its retry configuration (.claude/retry-config.json). The reader
// (ingest/orchestr8), the configuration manager (rules/adaptive) and the
// adaptive preset (rules/retry) all take them from here, so a new stage or
// a changed default is one edit.
//
// The source is github.com/NewmanJustice/orchestr8: src/retry.js
// (getDefaultConfig, setConfigValue, applyStrategy), src/insights.js (STAGES)
// and orchestr8's adaptive retry spec. The package imports nothing of
// orchstat's, so any stage may stand on it.
package spec

import (
	"maps"
	"math"
	"slices"
)

// Stages are orchestr8's agents in pipeline order: orchestr8's states (line
// 81), as src/insights.js's STAGES and history.js's showStats name them.
var Stages = []string{"alex", "cass", "nigel", "codey-plan", "codey-implement"}

// Commit is SYSTEM_SPEC's COMMIT state: a stage the history may record
// after the agents, with no retry strategies of its own.
const Commit = "commit"

// The keys of .claude/retry-config.json, spelled as retry.js spells them
// (getDefaultConfig). orchestr8's adaptive retry spec calls the threshold
// "highFailureThreshold" in rule 2 (line 114), and so does the file.
const (
	KeyMaxRetries = "maxRetries"
	KeyWindowSize = "windowSize"
	KeyThreshold  = "highFailureThreshold"
	KeyStrategies = "strategies"
)

// Keys lists the top-level keys in the order orchestr8 writes them.
var Keys = []string{KeyMaxRetries, KeyWindowSize, KeyThreshold, KeyStrategies}

// Defaults, from retry.js getDefaultConfig and orchestr8's adaptive retry
// spec: maxRetries 3 (line 69), windowSize 10 ("last 10 runs", line 58),
// highFailureThreshold 0.2 ("20%", line 59).
const (
	DefaultMaxRetries = 3
	DefaultWindowSize = 10
	DefaultThreshold  = 0.2
)

// defaultStrategies is getDefaultConfig's strategies, each stage's
// strategy for attempt 1, 2, ...: the adaptive retry spec names the strategies (lines
// 125-133) but gives no table per stage, so orchestr8's own (its
// retry-config tests' getDefaultConfig) is the reference.
var defaultStrategies = map[string][]string{
	"alex":            {"simplify-prompt", "add-context"},
	"cass":            {"reduce-stories", "simplify-prompt"},
	"nigel":           {"simplify-tests", "add-context"},
	"codey-plan":      {"add-context", "simplify-prompt"},
	"codey-implement": {"incremental", "rollback"},
}

// DefaultStrategies returns a fresh copy of getDefaultConfig's strategies
// by stage: changing it changes no other copy.
func DefaultStrategies() map[string][]string {
	out := maps.Clone(defaultStrategies)
	for st, s := range out {
		out[st] = slices.Clone(s)
	}
	return out
}

// Strategies are the names applyStrategy knows (orchestr8's rule 3, lines
// 125-133; retry.js applyStrategy). orchestr8 passes any other name on,
// but it changes nothing in the prompt.
var Strategies = []string{"retry", "simplify-prompt", "reduce-stories", "simplify-tests", "add-context", "incremental", "rollback"}

// ConfigRange is the values setConfigValue (retry.js) accepts for a
// numeric key of the retry configuration.
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
// highFailureThreshold from 0 to 1.
var (
	MaxRetriesRange = ConfigRange{Min: 0, Max: math.Inf(1), Whole: true}
	WindowSizeRange = ConfigRange{Min: 1, Max: math.Inf(1), Whole: true}
	ThresholdRange  = ConfigRange{Min: 0, Max: 1}
)

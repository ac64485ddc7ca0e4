// Package advice holds what `orchstat recommend` answers, orchestr8's
// adaptive retry advice for a failed stage with the numbers and the case
// it was decided on, and what `orchstat retry-config show` shows, the
// settings that advice is decided by. rules/adaptive fills them;
// reports/render draws them as text or JSON; neither imports the other.
package advice

import (
	"math"
	"strconv"

	"github.com/orchstat/orchstat/model/reports"
)

// Recommendation is the JSON output; the text output says the same.
type Recommendation struct {
	Stage   string `json:"stage"`
	Attempt int    `json:"attempt"`
	// AttemptFrom is "flag" (--attempt), "history" (the recorded failures
	// of --item at the stage, plus one) or "default" (1).
	AttemptFrom string  `json:"attempt_from"`
	Item        string  `json:"item,omitempty"`
	System      string  `json:"system"`
	FailureRate float64 `json:"failure_rate"`
	Numerator   int     `json:"numerator"`
	Denominator int     `json:"denominator"`
	// Runs is every recorded run in the history, the window's or not.
	Runs        int     `json:"runs"`
	Window      int     `json:"window"`
	Threshold   float64 `json:"threshold"`
	MaxRetries  int     `json:"max_retries"`
	Strategy    string  `json:"strategy"`
	ShouldRetry bool    `json:"should_retry"`
	Reason      string  `json:"reason"`
	Config      string  `json:"config"`
	// ConfigDefaults names the settings not taken from the file.
	ConfigDefaults []string `json:"config_defaults"`
	Warnings       []string `json:"warnings"`
	// Store and Scope say where the history came from; empty when no
	// store was read.
	Store string         `json:"store,omitempty"`
	Scope *reports.Scope `json:"scope,omitempty"`
}

// Percent is a rate as the advice writes it: 0.2 as "20%" and 1/3 as
// "33.3%".
func Percent(f float64) string {
	return strconv.FormatFloat(math.Round(f*1000)/10, 'f', -1, 64) + "%"
}

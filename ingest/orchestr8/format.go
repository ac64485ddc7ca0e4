package orchestr8

import (
	"bytes"

	"github.com/orchstat/orchstat/model/records"
	"github.com/orchstat/orchstat/model/systems"
)

// Format is how orchestr8's record files are found and read.
var Format = records.Format{
	System: records.Orchestr8,
	Kinds: []records.Kind{
		{Name: systems.KindO8History, File: "pipeline-history.json", Parse: ParseHistory},
		{Name: systems.KindO8Config, File: "retry-config.json", Parse: ParseConfig},
	},
	Home:  ".claude",
	Guess: guess,
}

// guess tells the retry configuration by its keys; anything else is taken
// for the history.
func guess(_ string, head []byte) (string, bool) {
	if bytes.Contains(head, []byte(`"windowSize"`)) || bytes.Contains(head, []byte(`"maxRetries"`)) {
		return systems.KindO8Config, true
	}
	return systems.KindO8History, true
}

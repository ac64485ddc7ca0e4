package factory

import (
	"bytes"

	"github.com/orchstat/orchstat/model/records"
	"github.com/orchstat/orchstat/model/systems"
)

// Format is how the factory's record files are found and read.
var Format = records.Format{
	System: records.Factory,
	Kinds: []records.Kind{
		{Name: systems.KindFactorySummary, File: "run_summary.json", Parse: ParseSummary},
		{Name: systems.KindFactoryBrief, File: "failure_brief.json", Parse: ParseBrief},
		// The web pipeline's names are generic: events.jsonl and
		// meta.json count only as a pair.
		{Name: systems.KindFactoryEvents, File: "events.jsonl", Beside: "meta.json", Parse: ParseEvents},
		{Name: systems.KindFactoryMeta, File: "meta.json", Beside: "events.jsonl", Parse: ParseMeta},
	},
	Guess: guess,
}

// guess names a factory file by its extension and keys; a brief has no
// key of its own, so it is what is left.
func guess(ext string, head []byte) (string, bool) {
	switch {
	case ext == ".jsonl":
		return systems.KindFactoryEvents, true
	case bytes.Contains(head, []byte(`"pipeline_run_id"`)):
		return systems.KindFactoryMeta, true
	case bytes.Contains(head, []byte(`"attempts"`)) || bytes.Contains(head, []byte(`"verdict"`)):
		return systems.KindFactorySummary, true
	default:
		return systems.KindFactoryBrief, true
	}
}

package codex

import (
	"github.com/orchstat/orchstat/model/records"
	"github.com/orchstat/orchstat/model/systems"
)

// Format is how Codex's rollouts are found and read.
var Format = records.Format{
	System: records.Codex,
	Kinds: []records.Kind{{Name: systems.KindCodexRollout, Path: IsRolloutPath, Head: Sniff,
		Parse: ParseRollout, Stream: &Stream}},
	Guess: func(_ string, head []byte) (string, bool) { return systems.KindCodexRollout, Sniff(head) },
}

package claudecode

import (
	"github.com/orchstat/orchstat/model/records"
	"github.com/orchstat/orchstat/model/systems"
)

// Format is how Claude Code's transcripts are found and read.
var Format = records.Format{
	System: records.ClaudeCode,
	Kinds: []records.Kind{{Name: systems.KindClaudeCode, Path: IsTranscriptPath, Head: Sniff,
		Parse: ParseTranscript, Stream: &Stream}},
	Guess: func(_ string, head []byte) (string, bool) { return systems.KindClaudeCode, Sniff(head) },
}

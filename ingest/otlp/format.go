package otlp

import (
	"github.com/orchstat/orchstat/model/records"
	"github.com/orchstat/orchstat/model/systems"
)

// Format is how OTLP JSON files are read. Their names say nothing: they
// are told by content alone.
var Format = records.Format{
	System: records.OTel,
	Kinds:  []records.Kind{{Name: systems.KindOTLP, Head: Sniff, Parse: Parse, Stream: &Stream}},
	Guess:  func(_ string, head []byte) (string, bool) { return systems.KindOTLP, Sniff(head) },
}

package replay

import (
	"reflect"

	"github.com/orchstat/orchstat/model/episode"
	"github.com/orchstat/orchstat/rules/retry"
)

// policyReads declares, for each field of retry.Policy, the episode kinds
// whose replay reads it. A policy that differs from the baseline only in
// fields a kind does not read leaves that kind's figures exactly the
// baseline's (Touches). Every field must be listed, with no kinds when no
// episode depends on it: TestPolicyReadsEveryField fails on a field added
// to the policy without deciding here what it touches.
var policyReads = []struct {
	field string
	kinds []episode.Kind
}{
	// The name only labels the policy; its classify rules change nothing,
	// since the baseline's rules name the recorded errors for every
	// policy.
	{"Name", nil},
	{"Classify", nil},

	// Provider requests: the retry limits, the classes and the backoff.
	{"Backoff", []episode.Kind{episode.KindProvider}},
	{"MaxRetries", []episode.Kind{episode.KindProvider}},
	{"PerOperation", []episode.Kind{episode.KindProvider}},
	{"Retriable", []episode.Kind{episode.KindProvider}},
	{"MaxAttempts", []episode.Kind{episode.KindProvider}},
	{"SignatureHalt", []episode.Kind{episode.KindProvider}},
	{"GlobalCap", []episode.Kind{episode.KindProvider}},
	{"Budget", []episode.Kind{episode.KindProvider}},
	{"Cascade", []episode.Kind{episode.KindProvider}},
	{"Adaptive", []episode.Kind{episode.KindProvider}},
	{"TransientOnly", []episode.Kind{episode.KindProvider}},

	// L2 repair loops.
	{"MaxIterations", []episode.Kind{episode.KindL2}},
	{"NonImprovingStop", []episode.Kind{episode.KindL2}},
	{"Escalation", []episode.Kind{episode.KindL2}},

	// L3 steps.
	{"DiagnosisAfter", []episode.Kind{episode.KindL3}},
}

// Touches reports, per episode kind, whether p could decide an episode of
// that kind differently from base: whether they differ in a field
// policyReads lists for the kind.
func Touches(p, base *retry.Policy) map[episode.Kind]bool {
	out := map[episode.Kind]bool{episode.KindProvider: false, episode.KindL2: false, episode.KindL3: false}
	pv, bv := reflect.ValueOf(p).Elem(), reflect.ValueOf(base).Elem()
	for _, r := range policyReads {
		if len(r.kinds) == 0 || reflect.DeepEqual(pv.FieldByName(r.field).Interface(), bv.FieldByName(r.field).Interface()) {
			continue
		}
		for _, k := range r.kinds {
			out[k] = true
		}
	}
	return out
}

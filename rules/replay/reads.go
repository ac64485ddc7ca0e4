package replay

import (
	"reflect"

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
	kinds []Kind
}{
	// The name only labels the policy; its classify rules change nothing,
	// since the baseline's rules name the recorded errors for every
	// policy.
	{"Name", nil},
	{"Classify", nil},

	// Provider requests: the retry limits, the classes and the backoff.
	{"Backoff", []Kind{KindProvider}},
	{"MaxRetries", []Kind{KindProvider}},
	{"PerOperation", []Kind{KindProvider}},
	{"Retriable", []Kind{KindProvider}},
	{"MaxAttempts", []Kind{KindProvider}},
	{"SignatureHalt", []Kind{KindProvider}},
	{"GlobalCap", []Kind{KindProvider}},
	{"Budget", []Kind{KindProvider}},
	{"Cascade", []Kind{KindProvider}},
	{"Adaptive", []Kind{KindProvider}},
	{"TransientOnly", []Kind{KindProvider}},

	// L2 repair loops.
	{"MaxIterations", []Kind{KindL2}},
	{"NonImprovingStop", []Kind{KindL2}},
	{"Escalation", []Kind{KindL2}},

	// L3 steps.
	{"DiagnosisAfter", []Kind{KindL3}},
}

// Touches reports, per episode kind, whether p could decide an episode of
// that kind differently from base: whether they differ in a field
// policyReads lists for the kind.
func Touches(p, base *retry.Policy) map[Kind]bool {
	out := map[Kind]bool{KindProvider: false, KindL2: false, KindL3: false}
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

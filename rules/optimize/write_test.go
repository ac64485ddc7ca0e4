package optimize

import (
	"math/rand/v2"
	"testing"

	"github.com/orchstat/orchstat/rules/retry"
	"github.com/orchstat/orchstat/rules/retry/policyfile"
)

// TestPolicyFileReadsBack: every setting the search varies, in either
// layer, written as a policy file, is read back by the policy file parser as the same policy.
func TestPolicyFileReadsBack(t *testing.T) {
	base, _ := retry.Preset("orchestrator")
	space, err := narrowSpace(append(providerParams(failedClasses(truthCorpus()), base), loopParams(true, true)...), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, st := range space.draw(200, rand.New(rand.NewPCG(1, 2))) {
		p, _, err := space.policy(base, st)
		if err != nil {
			t.Fatal(err)
		}
		data := PolicyFile(p, "optimized", "orchestrator")
		got, err := policyfile.Parse("optimized.yaml", data)
		if err != nil {
			t.Fatalf("%s:\n%s\n%v", p.Name, data, err)
		}
		if got.MaxRetries != p.MaxRetries || got.Backoff != p.Backoff || got.SignatureHalt != p.SignatureHalt ||
			got.MaxIterations != p.MaxIterations || got.NonImprovingStop != p.NonImprovingStop ||
			got.Escalation != p.Escalation || got.DiagnosisAfter != p.DiagnosisAfter ||
			(got.Budget == nil) != (p.Budget == nil) || (got.Budget != nil && *got.Budget != *p.Budget) {
			t.Errorf("%s:\n%s\nread back as %+v", p.Name, data, got)
		}
		for c, ok := range p.Retriable {
			if got.Retriable[c] != ok {
				t.Errorf("%s: class %s retried %v, read back %v", p.Name, c, ok, got.Retriable[c])
			}
		}
	}
}

package audit

import (
	"testing"

	"github.com/orchstat/orchstat/model/failure"
	"github.com/orchstat/orchstat/model/reports"
)

// The taxonomy states a verdict only for failures a retry may change; its
// "no" rows are model/failure's deterministic set, and every row has a
// verdict.
func TestTaxonomyVerdicts(t *testing.T) {
	for _, s := range factoryTaxonomy {
		determ := failure.FactoryDeterministic(s.stage, s.text)
		if determ != (s.retry == "") {
			t.Errorf("%s (%s): deterministic %v, but the table's verdict is %q", s.id, s.stage, determ, s.retry)
		}
		if s.verdict() == "" {
			t.Errorf("%s (%s): no verdict", s.id, s.stage)
		}
	}
	for _, c := range failure.DeterministicClasses() {
		if row := taxonomyRow(string(c), ""); row == nil || row.verdict() != reports.RetryNo {
			t.Errorf("deterministic class %s has no \"retry: no\" row", c)
		}
	}
}

package replay

import (
	"slices"
	"testing"

	"github.com/orchstat/orchstat/model/records"
)

func TestForSystem(t *testing.T) {
	for _, tt := range []struct {
		system, baseline string
		check            bool
		defaults         []string
	}{
		{records.Factory, "factory", true, []string{"factory-audited", "factory with signature-halt 3",
			"factory with max-attempts 2", "factory with max-attempts 3", "factory with max-attempts 5"}},
		{records.Claudestrator, "as recorded", false, []string{"auto-retry"}},
		{records.Orchestr8, "as recorded", false, []string{"adaptive"}},
		{records.Exec, "retry-handler", true, []string{"none"}},
	} {
		sr, ok := ForSystem(tt.system)
		if !ok {
			t.Fatalf("%s is not replayed", tt.system)
		}
		var defaults []string
		for _, p := range sr.Defaults {
			defaults = append(defaults, p.Name)
			if err := p.Validate(); err != nil {
				t.Errorf("%s: %s: %v", tt.system, p.Name, err)
			}
		}
		if sr.Baseline.Name != tt.baseline || sr.Check != tt.check || !slices.Equal(defaults, tt.defaults) {
			t.Errorf("%s: baseline %s, check %v, defaults %q", tt.system, sr.Baseline.Name, sr.Check, defaults)
		}
	}
	// A variant leaves its baseline alone.
	sr, _ := ForSystem(records.Factory)
	if sr.Baseline.MaxAttempts != 5 || sr.Baseline.SignatureHalt != 0 {
		t.Errorf("the factory's baseline changed: %+v", sr.Baseline)
	}
	if _, ok := ForSystem("unknown"); ok {
		t.Error("an unknown system is replayed")
	}
}

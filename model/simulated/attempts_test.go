package simulated

import (
	"strings"
	"testing"
)

// Unknown is not success: the verdict shows the range the unknown runs
// allow and says when they make the comparison meaningless.
func TestAttemptVerdict(t *testing.T) {
	base := AttemptResult{Policy: "b", Runs: 93, Succeeded: 82, Failed: 11}
	for _, tt := range []struct {
		r    AttemptResult
		want []string
	}{
		{AttemptResult{Policy: "p", Runs: 93, Succeeded: 82, Failed: 1, BeyondRecord: 10},
			[]string{"10 of 93 runs (10.8%) would be retried past the record", "between 82 and 92 runs would succeed against 82",
				"between 1 and 11 would fail against 11", "The comparison is meaningless: the 10 unknown runs can account for the whole difference", "saves no recorded attempt"}},
		{AttemptResult{Policy: "p", Runs: 93, Succeeded: 85, Failed: 6, BeyondRecord: 2},
			[]string{"at least 3 more succeed whatever the unknown runs do"}},
		{AttemptResult{Policy: "p", Runs: 93, Succeeded: 70, Failed: 21, BeyondRecord: 2, Saved: 9, SuccessesLost: 12},
			[]string{"at least 10 fewer succeed", "saves 9 recorded attempts and gives up 12 runs that passed"}},
		{AttemptResult{Policy: "p", Runs: 93, Succeeded: 80, Failed: 13, Saved: 4},
			[]string{"80 of 93 runs succeed and 13 fail, against 82 and 11 in the record", "saves 4"}},
	} {
		v := AttemptVerdict(base, tt.r)
		for _, w := range tt.want {
			if !strings.Contains(v, w) {
				t.Errorf("%+v: verdict %q lacks %q", tt.r, v, w)
			}
		}
		if tt.r.BeyondRecord == 0 && strings.Contains(v, "unknown") {
			t.Errorf("verdict %q speaks of unknown runs", v)
		}
	}
}

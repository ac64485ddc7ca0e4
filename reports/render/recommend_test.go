package render

import (
	"bytes"
	"testing"

	"github.com/orchstat/orchstat/model/advice"
	"github.com/orchstat/orchstat/model/orchestr8/spec"
	"github.com/orchstat/orchstat/model/reports"
)

func TestRenderRecommendation(t *testing.T) {
	base := advice.Recommendation{Stage: "nigel", Attempt: 2, AttemptFrom: "history", Item: "dark-mode", Strategy: "simplify-tests",
		Reason: "because", Window: 10, Runs: 12, Threshold: 0.2, MaxRetries: 3, Config: "c.json", Warnings: []string{"w"}}
	for _, tt := range []struct {
		name     string
		change   func(r *advice.Recommendation)
		out, err string
	}{
		{name: "history, settings from the file", change: func(r *advice.Recommendation) {},
			out: "Recommended strategy: simplify-tests\n  nigel, attempt 2 (dark-mode failed at nigel once before): because\n" +
				"  window 10 runs (12 recorded), threshold 20%, maxRetries 3; c.json\n", err: "orchstat: warning: w\n"},
		{name: "defaults, with a store", change: func(r *advice.Recommendation) {
			r.AttemptFrom, r.ConfigDefaults, r.Warnings = "flag", spec.Keys, nil
			r.Store, r.Scope = "s.duckdb", &reports.Scope{}
		}, out: "Recommended strategy: simplify-tests\n  nigel, attempt 2: because\n" +
			"  window 10 runs (12 recorded), threshold 20%, maxRetries 3; c.json (defaults)\n  " + ScopeText("s.duckdb", reports.Scope{}, 0) + "\n"},
		{name: "some defaults", change: func(r *advice.Recommendation) {
			r.AttemptFrom, r.ConfigDefaults, r.Warnings = "default", []string{"windowSize"}, nil
		}, out: "Recommended strategy: simplify-tests\n  nigel, attempt 2: because\n" +
			"  window 10 runs (12 recorded), threshold 20%, maxRetries 3; c.json (defaults for windowSize)\n"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := base
			tt.change(&r)
			var out, errw bytes.Buffer
			if err := RenderRecommendation(&out, &errw, r, false); err != nil {
				t.Fatal(err)
			}
			if out.String() != tt.out || errw.String() != tt.err {
				t.Errorf("out\n%q\nerr %q; want\n%q\nerr %q", out.String(), errw.String(), tt.out, tt.err)
			}
		})
	}
}

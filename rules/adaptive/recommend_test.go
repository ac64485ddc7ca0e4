package adaptive

import (
	"slices"
	"strings"
	"testing"

	"github.com/orchstat/orchstat/model/episode"
	"github.com/orchstat/orchstat/model/orchestr8/spec"
)

func TestRecommend(t *testing.T) {
	failing := func(stage string, failed, passed int) []episode.StageOutcome {
		var h []episode.StageOutcome
		for range failed {
			h = append(h, episode.StageOutcome{Stage: stage, Failed: true})
		}
		for range passed {
			h = append(h, episode.StageOutcome{Stage: stage})
		}
		return h
	}
	for _, tt := range []struct {
		name        string
		q           Question
		attempt     int
		from        string
		strategy    string
		retry       bool
		reasonHas   string
		system      string
		denominator int
	}{
		{name: "no history", q: Question{Stage: "nigel", Earlier: -1}, attempt: 1, from: "default",
			strategy: "retry", retry: true, reasonHas: "no recorded runs", system: "all"},
		{name: "attempt from the flag", q: Question{Stage: "nigel", Attempt: 9, Earlier: 2}, attempt: 9, from: "flag",
			strategy: "abort-recommended", reasonHas: "attempt 9 is past maxRetries 3", system: "all"},
		{name: "attempt from the item's history", q: Question{Stage: "nigel", Item: "x", Earlier: 1, System: "orchestr8",
			History: failing("nigel", 5, 5)}, attempt: 2, from: "history", retry: true,
			reasonHas: "nigel failed in 5 of the last 10 runs (50%), above the 20% threshold: strategy 2 of nigel's", system: "orchestr8", denominator: 10},
		{name: "below the threshold", q: Question{Stage: "nigel", Earlier: -1, History: failing("nigel", 1, 9)}, attempt: 1, from: "default",
			strategy: "retry", retry: true, reasonHas: "not above the 20% threshold: simple retry", system: "all", denominator: 10},
		{name: "a stage that never failed", q: Question{Stage: "nigle", Earlier: -1, History: failing("nigel", 1, 1)}, attempt: 1, from: "default",
			strategy: "retry", retry: true, reasonHas: "(no recorded run ever failed at nigle; stages that failed: nigel)", system: "all", denominator: 2},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := Default().Recommend("cfg.json", tt.q)
			if r.Attempt != tt.attempt || r.AttemptFrom != tt.from || r.System != tt.system || r.Denominator != tt.denominator {
				t.Errorf("attempt %d from %q, system %q, denominator %d; want %d from %q, %q, %d",
					r.Attempt, r.AttemptFrom, r.System, r.Denominator, tt.attempt, tt.from, tt.system, tt.denominator)
			}
			if tt.strategy != "" && r.Strategy != tt.strategy {
				t.Errorf("strategy %q, want %q", r.Strategy, tt.strategy)
			}
			if r.ShouldRetry != tt.retry {
				t.Errorf("should retry %v, want %v", r.ShouldRetry, tt.retry)
			}
			if !strings.Contains(r.Reason, tt.reasonHas) {
				t.Errorf("reason %q lacks %q", r.Reason, tt.reasonHas)
			}
			if r.Config != "cfg.json" || r.Warnings == nil || !slices.Equal(r.ConfigDefaults, spec.Keys) {
				t.Errorf("config %q, warnings %v, defaults %v", r.Config, r.Warnings, r.ConfigDefaults)
			}
		})
	}
}

func TestCheckStage(t *testing.T) {
	c := Default()
	for _, tt := range []struct {
		stage    string
		recorded []string
		wantErr  string
	}{
		{"nigel", nil, ""},                 // no records: nothing to check against
		{"verify", []string{"verify"}, ""}, // recorded
		{"cass", []string{"verify"}, ""},   // configured
		{"verfy", []string{"verify"}, `--stage "verfy": no recorded run has this stage; did you mean "verify"?`},
		{"verify_failed", []string{"verify"}, `did you mean "verify"? (the report's name for it)`},
	} {
		err := c.CheckStage(tt.stage, tt.recorded)
		switch {
		case tt.wantErr == "" && err != nil:
			t.Errorf("%s: %v", tt.stage, err)
		case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
			t.Errorf("%s: err %v, want %q", tt.stage, err, tt.wantErr)
		}
	}
}

package adaptive

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/orchstat/orchstat/model/advice"
	"github.com/orchstat/orchstat/model/episode"
	"github.com/orchstat/orchstat/model/factory/spec"
	o8spec "github.com/orchstat/orchstat/model/orchestr8/spec"
	"github.com/orchstat/orchstat/rules/internal/names"
	"github.com/orchstat/orchstat/rules/retry"
)

// Question is what a recommendation is asked: which attempt at which
// stage failed, and the recorded history to decide it on.
type Question struct {
	Stage  string
	Item   string
	System string // "" for every system
	// Attempt is the attempt the user names; 0 when none is named.
	Attempt int
	// Earlier counts the recorded failures of Item at Stage; -1 when they
	// were not counted.
	Earlier int
	// History is the recorded runs, oldest first, their stages named as
	// the report names them.
	History []episode.StageOutcome
}

// Recommend answers q under c, read from path: rule 2 of orchestr8's
// adaptive retry, decided by the retry core (retry.Adaptive.Advise), with
// the numbers and the case it was decided on. Where the history came from
// and what went wrong reading it are the caller's to add.
func (c Config) Recommend(path string, q Question) advice.Recommendation {
	r := advice.Recommendation{Stage: q.Stage, Item: q.Item, System: q.System, Config: path, ConfigDefaults: c.DefaultedKeys(), Warnings: []string{}}
	if r.System == "" {
		r.System = "all"
	}
	switch {
	case q.Attempt > 0:
		r.Attempt, r.AttemptFrom = q.Attempt, "flag"
	case q.Item != "" && q.Earlier >= 0:
		r.Attempt, r.AttemptFrom = q.Earlier+1, "history"
	default:
		r.Attempt, r.AttemptFrom = 1, "default"
	}
	a := c.Adaptive()
	adv := a.Advise(q.Stage, r.Attempt, q.History)
	r.Runs, r.Window, r.Threshold, r.MaxRetries = len(q.History), a.Window, a.Threshold, a.MaxRetries
	r.FailureRate, r.Numerator, r.Denominator = adv.Rate, adv.Failed, adv.Runs
	r.Strategy = adv.Strategy
	r.ShouldRetry = r.Strategy != retry.StrategyAbort // retry.js shouldRetry
	r.Reason = explain(r, adv, a, q.History)
	return r
}

// CheckStage refuses a stage that neither the records nor the
// configuration name: a typo would otherwise read as a stage that never
// failed, and get a confident "retry". With no records there is nothing to
// check against, and the recommendation says it has no history.
func (c Config) CheckStage(stage string, recorded []string) error {
	if len(recorded) == 0 || slices.Contains(recorded, stage) {
		return nil
	}
	if _, ok := c.Strategies[stage]; ok {
		return nil
	}
	var configured []string
	for s := range c.Strategies {
		if !slices.Contains(recorded, s) {
			configured = append(configured, s)
		}
	}
	slices.Sort(configured)
	hint := names.Suggest(stage, append(slices.Clone(recorded), configured...))
	if s := spec.ReportStage(stage); s != stage && slices.Contains(recorded, s) {
		hint = fmt.Sprintf("; did you mean %q? (the report's name for it)", s)
	}
	msg := fmt.Sprintf("--stage %q: no recorded run has this stage%s\n  stages in the records: %s", stage, hint, strings.Join(recorded, ", "))
	if len(configured) > 0 {
		msg += "\n  stages in the retry configuration: " + strings.Join(configured, ", ")
	}
	return errors.New(msg)
}

// explain says which of rule 2's cases applied, and on what numbers.
func explain(r advice.Recommendation, adv retry.Advice, a retry.Adaptive, hist []episode.StageOutcome) string {
	percent := advice.Percent
	rate := fmt.Sprintf("%s failed in %d of the last %d runs (%s)", r.Stage, r.Numerator, r.Denominator, percent(r.FailureRate))
	if r.Denominator == 1 {
		rate = fmt.Sprintf("%s failed in %d of the 1 recorded run (%s)", r.Stage, r.Numerator, percent(r.FailureRate))
	}
	switch adv.Rule {
	case retry.AdvicePastMaxRetries:
		return fmt.Sprintf("attempt %d is past maxRetries %d: abort, or skip the stage (the choice stays yours)", r.Attempt, a.MaxRetries)
	case retry.AdviceNoHistory:
		return "no recorded runs: a first failure gets a simple retry"
	case retry.AdviceNoStrategy:
		return fmt.Sprintf("%s, above the %s threshold, but no strategy is configured for %s: simple retry", rate, percent(a.Threshold), r.Stage)
	case retry.AdviceStrategy:
		s := a.Strategies[r.Stage]
		return fmt.Sprintf("%s, above the %s threshold: strategy %d of %s's %s", rate, percent(a.Threshold), adv.Step, r.Stage, strings.Join(s, " -> "))
	}
	if r.Numerator == 0 {
		msg := fmt.Sprintf("no run among the last %d failed at %s: simple retry", r.Denominator, r.Stage)
		if r.Denominator == 1 {
			msg = fmt.Sprintf("the 1 recorded run did not fail at %s: simple retry", r.Stage)
		}
		if failed := failedStages(hist); !slices.Contains(failed, r.Stage) {
			// Most likely a stage name the records do not use: say which
			// they do, so a typo shows.
			msg += fmt.Sprintf(" (no recorded run ever failed at %s", r.Stage)
			if len(failed) > 0 {
				msg += "; stages that failed: " + strings.Join(failed, ", ")
			}
			msg += ")"
		}
		return msg
	}
	return fmt.Sprintf("%s, not above the %s threshold: simple retry", rate, percent(a.Threshold))
}

func failedStages(hist []episode.StageOutcome) []string {
	var out []string
	for _, h := range hist {
		if h.Failed && h.Stage != "" && !slices.Contains(out, h.Stage) {
			out = append(out, h.Stage)
		}
	}
	slices.Sort(out)
	return out
}

// DefaultedKeys names the settings not taken from the file, in the file's
// order: top-level keys, then stages by name.
func (c Config) DefaultedKeys() []string {
	out := []string{}
	for k, d := range c.Defaulted {
		if d {
			out = append(out, k)
		}
	}
	rank := func(k string) int {
		if i := slices.Index(o8spec.Keys, k); i >= 0 {
			return i
		}
		return len(o8spec.Keys)
	}
	slices.SortFunc(out, func(a, b string) int {
		if ra, rb := rank(a), rank(b); ra != rb {
			return ra - rb
		}
		return strings.Compare(a, b)
	})
	return out
}

// Settings is c as `retry-config show` shows it, read from path (exists
// says whether the file does), with the warnings reading it gave.
func (c Config) Settings(path string, exists bool, warns []string) advice.Settings {
	return advice.Settings{Path: path, Exists: exists, Config: c.Marshal(), Defaults: c.DefaultedKeys(), Warnings: warns,
		MaxRetries: c.MaxRetries, WindowSize: c.WindowSize, Threshold: c.HighFailureThreshold,
		Stages: c.StageNames(), Strategies: c.Strategies, Defaulted: c.Defaulted}
}

// Value is the value of key (see Set) as it is written.
func (c Config) Value(key string) any {
	switch key {
	case o8spec.KeyMaxRetries:
		return c.MaxRetries
	case o8spec.KeyWindowSize:
		return c.WindowSize
	case o8spec.KeyThreshold:
		return c.HighFailureThreshold
	}
	return c.Strategies[strings.TrimPrefix(key, o8spec.KeyStrategies+".")]
}

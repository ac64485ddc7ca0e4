package retry

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/orchstat/orchstat/model/failure"
	"github.com/orchstat/orchstat/model/orchestr8/spec"
	"github.com/orchstat/orchstat/rules/internal/names"
)

// The presets reproduce the policy of each system orchstat models (the
// orchestrator, the retry handler, auto-retry, the factory, orchestr8: see
// docs/glossary.md). Line numbers are those of their documents in
// ../shared/seeds/ (000_f76bbeb61c054a51.txt and so on). Where a document
// is silent or contradicts itself, the comment says which reading the
// preset takes.
var presets = append(slices.Clone(seedPresets), backoffVariants()...)

// seedPresets are the modelled systems' policies, the factory as its audit
// recommends, the agents' own and none.
var seedPresets = []preset{
	{"orchestrator", orchestratorPreset},
	{"retry-handler", retryHandlerPreset},
	{"auto-retry", autoRetryPreset},
	{"factory", factoryPreset},
	{"factory-audited", factoryAuditedPreset},
	{"adaptive", adaptivePreset},
	{"claude-code", claudeCodePreset},
	{"codex", codexPreset},
	{"none", nonePreset},
}

type preset struct {
	name string
	make func() *Policy
}

// PresetNames lists the presets: the five modelled systems (and the factory as
// its audit recommends), then the generic ones.
func PresetNames() []string {
	out := make([]string, len(presets))
	for i, p := range presets {
		out[i] = p.name
	}
	return out
}

// Preset returns a fresh copy of the named preset: changing it changes no
// other copy.
func Preset(name string) (*Policy, error) {
	for _, p := range presets {
		if p.name == name {
			return p.make(), nil
		}
	}
	known := PresetNames()
	return nil, fmt.Errorf("unknown policy preset %q%s (%s)", name, names.Suggest(name, known), strings.Join(known, ", "))
}

func classSet(cs ...failure.Class) map[failure.Class]bool {
	m := make(map[failure.Class]bool, len(cs))
	for _, c := range cs {
		m[c] = true
	}
	return m
}

// everyClass is the set of all classes, unknown included: the modelled
// systems that retry whatever failed.
func everyClass() map[failure.Class]bool { return classSet(failure.AllClasses()...) }

// orchestratorPreset is the orchestrator:
//   - Backoff (Orchestrator): initialDelayMs 1000, maxDelayMs 10000,
//     backoffFactor 2 (lines 28-30), ±10% jitter (lines 54-56).
//   - MaxRetries 3: maxRetries default 3 (line 27).
//   - Retriable rate_limit, timeout, server, network: the Retriable Errors
//     table (lines 38-45); auth, client and abort are the Non-Retriable
//     table (lines 47-53). Unknown text is not retried: the adapter's
//     isRetriableError returns false for what it does not recognise.
//   - MaxIterations 5: "Max Iterations: 5 (hardcoded)" (line 105).
//   - NonImprovingStop 2: "2 consecutive non-improving iterations" (line
//     108) and consecutiveSameSignature >= 2 (line 121).
//   - Escalation{2, 2, 1}: toL3AfterNonImprovingIterations 2,
//     toL3AfterPatchApplyFailures 2, maxEscalations 1 (lines 98-100).
//   - DiagnosisAfter 2: triggerOnRepeatedFailures 2 (line 157).
func orchestratorPreset() *Policy {
	return &Policy{
		Name:             "orchestrator",
		Backoff:          Orchestrator,
		MaxRetries:       3,
		Retriable:        classSet(failure.ClassRateLimit, failure.ClassTimeout, failure.ClassServer, failure.ClassNetwork),
		MaxIterations:    5,
		NonImprovingStop: 2,
		Escalation:       Escalation{NonImproving: 2, PatchApplyFailures: 2, MaxEscalations: 1},
		DiagnosisAfter:   2,
	}
}

// claudeCodePreset is Claude Code's API retries, as its transcripts show
// them (docs/formats/claude-code.md): up to 10 retries (maxRetries, the
// CLAUDE_CODE_MAX_RETRIES default), 500 ms doubling with jitter, capped at
// 32 s, for rate limits, overload (529) and other server errors, timeouts
// and network errors. The transcripts record the delay each retry waited
// (retryInMs), which the replay does not need: this is the policy the
// record is replayed against, not a claim about every version.
func claudeCodePreset() *Policy {
	return &Policy{
		Name:       "claude-code",
		Backoff:    Backoff{Initial: 500 * time.Millisecond, Max: 32 * time.Second, Factor: 2, Jitter: JitterProportional, Spread: 0.25},
		MaxRetries: 10,
		Retriable:  classSet(failure.ClassRateLimit, failure.ClassTimeout, failure.ClassServer, failure.ClassNetwork),
	}
}

// codexPreset is Codex CLI's request retries (request_max_retries 4, so
// five attempts; 200 ms doubling, ±10%), for the same transient classes.
// Its rollouts record no retries (docs/formats/codex.md); its OpenTelemetry
// events do.
func codexPreset() *Policy {
	return &Policy{
		Name:       "codex",
		Backoff:    Backoff{Initial: 200 * time.Millisecond, Factor: 2, Jitter: JitterProportional, Spread: 0.1},
		MaxRetries: 4,
		Retriable:  classSet(failure.ClassRateLimit, failure.ClassTimeout, failure.ClassServer, failure.ClassNetwork),
	}
}

// retryHandlerPreset is the retry handler:
//   - PerOperation test 2, review 1, build 0 retries. The table (lines
//     57-59) gives test 3, review 2, build 1 under "Max Retries", but the
//     loop retries only while current_attempt < max_retries (line 84) and
//     reports a final failure as "attempts": {{max_retries}} (lines 108,
//     117; the example, line 44, is 3 attempts): the numbers are attempts,
//     so the retries are one fewer. Build's note "1 retry for transient
//     issues" (line 59) contradicts its own loop; the preset follows the
//     loop, which is what a recorded run shows.
//   - MaxRetries 2, for custom and any other operation: custom "must
//     specify max_retries" (line 60); the interface's example default is
//     max_retries: 3 (line 21), 3 attempts. Set per_operation.custom in a
//     policy file.
//   - Cascade{3, 5}: threshold 3 failures within window_size 5 items
//     (lines 138-139).
//   - Retriable: every class, the loop retries whatever failed.
//   - Backoff: none. The handler waits for nothing between attempts: it spawns
//     a FIX subagent (test) or applies review feedback and goes on.
func retryHandlerPreset() *Policy {
	return &Policy{
		Name:         "retry-handler",
		MaxRetries:   2,
		PerOperation: map[string]int{"test": 2, "review": 1, "build": 0},
		Retriable:    everyClass(),
		Cascade:      &Cascade{Threshold: 3, Window: 5},
	}
}

// autoRetryPreset is auto-retry:
//   - MaxRetries 10: Max-Retries default 10 (lines 56, 84, 152), retried
//     while retry_count < max_retries (line 120), so at most 10 auto-retry
//     loops after the one in which QA flagged the issue.
//   - MaxAttempts 11: the same limit counted as attempts at the issue, the
//     flagging loop being attempt 1 ("Attempt: 1 of 10" is the first
//     retry).
//   - SignatureHalt 3: "halt at 3" (line 87), Signature-Repeat-Count >= 3
//     (line 165); the count restarts at 1 on a new signature (line 163).
//   - GlobalCap 15: total_auto_retries >= 15 (line 128). Auto-retry counts
//     one per loop, however many issues it retries; the Tracker counts
//     each retried issue, which spends the cap faster when a loop retries
//     several (the README says so where simulate replays these records).
//   - Retriable: every class; Backoff: none (the next loop starts at once).
func autoRetryPreset() *Policy {
	return &Policy{
		Name:          "auto-retry",
		MaxRetries:    10,
		MaxAttempts:   11,
		SignatureHalt: 3,
		GlobalCap:     15,
		Retriable:     everyClass(),
	}
}

// factoryPreset is the factory as it runs:
//   - MaxAttempts 5, MaxRetries 4: the router ends when attempt_index >
//     max_attempts (line 19), finalize having counted the attempt; the
//     audit's "Total waste for max_attempts=5" is 5 attempts each (lines
//     290-301).
//   - Retriable: every class. "Every non-PASS verdict that hasn't
//     exhausted attempts gets retried from SE" (lines 25-27): the router
//     reads no stage.
//   - Backoff: none. "there is no backoff" (line 90).
func factoryPreset() *Policy {
	return &Policy{
		Name:        "factory",
		MaxRetries:  4,
		MaxAttempts: 5,
		Retriable:   everyClass(),
	}
}

// factoryAuditedPreset is the factory as the factory audit recommends: the
// factory preset without retrying failures a retry cannot change.
//   - the deterministic classes (failure.DeterministicClasses: preflight,
//     F1, and write_failed, F6) are not retried: "Deterministic Failures
//     That Are Retried" (lines 282-288).
//   - exception (F2, lines 79-111) is retried only when its text is
//     transient (lines 89-98): TransientOnly, read by
//     failure.ExceptionTransient.
//   - acceptance_failed is still retried: its shlex sub-case (F8a) is
//     deterministic, but its stage and text look like the retriable
//     sub-cases (lines 250-278), so it cannot be told apart from the
//     record.
//   - command_timeout stays retriable (T2, lines 344-369: a timeout may be
//     transient).
func factoryAuditedPreset() *Policy {
	p := factoryPreset()
	p.Name = "factory-audited"
	for _, c := range failure.DeterministicClasses() {
		delete(p.Retriable, c)
	}
	p.TransientOnly = classSet(failure.ClassException)
	return p
}

// adaptivePreset is orchestr8's adaptive retry, with orchestr8's defaults
// (model/orchestr8/spec, from retry.js getDefaultConfig):
//   - Adaptive.Window 10: "last 10 runs" (line 58).
//   - Adaptive.Threshold 0.2: "threshold (20%)" (line 59).
//   - Adaptive.MaxRetries 3 and MaxRetries 3: "maxRetries (default 3)"
//     (line 69) and attemptCount > maxRetries → abort-recommended (line
//     113).
//   - Adaptive.Strategies: the adaptive retry spec names the strategies (lines 125-133)
//     and which agent each addresses, but no table per stage; the
//     pipeline's own defaults (its retry-config tests' getDefaultConfig)
//     are the reference.
//   - Retriable: every class (the user retries any failed agent); Backoff:
//     none (the user is asked).
func adaptivePreset() *Policy {
	return &Policy{
		Name:       "adaptive",
		MaxRetries: spec.DefaultMaxRetries,
		Retriable:  everyClass(),
		Adaptive: &Adaptive{Window: spec.DefaultWindowSize, Threshold: spec.DefaultThreshold,
			MaxRetries: spec.DefaultMaxRetries, Strategies: spec.DefaultStrategies()},
	}
}

// nonePreset never retries and runs no repair iteration.
func nonePreset() *Policy { return &Policy{Name: "none"} }

// backoffVariant is the orchestrator with another backoff schedule, so
// that comparing it with the orchestrator isolates the schedule.
func backoffVariant(name string) *Policy {
	p := orchestratorPreset()
	p.Name = name
	p.Backoff, _ = BackoffPreset(name)
	return p
}

// backoffVariants are the generic presets: a backoffVariant for each
// named schedule that does not share its name with a modelled system's preset (none
// and orchestrator do), in BackoffNames' order.
func backoffVariants() []preset {
	var out []preset
	for _, b := range backoffPresets {
		name := b.name
		if slices.ContainsFunc(seedPresets, func(p preset) bool { return p.name == name }) {
			continue
		}
		out = append(out, preset{name, func() *Policy { return backoffVariant(name) }})
	}
	return out
}

type namedBackoff struct {
	name string
	b    Backoff
}

// backoffPresets are the named schedules. AWS's are named after their
// jitter (JitterFull's "full" gives "aws-full").
var backoffPresets = []namedBackoff{
	{"none", Backoff{}},
	{"orchestrator", Orchestrator},
	awsBackoff(JitterFull),
	awsBackoff(JitterEqual),
	awsBackoff(JitterDecorrelated),
	{"constant", Backoff{Initial: Orchestrator.Initial}},
}

// awsBackoff is AWS's jitter j on the orchestrator's base, cap and factor,
// so that it compares with the orchestrator. Decorrelated jitter grows
// from the previous wait, not by a factor, so it has none.
func awsBackoff(j Jitter) namedBackoff {
	b := Backoff{Initial: Orchestrator.Initial, Max: Orchestrator.Max, Factor: Orchestrator.Factor, Jitter: j}
	if j == JitterDecorrelated {
		b.Factor = 0
	}
	return namedBackoff{"aws-" + j.String(), b}
}

// BackoffNames lists the named schedules BackoffPreset knows.
func BackoffNames() []string {
	out := make([]string, len(backoffPresets))
	for i, b := range backoffPresets {
		out[i] = b.name
	}
	return out
}

// BackoffPreset is a named schedule: none (no wait), orchestrator (the
// orchestrator's), aws-full, aws-equal and aws-decorrelated (AWS's jitters, on the
// orchestrator's 1 s base and 10 s cap so they compare with it), constant
// (1 s every time).
func BackoffPreset(name string) (Backoff, error) {
	for _, b := range backoffPresets {
		if b.name == name {
			return b.b, nil
		}
	}
	known := BackoffNames()
	return Backoff{}, fmt.Errorf("unknown backoff %q%s (%s)", name, names.Suggest(name, known), strings.Join(known, ", "))
}

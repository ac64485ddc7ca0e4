package retry

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/orchstat/orchstat/rules/yamlast"
)

// Problem is one thing wrong with a policy: where (a policy file's
// file:line:column, when known), which field, as a policy file spells it
// ("backoff.jitter", "classify[0].regexp"), and what.
type Problem struct {
	File         string
	Line, Column int
	Field        string
	Message      string
}

// String is file:line:column: field: message, leaving out what is unknown.
func (p Problem) String() string {
	var b strings.Builder
	if p.File != "" {
		b.WriteString(p.File)
		if p.Line > 0 {
			fmt.Fprintf(&b, ":%d:%d", p.Line, p.Column)
		}
		b.WriteString(": ")
	}
	if p.Field != "" {
		b.WriteString(p.Field + ": ")
	}
	b.WriteString(p.Message)
	return b.String()
}

// PolicyError lists every problem found in a policy, in file order.
type PolicyError struct {
	Problems []Problem
}

func (e *PolicyError) Error() string {
	lines := make([]string, len(e.Problems))
	for i, p := range e.Problems {
		lines[i] = p.String()
	}
	return strings.Join(lines, "\n")
}

// Validate reports every value p cannot use, as a *PolicyError, or nil:
// negative counts and durations, counts and waits past their caps
// (MaxRetriesCap, MaxRunCap, MaxWaitCap), a backoff factor below 1, an unknown
// jitter or class, a budget, cascade or adaptive rule that cannot work,
// and classification rules that can never match.
func (p *Policy) Validate() error {
	if ps := p.problems(); len(ps) > 0 {
		return &PolicyError{Problems: ps}
	}
	return nil
}

// The most a policy may set. Replaying a policy walks every retry it
// allows (2,000,000,000 retries ran for more than 12 minutes), so the
// caps are what a retry policy can mean, with room to spare: no request
// is worth more than 100 retries, no run more than 10,000, and no wait
// more than a day.
const (
	// MaxRetriesCap caps max_retries, per_operation, max_attempts,
	// adaptive.max_retries and max_iterations, and the counts of failures
	// in a row: signature_halt, non_improving_stop, diagnosis_after and
	// escalation's.
	MaxRetriesCap = 100
	// MaxRunCap caps what counts across a run: global_cap, cascade's
	// threshold and window, adaptive.window.
	MaxRunCap = 10000
	// MaxWaitCap caps backoff.initial and backoff.max.
	MaxWaitCap = 24 * time.Hour
)

func (p *Policy) problems() []Problem {
	var out []Problem
	add := func(field, format string, args ...any) {
		out = append(out, Problem{Field: field, Message: fmt.Sprintf(format, args...)})
	}
	within := func(field string, n, limit int) {
		switch {
		case n < 0:
			add(field, "must not be negative, got %d", n)
		case n > limit:
			add(field, "must be at most %d, got %d", limit, n)
		}
	}
	count := func(field string, n int) { within(field, n, MaxRetriesCap) }
	count("max_retries", p.MaxRetries)
	for _, op := range sortedKeys(p.PerOperation) {
		if op == "" {
			add("per_operation", "an operation needs a name")
			continue
		}
		count("per_operation."+op, p.PerOperation[op])
	}
	count("max_attempts", p.MaxAttempts)
	count("signature_halt", p.SignatureHalt)
	within("global_cap", p.GlobalCap, MaxRunCap)
	count("max_iterations", p.MaxIterations)
	count("non_improving_stop", p.NonImprovingStop)
	count("diagnosis_after", p.DiagnosisAfter)
	count("escalation.non_improving", p.Escalation.NonImproving)
	count("escalation.patch_apply_failures", p.Escalation.PatchApplyFailures)
	count("escalation.max_escalations", p.Escalation.MaxEscalations)

	b := p.Backoff
	if b.Initial < 0 {
		add("backoff.initial", "must not be negative, got %v", b.Initial)
	} else if b.Initial > MaxWaitCap {
		add("backoff.initial", "must be at most %v, got %v", MaxWaitCap, b.Initial)
	}
	if b.Max < 0 {
		add("backoff.max", "must not be negative, got %v", b.Max)
	} else if b.Max > MaxWaitCap {
		add("backoff.max", "must be at most %v, got %v", MaxWaitCap, b.Max)
	} else if b.Max > 0 && b.Max < b.Initial {
		add("backoff.max", "%v is below backoff.initial %v", b.Max, b.Initial)
	}
	if math.IsNaN(b.Factor) || math.IsInf(b.Factor, 0) || b.Factor != 0 && b.Factor < 1 {
		add("backoff.factor", "must be 1 or more (1 is a constant wait), got %v", b.Factor)
	}
	if b.Jitter < 0 || int(b.Jitter) >= len(jitterNames) {
		add("backoff.jitter", "unknown jitter %v (%s)", b.Jitter, strings.Join(jitterNames[:], ", "))
	}
	if math.IsNaN(b.Spread) || b.Spread < 0 || b.Spread > 1 {
		add("backoff.spread", "must be between 0 and 1, got %v", b.Spread)
	}

	for _, c := range sortedKeys(p.Retriable) {
		if !c.Known() {
			add("retriable", "unknown class %q%s", c, yamlast.Suggest(string(c), classNames()))
		}
	}
	for _, c := range sortedKeys(p.TransientOnly) {
		if !c.Known() {
			add("transient_only", "unknown class %q%s", c, yamlast.Suggest(string(c), classNames()))
		}
	}

	if bu := p.Budget; bu != nil {
		if !(bu.MaxTokens > 0) || math.IsInf(bu.MaxTokens, 0) {
			add("budget.max_tokens", "must be more than 0, got %v", bu.MaxTokens)
		}
		if !(bu.Ratio > 0) || math.IsInf(bu.Ratio, 0) {
			add("budget.ratio", "must be more than 0, got %v", bu.Ratio)
		}
	}
	if c := p.Cascade; c != nil {
		switch {
		case c.Threshold < 1:
			add("cascade.threshold", "must be at least 1, got %d", c.Threshold)
		case c.Threshold > MaxRunCap:
			add("cascade.threshold", "must be at most %d, got %d", MaxRunCap, c.Threshold)
		case c.Window < 0:
			add("cascade.window", "must not be negative, got %d", c.Window)
		case c.Window > MaxRunCap:
			add("cascade.window", "must be at most %d, got %d", MaxRunCap, c.Window)
		case c.Window > 0 && c.Threshold > c.Window:
			add("cascade.threshold", "%d failures cannot fit in a window of %d items", c.Threshold, c.Window)
		}
	}
	if a := p.Adaptive; a != nil {
		within("adaptive.window", a.Window, MaxRunCap)
		count("adaptive.max_retries", a.MaxRetries)
		if math.IsNaN(a.Threshold) || a.Threshold < 0 || a.Threshold > 1 {
			add("adaptive.threshold", "must be between 0 and 1, got %v", a.Threshold)
		}
		for _, stage := range sortedKeys(a.Strategies) {
			if stage == "" {
				add("adaptive.strategies", "a stage needs a name")
			}
			for i, s := range a.Strategies[stage] {
				if strings.TrimSpace(s) == "" {
					add("adaptive.strategies."+stage+"["+strconv.Itoa(i)+"]", "empty strategy")
				}
			}
		}
	}
	for i, r := range p.Classify {
		out = append(out, r.problems("classify["+strconv.Itoa(i)+"]")...)
	}
	return out
}

func (r Rule) problems(field string) []Problem {
	var out []Problem
	add := func(f, format string, args ...any) {
		out = append(out, Problem{Field: f, Message: fmt.Sprintf(format, args...)})
	}
	if r.Class == "" {
		add(field+".class", "a rule needs a class (%s)", strings.Join(classNames(), ", "))
	} else if !r.Class.Known() {
		add(field+".class", "unknown class %q%s (%s)", r.Class, yamlast.Suggest(string(r.Class), classNames()), strings.Join(classNames(), ", "))
	}
	if len(r.Contains) == 0 && r.Regexp == "" && len(r.Status) == 0 && len(r.Equals) == 0 {
		add(field, "a rule needs contains, regexp, status or equals")
	}
	for j, s := range r.Contains {
		if s == "" {
			add(field+".contains["+strconv.Itoa(j)+"]", "an empty string would match everything")
		}
	}
	for j, s := range r.Equals {
		if strings.TrimSpace(s) == "" {
			add(field+".equals["+strconv.Itoa(j)+"]", "an empty string matches only empty text")
		}
	}
	for j, s := range r.Status {
		if !validStatus(s) {
			add(field+".status["+strconv.Itoa(j)+"]", "%q is not a status like 429 or a class like 5xx", s)
		}
	}
	if r.Regexp != "" {
		if _, err := compileRule(r.Regexp); err != nil {
			add(field+".regexp", "%v", err)
		}
	}
	return out
}

func sortedKeys[K ~string, V any](m map[K]V) []K {
	ks := make([]K, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}

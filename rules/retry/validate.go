package retry

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/orchstat/orchstat/model/failure"
	"github.com/orchstat/orchstat/rules/internal/names"
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

// problems lists what Validate reports, group by group in the order a
// policy file lists the fields.
func (p *Policy) problems() []Problem {
	var c checker
	c.counts(p)
	c.backoff(p.Backoff)
	c.classes("retriable", p.Retriable)
	c.classes("transient_only", p.TransientOnly)
	c.budget(p.Budget)
	c.cascade(p.Cascade)
	c.adaptive(p.Adaptive)
	for i, r := range p.Classify {
		c.rule("classify["+strconv.Itoa(i)+"]", r)
	}
	return c.out
}

// checker collects problems.
type checker struct{ out []Problem }

func (c *checker) add(field, format string, args ...any) {
	c.out = append(c.out, Problem{Field: field, Message: fmt.Sprintf(format, args...)})
}

// within checks a count from 0 to limit.
func (c *checker) within(field string, n, limit int) {
	switch {
	case n < 0:
		c.add(field, "must not be negative, got %d", n)
	case n > limit:
		c.add(field, "must be at most %d, got %d", limit, n)
	}
}

// count checks a count of retries or of failures in a row.
func (c *checker) count(field string, n int) { c.within(field, n, MaxRetriesCap) }

// counts checks the limits on retries, attempts and the L2 loop.
func (c *checker) counts(p *Policy) {
	c.count("max_retries", p.MaxRetries)
	for _, op := range sortedKeys(p.PerOperation) {
		if op == "" {
			c.add("per_operation", "an operation needs a name")
			continue
		}
		c.count("per_operation."+op, p.PerOperation[op])
	}
	c.count("max_attempts", p.MaxAttempts)
	c.count("signature_halt", p.SignatureHalt)
	c.within("global_cap", p.GlobalCap, MaxRunCap)
	c.count("max_iterations", p.MaxIterations)
	c.count("non_improving_stop", p.NonImprovingStop)
	c.count("diagnosis_after", p.DiagnosisAfter)
	c.count("escalation.non_improving", p.Escalation.NonImproving)
	c.count("escalation.patch_apply_failures", p.Escalation.PatchApplyFailures)
	c.count("escalation.max_escalations", p.Escalation.MaxEscalations)
}

func (c *checker) backoff(b Backoff) {
	if b.Initial < 0 {
		c.add("backoff.initial", "must not be negative, got %v", b.Initial)
	} else if b.Initial > MaxWaitCap {
		c.add("backoff.initial", "must be at most %v, got %v", MaxWaitCap, b.Initial)
	}
	if b.Max < 0 {
		c.add("backoff.max", "must not be negative, got %v", b.Max)
	} else if b.Max > MaxWaitCap {
		c.add("backoff.max", "must be at most %v, got %v", MaxWaitCap, b.Max)
	} else if b.Max > 0 && b.Max < b.Initial {
		c.add("backoff.max", "%v is below backoff.initial %v", b.Max, b.Initial)
	}
	if math.IsNaN(b.Factor) || math.IsInf(b.Factor, 0) || b.Factor != 0 && b.Factor < 1 {
		c.add("backoff.factor", "must be 1 or more (1 is a constant wait), got %v", b.Factor)
	}
	if b.Jitter < 0 || int(b.Jitter) >= len(jitterNames) {
		c.add("backoff.jitter", "unknown jitter %v (%s)", b.Jitter, strings.Join(jitterNames[:], ", "))
	}
	if math.IsNaN(b.Spread) || b.Spread < 0 || b.Spread > 1 {
		c.add("backoff.spread", "must be between 0 and 1, got %v", b.Spread)
	}
}

// classes checks a set of classes for names failure does not define.
func (c *checker) classes(field string, set map[failure.Class]bool) {
	for _, cl := range sortedKeys(set) {
		if !cl.Known() {
			c.add(field, "unknown class %q%s", cl, names.Suggest(string(cl), failure.ClassNames()))
		}
	}
}

func (c *checker) budget(bu *Budget) {
	if bu == nil {
		return
	}
	if !(bu.MaxTokens > 0) || math.IsInf(bu.MaxTokens, 0) {
		c.add("budget.max_tokens", "must be more than 0, got %v", bu.MaxTokens)
	}
	if !(bu.Ratio > 0) || math.IsInf(bu.Ratio, 0) {
		c.add("budget.ratio", "must be more than 0, got %v", bu.Ratio)
	}
}

// cascade reports the first of its problems: the later checks assume the
// earlier pass.
func (c *checker) cascade(ca *Cascade) {
	switch {
	case ca == nil:
	case ca.Threshold < 1:
		c.add("cascade.threshold", "must be at least 1, got %d", ca.Threshold)
	case ca.Threshold > MaxRunCap:
		c.add("cascade.threshold", "must be at most %d, got %d", MaxRunCap, ca.Threshold)
	case ca.Window < 0:
		c.add("cascade.window", "must not be negative, got %d", ca.Window)
	case ca.Window > MaxRunCap:
		c.add("cascade.window", "must be at most %d, got %d", MaxRunCap, ca.Window)
	case ca.Window > 0 && ca.Threshold > ca.Window:
		c.add("cascade.threshold", "%d failures cannot fit in a window of %d items", ca.Threshold, ca.Window)
	}
}

func (c *checker) adaptive(a *Adaptive) {
	if a == nil {
		return
	}
	c.within("adaptive.window", a.Window, MaxRunCap)
	c.count("adaptive.max_retries", a.MaxRetries)
	if math.IsNaN(a.Threshold) || a.Threshold < 0 || a.Threshold > 1 {
		c.add("adaptive.threshold", "must be between 0 and 1, got %v", a.Threshold)
	}
	for _, stage := range sortedKeys(a.Strategies) {
		if stage == "" {
			c.add("adaptive.strategies", "a stage needs a name")
		}
		for i, s := range a.Strategies[stage] {
			if strings.TrimSpace(s) == "" {
				c.add("adaptive.strategies."+stage+"["+strconv.Itoa(i)+"]", "empty strategy")
			}
		}
	}
}

// ValidateClassifier reports every rule of c that can never match as
// written (an unknown class, no matcher, a bad status pattern, an invalid
// expression) as a *PolicyError, or nil. A rule's field is spelled as a
// policy file's classify list would place it.
func ValidateClassifier(c failure.Classifier) error {
	var ch checker
	for i, r := range c.Rules {
		ch.rule("classify["+strconv.Itoa(i)+"]", r)
	}
	if len(ch.out) > 0 {
		return &PolicyError{Problems: ch.out}
	}
	return nil
}

// rule checks one classification rule.
func (c *checker) rule(field string, r failure.Rule) {
	classes := failure.ClassNames()
	if r.Class == "" {
		c.add(field+".class", "a rule needs a class (%s)", strings.Join(classes, ", "))
	} else if !r.Class.Known() {
		c.add(field+".class", "unknown class %q%s (%s)", r.Class, names.Suggest(string(r.Class), classes), strings.Join(classes, ", "))
	}
	if len(r.Contains) == 0 && r.Regexp == "" && len(r.Status) == 0 && len(r.Equals) == 0 {
		c.add(field, "a rule needs contains, regexp, status or equals")
	}
	for j, s := range r.Contains {
		if s == "" {
			c.add(field+".contains["+strconv.Itoa(j)+"]", "an empty string would match everything")
		}
	}
	for j, s := range r.Equals {
		if strings.TrimSpace(s) == "" {
			c.add(field+".equals["+strconv.Itoa(j)+"]", "an empty string matches only empty text")
		}
	}
	for j, s := range r.Status {
		if !failure.ValidStatus(s) {
			c.add(field+".status["+strconv.Itoa(j)+"]", "%q is not a status like 429 or a class like 5xx", s)
		}
	}
	if r.Regexp != "" {
		if _, err := failure.CompileRule(r.Regexp); err != nil {
			c.add(field+".regexp", "%v", err)
		}
	}
}

func sortedKeys[K ~string, V any](m map[K]V) []K {
	ks := make([]K, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}

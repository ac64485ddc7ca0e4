package alerting

import (
	"regexp"
	"strconv"
	"strings"
)

// A minimum-samples guard is a condition's last (or first) conjunct that
// asks for enough samples: "value > threshold && denominator >= 20". A
// check tells a rule that is past its threshold but short of samples from
// one that is healthy, so the guard is found in the condition's text and
// the rest of the condition compiled on its own.
var (
	guardLast  = regexp.MustCompile(`^(.+?)\s*(?:&&|\band\b)\s*denominator\s*(>=|>)\s*([0-9]+(?:\.[0-9]+)?)\s*$`)
	guardFirst = regexp.MustCompile(`^\s*denominator\s*(>=|>)\s*([0-9]+(?:\.[0-9]+)?)\s*(?:&&|\band\b)\s*(.+)$`)
	orWord     = regexp.MustCompile(`\bor\b`)
)

// minSamples is a condition's guard: the rest of the condition, compiled,
// and the least denominator it asks for.
type minSamples struct {
	rest *condition
	op   string  // >= or >
	n    float64 // the number written
}

// parseGuard finds cond's minimum-samples guard, when its other part is a
// plain conjunction: with ||, ?: or ?? in it, splitting at && would change
// what the condition means, so none is found.
func parseGuard(cond string) *minSamples {
	var rest, op, num string
	if m := guardLast.FindStringSubmatch(cond); m != nil {
		rest, op, num = m[1], m[2], m[3]
	} else if m := guardFirst.FindStringSubmatch(cond); m != nil {
		op, num, rest = m[1], m[2], m[3]
	} else {
		return nil
	}
	if strings.Contains(rest, "||") || strings.Contains(rest, "?") || orWord.MatchString(rest) {
		return nil
	}
	n, err := strconv.ParseFloat(num, 64)
	if err != nil {
		return nil
	}
	c, err := compileCondition(rest, &identifiers{})
	if err != nil {
		return nil
	}
	return &minSamples{rest: c, op: op, n: n}
}

// ShortOfSamples reports whether s is past the rule's threshold but short
// of the samples its condition's guard asks for ("denominator >= 5"), and
// the guard's comparison ("≥ 5"): the reason a rule whose value crosses
// its threshold is inactive. It is false for a rule without such a guard,
// for a sample without a value, and whenever the condition holds.
func (r *Rule) ShortOfSamples(s Sample) (need string, short bool) {
	if r.guard == nil || s.Value == nil || r.guard.rest == nil {
		return "", false
	}
	if holds, err := r.Holds(s); err != nil || holds {
		return "", false
	}
	out, err := r.guard.rest.run(r.env(s))
	if b, ok := out.(bool); err != nil || !ok || !b {
		return "", false
	}
	d := 0.0
	if s.Denominator != nil {
		d = *s.Denominator
	}
	op := "≥"
	passes := d >= r.guard.n
	if r.guard.op == ">" {
		op, passes = ">", d > r.guard.n
	}
	if passes {
		return "", false
	}
	return op + " " + strconv.FormatFloat(r.guard.n, 'f', -1, 64), true
}

// MinSamples is the least denominator the rule's guard asks for ("≥ 20"
// gives 20, "> 20" gives 21 for counts), and whether it has a guard: the
// report compares a rate between two windows only when both have as many
// samples as the rule on it would need to fire.
func (r *Rule) MinSamples() (float64, bool) {
	if r.guard == nil {
		return 0, false
	}
	if r.guard.op == ">" {
		return r.guard.n + 1, true
	}
	return r.guard.n, true
}

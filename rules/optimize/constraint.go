package optimize

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/orchstat/orchstat/model/simulated"
)

// Constraint is one --constraint: an objective, a comparison, and a bound
// that is a number or a multiple of the baseline's value.
type Constraint struct {
	Text      string
	objective string // a key of simulated.Objectives
	op        string
	value     float64
	ofBase    bool // value multiplies the baseline's
}

// objectiveNames are what a constraint may name, and the figure each is.
var objectiveNames = map[string]string{
	"success":  "success_rate",
	"attempts": "attempts",
	"cost":     "cost_usd",
	"p95":      "resolution_p95_seconds",
}

var constraintRe = regexp.MustCompile(`^\s*([a-z0-9]+)\s*(>=|<=|>|<)\s*(?:([0-9.]+)\s*\*\s*)?(baseline|[0-9.]+%?)\s*$`)

// ParseConstraint reads "success >= baseline", "attempts <= 1.1*baseline",
// "success >= 99%" or "p95 <= 30".
func ParseConstraint(s string) (Constraint, error) {
	m := constraintRe.FindStringSubmatch(s)
	if m == nil {
		return Constraint{}, fmt.Errorf("--constraint %q: OBJECTIVE OP BOUND, such as \"success >= baseline\", \"attempts <= 1.1*baseline\" or \"success >= 99%%\"", s)
	}
	key, ok := objectiveNames[m[1]]
	if !ok {
		return Constraint{}, fmt.Errorf("--constraint %q: %q is no objective (success, attempts, cost, p95)", s, m[1])
	}
	c := Constraint{Text: strings.Join(strings.Fields(s), " "), objective: key, op: m[2]}
	switch {
	case m[4] == "baseline":
		c.ofBase, c.value = true, 1
		if m[3] != "" {
			f, err := strconv.ParseFloat(m[3], 64)
			if err != nil || f < 0 {
				return Constraint{}, fmt.Errorf("--constraint %q: %q is not a factor", s, m[3])
			}
			c.value = f
		}
	case m[3] != "":
		return Constraint{}, fmt.Errorf("--constraint %q: only the baseline takes a factor", s)
	default:
		num, pct := strings.CutSuffix(m[4], "%")
		f, err := strconv.ParseFloat(num, 64)
		if err != nil {
			return Constraint{}, fmt.Errorf("--constraint %q: %q is not a number", s, m[4])
		}
		if pct {
			f /= 100
		}
		c.value = f
	}
	return c, nil
}

// bound is the constraint's bound against base.
func (c Constraint) bound(base simulated.Result) float64 {
	if c.ofBase {
		return c.value * simulated.ObjectiveValue(base, c.objective)
	}
	return c.value
}

// holds reports whether r meets the constraint, base being the baseline.
// A rate is compared to within a part in a million, so that
// "success >= baseline" holds for the baseline's own rate.
func (c Constraint) holds(r, base simulated.Result) bool {
	v, b := simulated.ObjectiveValue(r, c.objective), c.bound(base)
	const eps = 1e-9
	switch c.op {
	case ">=":
		return v >= b-eps
	case "<=":
		return v <= b+eps
	case ">":
		return v > b+eps
	}
	return v < b-eps
}

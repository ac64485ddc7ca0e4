package optimize

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/orchstat/orchstat/model/simulated"
)

// Constraint is one --constraint: an objective, a comparison, and a bound
// that is a number or a multiple of the baseline's value.
type Constraint struct {
	Text      string
	objective string // a name of objectiveNames
	op        string
	value     float64
	ofBase    bool // value multiplies the baseline's
}

// objectiveNames are what a constraint may name, and the figures each
// may be: a layer's success and attempts are the provider requests' or
// the L2 loops' own; the rest belong to one layer.
var objectiveNames = map[string][]string{
	"success":     {"success_rate", "l2_success_rate"},
	"attempts":    {"attempts", "l2_iterations"},
	"cost":        {"cost_usd"},
	"p95":         {"resolution_p95_seconds"},
	"iterations":  {"l2_iterations"},
	"escalations": {"escalations"},
	"diagnoses":   {"diagnoses"},
}

// objectiveList is objectiveNames' names, for errors.
const objectiveList = "success, attempts, cost, p95, iterations, escalations, diagnoses"

var constraintRe = regexp.MustCompile(`^\s*([a-z0-9]+)\s*(>=|<=|>|<)\s*(?:([0-9.]+)\s*\*\s*)?(baseline|[0-9.]+%?)\s*$`)

// ParseConstraint reads "success >= baseline", "attempts <= 1.1*baseline",
// "success >= 99%" or "p95 <= 30".
func ParseConstraint(s string) (Constraint, error) {
	m := constraintRe.FindStringSubmatch(s)
	if m == nil {
		return Constraint{}, fmt.Errorf("--constraint %q: OBJECTIVE OP BOUND, such as \"success >= baseline\", \"attempts <= 1.1*baseline\" or \"success >= 99%%\"", s)
	}
	if _, ok := objectiveNames[m[1]]; !ok {
		return Constraint{}, fmt.Errorf("--constraint %q: %q is no objective (%s)", s, m[1], objectiveList)
	}
	c := Constraint{Text: strings.Join(strings.Fields(s), " "), objective: m[1], op: m[2]}
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

// key is the figure the constraint bounds among objs, false when it
// names none of them.
func (c Constraint) key(objs []simulated.Objective) (string, bool) {
	for _, k := range objectiveNames[c.objective] {
		if slices.ContainsFunc(objs, func(o simulated.Objective) bool { return o.Key == k }) {
			return k, true
		}
	}
	return "", false
}

// appliesTo reports whether the constraint bounds one of objs.
func (c Constraint) appliesTo(objs []simulated.Objective) bool {
	_, ok := c.key(objs)
	return ok
}

// holds reports whether r meets the constraint, base being the baseline
// and objs the layer's objectives; a constraint on none of them holds.
// A rate is compared to within a billionth, so that "success >=
// baseline" holds for the baseline's own rate.
func (c Constraint) holds(r, base simulated.Result, objs []simulated.Objective) bool {
	key, ok := c.key(objs)
	if !ok {
		return true
	}
	v, b := simulated.ObjectiveValue(r, key), c.value
	if c.ofBase {
		b *= simulated.ObjectiveValue(base, key)
	}
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

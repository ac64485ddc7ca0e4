package promrules

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/orchstat/orchstat/model/reports"
)

var (
	comparison = regexp.MustCompile(`^\s*([A-Za-z_]\w*|[-+]?[0-9][0-9.eE+-]*)\s*(>=|<=|==|!=|>|<)\s*([A-Za-z_]\w*|[-+]?[0-9][0-9.eE+-]*)\s*$`)
	andWord    = regexp.MustCompile(`\s+and\s+`)
	flipped    = map[string]string{">": "<", "<": ">", ">=": "<=", "<=": ">=", "==": "==", "!=": "!="}
)

// condition translates a condition that is comparisons joined by && (or
// "and") into PromQL, the comparison of the value first so that the
// alert's value is the metric's; anything else is refused, with why.
func condition(cond string, threshold *float64, s series, value string) (string, string) {
	parts := strings.Split(andWord.ReplaceAllString(cond, " && "), "&&")
	var first, rest []string
	for _, p := range parts {
		m := comparison.FindStringSubmatch(p)
		if m == nil {
			return "", fmt.Sprintf("condition %q: only comparisons of value, numerator, denominator, no_price, threshold and numbers, joined by &&, translate to PromQL", cond)
		}
		lhs, op, rhs := m[1], m[2], m[3]
		l, lnum, why := operand(lhs, threshold, s, value)
		if why != "" {
			return "", why
		}
		r, rnum, why := operand(rhs, threshold, s, value)
		if why != "" {
			return "", why
		}
		if lnum && rnum {
			return "", fmt.Sprintf("condition %q compares two numbers, which no series carries", cond)
		}
		if lnum { // a vector on the left keeps its own value as the alert's
			l, r, op = r, l, flipped[op]
			lhs = rhs
		}
		e := l + " " + op + " " + r
		if lhs == "value" {
			first = append(first, e)
		} else {
			rest = append(rest, e)
		}
	}
	return strings.Join(append(first, rest...), " and "), ""
}

// operand is a condition's name or number as PromQL, and whether it is a
// number.
func operand(tok string, threshold *float64, s series, value string) (string, bool, string) {
	if _, err := strconv.ParseFloat(tok, 64); err == nil {
		return tok, true, ""
	}
	ratio, cost := s.spec.Kind.Ratio(), s.spec.Kind == reports.Cost
	switch {
	case tok == "value":
		return value, false, ""
	case tok == "threshold" && threshold != nil:
		return strconv.FormatFloat(*threshold, 'g', -1, 64), true, ""
	case tok == "numerator" && ratio:
		return increase(s, s.spec.Num), false, ""
	case tok == "denominator" && ratio:
		return increase(s, s.spec.Den), false, ""
	case tok == "no_price" && cost:
		return increase(s, s.spec.Unpriced), false, ""
	}
	return "", false, fmt.Sprintf("%q has no counterpart over %s's counters", tok, s.spec.Name)
}

var (
	action    = regexp.MustCompile(`\{\{.*?\}\}`)
	dataField = regexp.MustCompile(`\.(Threshold|Numerator|Denominator|NoPrice|Value)\b`)
)

// annotation translates an annotation template: Prometheus's alert
// templates see .Labels and .Value as orchstat's do (.Value is the
// alert expression's value, the metric's when the condition compares
// it); the threshold becomes its number, and the numerator, denominator
// and no_price become queries of their increase for the alert's labels.
func annotation(tmpl string, threshold *float64, s series) (string, string) {
	var why string
	out := action.ReplaceAllStringFunc(tmpl, func(a string) string {
		return dataField.ReplaceAllStringFunc(a, func(f string) string {
			switch f {
			case ".Value":
				return f
			case ".Threshold":
				if threshold == nil {
					why = "{{ .Threshold }} in a rule without a threshold"
					return f
				}
				return strconv.FormatFloat(*threshold, 'g', -1, 64)
			}
			count := map[string]string{".Numerator": s.spec.Num, ".Denominator": s.spec.Den, ".NoPrice": s.spec.Unpriced}[f]
			if count == "" {
				why = fmt.Sprintf("%s has no counterpart over %s's counters", f, s.spec.Name)
				return f
			}
			return queryOf(s, count)
		})
	})
	return out, why
}

// queryOf is a template expression that queries a count's increase over
// s's window for the alert's labels.
func queryOf(s series, count string) string {
	if len(s.by) == 0 {
		return fmt.Sprintf(`(query %s | first | value)`, strconv.Quote(increase(s, count)))
	}
	matchers := make([]string, len(s.by))
	args := make([]string, len(s.by))
	for i, l := range s.by {
		matchers[i] = l + "=%q"
		args[i] = "$labels." + l
	}
	format := fmt.Sprintf("sum%s (increase(%s{%s}[%s]))", byClause(s.by), counter(s.spec.Family, count),
		strings.Join(matchers, ","), promDuration(s.window))
	return fmt.Sprintf(`(query (printf %s %s) | first | value)`, strconv.Quote(format), strings.Join(args, " "))
}

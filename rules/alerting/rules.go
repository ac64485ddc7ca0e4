// Package alerting loads alert rules (alerts.yaml) and evaluates their
// conditions. It is pure Go: metric values come in, decisions go out.
package alerting

import (
	"fmt"
	"slices"
	"strings"
	"text/template"
	"time"

	"github.com/orchstat/orchstat/rules/yamlast"
)

// File is a parsed rule file.
type File struct {
	Path      string
	Rules     []*Rule
	Receivers []*Receiver
	// Route sends each alert to receivers; nil when the file declares no
	// receivers.
	Route *Route
}

// Rule is one alert rule. Only the fields the report needs are interpreted
// here; the alerting engine reads the rest.
type Rule struct {
	Name      string
	Metric    string
	SQL       string
	By        []string
	Window    Window
	Threshold *float64
	Condition string
	// For is how long the condition must hold before the alert fires; the
	// zero Hold fires at the first check that holds.
	For           Hold
	KeepFiringFor time.Duration
	// Timeout bounds a rule's own SQL query (DefaultSQLTimeout when zero):
	// a query that runs longer is that rule's error, the others are
	// evaluated, and the store's lock is not held for ever.
	Timeout time.Duration
	// Severity is info, warning or critical; warning when the file says
	// nothing.
	Severity    string
	Labels      map[string]string
	Annotations map[string]string

	cond      *condition
	guard     *minSamples // the condition's minimum-samples guard, if any
	templates map[string]*template.Template
}

// DefaultSQLTimeout bounds a rule's own SQL query when the rule sets no
// timeout: the built-in metrics take well under a second on 30,000 runs.
const DefaultSQLTimeout = 30 * time.Second

// Window is the data a rule looks at: the last Duration before the check,
// or the last Runs runs. At most one is set; neither means the command's own
// scope.
type Window struct {
	Duration time.Duration
	Runs     int
}

// Hold is how long a condition must hold before its alert fires: for a
// Duration, or over Checks consecutive checks. At most one is set.
type Hold struct {
	Duration time.Duration
	Checks   int
}

// Env is what a condition sees. Field names are the expression's names.
type Env struct {
	Value       float64           `expr:"value"`
	Numerator   float64           `expr:"numerator"`
	Denominator float64           `expr:"denominator"`
	Threshold   float64           `expr:"threshold"`
	Labels      map[string]string `expr:"labels"`
	// NoPrice is how many calls a cost metric's sum leaves out for want
	// of a price (see reports.Metric); only cost metrics set it.
	NoPrice float64 `expr:"no_price"`
}

// TemplateData is what an annotation template sees, as {{ .Value }} and
// so on.
type TemplateData struct {
	Value, Numerator, Denominator, Threshold, NoPrice float64
	Labels                                            map[string]string
}

// Parse reads a rule file, checks it as Check does, and compiles every
// condition and annotation template once. Any problem is an error that
// lists them all.
func Parse(path string, data []byte) (*File, error) {
	f, problems := check(path, data)
	problems = slices.DeleteFunc(problems, func(p Problem) bool { return p.Warning })
	if len(problems) > 0 {
		lines := make([]string, len(problems))
		for i, p := range problems {
			lines[i] = p.String()
		}
		return nil, fmt.Errorf("%d problem%s in rule file:\n%s", len(problems), plural(len(problems)), strings.Join(lines, "\n"))
	}
	f.Path = path
	return f, nil
}

// Load reads and parses the rule file at path. It reads at most
// yamlast.MaxFileSize bytes whatever path is (a device, a pipe), and
// refuses a directory or a larger file with an error naming it.
func Load(path string) (*File, error) {
	data, err := yamlast.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return Parse(path, data)
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

// Sample is a metric's value for one evaluation. A nil Value means no data.
// NoPrice is set on cost metrics only: the calls their sum leaves out.
type Sample struct {
	Value, Numerator, Denominator, NoPrice *float64
	Labels                                 map[string]string
}

// Holds reports whether the rule's condition is true for s. A sample with
// no value never holds: an undefined ratio is "no data", not zero.
func (r *Rule) Holds(s Sample) (bool, error) {
	if s.Value == nil {
		return false, nil
	}
	if r.cond == nil {
		return false, fmt.Errorf("rule %q: has no compiled condition", r.Name)
	}
	out, err := r.cond.run(r.env(s))
	if err != nil {
		return false, fmt.Errorf("rule %q: %v", r.Name, err)
	}
	b, ok := out.(bool)
	if !ok {
		return false, fmt.Errorf("rule %q: condition gave %T, not a boolean", r.Name, out)
	}
	return b, nil
}

func (r *Rule) env(s Sample) Env {
	env := Env{Labels: s.Labels}
	if s.Value != nil {
		env.Value = *s.Value
	}
	if s.Numerator != nil {
		env.Numerator = *s.Numerator
	}
	if s.Denominator != nil {
		env.Denominator = *s.Denominator
	}
	if s.NoPrice != nil {
		env.NoPrice = *s.NoPrice
	}
	if r.Threshold != nil {
		env.Threshold = *r.Threshold
	}
	return env
}

// Annotate expands the rule's annotation templates for s. It never
// panics, and an annotation that would expand past MaxAnnotation bytes is
// an error naming the rule.
func (r *Rule) Annotate(s Sample) (out map[string]string, err error) {
	env := r.env(s)
	data := TemplateData{Value: env.Value, Numerator: env.Numerator, Denominator: env.Denominator,
		Threshold: env.Threshold, NoPrice: env.NoPrice, Labels: env.Labels}
	out = make(map[string]string, len(r.templates))
	for k, t := range r.templates {
		text, err := expand(t, data)
		if err != nil {
			return nil, fmt.Errorf("rule %q: annotation %s: %v", r.Name, k, err)
		}
		out[k] = text
	}
	return out, nil
}

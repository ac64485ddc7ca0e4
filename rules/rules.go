// Package rules loads alert rules (alerts.yaml) and evaluates their
// conditions. It is pure Go: metric values come in, decisions go out.
package rules

import (
	"fmt"
	"strings"

	"github.com/expr-lang/expr"
	"github.com/expr-lang/expr/vm"
	"github.com/goccy/go-yaml"
)

// File is a parsed rule file.
type File struct {
	Path  string
	Rules []*Rule
}

// Rule is one alert rule. Only the fields the report needs are interpreted
// here; the alerting engine reads the rest.
type Rule struct {
	Name          string            `yaml:"name"`
	Metric        string            `yaml:"metric"`
	SQL           string            `yaml:"sql"`
	By            []string          `yaml:"by"`
	Window        any               `yaml:"window"`
	Threshold     *float64          `yaml:"threshold"`
	Condition     string            `yaml:"condition"`
	For           any               `yaml:"for"`
	KeepFiringFor string            `yaml:"keep_firing_for"`
	Severity      string            `yaml:"severity"`
	Labels        map[string]string `yaml:"labels"`
	Annotations   map[string]string `yaml:"annotations"`

	program *vm.Program
}

type document struct {
	Rules []*Rule `yaml:"rules"`
}

// Env is what a condition sees. Field names are the expression's names.
type Env struct {
	Value       float64           `expr:"value"`
	Numerator   float64           `expr:"numerator"`
	Denominator float64           `expr:"denominator"`
	Threshold   float64           `expr:"threshold"`
	Labels      map[string]string `expr:"labels"`
}

// Parse reads a rule file and compiles every condition once.
func Parse(path string, data []byte) (*File, error) {
	var doc document
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("%s: %s", path, strings.TrimSpace(yaml.FormatError(err, false, true)))
	}
	f := &File{Path: path, Rules: doc.Rules}
	seen := map[string]bool{}
	for i, r := range f.Rules {
		if r == nil || r.Name == "" {
			return nil, fmt.Errorf("%s: rule %d: name is required", path, i+1)
		}
		if seen[r.Name] {
			return nil, fmt.Errorf("%s: rule %q: duplicate name", path, r.Name)
		}
		seen[r.Name] = true
		if r.Condition == "" {
			return nil, fmt.Errorf("%s: rule %q: condition is required", path, r.Name)
		}
		p, err := expr.Compile(r.Condition, expr.Env(Env{}), expr.AsBool())
		if err != nil {
			return nil, fmt.Errorf("%s: rule %q: condition: %v", path, r.Name, err)
		}
		r.program = p
	}
	return f, nil
}

// Sample is a metric's value for one evaluation. A nil Value means no data.
type Sample struct {
	Value, Numerator, Denominator *float64
	Labels                        map[string]string
}

// Holds reports whether the rule's condition is true for s. A sample with
// no value never holds: an undefined ratio is "no data", not zero.
func (r *Rule) Holds(s Sample) (bool, error) {
	if s.Value == nil {
		return false, nil
	}
	env := Env{Value: *s.Value, Labels: s.Labels}
	if s.Numerator != nil {
		env.Numerator = *s.Numerator
	}
	if s.Denominator != nil {
		env.Denominator = *s.Denominator
	}
	if r.Threshold != nil {
		env.Threshold = *r.Threshold
	}
	out, err := expr.Run(r.program, env)
	if err != nil {
		return false, fmt.Errorf("rule %q: %v", r.Name, err)
	}
	return out.(bool), nil
}

// Package ruletest runs rule test files, in the spirit of promtool test
// rules: made-up events, ingested into a fresh store as their times come,
// and a sequence of evaluations, each comparing the alerts of a check at
// its time with those expected.
package ruletest

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/goccy/go-yaml"

	"github.com/orchstat/orchstat"
	"github.com/orchstat/orchstat/rules/alerting"
	"github.com/orchstat/orchstat/rules/yamlast"
)

// File is the rule test file format.
type File struct {
	RuleFiles []string `yaml:"rule_files"`
	Tests     []Test   `yaml:"tests"`
}

// Test is one test: its input and the evaluations that check it.
type Test struct {
	Name  string `yaml:"name"`
	Input struct {
		Traces string  `yaml:"traces"`
		Events []Event `yaml:"events"`
	} `yaml:"input"`
	Evaluations []Eval `yaml:"evaluations"`
}

// Event is an inline event, written into its run's trace.
type Event struct {
	Run     string         `yaml:"run"`
	At      string         `yaml:"at"`
	Type    string         `yaml:"type"`
	Payload map[string]any `yaml:"payload"`
}

// Eval is an evaluation: when, the rules it compares (none: all), and the
// alerts expected.
type Eval struct {
	At     string   `yaml:"at"`
	Rules  []string `yaml:"rules"`
	Alerts []Alert  `yaml:"alerts"`
}

// Alert is an expected alert.
type Alert struct {
	Rule   string            `yaml:"rule"`
	State  string            `yaml:"state"`
	Labels map[string]string `yaml:"labels"`
}

// Loaded is a validated test file, ready to run.
type Loaded struct {
	Path   string
	Rules  *alerting.File
	Tests  []Test
	dir    string
	times  [][]time.Time // per test, per evaluation
	traces []string      // per test: the runs directory, or ""
}

// Load reads and validates a test file and its rule files.
func Load(path string) (*Loaded, error) {
	tf, err := decode(path)
	if err != nil {
		return nil, err
	}
	lf := &Loaded{Path: path, dir: filepath.Dir(path), Tests: tf.Tests}
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%s: %s", path, fmt.Sprintf(format, args...))
	}
	if len(tf.Tests) == 0 {
		return nil, bad("no tests")
	}
	if lf.Rules, err = lf.loadRules(tf.RuleFiles); err != nil {
		return nil, bad("%v", err)
	}
	ruleNames := map[string]bool{}
	for _, r := range lf.Rules.Rules {
		ruleNames[r.Name] = true
	}
	names := map[string]bool{}
	for i, t := range tf.Tests {
		if t.Name == "" {
			return nil, bad("test %d has no name", i+1)
		}
		where := fmt.Sprintf("test %q", t.Name)
		if names[t.Name] {
			return nil, bad("%s: duplicate test name", where)
		}
		names[t.Name] = true
		traces, err := lf.input(t)
		if err != nil {
			return nil, bad("%s: %v", where, err)
		}
		times, err := evaluationTimes(t.Evaluations, ruleNames)
		if err != nil {
			return nil, bad("%s%v", where, err)
		}
		lf.traces, lf.times = append(lf.traces, traces), append(lf.times, times)
	}
	return lf, nil
}

// decode reads a test file. The decoder's parser, like the rule files',
// costs more than the file grows with nesting, and the decoder builds
// every value an alias stands for: what no test file needs is refused
// first. A file that does not parse is left to the decoder, whose errors
// say more.
func decode(path string) (*File, error) {
	data, err := yamlast.ReadFile(path)
	if err != nil {
		return nil, err
	}
	bounded := yamlast.CheckDepth(data)
	if bounded == nil {
		if f, err := yamlast.Parse(data); err == nil {
			bounded = yamlast.CheckExpansion(f)
		}
	}
	if bounded != nil {
		msg, line, col := yamlast.ErrorAt(bounded)
		return nil, fmt.Errorf("%s:%d:%d: %s", path, line, col, msg)
	}
	var tf File
	if err := yaml.UnmarshalWithOptions(data, &tf, yaml.Strict()); err != nil {
		var ye yaml.Error
		if errors.As(err, &ye) {
			if tk := ye.GetToken(); tk != nil && tk.Position != nil {
				return nil, fmt.Errorf("%s:%d:%d: YAML: %s", path, tk.Position.Line, tk.Position.Column, ye.GetMessage())
			}
			return nil, fmt.Errorf("%s: YAML: %s", path, ye.GetMessage())
		}
		return nil, fmt.Errorf("%s: %v", path, err)
	}
	return &tf, nil
}

// loadRules loads the rules under test: the named files together
// (relative to the test file), or the built-in ones.
func (lf *Loaded) loadRules(files []string) (*alerting.File, error) {
	if len(files) == 0 {
		return alerting.Parse("alerts.yaml (built in)", orchstat.DefaultAlerts)
	}
	all := &alerting.File{Path: strings.Join(files, ",")}
	seen := map[string]string{}
	for _, rfPath := range files {
		p := rfPath
		if !filepath.IsAbs(p) {
			p = filepath.Join(lf.dir, p)
		}
		f, err := alerting.Load(p)
		if err != nil {
			return nil, fmt.Errorf("rule file %s: %v", rfPath, err)
		}
		for _, r := range f.Rules {
			if other, dup := seen[r.Name]; dup {
				return nil, fmt.Errorf("rule %q is in both %s and %s", r.Name, other, rfPath)
			}
			seen[r.Name] = rfPath
			all.Rules = append(all.Rules, r)
		}
	}
	return all, nil
}

// input checks a test's input and returns its runs directory, "" for
// inline events.
func (lf *Loaded) input(t Test) (string, error) {
	traces := ""
	switch {
	case t.Input.Traces != "" && len(t.Input.Events) > 0:
		return "", fmt.Errorf("input has both traces and events; give one")
	case t.Input.Traces != "":
		traces = t.Input.Traces
		if !filepath.IsAbs(traces) {
			traces = filepath.Join(lf.dir, traces)
		}
		if fi, err := os.Stat(traces); err != nil {
			return "", fmt.Errorf("traces: %v", err)
		} else if !fi.IsDir() {
			return "", fmt.Errorf("traces: %s is not a directory", t.Input.Traces)
		}
	}
	for j, e := range t.Input.Events {
		ew := fmt.Sprintf("event %d", j+1)
		if e.Run == "" || e.Type == "" {
			return "", fmt.Errorf("%s needs run and type", ew)
		}
		if e.Run != filepath.Base(e.Run) || e.Run == "." || e.Run == ".." {
			return "", fmt.Errorf("%s: run %q is not a plain name", ew, e.Run)
		}
		if _, err := parseTime(e.At); err != nil {
			return "", fmt.Errorf("%s: at: %v", ew, err)
		}
	}
	return traces, nil
}

// evaluationTimes checks a test's evaluations and returns their times.
// Its errors start with the separator after the test's name (" has no
// evaluations", ": evaluation 2: ...").
func evaluationTimes(evals []Eval, ruleNames map[string]bool) ([]time.Time, error) {
	if len(evals) == 0 {
		return nil, fmt.Errorf(" has no evaluations")
	}
	var times []time.Time
	for j, ev := range evals {
		ew := fmt.Sprintf(": evaluation %d", j+1)
		at, err := parseTime(ev.At)
		if err != nil {
			return nil, fmt.Errorf("%s: at: %v", ew, err)
		}
		if j > 0 && at.Before(times[j-1]) {
			return nil, fmt.Errorf("%s: at %s is before the evaluation before it", ew, ev.At)
		}
		times = append(times, at)
		for _, r := range ev.Rules {
			if !ruleNames[r] {
				return nil, fmt.Errorf("%s: no rule named %q", ew, r)
			}
		}
		if err := checkExpected(ev, ruleNames); err != nil {
			return nil, fmt.Errorf("%s: %v", ew, err)
		}
	}
	return times, nil
}

// checkExpected checks an evaluation's expected alerts.
func checkExpected(ev Eval, ruleNames map[string]bool) error {
	for k, a := range ev.Alerts {
		if !ruleNames[a.Rule] {
			return fmt.Errorf("alert %d: no rule named %q", k+1, a.Rule)
		}
		var st alerting.State
		if err := st.UnmarshalText([]byte(a.State)); err != nil || st == alerting.StateInactive {
			return fmt.Errorf("alert %d: state %q is not pending, firing or resolved", k+1, a.State)
		}
		if len(ev.Rules) > 0 && !slices.Contains(ev.Rules, a.Rule) {
			return fmt.Errorf("alert %d: rule %q is not among the evaluation's rules", k+1, a.Rule)
		}
	}
	return nil
}

func parseTime(s string) (time.Time, error) {
	if s == "" {
		return time.Time{}, fmt.Errorf("missing (an RFC 3339 time such as 2026-11-21T12:00:00Z)")
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}, fmt.Errorf("%q is not an RFC 3339 time such as 2026-11-21T12:00:00Z", s)
	}
	return t.UTC(), nil
}

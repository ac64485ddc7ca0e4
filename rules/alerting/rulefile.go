package alerting

import (
	"cmp"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	exprast "github.com/expr-lang/expr/ast"
	"github.com/expr-lang/expr/file"
	"github.com/goccy/go-yaml/ast"
	"github.com/goccy/go-yaml/token"
	"github.com/orchstat/orchstat/model/reports"
	"github.com/orchstat/orchstat/rules/yamlast"
)

// Problem is one thing wrong with a rule file, at the key or value that is
// wrong.
type Problem struct {
	File         string
	Line, Column int
	Rule         string // the rule's name, when the problem is in a named rule
	Field        string // the field, such as "window" or "annotations.summary"
	Message      string
	// Warning marks what is likely wrong but no reason to refuse the
	// file: an annotation template that fails on sample data. As in
	// Prometheus, a template is parsed when the rules load and expanded
	// when an alert fires; a failure then is that alert's annotation
	// error, and refusing the whole file would leave every other rule,
	// critical ones among them, unevaluated.
	Warning bool
}

// String gives the problem as file:line:column: rule "name": field: message,
// leaving out what is unknown.
func (p Problem) String() string {
	var b strings.Builder
	b.WriteString(p.File)
	if p.Line > 0 {
		fmt.Fprintf(&b, ":%d:%d", p.Line, p.Column)
	}
	b.WriteString(": ")
	if p.Warning {
		b.WriteString("warning: ")
	}
	if p.Rule != "" {
		fmt.Fprintf(&b, "rule %q: ", p.Rule)
	}
	if p.Field != "" {
		b.WriteString(p.Field + ": ")
	}
	b.WriteString(p.Message)
	return b.String()
}

// Check validates a rule file and returns every problem it finds, in file
// order, or none.
func Check(path string, data []byte) []Problem {
	_, problems := check(path, data)
	return problems
}

// fileNode is a rule file as written, and ruleNode one of its rules: each
// key's value and where it is, as prometheus's rulefmt.RuleNode keeps
// yaml.Nodes. A key is a field tagged with it, in the order the README
// documents them, which is the order messages list them in; its check is
// in file or rule.
type fileNode struct {
	Rules     *entry `yaml:"rules"`
	Receivers *entry `yaml:"receivers"`
	Route     *entry `yaml:"route"`
}

type ruleNode struct {
	Name          *entry `yaml:"name"`
	Metric        *entry `yaml:"metric"`
	SQL           *entry `yaml:"sql"`
	By            *entry `yaml:"by"`
	Window        *entry `yaml:"window"`
	Threshold     *entry `yaml:"threshold"`
	Condition     *entry `yaml:"condition"`
	For           *entry `yaml:"for"`
	KeepFiringFor *entry `yaml:"keep_firing_for"`
	Timeout       *entry `yaml:"timeout"`
	Severity      *entry `yaml:"severity"`
	Labels        *entry `yaml:"labels"`
	Annotations   *entry `yaml:"annotations"`
}

var (
	topKeys    = yamlast.Keys(&fileNode{})
	ruleKeys   = yamlast.Keys(&ruleNode{})
	severities = []string{"info", "warning", "critical"}
)

var (
	daysRe      = regexp.MustCompile(`^(\d{1,6})d$`)
	lastRunsRe  = regexp.MustCompile(`^last\s+(\d+)\s+runs?$`)
	runsRe      = regexp.MustCompile(`^(\d+)\s+runs?$`)
	labelNameRe = regexp.MustCompile(`^[a-zA-Z_][a-zA-Z0-9_]*$`)
)

type checker struct {
	path     string
	lines    []string
	rd       yamlast.Reader
	problems []Problem
	dropped  int // problems past maxProblems
}

// count is the problems found so far, listed or not.
func (c *checker) count() int { return len(c.problems) + c.dropped }

// maxProblems caps the problems listed for one file: a file of 500,000
// bad rules would otherwise print 500,000 lines.
const maxProblems = 100

// maxMerges caps the mappings merged in with <<: aliases can make their
// number grow exponentially with the file's size.
const maxMerges = 1000

// The document is read through a yamlast.Reader; these say it briefly.
type entry = yamlast.Entry

func (c *checker) resolve(n ast.Node) ast.Node { return c.rd.Resolve(n) }

// mapping returns n's entries in order, with merge keys (<<) expanded and
// duplicate keys reported. When n is not a mapping it reports msg.
func (c *checker) mapping(n ast.Node, rule, field, msg string) ([]entry, bool) {
	return c.rd.Mapping(n, field, msg, c.reporter(rule))
}

// fields reads the mapping at n into dst, a struct of entries by key
// (yamlast.Fields), and returns the keys it does not know.
func (c *checker) fields(n ast.Node, rule, field, msg string, dst any) ([]entry, bool) {
	return c.rd.Fields(n, field, msg, c.reporter(rule), dst)
}

func (c *checker) reporter(rule string) yamlast.Report {
	return func(at ast.Node, f, m string) { c.add(at, rule, f, "%s", m) }
}

func check(path string, data []byte) (*File, []Problem) {
	c := &checker{path: path, lines: strings.Split(string(data), "\n"), rd: yamlast.Reader{MaxMerges: maxMerges}}
	yf, err := yamlast.Parse(data)
	if err != nil {
		c.yamlError(err)
		return nil, c.problems
	}
	var docs []*ast.DocumentNode
	for _, d := range yf.Docs {
		if d != nil && d.Body != nil {
			docs = append(docs, d)
		}
	}
	if len(docs) == 0 {
		return &File{}, nil // an empty file has no rules, and nothing wrong
	}
	for _, d := range docs[1:] {
		c.add(d.Body, "", "", "a rule file holds one YAML document; this is another")
	}
	c.rd.Anchors = yamlast.Anchors(docs[0].Body)
	body := c.resolve(docs[0].Body)
	if _, ok := body.(*ast.NullNode); ok {
		if len(c.problems) > 0 {
			return nil, c.problems
		}
		return &File{}, nil
	}
	f := &File{}
	var n fileNode
	unknown, ok := c.fields(body, "", "", "a rule file is a mapping with a rules key", &n)
	if !ok {
		return nil, c.problems
	}
	// Unknown keys written before rules are reported before its problems,
	// so that the first maxProblems listed are the file's first.
	k := len(unknown)
	if n.Rules != nil {
		if i := slices.IndexFunc(unknown, func(e entry) bool { return e.Index > n.Rules.Index }); i >= 0 {
			k = i
		}
	}
	c.unknownTop(unknown[:k])
	if n.Rules != nil {
		f.Rules = c.rules(n.Rules.Value)
	}
	c.unknownTop(unknown[k:])
	f.Receivers, f.Route = c.notifications(n.Receivers, n.Route)
	if len(c.problems) > 0 {
		slices.SortStableFunc(c.problems, func(a, b Problem) int {
			if a.Line != b.Line {
				return a.Line - b.Line
			}
			return a.Column - b.Column
		})
		if c.dropped > 0 {
			c.problems = append(c.problems, Problem{File: c.path,
				Message: fmt.Sprintf("%d more problem%s not listed; fix these first", c.dropped, plural(c.dropped))})
		}
		if slices.ContainsFunc(c.problems, func(p Problem) bool { return !p.Warning }) {
			return nil, c.problems
		}
		return f, c.problems // warnings only: the file is usable
	}
	return f, nil
}

func (c *checker) unknownTop(es []entry) {
	for _, e := range es {
		c.add(e.KeyNode, "", "", "unknown top-level key %q%s (allowed: %s)", e.Key, yamlast.Suggest(e.Key, topKeys), strings.Join(topKeys, ", "))
	}
}

func (c *checker) yamlError(err error) {
	msg, line, col := yamlast.ErrorAt(err)
	c.problems = append(c.problems, Problem{File: c.path, Line: line, Column: col, Message: msg})
}

func (c *checker) add(n ast.Node, rule, field, format string, args ...any) {
	line, col := yamlast.Pos(n)
	c.addAt(line, col, rule, field, format, args...)
}

func (c *checker) addAt(line, col int, rule, field, format string, args ...any) {
	if len(c.problems) >= maxProblems {
		c.dropped++
		return
	}
	c.problems = append(c.problems, Problem{File: c.path, Line: line, Column: col, Rule: rule, Field: field,
		Message: fmt.Sprintf(format, args...)})
}

func isInt(n ast.Node) bool {
	_, ok := n.(*ast.IntegerNode)
	return ok
}

func positiveInt(n ast.Node) (int, bool) {
	v, ok := n.(*ast.IntegerNode)
	if !ok {
		return 0, false
	}
	switch x := v.Value.(type) {
	case int64:
		if x > 0 && x <= 1<<31-1 {
			return int(x), true
		}
	case uint64:
		if x > 0 && x <= 1<<31-1 {
			return int(x), true
		}
	}
	return 0, false
}

// ParseDuration reads a Go duration (90s, 10m, 1h30m) or whole days (7d),
// as rule files write them.
func ParseDuration(s string) (time.Duration, error) { return parseDuration(s) }

// parseDuration reads a Go duration (90s, 10m, 1h30m) or whole days (7d).
func parseDuration(s string) (time.Duration, error) {
	if m := daysRe.FindStringSubmatch(s); m != nil {
		n, _ := strconv.Atoi(m[1])
		return time.Duration(n) * 24 * time.Hour, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("%q is not a duration (use Go durations like 90s, 10m, 1h30m, or days like 7d)", s)
	}
	if d < 0 {
		return 0, fmt.Errorf("%q is negative", s)
	}
	return d, nil
}

func (c *checker) rules(n ast.Node) []*Rule {
	if _, ok := n.(*ast.NullNode); ok || n == nil {
		return nil
	}
	seq, ok := n.(*ast.SequenceNode)
	if !ok {
		c.add(n, "", "rules", "must be a list of rules")
		return nil
	}
	var out []*Rule
	names := map[string]int{}
	for i, item := range seq.Values {
		if r := c.rule(i+1, item, names); r != nil {
			out = append(out, r)
		}
	}
	return out
}

// rule checks one rule and builds it; nil when it has problems.
func (c *checker) rule(index int, raw ast.Node, names map[string]int) *Rule {
	before := c.count()
	var n ruleNode
	unknown, ok := c.fields(raw, "", "", fmt.Sprintf("rule %d is not a mapping of fields", index), &n)
	if !ok {
		return nil
	}
	r := &Rule{Severity: "warning"}
	// The name first, so that every other problem can say whose it is.
	if n.Name != nil {
		r.Name = c.ruleName(*n.Name, names)
	} else {
		c.add(raw, "", "", "name is required (rule %d has none)", index)
	}
	rn := r.Name
	for _, e := range unknown {
		c.add(e.KeyNode, rn, e.Key, "unknown field%s (fields: %s)", yamlast.Suggest(e.Key, ruleKeys), strings.Join(ruleKeys, ", "))
	}
	hasSQL := n.SQL != nil
	c.source(r, raw, &n)
	if n.By != nil {
		r.By = c.by(rn, *n.By, r.Metric, hasSQL)
	}
	if n.Window != nil {
		r.Window = c.window(rn, *n.Window)
	}
	if n.Threshold != nil {
		r.Threshold = c.threshold(rn, *n.Threshold)
	}
	if n.Condition != nil {
		r.Condition, r.cond = c.condition(rn, *n.Condition, r.Threshold, r.By, r.Metric, hasSQL)
		if r.cond != nil {
			r.guard = parseGuard(r.Condition)
		}
	} else {
		c.add(raw, rn, "", "condition is required")
	}
	c.alerting(r, &n)
	if n.Annotations != nil {
		r.Annotations = c.stringMap(rn, "annotations", *n.Annotations)
		r.templates = c.templates(rn, *n.Annotations, r.Threshold, r.By, hasSQL)
	}
	if c.count() > before {
		return nil
	}
	return r
}

// ruleName checks a rule's name, unique among the names seen so far
// (names holds the line of each), and returns it; "" when it is none.
func (c *checker) ruleName(e entry, names map[string]int) string {
	name, ok := yamlast.Scalar(e.Value)
	switch {
	case !ok || strings.TrimSpace(name) == "":
		c.add(e.Raw, "", "name", "must be a non-empty string")
		return ""
	case names[name] > 0:
		line, col := yamlast.Pos(e.Raw)
		c.addAt(line, col, name, "name", "duplicate name; the first rule with it is at line %d", names[name])
	default:
		names[name], _ = yamlast.Pos(e.Raw)
	}
	return name
}

// source checks what a rule evaluates, a metric or its own sql, one of
// the two, and sets it.
func (c *checker) source(r *Rule, raw ast.Node, n *ruleNode) {
	rn := r.Name
	metric, sqlE := n.Metric, n.SQL
	switch {
	case metric != nil && sqlE != nil:
		c.add(sqlE.KeyNode, rn, "sql", "a rule has a metric or sql, not both")
	case metric == nil && sqlE == nil:
		c.add(raw, rn, "", "metric or sql is required")
	case metric != nil:
		m, ok := yamlast.Scalar(metric.Value)
		switch {
		case !ok || !yamlast.IsString(metric.Value):
			c.add(metric.Raw, rn, "metric", "must be a metric name (%s)", strings.Join(reports.MetricNames, ", "))
		case !slices.Contains(reports.MetricNames, m):
			c.add(metric.Raw, rn, "metric", "unknown metric %q%s (metrics: %s)", m, yamlast.Suggest(m, reports.MetricNames), strings.Join(reports.MetricNames, ", "))
		default:
			r.Metric = m
		}
	default:
		r.SQL = c.sql(rn, *sqlE)
	}
}

// threshold checks a rule's threshold, a number; nil when it is none.
func (c *checker) threshold(rn string, e entry) *float64 {
	var f float64
	switch v := e.Value.(type) {
	case *ast.FloatNode:
		f = v.Value
	case *ast.IntegerNode:
		switch x := v.Value.(type) {
		case int64:
			f = float64(x)
		case uint64:
			f = float64(x)
		}
	default:
		c.add(e.Raw, rn, "threshold", "must be a number, such as 0.20 or 3")
	}
	if _, ok := e.Value.(*ast.FloatNode); ok || isInt(e.Value) {
		return &f
	}
	return nil
}

// alerting checks and sets how a rule's alerts behave once its condition
// holds: for, keep_firing_for, severity and labels.
func (c *checker) alerting(r *Rule, n *ruleNode) {
	rn := r.Name
	if n.For != nil {
		r.For = c.hold(rn, *n.For)
	}
	if e := n.KeepFiringFor; e != nil {
		c.duration(rn, "keep_firing_for", "10m", false, &r.KeepFiringFor)(*e)
	}
	if e := n.Timeout; e != nil {
		s, ok := yamlast.Scalar(e.Value)
		d, err := parseDuration(s)
		switch {
		case !ok:
			c.add(e.Raw, rn, "timeout", "must be a duration, such as 30s")
		case err != nil:
			c.add(e.Raw, rn, "timeout", "%v", err)
		case r.SQL == "":
			c.add(e.Raw, rn, "timeout", "bounds a rule's own sql query; this rule has none")
		case d <= 0:
			c.add(e.Raw, rn, "timeout", "must be above zero")
		default:
			r.Timeout = d
		}
	}
	if e := n.Severity; e != nil {
		s, ok := yamlast.Scalar(e.Value)
		if !ok || !slices.Contains(severities, s) {
			c.add(e.Raw, rn, "severity", "must be one of %s", strings.Join(severities, ", "))
		} else {
			r.Severity = s
		}
	}
	if e := n.Labels; e != nil {
		r.Labels = c.stringMap(rn, "labels", *e)
		for k := range r.Labels {
			if !labelNameRe.MatchString(k) {
				for _, le := range entriesQuiet(c, e.Value) {
					if le.Key == k {
						c.add(le.KeyNode, rn, "labels."+k, "a label name is letters, digits and underscores, not starting with a digit")
					}
				}
			}
		}
	}
}

// entriesQuiet reads a mapping already checked, without reporting again.
func entriesQuiet(c *checker, n ast.Node) []entry {
	saved, dropped := c.problems, c.dropped
	es, _ := c.mapping(n, "", "", "")
	c.problems, c.dropped = saved, dropped
	return es
}

func (c *checker) stringMap(rn, field string, e entry) map[string]string {
	if _, ok := e.Value.(*ast.NullNode); ok {
		return nil
	}
	entries, ok := c.mapping(e.Raw, rn, field, "must be a mapping of names to strings")
	if !ok {
		return nil
	}
	out := make(map[string]string, len(entries))
	for _, kv := range entries {
		v, ok := yamlast.Scalar(kv.Value)
		if !ok {
			c.add(kv.Raw, rn, field+"."+kv.Key, "must be a string")
			continue
		}
		out[kv.Key] = v
	}
	return out
}

func (c *checker) by(rn string, e entry, metric string, isSQL bool) []string {
	seq, ok := e.Value.(*ast.SequenceNode)
	if !ok {
		c.add(e.Raw, rn, "by", "must be a list of labels, such as [provider]")
		return nil
	}
	var out []string
	for _, item := range seq.Values {
		l, ok := yamlast.Scalar(c.resolve(item))
		switch {
		case !ok || !labelNameRe.MatchString(l):
			c.add(item, rn, "by", "a label is a name of letters, digits and underscores")
			continue
		case slices.Contains(out, l):
			c.add(item, rn, "by", "label %q is listed twice", l)
			continue
		case isSQL:
			// A custom query's labels are its columns.
		case metric == "":
			// The metric is already reported.
		case slices.Contains(reports.LabelsOf(metric), l):
		case reports.RecordMetric(metric):
			c.add(item, rn, "by", "unknown label %q for %s; record metrics group by system", l, metric)
		case reports.CallMetric(metric):
			c.add(item, rn, "by", "unknown label %q for %s; call metrics group by system, provider and model", l, metric)
			continue
		case len(reports.LabelsOf(metric)) == 0:
			c.add(item, rn, "by", "metric %s has no labels to group by; only provider_* metrics can, by provider and model, call metrics, by system, provider and model, and record metrics, by system", metric)
			continue
		default:
			c.add(item, rn, "by", "unknown label %q for %s; provider_* metrics group by provider and model", l, metric)
			continue
		}
		out = append(out, l)
	}
	return out
}

func (c *checker) window(rn string, e entry) Window {
	const forms = "a duration (24h, 7d), {last: N} or \"last N runs\""
	if m, ok := e.Value.(*ast.MappingNode); ok {
		entries, _ := c.mapping(m, rn, "window", "")
		var w Window
		for _, kv := range entries {
			if kv.Key != "last" {
				c.add(kv.KeyNode, rn, "window."+kv.Key, "unknown field; a window is %s", forms)
				continue
			}
			n, ok := positiveInt(kv.Value)
			if !ok {
				if s, isStr := yamlast.Scalar(kv.Value); isStr && yamlast.IsString(kv.Value) {
					if mm := runsRe.FindStringSubmatch(s); mm != nil {
						n, _ = strconv.Atoi(mm[1])
						ok = n > 0
					}
				}
			}
			if !ok {
				c.add(kv.Raw, rn, "window.last", "must be a positive number of runs")
				continue
			}
			w.Runs = n
		}
		if len(entries) == 0 {
			c.add(m, rn, "window", "must be %s", forms)
		}
		return w
	}
	s, ok := yamlast.Scalar(e.Value)
	if !ok {
		c.add(e.Raw, rn, "window", "must be %s", forms)
		return Window{}
	}
	if m := lastRunsRe.FindStringSubmatch(s); m != nil {
		n, err := strconv.Atoi(m[1])
		if err != nil || n <= 0 {
			c.add(e.Raw, rn, "window", "must cover a positive number of runs")
			return Window{}
		}
		return Window{Runs: n}
	}
	d, err := parseDuration(s)
	if err != nil {
		c.add(e.Raw, rn, "window", "%q is not %s", s, forms)
		return Window{}
	}
	if d == 0 {
		c.add(e.Raw, rn, "window", "must be longer than 0")
	}
	return Window{Duration: d}
}

func (c *checker) hold(rn string, e entry) Hold {
	if n, ok := positiveInt(e.Value); ok {
		return Hold{Checks: n}
	}
	s, ok := yamlast.Scalar(e.Value)
	if ok && !yamlast.IsString(e.Value) {
		c.add(e.Raw, rn, "for", "%s is not a positive number of checks", s)
		return Hold{}
	}
	d, err := parseDuration(s)
	if !ok || err != nil {
		c.add(e.Raw, rn, "for", "must be a duration (10m, 1h) or a positive number of consecutive checks")
		return Hold{}
	}
	return Hold{Duration: d}
}

var sqlStart = regexp.MustCompile(`(?i)^\(*\s*(select|with|from)\b`)

func (c *checker) sql(rn string, e entry) string {
	s, ok := yamlast.Scalar(e.Value)
	if !ok || !yamlast.IsString(e.Value) {
		c.add(e.Raw, rn, "sql", "must be a query string")
		return ""
	}
	code, semis := sqlCode(s)
	if strings.TrimSpace(code) == "" {
		c.add(e.Raw, rn, "sql", "is empty")
		return ""
	}
	if !sqlStart.MatchString(strings.TrimSpace(code)) {
		c.add(e.Raw, rn, "sql", "must be one read-only query starting with SELECT, WITH or FROM (orchstat check will run it on a read-only connection)")
		return ""
	}
	for _, at := range semis {
		if strings.TrimSpace(code[at+1:]) != "" {
			line, col := c.valuePos(e, s, at)
			c.addAt(line, col, rn, "sql", "must be a single query; this ; starts another statement")
			return ""
		}
	}
	return s
}

// sqlCode blanks out comments and quoted text in q (keeping offsets), and
// returns where its semicolons are.
func sqlCode(q string) (string, []int) {
	b := []byte(q)
	var semis []int
	for i := 0; i < len(b); i++ {
		switch {
		case b[i] == '-' && i+1 < len(b) && b[i+1] == '-':
			for ; i < len(b) && b[i] != '\n'; i++ {
				b[i] = ' '
			}
		case b[i] == '/' && i+1 < len(b) && b[i+1] == '*':
			end := strings.Index(q[i+2:], "*/")
			stop := len(b)
			if end >= 0 {
				stop = i + 2 + end + 2
			}
			for ; i < stop; i++ {
				if b[i] != '\n' {
					b[i] = ' '
				}
			}
			i--
		case b[i] == '\'' || b[i] == '"':
			quote := b[i]
			j := i + 1
			for ; j < len(b) && b[j] != quote; j++ {
				b[j] = ' '
			}
			i = j
		case b[i] == ';':
			semis = append(semis, i)
		}
	}
	return string(b), semis
}

// condition compiles the expression, reporting errors where they are in
// the file.
func (c *checker) condition(rn string, e entry, threshold *float64, by []string, metric string, isSQL bool) (string, *condition) {
	s, ok := yamlast.Scalar(e.Value)
	if !ok || strings.TrimSpace(s) == "" {
		c.add(e.Raw, rn, "condition", "must be an expression, such as value > threshold && denominator >= 20")
		return "", nil
	}
	uses := &identifiers{}
	p, err := compileCondition(s, uses)
	if err != nil {
		var fe *file.Error
		msg := err.Error()
		line, col := yamlast.Pos(e.Raw)
		if errors.As(err, &fe) {
			msg = fe.Message
			line, col = c.valuePos(e, s, runeOffset(s, fe.From))
		}
		c.addAt(line, col, rn, "condition", "%s (conditions see value, numerator, denominator, threshold, no_price and labels)", msg)
		return s, nil
	}
	if uses.names["threshold"] && threshold == nil {
		c.add(e.Raw, rn, "condition", "uses threshold, but the rule sets none (it would be 0)")
	}
	if uses.names["no_price"] && (metric != "" || isSQL) && !reports.CostMetric(metric) {
		c.add(e.Raw, rn, "condition", "uses no_price, which only cost metrics (%s) set; for %s it would be 0",
			strings.Join(slices.Sorted(slices.Values(reports.CostMetricNames)), ", "), cmp.Or(metric, "a sql rule"))
	}
	if msg := probeCondition(p, threshold, by, isSQL); msg != "" {
		c.add(e.Raw, rn, "condition", "%s", msg)
		return s, nil
	}
	return s, p
}

// samples are what rules check evaluates conditions and templates on:
// values none, small and large, and the rule's labels with a word, a
// number and nothing as their values.
func samples(threshold *float64, by []string) []Sample {
	var out []Sample
	for _, word := range []string{"sample", "1", ""} {
		labels := make(map[string]string, len(by))
		for _, l := range by {
			labels[l] = word
		}
		for _, v := range []float64{0, 0.5, 1, 1e6} {
			num, den, unpriced := v*10, 10.0, v*2
			out = append(out, Sample{Value: &v, Numerator: &num, Denominator: &den, NoPrice: &unpriced, Labels: labels})
		}
	}
	if threshold != nil {
		t := *threshold
		out = append(out, Sample{Value: &t, Labels: map[string]string{}})
	}
	return out
}

// probeCondition evaluates the condition on the samples, as rules check
// can before a check does. A condition past its bounds on any sample is
// wrong; one that fails on every sample would fail at every check. A
// failure on some samples only may be the data's (int(labels.n) of a
// label that is not a number), so it is left to the check, and so is
// every failure of a sql rule, whose labels are its query's columns,
// which the samples cannot know.
func probeCondition(p *condition, threshold *float64, by []string, isSQL bool) string {
	r := &Rule{Threshold: threshold, cond: p}
	var first error
	failed := 0
	all := samples(threshold, by)
	for _, s := range all {
		_, err := p.run(r.env(s))
		var be *BudgetError
		if errors.As(err, &be) {
			return fmt.Sprintf("%s (on sample data: value %g, labels %v)", be.Msg, *s.Value, s.Labels)
		}
		if err != nil {
			failed++
			if first == nil {
				first = err
			}
		}
	}
	if failed == len(all) && !isSQL {
		msg := first.Error()
		var fe *file.Error
		if errors.As(first, &fe) {
			msg = fe.Message
		}
		return "fails on every sample value and label: " + msg
	}
	return ""
}

type identifiers struct{ names map[string]bool }

func (v *identifiers) Visit(n *exprast.Node) {
	if id, ok := (*n).(*exprast.IdentifierNode); ok {
		if v.names == nil {
			v.names = map[string]bool{}
		}
		v.names[id.Value] = true
	}
}

func runeOffset(s string, runes int) int {
	i := 0
	for off := range s {
		if i == runes {
			return off
		}
		i++
	}
	return len(s)
}

// valuePos finds byte offset at of scalar s, which e holds, in the file.
// It is exact for one-line and literal (|) scalars and falls back to the
// value's start when the text does not read the same in the file (escapes,
// folding).
func (c *checker) valuePos(e entry, s string, at int) (int, int) {
	line, col := yamlast.Pos(e.Raw)
	if line <= 0 || line > len(c.lines) || at < 0 || at > len(s) {
		return line, col
	}
	before := s[:at]
	inLine := strings.Count(before, "\n")
	lineStart := strings.LastIndex(before, "\n") + 1
	colInLine := utf8.RuneCountInString(before[lineStart:])
	lineText := s[lineStart:]
	if i := strings.IndexByte(lineText, '\n'); i >= 0 {
		lineText = lineText[:i]
	}
	switch v := e.Value.(type) {
	case *ast.StringNode:
		if strings.Contains(s, "\n") {
			return line, col
		}
		start := col
		if tk := v.GetToken(); tk != nil && (tk.Type == token.DoubleQuoteType || tk.Type == token.SingleQuoteType) {
			start++
		}
		src := []rune(c.lines[line-1])
		if start-1 >= 0 && start-1 <= len(src) && strings.HasPrefix(string(src[start-1:]), s) {
			return line, start + colInLine
		}
	case *ast.LiteralNode:
		if tk := v.GetToken(); tk == nil || tk.Type != token.LiteralType {
			return line, col
		}
		fl := line + inLine // the content starts on the line after the |
		if fl >= len(c.lines) {
			return line, col
		}
		src := c.lines[fl]
		indent := len(src) - len(strings.TrimLeft(src, " "))
		if lineText != "" {
			indent = len(src) - len(lineText)
		}
		if indent >= 0 && strings.HasSuffix(src, lineText) {
			return fl + 1, indent + 1 + colInLine
		}
	}
	return line, col
}

// Package policyfile reads retry policy files: YAML that composes and
// overrides one of the retry engine's presets, reported problem by
// problem at file:line:column. The engine (rules/retry) knows nothing of
// the format; Policy.Validate's range checks run on the policy as
// composed, and are placed where the file sets the field.
//
// A policy file looks like this:
//
//	name: fewer-retries                # default: the file's name without its extension
//	extends: orchestrator              # a preset (PresetNames); default: none
//	max_retries: 5
//	backoff: {initial: 1s, max: 10s, factor: 2, jitter: full, spread: 0.1}
//	retriable: [rate_limit, server, network]   # replaces the preset's set
//	no_retry: [rate_limit]             # then removes these from it
//	transient_only: [exception]        # retried only when the text is transient
//	per_operation: {test: 3, build: 1} # merged into the preset's
//	max_attempts: 10
//	signature_halt: 3
//	global_cap: 15
//	budget: {ratio: 0.1, max_tokens: 10}
//	cascade: {threshold: 3, window: 5}
//	escalation: {non_improving: 1, patch_apply_failures: 2, max_escalations: 1}
//	max_iterations: 5
//	non_improving_stop: 2
//	diagnosis_after: 2
//	adaptive: {window: 10, threshold: 0.2, max_retries: 3, strategies: {implement: [simplify-prompt, incremental]}}
//	classify: [{class: rate_limit, contains: ["quota exceeded"]}]
//
// Every key is optional and an unknown key is an error. What the file does
// not set keeps the preset's value. backoff may also name a schedule
// (BackoffPreset: none, orchestrator, aws-full, ...); a backoff mapping
// changes only the fields it sets, and jitter: proportional without a spread
// takes the orchestrator's 0.1. budget, cascade, adaptive and escalation
// likewise change only the fields they set; when the preset has no budget,
// cascade or adaptive rule, the unset fields take the modelled systems'
// values (budget 10 tokens and ratio 0.1 as in gRPC's example and the SRE
// book's 10%; cascade 3 within 5, the retry handler; adaptive, orchestr8's
// adaptive retry spec), and null removes the rule. adaptive.strategies
// replaces the stages it names. Durations are Go durations (500ms, 1s,
// 1m30s); counts are whole numbers of 0 or more. classify rules (class, and
// contains, regexp, status or equals) are tried before the defaults.
package policyfile

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/goccy/go-yaml/ast"

	"github.com/orchstat/orchstat/model/failure"
	"github.com/orchstat/orchstat/rules/retry"
	"github.com/orchstat/orchstat/rules/yamlast"
)

const (
	maxPolicyFile = yamlast.MaxFileSize // bytes
	maxWork       = 200000              // nodes read, aliases expanded
	maxProblems   = 100
	maxMerges     = 1000
)

// policyNode is a policy file as written, and the other nodes its
// mappings: each key's value and where it is (yamlast.Fields). A key is a
// field tagged with it, in the order messages list them in, and its read
// in parse's steps.
type policyNode struct {
	Name             *entry `yaml:"name"`
	Extends          *entry `yaml:"extends"`
	MaxRetries       *entry `yaml:"max_retries"`
	Backoff          *entry `yaml:"backoff"`
	Retriable        *entry `yaml:"retriable"`
	NoRetry          *entry `yaml:"no_retry"`
	TransientOnly    *entry `yaml:"transient_only"`
	PerOperation     *entry `yaml:"per_operation"`
	MaxAttempts      *entry `yaml:"max_attempts"`
	SignatureHalt    *entry `yaml:"signature_halt"`
	GlobalCap        *entry `yaml:"global_cap"`
	Budget           *entry `yaml:"budget"`
	Cascade          *entry `yaml:"cascade"`
	Escalation       *entry `yaml:"escalation"`
	MaxIterations    *entry `yaml:"max_iterations"`
	NonImprovingStop *entry `yaml:"non_improving_stop"`
	DiagnosisAfter   *entry `yaml:"diagnosis_after"`
	Adaptive         *entry `yaml:"adaptive"`
	Classify         *entry `yaml:"classify"`
}

type backoffNode struct {
	Initial *entry `yaml:"initial"`
	Max     *entry `yaml:"max"`
	Factor  *entry `yaml:"factor"`
	Jitter  *entry `yaml:"jitter"`
	Spread  *entry `yaml:"spread"`
}

type budgetNode struct {
	MaxTokens *entry `yaml:"max_tokens"`
	Ratio     *entry `yaml:"ratio"`
}

type cascadeNode struct {
	Threshold *entry `yaml:"threshold"`
	Window    *entry `yaml:"window"`
}

type escalationNode struct {
	NonImproving       *entry `yaml:"non_improving"`
	PatchApplyFailures *entry `yaml:"patch_apply_failures"`
	MaxEscalations     *entry `yaml:"max_escalations"`
}

type adaptiveNode struct {
	Window     *entry `yaml:"window"`
	Threshold  *entry `yaml:"threshold"`
	MaxRetries *entry `yaml:"max_retries"`
	Strategies *entry `yaml:"strategies"`
}

type classifyNode struct {
	Class    *entry `yaml:"class"`
	Contains *entry `yaml:"contains"`
	Regexp   *entry `yaml:"regexp"`
	Status   *entry `yaml:"status"`
	Equals   *entry `yaml:"equals"`
}

// Parse reads a policy file. path names it in problems. The error, when
// there is one, is a *retry.PolicyError listing every problem found, each
// with the file, line, column and field.
func Parse(path string, data []byte) (*retry.Policy, error) {
	f := &pfile{path: path, pos: map[string]ast.Node{}, rd: yamlast.Reader{MaxWork: maxWork, MaxMerges: maxMerges}}
	p := f.parse(data)
	if len(f.problems) > 0 {
		slices.SortStableFunc(f.problems, func(a, b retry.Problem) int {
			if (a.Line == 0) != (b.Line == 0) {
				if a.Line == 0 {
					return 1
				}
				return -1
			}
			if a.Line != b.Line {
				return a.Line - b.Line
			}
			return a.Column - b.Column
		})
		return nil, &retry.PolicyError{Problems: f.problems}
	}
	return p, nil
}

type pfile struct {
	path     string
	rd       yamlast.Reader
	problems []retry.Problem
	pos      map[string]ast.Node // field → where the file sets it
	doc      ast.Node
	full     bool // too many problems: stop reporting
}

// parse reads the file's keys over the preset it extends, then checks the
// policy as composed. The keys are read in a fixed order, whatever the
// file's: extends and name, the counts, backoff, the class sets, then the
// other sections.
func (f *pfile) parse(data []byte) *retry.Policy {
	n, ok := f.top(data)
	if !ok {
		return nil
	}
	p := f.base(n)
	f.counts(n, p)
	if n.Backoff != nil {
		f.backoff(*n.Backoff, &p.Backoff)
	}
	f.classSets(n, p)
	f.sections(n, p)
	f.check(p)
	if len(f.problems) > 0 {
		return nil
	}
	return p
}

// top reads the file's one document as a mapping of known keys.
func (f *pfile) top(data []byte) (*policyNode, bool) {
	if len(data) > maxPolicyFile {
		f.problems = append(f.problems, retry.Problem{File: f.path, Message: fmt.Sprintf("a policy file is at most %d bytes; this is %d", maxPolicyFile, len(data))})
		return nil, false
	}
	yf, err := yamlast.Parse(data)
	if err != nil {
		f.yamlError(err)
		return nil, false
	}
	var docs []*ast.DocumentNode
	if yf != nil {
		for _, d := range yf.Docs {
			if d != nil && d.Body != nil {
				docs = append(docs, d)
			}
		}
	}
	if len(docs) == 0 {
		f.add(nil, "", "an empty policy file: write at least extends: <preset>")
		return nil, false
	}
	for _, d := range docs[1:] {
		f.add(d.Body, "", "a policy file holds one YAML document; this is another")
	}
	f.doc = docs[0].Body
	f.rd.Doc = f.doc
	f.rd.Anchors = yamlast.Anchors(docs[0].Body)
	// The keys are read in parse's order, whatever the file's; only the
	// unknown ones are reported in the file's.
	n := &policyNode{}
	var o yamlast.InOrder
	ok := f.fields(docs[0].Body, "", "a policy file is a mapping of keys such as extends and max_retries", n, &o)
	o.Run()
	return n, ok
}

// base is the preset the file extends (none: the zero policy), named by
// the file's name key or else the file's own name.
func (f *pfile) base(n *policyNode) *retry.Policy {
	p := &retry.Policy{}
	if e := n.Extends; e != nil {
		if name, ok := f.str(*e, "extends"); ok {
			base, err := retry.Preset(name)
			if err != nil {
				f.add(e.Raw, "extends", "unknown preset %q%s (%s)", name, yamlast.Suggest(name, retry.PresetNames()), strings.Join(retry.PresetNames(), ", "))
			} else {
				p = base
			}
		}
	}
	p.Name = strings.TrimSuffix(filepath.Base(f.path), filepath.Ext(f.path))
	if e := n.Name; e != nil {
		if name, ok := f.str(*e, "name"); ok {
			if strings.TrimSpace(name) == "" {
				f.add(e.Raw, "name", "must not be empty")
			} else {
				p.Name = name
			}
		}
	}
	return p
}

// counts reads the top-level whole numbers.
func (f *pfile) counts(n *policyNode, p *retry.Policy) {
	maybe(n.MaxRetries, f.intTo(&p.MaxRetries, ""))
	maybe(n.MaxAttempts, f.intTo(&p.MaxAttempts, ""))
	maybe(n.SignatureHalt, f.intTo(&p.SignatureHalt, ""))
	maybe(n.GlobalCap, f.intTo(&p.GlobalCap, ""))
	maybe(n.MaxIterations, f.intTo(&p.MaxIterations, ""))
	maybe(n.NonImprovingStop, f.intTo(&p.NonImprovingStop, ""))
	maybe(n.DiagnosisAfter, f.intTo(&p.DiagnosisAfter, ""))
}

// maybe reads e when the file has it.
func maybe(e *entry, read func(entry)) {
	if e != nil {
		read(*e)
	}
}

// classSets reads which classes are retried: retriable replaces the
// preset's set, no_retry then removes from it, transient_only replaces
// the preset's.
func (f *pfile) classSets(n *policyNode, p *retry.Policy) {
	if e := n.Retriable; e != nil {
		if cs, ok := f.classes(*e, "retriable"); ok {
			p.Retriable = classSet(cs...)
		}
	}
	if e := n.NoRetry; e != nil {
		if cs, ok := f.classes(*e, "no_retry"); ok {
			p.Retriable = maps.Clone(p.Retriable)
			for _, c := range cs {
				delete(p.Retriable, c)
			}
		}
	}
	if e := n.TransientOnly; e != nil {
		if cs, ok := f.classes(*e, "transient_only"); ok {
			p.TransientOnly = classSet(cs...)
		}
	}
}

// sections reads the mappings and lists that change a part of the policy.
func (f *pfile) sections(n *policyNode, p *retry.Policy) {
	if n.PerOperation != nil {
		f.perOperation(*n.PerOperation, p)
	}
	if n.Escalation != nil {
		f.escalation(*n.Escalation, &p.Escalation)
	}
	if n.Budget != nil {
		p.Budget = f.budget(*n.Budget, p.Budget)
	}
	if n.Cascade != nil {
		p.Cascade = f.cascade(*n.Cascade, p.Cascade)
	}
	if n.Adaptive != nil {
		p.Adaptive = f.adaptive(*n.Adaptive, p.Adaptive)
	}
	if n.Classify != nil {
		p.Classify = append(f.rules(*n.Classify), p.Classify...)
	}
}

// check runs the engine's range checks on the policy as composed, placing
// each problem where the file sets the field (or the closest enclosing key
// it sets).
func (f *pfile) check(p *retry.Policy) {
	var pe *retry.PolicyError
	if !errors.As(p.Validate(), &pe) {
		return
	}
	for _, pr := range pe.Problems {
		f.add(f.position(pr.Field), pr.Field, "%s", pr.Message)
	}
}

func classSet(cs ...failure.Class) map[failure.Class]bool {
	m := make(map[failure.Class]bool, len(cs))
	for _, c := range cs {
		m[c] = true
	}
	return m
}

// position is the node where the file sets field, or the nearest
// enclosing field it sets, or the document.
func (f *pfile) position(field string) ast.Node {
	for field != "" {
		if n, ok := f.pos[field]; ok {
			return n
		}
		i := strings.LastIndexAny(field, ".[")
		if i < 0 {
			break
		}
		field = field[:i]
	}
	if n, ok := f.pos["extends"]; ok {
		return n
	}
	return f.doc
}

func (f *pfile) yamlError(err error) {
	msg, line, col := yamlast.ErrorAt(err)
	f.problems = append(f.problems, retry.Problem{File: f.path, Line: line, Column: col, Message: msg})
}

// The document is read through a yamlast.Reader; these say it briefly.
type entry = yamlast.Entry

func (f *pfile) report(at ast.Node, field, msg string) { f.add(at, field, "%s", msg) }
func (f *pfile) spend() bool                           { return f.rd.Spend(f.report) }
func (f *pfile) resolve(n ast.Node) ast.Node           { return f.rd.Resolve(n) }
func (f *pfile) mapping(raw ast.Node, field, msg string) ([]entry, bool) {
	return f.rd.Mapping(raw, field, msg, f.report)
}

func (f *pfile) add(n ast.Node, field, format string, args ...any) {
	if f.full {
		return
	}
	line, col := yamlast.Pos(n)
	if len(f.problems) >= maxProblems {
		f.full = true
		f.problems = append(f.problems, retry.Problem{File: f.path, Line: line, Column: col, Message: "too many problems; stopping here"})
		return
	}
	f.problems = append(f.problems, retry.Problem{File: f.path, Line: line, Column: col, Field: field, Message: fmt.Sprintf(format, args...)})
}

func isNull(n ast.Node) bool {
	_, ok := n.(*ast.NullNode)
	return ok || n == nil
}

// str reads a string value.
func (f *pfile) str(e entry, field string) (string, bool) {
	f.pos[field] = e.Raw
	switch v := e.Value.(type) {
	case *ast.StringNode:
		return v.Value, true
	case *ast.LiteralNode:
		s, _ := yamlast.Scalar(v)
		return s, true
	}
	f.add(e.Raw, field, "must be a string, got %s", describe(e.Value))
	return "", false
}

// int reads a whole number; range checks come later.
func (f *pfile) int(e entry, field string) (int, bool) {
	f.pos[field] = e.Raw
	return f.intNode(e.Value, e.Raw, field)
}

func (f *pfile) intNode(n, raw ast.Node, field string) (int, bool) {
	if v, ok := n.(*ast.IntegerNode); ok {
		switch x := v.Value.(type) {
		case int64:
			if x >= math.MinInt32 && x <= math.MaxInt32 {
				return int(x), true
			}
		case uint64:
			if x <= math.MaxInt32 {
				return int(x), true
			}
		}
		f.add(raw, field, "%s is out of range", tokenText(n))
		return 0, false
	}
	f.add(raw, field, "must be a whole number, got %s", describe(n))
	return 0, false
}

// float reads a number, whole or not.
func (f *pfile) float(e entry, field string) (float64, bool) {
	f.pos[field] = e.Raw
	switch v := e.Value.(type) {
	case *ast.FloatNode:
		return v.Value, true
	case *ast.IntegerNode:
		switch x := v.Value.(type) {
		case int64:
			return float64(x), true
		case uint64:
			return float64(x), true
		}
	case *ast.InfinityNode, *ast.NanNode:
		f.add(e.Raw, field, "must be a finite number, got %s", tokenText(e.Value))
		return 0, false
	}
	f.add(e.Raw, field, "must be a number, got %s", describe(e.Value))
	return 0, false
}

// duration reads a Go duration such as 500ms or 1s; 0 may be written
// without a unit.
func (f *pfile) duration(e entry, field string) (time.Duration, bool) {
	f.pos[field] = e.Raw
	if v, ok := e.Value.(*ast.IntegerNode); ok {
		if x, ok := v.Value.(int64); ok && x == 0 {
			return 0, true
		}
		if x, ok := v.Value.(uint64); ok && x == 0 {
			return 0, true
		}
		f.add(e.Raw, field, "%s has no unit: write a duration such as 500ms or 1s", tokenText(e.Value))
		return 0, false
	}
	s, ok := yamlast.Scalar(e.Value)
	if !ok || !yamlast.IsString(e.Value) {
		f.add(e.Raw, field, "must be a duration such as 500ms or 1s, got %s", describe(e.Value))
		return 0, false
	}
	d, err := time.ParseDuration(strings.TrimSpace(s))
	if err != nil {
		f.add(e.Raw, field, "%q is not a duration (write 500ms, 1s, 1m30s)", s)
		return 0, false
	}
	return d, true
}

func tokenText(n ast.Node) string {
	if n != nil {
		if tk := n.GetToken(); tk != nil {
			return tk.Value
		}
	}
	return "?"
}

// describe names what a node is, for "must be X, got Y".
func describe(n ast.Node) string {
	switch v := n.(type) {
	case nil, *ast.NullNode:
		return "nothing"
	case *ast.MappingNode:
		return "a mapping"
	case *ast.SequenceNode:
		return "a list"
	case *ast.StringNode:
		s := v.Value
		if len(s) > 40 {
			s = s[:40] + "..."
		}
		return strconv.Quote(s)
	case *ast.LiteralNode:
		return "a block of text"
	case *ast.BoolNode:
		return "a boolean"
	}
	return tokenText(n)
}

// list reads a sequence, each item resolved; raw items keep positions.
func (f *pfile) list(e entry, field string) ([]ast.Node, []ast.Node, bool) {
	f.pos[field] = e.Raw
	seq, ok := e.Value.(*ast.SequenceNode)
	if !ok {
		if isNull(e.Value) {
			return nil, nil, true // an empty list
		}
		f.add(e.Raw, field, "must be a list, got %s", describe(e.Value))
		return nil, nil, false
	}
	var vals, raws []ast.Node
	for _, it := range seq.Values {
		if !f.spend() {
			return nil, nil, false
		}
		vals = append(vals, f.resolve(it))
		raws = append(raws, it)
	}
	return vals, raws, true
}

// strings reads a list of strings. Items that are not strings are
// reported and stand in as "?", so the others keep their indexes.
func (f *pfile) strings(e entry, field string) ([]string, bool) {
	vals, raws, ok := f.list(e, field)
	if !ok {
		return nil, false
	}
	out := make([]string, len(vals))
	for i, v := range vals {
		fi := field + "[" + strconv.Itoa(i) + "]"
		f.pos[fi] = raws[i]
		s, isScalar := yamlast.Scalar(v)
		if !isScalar || !yamlast.IsString(v) {
			f.add(orNode(raws[i], e.Raw), fi, "must be a string, got %s", describe(v))
			out[i], ok = "?", false
			continue
		}
		out[i] = s
	}
	return out, ok
}

// classes reads a list of class names, reporting each that is unknown.
func (f *pfile) classes(e entry, field string) ([]failure.Class, bool) {
	vals, raws, ok := f.list(e, field)
	if !ok {
		return nil, false
	}
	var out []failure.Class
	for i, v := range vals {
		fi := field + "[" + strconv.Itoa(i) + "]"
		s, isScalar := yamlast.Scalar(v)
		switch {
		case !isScalar || !yamlast.IsString(v):
			f.add(orNode(raws[i], e.Raw), fi, "must be a class name, got %s", describe(v))
			ok = false
		case !failure.Class(s).Known():
			f.add(orNode(raws[i], e.Raw), fi, "unknown class %q%s (%s)", s, yamlast.Suggest(s, failure.ClassNames()), strings.Join(failure.ClassNames(), ", "))
			ok = false
		default:
			out = append(out, failure.Class(s))
		}
	}
	return out, ok
}

// fields reads the mapping at raw into dst, a struct of entries by key
// (yamlast.Fields), and holds in o the report of each key it does not
// know. It is false when raw is not a mapping, reported with msg.
func (f *pfile) fields(raw ast.Node, field, msg string, dst any, o *yamlast.InOrder) bool {
	unknown, ok := f.rd.Fields(raw, field, msg, f.report, dst)
	names := yamlast.Keys(dst)
	o.Each(unknown, func(k entry) {
		f.add(k.KeyNode, yamlast.JoinField(field, k.Key), "unknown key%s (allowed: %s)", yamlast.Suggest(k.Key, names), strings.Join(names, ", "))
	})
	return ok
}

// intTo, floatTo and durationTo read an entry of the mapping parent
// names ("" at the top) into dst.
func (f *pfile) intTo(dst *int, parent string) func(entry) {
	return func(e entry) {
		if n, ok := f.int(e, yamlast.JoinField(parent, e.Key)); ok {
			*dst = n
		}
	}
}

func (f *pfile) floatTo(dst *float64, parent string) func(entry) {
	return func(e entry) {
		if x, ok := f.float(e, yamlast.JoinField(parent, e.Key)); ok {
			*dst = x
		}
	}
}

func (f *pfile) durationTo(dst *time.Duration, parent string) func(entry) {
	return func(e entry) {
		if d, ok := f.duration(e, yamlast.JoinField(parent, e.Key)); ok {
			*dst = d
		}
	}
}

// mappingOf is "a mapping of " the keys of dst, a node.
func mappingOf(dst any) string { return "a mapping of " + strings.Join(yamlast.Keys(dst), ", ") }

func (f *pfile) escalation(e entry, esc *retry.Escalation) {
	f.pos["escalation"] = e.Raw
	var n escalationNode
	var o yamlast.InOrder
	f.fields(e.Raw, "escalation", "escalation is "+mappingOf(&n), &n, &o)
	o.Add(n.NonImproving, f.intTo(&esc.NonImproving, "escalation"))
	o.Add(n.PatchApplyFailures, f.intTo(&esc.PatchApplyFailures, "escalation"))
	o.Add(n.MaxEscalations, f.intTo(&esc.MaxEscalations, "escalation"))
	o.Run()
}

func (f *pfile) backoff(e entry, b *retry.Backoff) {
	f.pos["backoff"] = e.Raw
	var n backoffNode
	if name, ok := yamlast.Scalar(e.Value); ok && yamlast.IsString(e.Value) {
		named, err := retry.BackoffPreset(name)
		if err != nil {
			f.add(e.Raw, "backoff", "unknown backoff %q%s (%s, or %s)",
				name, yamlast.Suggest(name, retry.BackoffNames()), strings.Join(retry.BackoffNames(), ", "), mappingOf(&n))
			return
		}
		*b = named
		return
	}
	var o yamlast.InOrder
	if !f.fields(e.Raw, "backoff", "backoff is a schedule's name ("+strings.Join(retry.BackoffNames(), ", ")+") or "+mappingOf(&n), &n, &o) {
		return // not a mapping: no entries, nothing held
	}
	nb := *b
	spreadSet := false
	o.Add(n.Initial, f.durationTo(&nb.Initial, "backoff"))
	o.Add(n.Max, f.durationTo(&nb.Max, "backoff"))
	o.Add(n.Factor, f.floatTo(&nb.Factor, "backoff"))
	o.Add(n.Jitter, func(k entry) {
		if s, ok := f.str(k, "backoff.jitter"); ok {
			if j := slices.Index(retry.JitterNames(), s); j >= 0 {
				nb.Jitter = retry.Jitter(j)
			} else {
				f.add(k.Raw, "backoff.jitter", "unknown jitter %q%s (%s)", s, yamlast.Suggest(s, retry.JitterNames()), strings.Join(retry.JitterNames(), ", "))
			}
		}
	})
	o.Add(n.Spread, func(k entry) {
		if x, ok := f.float(k, "backoff.spread"); ok {
			nb.Spread, spreadSet = x, true
		}
	})
	o.Run()
	if nb.Jitter == retry.JitterProportional && !spreadSet && nb.Spread == 0 {
		nb.Spread = retry.Orchestrator.Spread
	}
	*b = nb
}

func (f *pfile) perOperation(e entry, p *retry.Policy) {
	f.pos["per_operation"] = e.Raw
	es, ok := f.mapping(e.Raw, "per_operation", "per_operation is a mapping of operation: retries, such as {test: 3, build: 1}")
	if !ok {
		return
	}
	ops := make(map[string]int, len(p.PerOperation)+len(es))
	for k, v := range p.PerOperation {
		ops[k] = v
	}
	for _, k := range es {
		fk := "per_operation." + k.Key
		if strings.TrimSpace(k.Key) == "" {
			f.add(k.KeyNode, "per_operation", "an operation needs a name")
			continue
		}
		if n, ok := f.int(k, fk); ok {
			ops[k.Key] = n
		}
	}
	p.PerOperation = ops
}

func (f *pfile) budget(e entry, base *retry.Budget) *retry.Budget {
	f.pos["budget"] = e.Raw
	if isNull(e.Value) {
		return nil
	}
	b := retry.Budget{MaxTokens: 10, Ratio: 0.1}
	if base != nil {
		b = *base
	}
	var n budgetNode
	var o yamlast.InOrder
	ok := f.fields(e.Raw, "budget", "budget is a mapping of max_tokens and ratio, or null for none", &n, &o)
	o.Add(n.MaxTokens, f.floatTo(&b.MaxTokens, "budget"))
	o.Add(n.Ratio, f.floatTo(&b.Ratio, "budget"))
	o.Run()
	if !ok {
		return base
	}
	return &b
}

// cascade's unset fields take the retry handler's values.
func (f *pfile) cascade(e entry, base *retry.Cascade) *retry.Cascade {
	f.pos["cascade"] = e.Raw
	if isNull(e.Value) {
		return nil
	}
	if base == nil {
		seed, _ := retry.Preset("retry-handler")
		base = seed.Cascade
	}
	c := *base
	var n cascadeNode
	var o yamlast.InOrder
	f.fields(e.Raw, "cascade", "cascade is "+mappingOf(&n), &n, &o)
	o.Add(n.Threshold, f.intTo(&c.Threshold, "cascade"))
	o.Add(n.Window, f.intTo(&c.Window, "cascade"))
	o.Run()
	return &c
}

// adaptive's unset fields take orchestr8's values, the adaptive preset's.
func (f *pfile) adaptive(e entry, base *retry.Adaptive) *retry.Adaptive {
	f.pos["adaptive"] = e.Raw
	if isNull(e.Value) {
		return nil
	}
	if base == nil {
		seed, _ := retry.Preset("adaptive")
		base = seed.Adaptive
	}
	a := *base
	var n adaptiveNode
	var o yamlast.InOrder
	ok := f.fields(e.Raw, "adaptive", "adaptive is "+mappingOf(&n)+", or null for none", &n, &o)
	o.Add(n.Window, f.intTo(&a.Window, "adaptive"))
	o.Add(n.Threshold, f.floatTo(&a.Threshold, "adaptive"))
	o.Add(n.MaxRetries, f.intTo(&a.MaxRetries, "adaptive"))
	o.Add(n.Strategies, func(k entry) { a.Strategies = f.strategies(k, a.Strategies) })
	o.Run()
	if !ok {
		return base
	}
	return &a
}

// strategies reads adaptive.strategies over base: the stages it names
// replace base's.
func (f *pfile) strategies(k entry, base map[string][]string) map[string][]string {
	const fk = "adaptive.strategies"
	f.pos[fk] = k.Raw
	ss, ok := f.mapping(k.Raw, fk, "adaptive.strategies is a mapping of stage: [strategy for attempt 1, 2, ...]")
	if !ok {
		return base
	}
	st := make(map[string][]string, len(base)+len(ss))
	for stage, v := range base {
		st[stage] = slices.Clone(v)
	}
	for _, s := range ss {
		if list, ok := f.strings(s, fk+"."+s.Key); list != nil || ok {
			st[s.Key] = list
		}
	}
	return st
}

func (f *pfile) rules(e entry) []failure.Rule {
	vals, raws, ok := f.list(e, "classify")
	if !ok {
		return nil
	}
	var out []failure.Rule
	for i := range vals {
		field := "classify[" + strconv.Itoa(i) + "]"
		f.pos[field] = raws[i]
		var n classifyNode
		var o yamlast.InOrder
		if !f.fields(raws[i], field, "a classify rule is a mapping of class and contains, regexp, status or equals", &n, &o) {
			// Reported; a stand-in keeps later rules' indexes, which name
			// them in problems. The policy is not returned.
			out = append(out, failure.Rule{Class: failure.ClassUnknown, Equals: []string{"-"}})
			continue
		}
		var r failure.Rule
		o.Add(n.Class, func(k entry) {
			r.Class = failure.ClassUnknown // when not a string: reported; keep the rule's index
			if s, ok := f.str(k, field+".class"); ok {
				r.Class = failure.Class(s)
			}
		})
		o.Add(n.Contains, func(k entry) { r.Contains, _ = f.stringOrList(k, field+".contains") })
		o.Add(n.Regexp, func(k entry) { r.Regexp, _ = f.str(k, field+".regexp") })
		o.Add(n.Status, func(k entry) { r.Status = f.statuses(k, field+".status") })
		o.Add(n.Equals, func(k entry) { r.Equals, _ = f.stringOrList(k, field+".equals") })
		o.Run()
		out = append(out, r)
	}
	return out
}

// stringOrList reads one string or a list of them.
func (f *pfile) stringOrList(e entry, field string) ([]string, bool) {
	if yamlast.IsString(e.Value) {
		f.pos[field] = e.Raw
		s, _ := yamlast.Scalar(e.Value)
		return []string{s}, true
	}
	return f.strings(e, field)
}

// statuses reads HTTP statuses written as numbers (429) or strings (5xx),
// one or a list.
func (f *pfile) statuses(e entry, field string) []string {
	f.pos[field] = e.Raw
	vals, raws := []ast.Node{e.Value}, []ast.Node{e.Raw}
	list := false
	if seq, ok := e.Value.(*ast.SequenceNode); ok {
		vals, raws, list = nil, nil, true
		for _, it := range seq.Values {
			if !f.spend() {
				return nil
			}
			vals, raws = append(vals, f.resolve(it)), append(raws, it)
		}
	}
	var out []string
	for i, v := range vals {
		fi := field
		if list {
			fi = field + "[" + strconv.Itoa(i) + "]"
			f.pos[fi] = raws[i]
		}
		switch v.(type) {
		case *ast.IntegerNode, *ast.StringNode:
			s, _ := yamlast.Scalar(v)
			out = append(out, s)
		default:
			f.add(orNode(raws[i], e.Raw), fi, "must be a status like 429 or 5xx, got %s", describe(v))
			out = append(out, "4xx") // a stand-in that keeps the indexes; the policy is not returned
		}
	}
	return out
}

func orNode(n, fallback ast.Node) ast.Node {
	if n == nil {
		return fallback
	}
	return n
}

package alerting

import (
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"text/template"
	"text/template/parse"

	"github.com/orchstat/orchstat/rules/yamlast"
)

// MaxAnnotation caps the text one annotation expands to, and what any
// one function in it (printf, print, js, ...) may build.
const MaxAnnotation = 64 << 10

// expand runs t on data into at most MaxAnnotation bytes. text/template
// turns most panics into errors but lets runtime errors through; this
// turns those into errors too.
func expand(t *template.Template, data TemplateData) (text string, err error) {
	defer func() {
		if r := recover(); r != nil {
			text, err = "", fmt.Errorf("template failed: %v", r)
		}
	}()
	w := &limitedBuilder{}
	if err := t.Execute(w, data); err != nil {
		return "", err
	}
	return w.String(), nil
}

var errTooLong = fmt.Errorf("expands to more than %d bytes (64 KiB)", MaxAnnotation)

// limitedBuilder is a strings.Builder that refuses to grow past
// MaxAnnotation, which stops the template.
type limitedBuilder struct{ strings.Builder }

func (b *limitedBuilder) Write(p []byte) (int, error) {
	if b.Len()+len(p) > MaxAnnotation {
		return 0, errTooLong
	}
	return b.Builder.Write(p)
}

// templateFuncs replace text/template's functions that build text with
// ones that refuse, before building, text past MaxAnnotation: the writer
// sees text only once a function has built all of it, and printf
// "%0999999999d" builds a gigabyte.
var templateFuncs = template.FuncMap{
	"printf": func(format string, args ...any) (string, error) {
		if err := fitsAnnotation(len(format)+formatWidths(format), args, 1); err != nil {
			return "", err
		}
		return fmt.Sprintf(format, args...), nil
	},
	"print": func(args ...any) (string, error) {
		if err := fitsAnnotation(0, args, 1); err != nil {
			return "", err
		}
		return fmt.Sprint(args...), nil
	},
	"println": func(args ...any) (string, error) {
		if err := fitsAnnotation(len(args)+1, args, 1); err != nil {
			return "", err
		}
		return fmt.Sprintln(args...), nil
	},
	"html":     escaper(template.HTMLEscaper, 6),
	"js":       escaper(template.JSEscaper, 6),
	"urlquery": escaper(template.URLQueryEscaper, 3),
}

func escaper(f func(...any) string, grow int) func(...any) (string, error) {
	return func(args ...any) (string, error) {
		if err := fitsAnnotation(0, args, grow); err != nil {
			return "", err
		}
		return f(args...), nil
	}
}

// fitsAnnotation checks that base bytes and args printed, each byte
// growing up to grow times, fit in MaxAnnotation. Templates see numbers,
// text and the labels, so that is all it needs to size.
func fitsAnnotation(base int, args []any, grow int) error {
	n := base
	for _, a := range args {
		switch v := a.(type) {
		case string:
			n += len(v) * grow
		case map[string]string:
			for k, s := range v {
				n += (len(k) + len(s) + 2) * grow
			}
		default:
			n += 32 * grow
		}
		if n > MaxAnnotation {
			return errTooLong
		}
	}
	return nil
}

// formatWidths adds up the widths and precisions written in a printf
// format (%08.3f: 11), which pad the text that much.
func formatWidths(format string) int {
	n, num := 0, 0
	for i := 0; i < len(format); i++ {
		c := format[i]
		if c >= '0' && c <= '9' {
			if num < MaxAnnotation {
				num = num*10 + int(c-'0')
			}
			continue
		}
		n += num
		num = 0
		if n > MaxAnnotation {
			break
		}
	}
	return n + num
}

func (c *checker) templates(rn string, e entry, threshold *float64, by []string, isSQL bool) map[string]*template.Template {
	entries := entriesQuiet(c, e.Value)
	out := map[string]*template.Template{}
	for _, kv := range entries {
		s, ok := yamlast.Scalar(kv.Value)
		if !ok {
			continue // already reported
		}
		field := "annotations." + kv.Key
		t, err := template.New(kv.Key).Funcs(templateFuncs).Parse(s)
		if err == nil {
			if bad, msg := boundedTemplate(t.Tree.Root); bad != nil {
				// In text/template's own error format, so templateError can
				// place it within the YAML value.
				loc, _ := t.Tree.ErrorContext(bad)
				err = fmt.Errorf("template: %s: %s", loc, msg)
			}
		}
		if err != nil {
			line, col, msg := c.templateError(kv, s, err)
			c.addAt(line, col, rn, field, "%s (templates see .Value, .Numerator, .Denominator, .Threshold, .NoPrice and .Labels)", msg)
			continue
		}
		if msg, always := probeTemplate(t, threshold, by, isSQL); msg != "" {
			n := len(c.problems)
			c.add(kv.Raw, rn, field, "%s", msg)
			if always {
				continue // too large for any data: it would fail every time
			}
			if len(c.problems) > n {
				c.problems[n].Warning = true
			}
		}
		out[kv.Key] = t
	}
	return out
}

// probeTemplate expands t on sample data as a check would: the rule's by
// labels present, values zero and not. A template that fails there
// (index .Labels.provider 99) would fail at every check that fires it.
// The failure of labels that are empty or absent is left to the data,
// and so is every failure of a sql rule but its size: its labels are its
// query's columns, which the samples cannot know.
//
// always is set when the failure is the template's size, which no data
// changes.
func probeTemplate(t *template.Template, threshold *float64, by []string, isSQL bool) (msg string, always bool) {
	r := &Rule{Threshold: threshold}
	for _, s := range samples(threshold, by) {
		if len(by) > 0 && s.Labels[by[0]] != "sample" {
			continue
		}
		env := r.env(s)
		_, err := expand(t, TemplateData{Value: env.Value, Numerator: env.Numerator, Denominator: env.Denominator,
			Threshold: env.Threshold, NoPrice: env.NoPrice, Labels: env.Labels})
		if err != nil && (!isSQL || errors.Is(err, errTooLong)) {
			return fmt.Sprintf("fails on sample data (value %g, labels %v): %v", env.Value, s.Labels, templateMessage(err)), errors.Is(err, errTooLong)
		}
	}
	return "", false
}

// templateMessage is a template execution error without text/template's
// "template: name:1:3: executing ..." prefix, which names a place in the
// value rather than the file.
func templateMessage(err error) string {
	msg := err.Error()
	if m := execErrRe.FindStringSubmatch(msg); m != nil {
		return m[1]
	}
	return msg
}

var execErrRe = regexp.MustCompile(`^template: .*?: executing "[^"]*" at <[^>]*>: (.*)$`)

var templateErrRe = regexp.MustCompile(`^template: [^:]*:(\d+)(?::(\d+))?: (.*)$`)

func (c *checker) templateError(kv entry, s string, err error) (int, int, string) {
	line, col := yamlast.Pos(kv.Raw)
	msg := err.Error()
	m := templateErrRe.FindStringSubmatch(msg)
	if m == nil {
		return line, col, msg
	}
	msg = m[3]
	if m[2] == "" {
		return line, col, msg
	}
	l, _ := strconv.Atoi(m[1])
	cc, _ := strconv.Atoi(m[2])
	// Find byte offset of line l, column cc (both from text/template, the
	// column counted in bytes from 0).
	off := 0
	for i := 1; i < l; i++ {
		j := strings.IndexByte(s[off:], '\n')
		if j < 0 {
			return line, col, msg
		}
		off += j + 1
	}
	line, col = c.valuePos(kv, s, min(off+cc, len(s)))
	return line, col, msg
}

// boundedTemplate checks an annotation template before it is run: it may
// use only the documented fields, range only over .Labels and at most
// maxRangeNesting deep, and no {{template}}, {{define}} or call, so
// expanding it always ends quickly, and templateFuncs and MaxAnnotation
// bound what it builds. Only then is it safe to run it on sample data;
// {{range 99999999999}} would hang orchstat, and so would ranges over the
// labels nested with {{with $}} a thousand deep. It returns the offending
// node and why.
func boundedTemplate(n parse.Node) (parse.Node, string) { return boundedIn(n, 0) }

// maxRangeNesting bounds the ranges inside ranges: each multiplies the
// work by the number of labels.
const maxRangeNesting = 2

func boundedIn(n parse.Node, ranges int) (parse.Node, string) {
	switch n := n.(type) {
	case nil, *parse.TextNode, *parse.BreakNode, *parse.ContinueNode, *parse.CommentNode:
		return nil, ""
	case *parse.ListNode:
		if n == nil {
			return nil, ""
		}
		for _, c := range n.Nodes {
			if bad, msg := boundedIn(c, ranges); bad != nil {
				return bad, msg
			}
		}
		return nil, ""
	case *parse.ActionNode:
		return boundedPipe(n.Pipe)
	case *parse.IfNode:
		return boundedBranch(&n.BranchNode, ranges)
	case *parse.WithNode:
		return boundedBranch(&n.BranchNode, ranges)
	case *parse.RangeNode:
		ok := len(n.Pipe.Cmds) == 1 && len(n.Pipe.Cmds[0].Args) == 1
		if ok {
			f, isField := n.Pipe.Cmds[0].Args[0].(*parse.FieldNode)
			ok = isField && len(f.Ident) == 1 && f.Ident[0] == "Labels"
		}
		if !ok {
			return n, "range may only go over .Labels"
		}
		if ranges >= maxRangeNesting {
			return n, fmt.Sprintf("ranges may nest at most %d deep", maxRangeNesting)
		}
		return boundedBranch(&n.BranchNode, ranges+1)
	case *parse.TemplateNode:
		return n, "{{template}} is not allowed in annotations"
	default:
		return n, "unsupported template construct"
	}
}

func boundedBranch(b *parse.BranchNode, ranges int) (parse.Node, string) {
	if bad, msg := boundedPipe(b.Pipe); bad != nil {
		return bad, msg
	}
	if bad, msg := boundedIn(b.List, ranges); bad != nil {
		return bad, msg
	}
	return boundedIn(b.ElseList, ranges)
}

var templateFields = map[string]bool{"Value": true, "Numerator": true, "Denominator": true, "Threshold": true, "NoPrice": true, "Labels": true}

func boundedPipe(p *parse.PipeNode) (parse.Node, string) {
	if p == nil {
		return nil, ""
	}
	for _, c := range p.Cmds {
		for _, a := range c.Args {
			switch a := a.(type) {
			case *parse.FieldNode:
				if !templateFields[a.Ident[0]] {
					return a, "unknown field ." + a.Ident[0]
				}
			case *parse.IdentifierNode:
				if a.Ident == "call" {
					return a, "call is not available: templates see no functions to call"
				}
			case *parse.PipeNode:
				if bad, msg := boundedPipe(a); bad != nil {
					return bad, msg
				}
			case *parse.ChainNode:
				if pn, ok := a.Node.(*parse.PipeNode); ok {
					if bad, msg := boundedPipe(pn); bad != nil {
						return bad, msg
					}
				}
			}
		}
	}
	return nil, ""
}

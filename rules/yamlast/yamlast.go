// Package yamlast holds what orchstat's YAML file checkers share: a parse
// that cannot panic, positions of AST nodes, anchors, "did you mean"
// suggestions, and the one walk that decodes a mapping into a struct of
// its entries by key (Fields), whose checks run in the file's order
// (InOrder). Rule files (package rules) and policy files
// (rules/retry/policyfile) both report problems at file:line:column
// through it.
package yamlast

import (
	"errors"
	"fmt"

	"github.com/goccy/go-yaml"
	"github.com/goccy/go-yaml/ast"
	"github.com/goccy/go-yaml/parser"

	"github.com/orchstat/orchstat/rules/internal/names"
)

// Parse parses data, turning a panic in the parser into an error so a
// hostile file cannot take the caller down. Data larger than MaxFileSize
// (a *SizeError) or nested deeper than MaxDepth (a *DepthError) is
// refused before the parser, whose cost grows faster than the data, sees
// it.
func Parse(data []byte) (f *ast.File, err error) {
	if err := checkInput(data); err != nil {
		return nil, err
	}
	defer func() {
		if r := recover(); r != nil {
			f, err = nil, fmt.Errorf("YAML parser failed: %v", r)
		}
	}()
	return parser.ParseBytes(data, 0)
}

// ErrorAt splits a parse error into its message ("YAML: ...") and
// position, when the parser gave one.
func ErrorAt(err error) (msg string, line, col int) {
	var de *DepthError
	if errors.As(err, &de) {
		return de.Message(), de.Line, de.Column
	}
	var xe *ExpansionError
	if errors.As(err, &xe) {
		return xe.Message(), xe.Line, xe.Column
	}
	var se *SizeError
	if errors.As(err, &se) {
		return se.Message(), 0, 0
	}
	var ye yaml.Error
	if !errors.As(err, &ye) {
		return err.Error(), 0, 0
	}
	if tk := ye.GetToken(); tk != nil && tk.Position != nil {
		line, col = tk.Position.Line, tk.Position.Column
	}
	return "YAML: " + ye.GetMessage(), line, col
}

// Anchors collects a document's anchors by name, for resolving aliases.
func Anchors(root ast.Node) map[string]ast.Node {
	a := anchors{}
	ast.Walk(a, root)
	return a
}

type anchors map[string]ast.Node

func (a anchors) Visit(n ast.Node) ast.Visitor {
	if an, ok := n.(*ast.AnchorNode); ok && an.Name != nil {
		a[an.Name.String()] = an.Value
	}
	return a
}

// Pos is where a node is in the file, 0, 0 when unknown. A block mapping
// is where its first key is, and a key-value pair where its key is.
func Pos(n ast.Node) (line, col int) {
	if n == nil {
		return 0, 0
	}
	if m, ok := n.(*ast.MappingNode); ok && len(m.Values) > 0 && m.Values[0] != nil && !m.IsFlowStyle {
		n = m.Values[0]
	}
	if mv, ok := n.(*ast.MappingValueNode); ok && mv.Key != nil {
		n = mv.Key
	}
	tk := n.GetToken()
	if tk == nil || tk.Position == nil {
		return 0, 0
	}
	return tk.Position.Line, tk.Position.Column
}

// Suggest is "; did you mean "x"?" for the known name closest to got
// (within two edits), or "" (names.Suggest).
func Suggest(got string, known []string) string { return names.Suggest(got, known) }

// Closest is the known name nearest got, within two edits, or ""
// (names.Closest).
func Closest(got string, known []string) string { return names.Closest(got, known) }

// Distance is the Levenshtein distance between a and b in runes, capped
// at 64 (names.Distance).
func Distance(a, b string) int { return names.Distance(a, b) }

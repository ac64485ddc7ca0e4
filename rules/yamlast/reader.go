package yamlast

import (
	"fmt"

	"github.com/goccy/go-yaml/ast"
)

// Entry is one key of a mapping.
type Entry struct {
	Key     string
	KeyNode ast.Node
	Value   ast.Node // resolved through anchors and aliases; nil when absent
	Raw     ast.Node // as written, for positions (the key when there is no value)
	// Index is the entry's place among its mapping's, merged keys last.
	Index int
}

// Reader reads one document's nodes. It resolves anchors and aliases,
// expands merge keys (<<), and bounds the work a hostile file can cause:
// aliases can make a small file expand exponentially.
type Reader struct {
	Anchors map[string]ast.Node
	// MaxWork bounds the nodes read (0: no bound); MaxMerges the mappings
	// merged in with <<.
	MaxWork, MaxMerges int
	// Doc is where a problem about the whole file is reported.
	Doc ast.Node

	work, merges int
	deep         bool
}

// Report is told of a problem at a node; field names where in the file.
type Report func(at ast.Node, field, msg string)

// Spend counts one node read, and reports false (once through report)
// when the file has used up MaxWork.
func (r *Reader) Spend(report Report) bool {
	r.work++
	if r.MaxWork > 0 && r.work == r.MaxWork+1 {
		report(r.Doc, "", fmt.Sprintf("the file expands (through aliases) to more than %d values", r.MaxWork))
	}
	return r.MaxWork <= 0 || r.work <= r.MaxWork
}

// Resolve looks through tags, anchors and aliases to the node they stand
// for; nil when they lead nowhere.
func (r *Reader) Resolve(n ast.Node) ast.Node {
	for i := 0; i < 32 && n != nil; i++ {
		switch v := n.(type) {
		case *ast.TagNode:
			n = v.Value
		case *ast.AnchorNode:
			n = v.Value
		case *ast.AliasNode:
			if v.Value == nil {
				return nil
			}
			n = r.Anchors[v.Value.String()]
		case *ast.MappingKeyNode:
			n = v.Value
		default:
			return n
		}
	}
	if n != nil {
		switch n.(type) {
		case *ast.TagNode, *ast.AnchorNode, *ast.AliasNode, *ast.MappingKeyNode:
			return nil // a chain too long to follow
		}
	}
	return n
}

// Mapping returns raw's entries in order, with merge keys expanded (keys
// written in the mapping win over merged ones) and duplicate keys
// reported. When raw is not a mapping it reports msg.
func (r *Reader) Mapping(raw ast.Node, field, msg string, report Report) ([]Entry, bool) {
	return r.mapping(raw, field, msg, report, 0)
}

func (r *Reader) mapping(raw ast.Node, field, msg string, report Report, depth int) ([]Entry, bool) {
	if !r.Spend(report) {
		return nil, false
	}
	n := r.Resolve(raw)
	m, ok := n.(*ast.MappingNode)
	if !ok {
		report(orNode(n, raw), field, msg)
		return nil, false
	}
	var out, merged []Entry
	seen := map[string]bool{}
	for _, mv := range m.Values {
		if mv == nil || mv.Key == nil || !r.Spend(report) {
			continue
		}
		if mv.Key.IsMergeKey() {
			if depth > 8 {
				if !r.deep {
					r.deep = true
					report(mv.Key, field, "merge keys nest more than 8 deep")
				}
				continue
			}
			srcs := []ast.Node{mv.Value}
			if seq, ok := r.Resolve(mv.Value).(*ast.SequenceNode); ok {
				srcs = seq.Values
			}
			for _, s := range srcs {
				if r.merges++; r.MaxMerges > 0 && r.merges > r.MaxMerges {
					if r.merges == r.MaxMerges+1 {
						report(mv.Key, field, fmt.Sprintf("merge keys expand to more than %d mappings", r.MaxMerges))
					}
					break
				}
				es, _ := r.mapping(s, field, "<< merges a mapping, or a list of them", report, depth+1)
				merged = append(merged, es...)
			}
			continue
		}
		key, ok := Scalar(r.Resolve(mv.Key))
		if !ok {
			report(mv.Key, field, "keys must be strings")
			continue
		}
		if seen[key] {
			report(mv.Key, JoinField(field, key), "duplicate key")
			continue
		}
		seen[key] = true
		out = append(out, Entry{Key: key, KeyNode: mv.Key, Value: r.Resolve(mv.Value), Raw: orNode(mv.Value, mv.Key)})
	}
	for _, e := range merged {
		if !seen[e.Key] {
			seen[e.Key] = true
			out = append(out, e)
		}
	}
	for i := range out {
		out[i].Index = i
	}
	return out, true
}

func orNode(n, fallback ast.Node) ast.Node {
	if n == nil {
		return fallback
	}
	return n
}

// JoinField names a key inside a field: "escalation" and "max" give
// "escalation.max".
func JoinField(parent, key string) string {
	if parent == "" {
		return key
	}
	return parent + "." + key
}

// IsString tells a YAML string from a number or boolean spelled the same.
func IsString(n ast.Node) bool {
	switch n.(type) {
	case *ast.StringNode, *ast.LiteralNode:
		return true
	}
	return false
}

// Scalar is a scalar node's text: strings as they read, numbers and
// booleans as written. Null and collections are not scalars.
func Scalar(n ast.Node) (string, bool) {
	switch v := n.(type) {
	case nil, *ast.NullNode:
		return "", false
	case *ast.StringNode:
		return v.Value, true
	case *ast.LiteralNode:
		if v.Value == nil {
			return "", true
		}
		return v.Value.Value, true
	case *ast.IntegerNode, *ast.FloatNode, *ast.BoolNode, *ast.InfinityNode, *ast.NanNode:
		if tk := n.GetToken(); tk != nil {
			return tk.Value, true
		}
	}
	return "", false
}

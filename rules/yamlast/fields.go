package yamlast

import (
	"reflect"
	"slices"
	"sync"

	"github.com/goccy/go-yaml/ast"
)

// Fields reads the mapping at raw into dst, a pointer to a struct whose
// *Entry fields are tagged yaml:"key". It is the one walk over a
// mapping's keys that rule files and policy files share, in the manner of
// prometheus's rulefmt, whose RuleNode keeps yaml.Nodes: each key the
// mapping has sets its field to its Entry (the value and where it is),
// and the checks then read the struct, so a new key is a field and its
// check. goccy/go-yaml's decoder cannot serve here: it stops at the first
// error, in its own words, where orchstat reports every problem in its.
//
// Keys no field is tagged with are returned in the file's order, for the
// caller to report in its own words (Keys lists the known ones). It is
// false when raw is not a mapping, reported with msg.
func (r *Reader) Fields(raw ast.Node, field, msg string, report Report, dst any) (unknown []Entry, ok bool) {
	es, ok := r.Mapping(raw, field, msg, report)
	if !ok {
		return nil, false
	}
	v := reflect.ValueOf(dst).Elem()
	index := fieldsOf(v.Type()).index
	for _, e := range es {
		i, known := index[e.Key]
		if !known {
			unknown = append(unknown, e)
			continue
		}
		v.Field(i).Set(reflect.ValueOf(&e))
	}
	return unknown, true
}

// Keys is the keys dst's fields are tagged with, in the order of the
// fields, which is the order messages list them in.
func Keys(dst any) []string {
	return fieldsOf(reflect.TypeOf(dst).Elem()).keys
}

type structKeys struct {
	keys  []string
	index map[string]int
}

var keysByType sync.Map // reflect.Type → *structKeys

// fieldsOf reads t's tags once. A field that is not an *Entry, or has no
// tag, is a mistake in orchstat, not in a file, so it panics.
func fieldsOf(t reflect.Type) *structKeys {
	if k, ok := keysByType.Load(t); ok {
		return k.(*structKeys)
	}
	k := &structKeys{index: map[string]int{}}
	entryType := reflect.TypeOf(&Entry{})
	for i := range t.NumField() {
		f := t.Field(i)
		key := f.Tag.Get("yaml")
		if key == "" || f.Type != entryType {
			panic("yamlast: field " + t.Name() + "." + f.Name + " is not an *Entry tagged with its key")
		}
		k.keys = append(k.keys, key)
		k.index[key] = i
	}
	keysByType.Store(t, k)
	return k
}

// InOrder holds the checks of a mapping's entries and runs them in the
// order the file has the entries, whatever the order of the code that
// adds them, so that problems are found, and capped, in the file's order.
type InOrder struct{ steps []step }

type step struct {
	e     Entry
	check func(Entry)
}

// Add holds check of e, when the mapping has e.
func (o *InOrder) Add(e *Entry, check func(Entry)) {
	if e != nil {
		o.steps = append(o.steps, step{*e, check})
	}
}

// Each holds check of each of es.
func (o *InOrder) Each(es []Entry, check func(Entry)) {
	for i := range es {
		o.Add(&es[i], check)
	}
}

// Run runs the checks held, in the file's order.
func (o *InOrder) Run() {
	slices.SortStableFunc(o.steps, func(a, b step) int { return a.e.Index - b.e.Index })
	for _, s := range o.steps {
		s.check(s.e)
	}
	o.steps = nil
}

package reports

import (
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strings"
)

// The catalog's counts as monotonic counters, for Prometheus: every count
// a metric is made of (a ratio's numerator and denominator, a count's or a
// sum's total, a cost and the calls it leaves out) becomes one counter,
// labelled as the catalog lets its metrics be split. They are generated
// here from the catalog, never listed by hand, so a metric added to the
// catalog is exported, and a ratio recorded over them in Prometheus is
// the report's ratio over the same runs.

// CounterSpec declares one counter.
type CounterSpec struct {
	// Name is the counter family's name, without the _total suffix of its
	// sample: orchstat_ + the family's word + the count's name, and the
	// unit's suffix when it has one.
	Name   string
	Family Family
	// Count is the column of the family's query it counts (MetricSpec.Num,
	// Den or Unpriced).
	Count string
	// Labels are its labels: those of the metrics made of it.
	Labels []string
	// Unit is its OpenMetrics unit ("usd", "seconds", "tokens"), if any.
	Unit string
	// Help says what it counts, and which metrics are made of it.
	Help string
}

// familyWord prefixes each family's counters: trace counts carry no word
// of their own (they are METRICS.md's), the others say whose they are, so
// a count of one name in two families ("runs", "retried") makes two
// counters.
var familyWord = map[Family]string{FamilyTrace: "", FamilyRecord: "record_", FamilyCall: "call_"}

// Counters are the catalog's counts as counters, in the catalog's order of
// first use. It fails when two metrics made of one count are split by
// different labels, which no counter could serve.
func Counters() ([]CounterSpec, error) {
	var out []CounterSpec
	index := map[string]int{}
	add := func(s MetricSpec, count, doc string, unit string) error {
		if count == "" {
			return nil
		}
		key := string(s.Family) + "/" + count
		if i, ok := index[key]; ok {
			if !slices.Equal(out[i].Labels, s.Labels) {
				return fmt.Errorf("count %s of the %s family is split by %v for %s but by %v for another metric",
					count, s.Family, s.Labels, s.Name, out[i].Labels)
			}
			out[i].Help += ", " + s.Name
			return nil
		}
		name := "orchstat_" + familyWord[s.Family] + count
		if unit != "" && !strings.HasSuffix(name, "_"+unit) {
			name += "_" + unit
		}
		index[key] = len(out)
		out = append(out, CounterSpec{Name: name, Family: s.Family, Count: count, Labels: s.Labels, Unit: unit,
			Help: plainDoc(doc) + "; counted for " + s.Name})
		return nil
	}
	for _, s := range Catalog {
		unit := ""
		switch {
		case s.Kind == Cost:
			unit = "usd"
		case s.Kind == Sum && strings.HasSuffix(s.Num, "_seconds"):
			unit = "seconds"
		case s.Kind == Sum && strings.HasSuffix(s.Num, "_tokens"):
			unit = "tokens"
		}
		if err := add(s, s.Num, s.NumDoc, unit); err != nil {
			return nil, err
		}
		if err := add(s, s.Den, s.DenDoc, ""); err != nil {
			return nil, err
		}
		if err := add(s, s.Unpriced, "calls the cost leaves out for want of a price or a recorded cost", ""); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// CounterOf is the counter of a family's count, if the catalog has one.
func CounterOf(f Family, count string) (CounterSpec, bool) {
	cs, err := Counters()
	if err != nil {
		return CounterSpec{}, false
	}
	for _, c := range cs {
		if c.Family == f && c.Count == count {
			return c, true
		}
	}
	return CounterSpec{}, false
}

// plainDoc makes a catalog doc fit a # HELP line: one line, no Markdown
// backticks, and short (the first clause).
func plainDoc(doc string) string {
	doc = seeAlso.ReplaceAllString(strings.ReplaceAll(doc, "`", ""), "")
	if i := strings.Index(doc, ";"); i > 0 {
		doc = doc[:i]
	}
	if i := strings.Index(doc, ": "); i > 0 && len(doc) > 120 {
		doc = doc[:i]
	}
	return strings.Join(strings.Fields(doc), " ")
}

// seeAlso matches a doc's pointers elsewhere, "(see below)" or "(see
// [prices.md](prices.md))", which mean nothing in a # HELP line.
var seeAlso = regexp.MustCompile(`\s*\(see [^()]*(\([^()]*\))?[^()]*\)`)

// CounterGroup is one label set's counts of one family: the store's
// totals, with no window. A nil count is a sum nothing recorded.
type CounterGroup struct {
	Family Family
	Labels map[string]string
	Counts map[string]*float64
}

// CountsOf recovers a family's counts from its metrics (the inverse of
// MetricSpec.Of): a ratio's numerator and denominator, a count's or sum's
// value, a cost's sum and the calls it leaves out.
func CountsOf(f Family, m Metrics) map[string]*float64 {
	out := map[string]*float64{}
	for _, s := range FamilyOf(f) {
		v, ok := m[s.Name]
		if !ok {
			continue
		}
		switch s.Kind {
		case Share, Average:
			out[s.Num], out[s.Den] = clone(v.Numerator), clone(v.Denominator)
		case Cost:
			out[s.Num], out[s.Unpriced] = clone(v.Value), clone(v.NoPrice)
		default:
			out[s.Num] = clone(v.Value)
		}
	}
	return out
}

// ModelRank names the count each family's models are ranked by when
// FoldModels keeps the top ones: provider requests, agents' calls.
var ModelRank = map[Family]string{FamilyTrace: "requests", FamilyCall: "calls"}

// OtherModel is the model label of the models folded beyond the top N.
const OtherModel = "other"

// Folded says how many models a family's counters fold into model="other".
type Folded struct {
	Family Family
	Models []string
}

// FoldModels keeps the top models of each family whose groups have a
// model label, ranked by the family's first count over the whole store
// (requests, calls), and adds the others' counts into groups labelled
// model="other", so the counters' cardinality is bounded. A tie is broken
// by name, so the same store always folds the same models. top < 1 folds
// nothing.
func FoldModels(groups []CounterGroup, top int, rank map[Family]string) ([]CounterGroup, []Folded) {
	if top < 1 {
		return groups, nil
	}
	volume := map[Family]map[string]float64{}
	for _, g := range groups {
		m, ok := g.Labels["model"]
		if !ok {
			continue
		}
		if volume[g.Family] == nil {
			volume[g.Family] = map[string]float64{}
		}
		volume[g.Family][m] += 0 // a model with no volume is still ranked (last)
		if v := g.Counts[rank[g.Family]]; v != nil {
			volume[g.Family][m] += *v
		}
	}
	keep := map[Family]map[string]bool{}
	var folded []Folded
	for _, f := range []Family{FamilyTrace, FamilyRecord, FamilyCall} {
		vol := volume[f]
		models := make([]string, 0, len(vol))
		for m := range vol {
			models = append(models, m)
		}
		sort.Slice(models, func(i, j int) bool {
			if vol[models[i]] != vol[models[j]] {
				return vol[models[i]] > vol[models[j]]
			}
			return models[i] < models[j]
		})
		keep[f] = map[string]bool{}
		for i, m := range models {
			if i < top {
				keep[f][m] = true
			}
		}
		if len(models) > top {
			rest := slices.Clone(models[top:])
			sort.Strings(rest)
			folded = append(folded, Folded{Family: f, Models: rest})
		}
	}
	var out []CounterGroup
	merged := map[string]int{}
	for _, g := range groups {
		m, ok := g.Labels["model"]
		if !ok || keep[g.Family][m] {
			out = append(out, g)
			continue
		}
		labels := map[string]string{}
		for k, v := range g.Labels {
			labels[k] = v
		}
		labels["model"] = OtherModel
		key := string(g.Family) + "\x00" + labelKey(labels)
		i, ok := merged[key]
		if !ok {
			merged[key] = len(out)
			out = append(out, CounterGroup{Family: g.Family, Labels: labels, Counts: map[string]*float64{}})
			i = len(out) - 1
		}
		for c, v := range g.Counts {
			out[i].Counts[c] = addCount(out[i].Counts[c], v)
		}
	}
	return out, folded
}

// addCount adds two counts, where nil is a sum nothing recorded.
func addCount(a, b *float64) *float64 {
	switch {
	case a == nil:
		return clone(b)
	case b == nil:
		return clone(a)
	}
	s := *a + *b
	return &s
}

func labelKey(l map[string]string) string {
	keys := make([]string, 0, len(l))
	for k := range l {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	for _, k := range keys {
		b.WriteString(k + "=" + l[k] + "\x00")
	}
	return b.String()
}

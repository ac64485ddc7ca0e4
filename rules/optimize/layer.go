package optimize

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/orchstat/orchstat/model/episode"
	"github.com/orchstat/orchstat/model/failure"
	"github.com/orchstat/orchstat/model/simulated"
	"github.com/orchstat/orchstat/rules/retry"
)

// A layer is the part of the retry core one search varies: the episodes
// its parameters decide, what it weighs, and its space.
type layer struct {
	name string
	eps  []episode.Episode
	// l2 and l3 say which loop kinds the episodes hold: a parameter or
	// an objective of a kind with no episode is left out.
	l2, l3 bool
	// objectives are what the layer weighs; weigh drops those the
	// baseline's replay shows nothing of (cost with no price).
	objectives []simulated.Objective
}

// Layer names, as the output titles each search.
const (
	layerProvider = "provider requests"
	layerLoops    = "L2 loops and L3 steps"
)

// layersOf are the layers eps exercise: the provider requests (and
// agents' calls) when there are any, and the L2 loops with the L3 steps
// when there are loops; and why L3 steps without a loop are not searched.
func layersOf(eps []episode.Episode) ([]layer, string) {
	var prov, loops []episode.Episode
	l2, l3 := 0, 0
	for _, e := range eps {
		switch e.Kind {
		case episode.KindProvider:
			prov = append(prov, e)
		case episode.KindL2:
			loops, l2 = append(loops, e), l2+1
		case episode.KindL3:
			loops, l3 = append(loops, e), l3+1
		}
	}
	var out []layer
	if len(prov) > 0 {
		out = append(out, layer{name: layerProvider, eps: prov, objectives: simulated.ProviderObjectives})
	}
	if l2 == 0 {
		if l3 > 0 {
			steps := fmt.Sprintf("The %d L3 steps are", l3)
			if l3 == 1 {
				steps = "The one L3 step is"
			}
			return out, steps + " not searched: with no L2 loop beside them, the one figure the diagnosis trigger changes is how many diagnoses start, and fewer is not better by itself."
		}
		return out, ""
	}
	l := layer{name: layerLoops, eps: loops, l2: true, l3: l3 > 0}
	for _, o := range simulated.LoopObjectives {
		if fig, _ := simulated.FigureOf(o.Key); fig.Kind == episode.KindL2 || l.l3 {
			l.objectives = append(l.objectives, o)
		}
	}
	if !l.l3 {
		l.name = "L2 loops"
	}
	return append(out, l), ""
}

// space is the layer's parameters, narrowed by narrow.
func (l *layer) space(classes []failure.Class, base *retry.Policy, narrow []narrowing) (Space, error) {
	var ps []param
	if l.name == layerProvider {
		ps = providerParams(classes, base)
	} else {
		ps = loopParams(l.l2, l.l3)
	}
	return narrowSpace(ps, narrow)
}

// weigh drops cost from the objectives when the baseline's replay has no
// price for it: every policy would tie at nothing.
func (l *layer) weigh(base simulated.Result) {
	if base.HasCost {
		return
	}
	l.objectives = slices.DeleteFunc(slices.Clone(l.objectives), func(o simulated.Objective) bool { return o.Key == "cost_usd" })
}

// values are r's objective values, each turned so that less is better;
// an undefined value is the worst.
func (l *layer) values(r simulated.Result) []float64 {
	v := make([]float64, len(l.objectives))
	for i := range l.objectives {
		v[i] = l.value(r, i)
		if l.objectives[i].Higher {
			v[i] = -v[i]
		}
		if math.IsNaN(v[i]) {
			v[i] = math.Inf(1)
		}
	}
	return v
}

// value is r's value of objective i, as the output shows it.
func (l *layer) value(r simulated.Result, i int) float64 {
	return simulated.ObjectiveValue(r, l.objectives[i].Key)
}

// estimatedShare is the share of r's outcomes in this layer estimated
// beyond the record. An L3 step's diagnoses are always replayed from the
// record.
func (l *layer) estimatedShare(r simulated.Result) float64 {
	n, est := r.Episodes, r.Estimated
	if l.name != layerProvider {
		n, est = r.L2Loops, r.L2Estimated
	}
	if n == 0 {
		return 0
	}
	return float64(est) / float64(n)
}

// kept says whether a policy better than the baseline on the search (in
// some objective, by its point value) is still better on the holdout in
// one of those objectives without its success falling significantly
// below the baseline's there (the paired difference's interval wholly
// below zero). nil when it was better in nothing.
func (l *layer) kept(search, base, hold, holdBase simulated.Result) *bool {
	s, b := l.values(search), l.values(base)
	hs, hb := l.values(hold), l.values(holdBase)
	better, still := false, false
	for i := range s {
		if s[i] < b[i] {
			better = true
			if hs[i] < hb[i] {
				still = true
			}
		}
	}
	if !better {
		return nil
	}
	if d, ok := hold.Diff[l.objectives[0].Key]; ok && !d.Exact && d.Hi < 0 {
		still = false
	}
	return &still
}

// pick sets the front's pick: of the policies meeting every constraint,
// the least of each objective where less is better, in order (attempts,
// cost, time; or iterations, escalations, diagnoses), then the most
// success. Without one, NoPick names the constraint that most policies
// fail.
func (l *layer) pick(out *simulated.Layer, cs []Constraint) {
	base := out.Baseline.Search
	failed := make([]int, len(cs))
	best := -1
	for i := range out.Front {
		c := &out.Front[i]
		for k, con := range cs {
			if !con.holds(c.Search, base, l.objectives) {
				c.Fails = append(c.Fails, con.Text)
				failed[k]++
			}
		}
		if len(c.Fails) > 0 {
			continue
		}
		if best < 0 || l.better(c.Search, out.Front[best].Search) {
			best = i
		}
	}
	out.Pick = best
	if best >= 0 || len(cs) == 0 {
		return
	}
	k := 0
	for i := range failed {
		if failed[i] > failed[k] {
			k = i
		}
	}
	if len(out.Front) == 0 {
		out.NoPick = "no policy within the evidence bound to pick from"
		return
	}
	var all []string
	for _, c := range cs {
		all = append(all, c.Text)
	}
	out.NoPick = fmt.Sprintf("no policy on the front meets %s; %q binds: %d of the %d fail it",
		strings.Join(all, " and "), cs[k].Text, failed[k], len(out.Front))
}

// better orders two policies for the pick: the objectives where less is
// better first, in order, then those where more is.
func (l *layer) better(a, b simulated.Result) bool {
	va, vb := l.values(a), l.values(b)
	c := 0
	for _, higher := range []bool{false, true} {
		for i, o := range l.objectives {
			if o.Higher == higher {
				c = cmp.Or(c, cmp.Compare(va[i], vb[i]))
			}
		}
	}
	return c < 0
}

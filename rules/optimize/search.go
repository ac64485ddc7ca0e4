package optimize

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"github.com/orchstat/orchstat/model/episode"
	"github.com/orchstat/orchstat/model/failure"
	"github.com/orchstat/orchstat/model/simulated"
	"github.com/orchstat/orchstat/rules/replay"
	"github.com/orchstat/orchstat/rules/retry"
)

// Options tune a search.
type Options struct {
	Seed uint64
	// Candidates is how many policies are drawn from the space (default
	// 500; the whole space when it is smaller).
	Candidates int
	// Holdout is the share of the episodes, the newest runs', kept out of
	// the search and replayed on the front afterwards (see split); 0
	// searches on every episode.
	Holdout float64
	// EvidenceBound is the largest share of a policy's outcomes that may
	// be estimated beyond the record for it to be picked (default 0.2).
	EvidenceBound float64
	// Constraints pick the policy; none means "success >= baseline".
	Constraints []Constraint
	// Search narrows the space (see parseSearch).
	Search string
	// Resamples are the bootstrap's, for the final figures' intervals.
	Resamples int
	// Naive computes every candidate's intervals, as simulate does for
	// the policies it is named, not the front's alone: the yardstick the
	// search is measured against (benchmarks/cmd/optbench).
	Naive bool
}

// DefaultConstraint is the constraint a search without one picks by.
const DefaultConstraint = "success >= baseline"

// Search finds, for each layer of the retry core the episodes exercise,
// the Pareto front of policies, changes of baseline drawn from the
// layer's space, on the older runs of eps; replays the front on the newer
// runs; and picks one by the constraints. The layers are the provider
// requests and calls, and the L2 repair loops and L3 steps: no parameter
// of one decides an episode of the other (replay.Touches), so searching
// each on its own finds every front policy a search of both at once
// would, at the cost of a sum rather than a product. The returned policy
// is the baseline with each layer's pick, nil when no layer has one.
//
// A layer's search is a random search: --candidates policies drawn from
// the space, each replayed on every search episode, so that its front is
// exactly the front of the policies drawn. Each is replayed once for its
// figures alone; the front, and the policies beyond the evidence that
// would be on it, are replayed again for their intervals. Successive
// halving, which replays every candidate on a sample of the runs first,
// was built and measured here and removed: a sample cannot see the rare
// failures that set the most successful policies apart, so its front
// missed some of them, and its first rungs kept most candidates, saving
// too little to pay for it (benchmarks/EARLIER.md).
func Search(ctx context.Context, eps []episode.Episode, baseline *retry.Policy, o Options) (*simulated.Optimization, *retry.Policy, error) {
	o = o.withDefaults()
	narrow, err := parseSearch(o.Search)
	if err != nil {
		return nil, nil, fmt.Errorf("search %w", err)
	}
	out := &simulated.Optimization{Settings: simulated.SearchSettings{Seed: o.Seed, Candidates: o.Candidates,
		Holdout: o.Holdout, EvidenceBound: o.EvidenceBound}}
	for _, c := range o.Constraints {
		out.Settings.Constraints = append(out.Settings.Constraints, c.Text)
	}
	picked := baseline.Clone()
	var names []string
	layers, note := layersOf(eps)
	if note != "" {
		out.Notes = append(out.Notes, note)
	}
	for _, l := range layers {
		space, err := l.space(failedClasses(l.eps), baseline, narrow)
		if err != nil {
			return nil, nil, err
		}
		res, pick, err := searchLayer(ctx, l, space, baseline, o)
		if err != nil {
			return nil, nil, err
		}
		out.Layers = append(out.Layers, res)
		if pick != nil {
			if err := space.apply(picked, pick); err != nil {
				return nil, nil, err
			}
			names = append(names, res.Front[res.Pick].Policy)
		}
	}
	if len(out.Layers) == 0 {
		return nil, nil, fmt.Errorf("no provider request, L2 loop or L3 step to search on")
	}
	if len(names) == 0 {
		return out, nil, nil
	}
	picked.Name = "optimized (" + strings.Join(names, "; ") + ")"
	return out, picked, nil
}

// searchLayer is one layer's search, and its pick's settings (nil when
// none).
func searchLayer(ctx context.Context, l layer, space Space, baseline *retry.Policy, o Options) (simulated.Layer, setting, error) {
	search, hold, byTime := split(l.eps, o.Holdout)
	if len(search) == 0 {
		return simulated.Layer{}, nil, fmt.Errorf("%s: no episode to search on", l.name)
	}
	pols, settings, drawn, err := candidates(space, baseline, o)
	if err != nil {
		return simulated.Layer{}, nil, err
	}
	out := simulated.Layer{Name: l.name, SearchEpisodes: len(search), HoldoutEpisodes: len(hold), HoldoutByTime: byTime,
		Tried: len(pols), Pick: -1}
	for _, p := range space.params {
		out.Space = append(out.Space, simulated.Param{Name: p.name, Values: slices.Clone(p.values)})
	}
	cons := l.constraints(o.Constraints)
	for _, c := range cons {
		out.Constraints = append(out.Constraints, c.Text)
	}

	// Every candidate on every search episode, its figures alone (one
	// total, nothing kept for resampling, so that memory does not grow
	// with the candidates); the front, and the policies beyond the
	// evidence that would be on it, from those; then those alone replayed
	// again for their intervals.
	pass := replay.Options{Seed: o.Seed, Resamples: 1, Blocks: 1}
	if o.Naive {
		pass = replay.Options{Seed: o.Seed, Resamples: o.Resamples}
	}
	points, err := replay.Simulate(ctx, search, baseline, pols, pass)
	if err != nil {
		return simulated.Layer{}, nil, err
	}
	out.Replays += len(search) * (len(pols) + 1)
	l.weigh(points[0])
	out.Objectives = l.objectives
	front, apart := l.fronts(points[1:], o.EvidenceBound)
	shown := append(slices.Clone(front), apart...)
	res := []simulated.Result{points[0]}
	for _, i := range shown {
		res = append(res, points[1+i])
	}
	if !o.Naive {
		res, err = replay.Simulate(ctx, search, baseline, policiesOf(pols, shown), replay.Options{Seed: o.Seed, Resamples: o.Resamples})
		if err != nil {
			return simulated.Layer{}, nil, err
		}
		out.Replays += len(search) * (len(shown) + 1)
	}
	base := res[0]
	out.Baseline = simulated.Candidate{Policy: baseline.Name, Search: base, EstimatedShare: l.estimatedShare(base)}
	var frontPols []*retry.Policy
	for k, a := range shown {
		c := simulated.Candidate{Policy: pols[a].Name, Settings: settings[a], Search: res[1+k], EstimatedShare: l.estimatedShare(res[1+k])}
		if k < len(front) {
			out.Front = append(out.Front, c)
			frontPols = append(frontPols, pols[a])
		} else {
			out.Beyond = append(out.Beyond, c)
		}
	}

	if len(hold) > 0 && len(frontPols) > 0 {
		hres, err := replay.Simulate(ctx, hold, baseline, frontPols, replay.Options{Seed: o.Seed, Resamples: o.Resamples})
		if err != nil {
			return simulated.Layer{}, nil, err
		}
		out.Replays += len(hold) * (len(frontPols) + 1)
		out.Baseline.Holdout = &hres[0]
		for i := range out.Front {
			h := hres[1+i]
			out.Front[i].Holdout = &h
			out.Front[i].Kept = l.kept(out.Front[i].Search, base, h, hres[0])
		}
	}
	l.pick(&out, cons)
	if out.Pick < 0 {
		return out, nil, nil
	}
	return out, drawn[shown[out.Pick]], nil
}

// candidates are the policies drawn from space, each once (two settings
// can make one policy), with their settings in words and as drawn.
func candidates(space Space, baseline *retry.Policy, o Options) ([]*retry.Policy, [][]string, []setting, error) {
	r := rand.New(rand.NewPCG(o.Seed, 0x6f7074696d697a65))
	var pols []*retry.Policy
	var settings [][]string
	var drawn []setting
	seen := map[string]bool{}
	for _, st := range space.draw(o.Candidates, r) {
		p, words, err := space.policy(baseline, st)
		if err != nil {
			return nil, nil, nil, err
		}
		if !seen[p.Name] {
			seen[p.Name] = true
			pols, settings, drawn = append(pols, p), append(settings, words), append(drawn, st)
		}
	}
	return pols, settings, drawn, nil
}

// constraints are those of cs that name an objective of the layer, and
// the default on success when none of them bounds it: a pick is never
// less successful than the baseline unasked.
func (l *layer) constraints(cs []Constraint) []Constraint {
	var out []Constraint
	bounded := false
	for _, c := range cs {
		if c.appliesTo(l.objectives) {
			out = append(out, c)
			bounded = bounded || c.objective == "success"
		}
	}
	if !bounded {
		c, _ := ParseConstraint(DefaultConstraint)
		out = append(out, c)
	}
	return out
}

// fronts are, among the candidates' points rs, the front within the
// evidence bound, most success first, and the policies beyond it that
// would be on the front but for their estimated outcomes.
func (l *layer) fronts(rs []simulated.Result, bound float64) (front, apart []int) {
	var within, beyond []int
	for i, r := range rs {
		if l.estimatedShare(r) > bound {
			beyond = append(beyond, i)
		} else {
			within = append(within, i)
		}
	}
	front = l.nonDominated(rs, within)
	for _, i := range l.nonDominated(rs, append(slices.Clone(within), beyond...)) {
		if l.estimatedShare(rs[i]) > bound {
			apart = append(apart, i)
		}
	}
	success := l.objectives[0].Key
	slices.SortStableFunc(front, func(a, b int) int {
		ra, rb := rs[a], rs[b]
		return cmp.Or(cmp.Compare(simulated.ObjectiveValue(rb, success), simulated.ObjectiveValue(ra, success)),
			cmp.Compare(l.value(ra, 1), l.value(rb, 1)))
	})
	return front, apart
}

func policiesOf(pols []*retry.Policy, idx []int) []*retry.Policy {
	out := make([]*retry.Policy, len(idx))
	for i, a := range idx {
		out[i] = pols[a]
	}
	return out
}

func (o Options) withDefaults() Options {
	if o.Candidates <= 0 {
		o.Candidates = 500
	}
	if o.EvidenceBound <= 0 {
		o.EvidenceBound = 0.2
	}
	if o.Resamples <= 0 {
		o.Resamples = 200
	}
	if len(o.Constraints) == 0 {
		c, _ := ParseConstraint(DefaultConstraint)
		o.Constraints = []Constraint{c}
	}
	return o
}

// split keeps the newest runs apart, by the time of their first episode
// (then run), as many as hold no more than share of the episodes: a run's
// episodes share its limits and its loops' diagnoses, so a run is kept
// whole. When whole runs cannot come within half of share (one run holds
// most episodes, as a long agent session does), the newest episodes are
// kept apart by time instead, then ID, and byTime says so: a run may then
// be on both sides.
func split(eps []episode.Episode, share float64) (search, hold []episode.Episode, byTime bool) {
	want := int(math.Round(float64(len(eps)) * share))
	if share > 0 && want == 0 && len(eps) > 1 {
		want = 1
	}
	if want == 0 {
		return eps, nil, false
	}
	first, size := map[string]time.Time{}, map[string]int{}
	for _, e := range eps {
		if f, ok := first[e.Run]; !ok || e.Time.Before(f) {
			first[e.Run] = e.Time
		}
		size[e.Run]++
	}
	runs := slices.Collect(maps.Keys(first))
	slices.SortFunc(runs, func(a, b string) int { return cmp.Or(first[a].Compare(first[b]), cmp.Compare(a, b)) })
	// The newest runs that fit, a run too big for what is left passed
	// over for older ones; the oldest run always stays in the search.
	held, n := map[string]bool{}, 0
	for i := len(runs) - 1; i > 0 && n < want; i-- {
		if n+size[runs[i]] <= want {
			held[runs[i]] = true
			n += size[runs[i]]
		}
	}
	if 2*n < want {
		sorted := slices.Clone(eps)
		slices.SortStableFunc(sorted, func(a, b episode.Episode) int {
			return cmp.Or(a.Time.Compare(b.Time), cmp.Compare(a.ID, b.ID))
		})
		return sorted[:len(sorted)-want], sorted[len(sorted)-want:], true
	}
	for _, e := range eps {
		if held[e.Run] {
			hold = append(hold, e)
		} else {
			search = append(search, e)
		}
	}
	return search, hold, false
}

// failedClasses are the classes the episodes' attempts failed with.
func failedClasses(eps []episode.Episode) []failure.Class {
	seen := map[failure.Class]bool{}
	for _, e := range eps {
		// The classes the space varies are those of provider requests
		// and calls: an L2 loop's or L3 step's failures are not retried
		// by class.
		if e.Kind != episode.KindProvider {
			continue
		}
		for _, a := range e.Attempts {
			if !a.OK && a.Class != "" {
				seen[a.Class] = true
			}
		}
	}
	out := make([]failure.Class, 0, len(seen))
	for c := range seen {
		out = append(out, c)
	}
	slices.Sort(out)
	return out
}

// dominates reports whether a is nowhere worse than b and better
// somewhere, every objective compared exactly: of otherwise equal
// policies the front keeps the fastest.
func dominates(a, b []float64) bool {
	better := false
	for i := range a {
		if a[i] > b[i] {
			return false
		}
		if a[i] < b[i] {
			better = true
		}
	}
	return better
}

// nonDominated are the indexes among idx of rs that no other among them
// dominates, one of each set of equal objectives (the first drawn).
func (l *layer) nonDominated(rs []simulated.Result, idx []int) []int {
	var out []int
	seen := map[string]bool{}
	obj := make(map[int][]float64, len(idx))
	for _, i := range idx {
		obj[i] = l.values(rs[i])
	}
	for _, i := range idx {
		vi := obj[i]
		dominated := false
		for _, j := range idx {
			if j != i && dominates(obj[j], vi) {
				dominated = true
				break
			}
		}
		if k := fmt.Sprint(vi); !dominated && !seen[k] {
			seen[k] = true
			out = append(out, i)
		}
	}
	return out
}

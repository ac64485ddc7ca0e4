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
	// Holdout is the share of the newest episodes kept out of the search
	// and replayed on the front afterwards; 0 searches on every episode.
	Holdout float64
	// EvidenceBound is the largest share of a policy's outcomes that may
	// be estimated beyond the record for it to be picked (default 0.2).
	EvidenceBound float64
	// Constraints pick the policy; none means "success >= baseline".
	Constraints []Constraint
	// Search narrows the space (see NewSpace).
	Search string
	// Resamples are the bootstrap's, for the final figures' intervals.
	Resamples int
	// Exhaustive replays every candidate on every episode, with no
	// halving: the yardstick the halving is measured against
	// (benchmarks/cmd/optbench).
	Exhaustive bool
}

// DefaultConstraint is the constraint a search without one picks by.
const DefaultConstraint = "success >= baseline"

// minRung is the fewest episodes a rung of the successive halving
// replays: on fewer, one episode's outcome would decide which policies go
// on.
const minRung = 300

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
// A layer's search is successive halving: every candidate is replayed on
// a ninth of the episodes (whole runs, drawn by the seed), the best third
// by Pareto rank go on to a third, and the best third of those to all of
// them; on fewer than 9×minRung episodes it starts later, and on fewer
// than 3×minRung it replays every candidate on every episode.
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
	for _, l := range layersOf(eps) {
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
	search, hold := split(l.eps, o.Holdout)
	if len(search) == 0 {
		return simulated.Layer{}, nil, fmt.Errorf("%s: no episode to search on", l.name)
	}
	r := rand.New(rand.NewPCG(o.Seed, 0x6f7074696d697a65))
	var pols []*retry.Policy
	var settings [][]string
	var drawn []setting
	seen := map[string]bool{}
	for _, st := range space.draw(o.Candidates, r) {
		p, words, err := space.policy(baseline, st)
		if err != nil {
			return simulated.Layer{}, nil, err
		}
		if !seen[p.Name] {
			seen[p.Name] = true
			pols, settings, drawn = append(pols, p), append(settings, words), append(drawn, st)
		}
	}
	out := simulated.Layer{Name: l.name, SearchEpisodes: len(search), HoldoutEpisodes: len(hold), Tried: len(pols), Pick: -1}
	for _, p := range space.params {
		out.Space = append(out.Space, simulated.Param{Name: p.name, Values: slices.Clone(p.values)})
	}
	// The constraints that name an objective of the layer; with none,
	// the default, so that a layer's pick is never worse than the
	// baseline's success unasked.
	var cons []Constraint
	for _, c := range o.Constraints {
		if c.appliesTo(l.objectives) {
			cons = append(cons, c)
		}
	}
	if len(cons) == 0 {
		c, _ := ParseConstraint(DefaultConstraint)
		cons = []Constraint{c}
	}
	for _, c := range cons {
		out.Constraints = append(out.Constraints, c.Text)
	}

	// Successive halving over growing shares of the search episodes.
	order := byRun(search, r)
	alive := make([]int, len(pols))
	for i := range alive {
		alive[i] = i
	}
	shares := rungs(len(search))
	if o.Exhaustive {
		shares = nil
	}
	for _, share := range shares {
		subset := order[:max(1, int(math.Round(float64(len(order))*share)))]
		res, err := replay.Simulate(ctx, subset, baseline, policiesOf(pols, alive), replay.Options{Seed: o.Seed, Resamples: 1})
		if err != nil {
			return simulated.Layer{}, nil, err
		}
		out.Replays += len(subset) * (len(alive) + 1)
		next := l.survivors(res[1:], o.EvidenceBound, len(subset))
		for k, i := range next {
			next[k] = alive[i]
		}
		alive = next
	}
	ps := policiesOf(pols, alive)
	res, err := replay.Simulate(ctx, search, baseline, ps, replay.Options{Seed: o.Seed, Resamples: o.Resamples})
	if err != nil {
		return simulated.Layer{}, nil, err
	}
	out.Replays += len(search) * (len(ps) + 1)
	base := res[0]
	l.weigh(base)
	out.Objectives = l.objectives
	out.Baseline = simulated.Candidate{Policy: baseline.Name, Search: base, EstimatedShare: l.estimatedShare(base)}

	// The front within the evidence bound, and the policies that would be
	// on it but for their estimated outcomes.
	var within, beyond []int
	for i, r := range res[1:] {
		if l.estimatedShare(r) > o.EvidenceBound {
			beyond = append(beyond, i)
		} else {
			within = append(within, i)
		}
	}
	candidate := func(i int) simulated.Candidate {
		a := alive[i]
		return simulated.Candidate{Policy: pols[a].Name, Settings: settings[a], Search: res[1+i], EstimatedShare: l.estimatedShare(res[1+i])}
	}
	front := l.nonDominated(res[1:], within)
	for _, i := range l.nonDominated(res[1:], append(slices.Clone(within), beyond...)) {
		if l.estimatedShare(res[1+i]) > o.EvidenceBound {
			out.Beyond = append(out.Beyond, candidate(i))
		}
	}
	success := l.objectives[0].Key
	slices.SortStableFunc(front, func(a, b int) int {
		ra, rb := res[1+a], res[1+b]
		return cmp.Or(cmp.Compare(simulated.ObjectiveValue(rb, success), simulated.ObjectiveValue(ra, success)),
			cmp.Compare(l.value(ra, 1), l.value(rb, 1)))
	})
	var frontPols []*retry.Policy
	for _, i := range front {
		out.Front = append(out.Front, candidate(i))
		frontPols = append(frontPols, ps[i])
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
	return out, drawn[alive[front[out.Pick]]], nil
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
// kept apart by time instead, then ID.
func split(eps []episode.Episode, share float64) (search, hold []episode.Episode) {
	want := int(math.Round(float64(len(eps)) * share))
	if share > 0 && want == 0 && len(eps) > 1 {
		want = 1
	}
	if want == 0 {
		return eps, nil
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
	held, n := map[string]bool{}, 0
	for i := len(runs) - 1; i > 0 && n+size[runs[i]] <= want; i-- {
		held[runs[i]] = true
		n += size[runs[i]]
	}
	if 2*n < want {
		sorted := slices.Clone(eps)
		slices.SortStableFunc(sorted, func(a, b episode.Episode) int {
			return cmp.Or(a.Time.Compare(b.Time), cmp.Compare(a.ID, b.ID))
		})
		return sorted[:len(sorted)-want], sorted[len(sorted)-want:]
	}
	for _, e := range eps {
		if held[e.Run] {
			hold = append(hold, e)
		} else {
			search = append(search, e)
		}
	}
	return search, hold
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

// byRun is eps with their runs in an order drawn by r, each run's
// episodes together: a prefix is then a sample of whole runs, as the
// replay's limits per run need.
func byRun(eps []episode.Episode, r *rand.Rand) []episode.Episode {
	var runs []string
	of := map[string][]episode.Episode{}
	for _, e := range eps {
		if _, ok := of[e.Run]; !ok {
			runs = append(runs, e.Run)
		}
		of[e.Run] = append(of[e.Run], e)
	}
	r.Shuffle(len(runs), func(i, j int) { runs[i], runs[j] = runs[j], runs[i] })
	out := make([]episode.Episode, 0, len(eps))
	for _, run := range runs {
		out = append(out, of[run]...)
	}
	return out
}

// rungs are the shares of the episodes each rung but the last replays.
func rungs(n int) []float64 {
	switch {
	case n >= 9*minRung:
		return []float64{1.0 / 9, 1.0 / 3}
	case n >= 3*minRung:
		return []float64{1.0 / 3}
	}
	return nil
}

// timeTolerance is how far apart two times to resolution must be to
// differ: the replay reads quantiles from a histogram to within 10%, and
// the waits it draws differ from policy to policy by chance alone.
const timeTolerance = 0.1

// dominates reports whether a is nowhere worse than b and better
// somewhere by more than slack, a share of the larger value (and, with
// any slack, time to resolution, the last objective, by more than
// timeTolerance). Slack only makes a policy harder to beat: on a sample
// a policy is dropped only for one clearly better somewhere and no worse
// anywhere. With none, as on the final rung, every objective is compared
// exactly, and the front keeps the fastest of otherwise equal policies.
func dominates(a, b []float64, slack float64, timeAt int) bool {
	better := false
	for i := range a {
		if a[i] > b[i] {
			return false
		}
		tol := slack * max(math.Abs(a[i]), math.Abs(b[i]))
		if i == timeAt && slack > 0 {
			tol = max(tol, timeTolerance*max(math.Abs(a[i]), math.Abs(b[i])))
		}
		if a[i] < b[i]-tol {
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
			if j != i && dominates(obj[j], vi, 0, l.timeAt()) {
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

// survivors are the indexes of rs a rung keeps: the best third of the
// policies within the evidence bound and the best third of those beyond
// it, each group ranked on its own (see rank), so that the policies to
// set apart as beyond the evidence reach the last rung too; and the
// whole first front of each, however many, since a point of it may be
// on the front of all the episodes.
func (l *layer) survivors(rs []simulated.Result, bound float64, n int) []int {
	var within, beyond []int
	for i, r := range rs {
		if l.estimatedShare(r) > bound {
			beyond = append(beyond, i)
		} else {
			within = append(within, i)
		}
	}
	var out []int
	for _, group := range [][]int{within, beyond} {
		ranked, first := l.rank(rs, group, n)
		out = append(out, ranked[:max(first, int(math.Ceil(float64(len(ranked))/3)))]...)
	}
	slices.Sort(out)
	return out
}

// rank orders the policies idx of rs best first, and counts the first
// front (first), as NSGA-II does: by
// Pareto front (the non-dominated first, then those only they dominate,
// and so on), and within a front by crowding distance, the widest gaps
// first, so that a cut keeps the front's whole spread (its cheapest and
// its most successful ends included) rather than one end of it. It ranks
// replays of a sample of n episodes, so a policy dominates another only
// by more than the sample's noise, two standard errors of a share (2/√n
// of the value): a rung on a third of the runs must not drop a policy
// that the runs it did not see would favour.
func (l *layer) rank(rs []simulated.Result, idx []int, n int) (ranked []int, first int) {
	slack := 2 / math.Sqrt(float64(max(n, 1)))
	obj := map[int][]float64{}
	for _, i := range idx {
		obj[i] = l.values(rs[i])
	}
	level := map[int]int{}
	left := slices.Clone(idx)
	timeAt := l.timeAt()
	for depth := 0; len(left) > 0; depth++ {
		var next, front []int
		for _, i := range left {
			if slices.ContainsFunc(left, func(j int) bool { return j != i && dominates(obj[j], obj[i], slack, timeAt) }) {
				next = append(next, i)
			} else {
				front = append(front, i)
			}
		}
		if len(front) == 0 { // a cycle of slack-dominance: take the rest as one front
			front, next = left, nil
		}
		for _, i := range front {
			level[i] = depth
		}
		left = next
	}
	crowd := crowding(obj, level)
	out := slices.Clone(idx)
	slices.SortStableFunc(out, func(a, b int) int {
		return cmp.Or(cmp.Compare(level[a], level[b]), cmp.Compare(crowd[b], crowd[a]))
	})
	for _, i := range idx {
		if level[i] == 0 {
			first++
		}
	}
	return out, first
}

// crowding is each point's crowding distance within its front: the sum,
// over objectives, of the gap between its neighbours, scaled by the
// front's range; a front's ends are infinitely far.
func crowding(obj map[int][]float64, level map[int]int) map[int]float64 {
	byLevel := map[int][]int{}
	for i, l := range level {
		byLevel[l] = append(byLevel[l], i)
	}
	out := map[int]float64{}
	for _, f := range byLevel {
		slices.Sort(f)
		if len(f) == 0 {
			continue
		}
		for k := range obj[f[0]] {
			slices.SortStableFunc(f, func(a, b int) int { return cmp.Compare(obj[a][k], obj[b][k]) })
			lo, hi := obj[f[0]][k], obj[f[len(f)-1]][k]
			out[f[0]], out[f[len(f)-1]] = math.Inf(1), math.Inf(1)
			if hi == lo || math.IsInf(hi-lo, 0) {
				continue
			}
			for j := 1; j < len(f)-1; j++ {
				out[f[j]] += (obj[f[j+1]][k] - obj[f[j-1]][k]) / (hi - lo)
			}
		}
	}
	return out
}

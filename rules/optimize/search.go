package optimize

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"

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

// Search finds the Pareto front of policies, changes of baseline drawn
// from the space, on the older episodes of eps, replays it on the newer,
// and picks one by the constraints. Its policies are returned with it, in
// the front's order, so that the pick can be written out.
//
// The search is successive halving: every candidate is replayed on a
// ninth of the episodes (whole runs, drawn by the seed), the best third
// by Pareto rank go on to a third, and the best third of those to all of
// them; on fewer than 9×minRung episodes it starts later, and on fewer
// than 3×minRung it replays every candidate on every episode.
func Search(ctx context.Context, eps []episode.Episode, baseline *retry.Policy, o Options) (*simulated.Optimization, []*retry.Policy, error) {
	o = o.withDefaults()
	search, hold := split(eps, o.Holdout)
	if len(search) == 0 {
		return nil, nil, fmt.Errorf("no episode to search on")
	}
	space, err := NewSpace(failedClasses(search), baseline, o.Search)
	if err != nil {
		return nil, nil, err
	}
	r := rand.New(rand.NewPCG(o.Seed, 0x6f7074696d697a65))
	var pols []*retry.Policy
	var settings [][]string
	seen := map[string]bool{}
	for _, st := range space.draw(o.Candidates, r) {
		p, words, err := space.policy(baseline, st)
		if err != nil {
			return nil, nil, err
		}
		if !seen[p.Name] {
			seen[p.Name] = true
			pols, settings = append(pols, p), append(settings, words)
		}
	}
	out := &simulated.Optimization{
		Settings: simulated.SearchSettings{Seed: o.Seed, Candidates: o.Candidates, Holdout: o.Holdout,
			EvidenceBound: o.EvidenceBound},
		SearchEpisodes: len(search), HoldoutEpisodes: len(hold), Tried: len(pols), Pick: -1,
	}
	for _, c := range o.Constraints {
		out.Settings.Constraints = append(out.Settings.Constraints, c.Text)
	}
	for _, p := range space.params {
		out.Settings.Space = append(out.Settings.Space, simulated.Param{Name: p.name, Values: slices.Clone(p.values)})
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
		ps := make([]*retry.Policy, len(alive))
		for i, a := range alive {
			ps[i] = pols[a]
		}
		res, err := replay.Simulate(ctx, subset, baseline, ps, replay.Options{Seed: o.Seed, Resamples: 1})
		if err != nil {
			return nil, nil, err
		}
		out.Replays += len(subset) * (len(ps) + 1)
		next := survivors(res[1:], o.EvidenceBound, len(subset))
		for k, i := range next {
			next[k] = alive[i]
		}
		alive = next
	}
	ps := make([]*retry.Policy, len(alive))
	for i, a := range alive {
		ps[i] = pols[a]
	}
	res, err := replay.Simulate(ctx, search, baseline, ps, replay.Options{Seed: o.Seed, Resamples: o.Resamples})
	if err != nil {
		return nil, nil, err
	}
	out.Replays += len(search) * (len(ps) + 1)
	base := res[0]
	out.Baseline = simulated.Candidate{Policy: baseline.Name, Search: base, EstimatedShare: estimatedShare(base)}

	// The front within the evidence bound, and the policies that would be
	// on it but for their estimated outcomes.
	withCost := base.HasCost
	var within, beyond []int
	for i, r := range res[1:] {
		if estimatedShare(r) > o.EvidenceBound {
			beyond = append(beyond, i)
		} else {
			within = append(within, i)
		}
	}
	front := nonDominated(res[1:], within, withCost)
	for _, i := range nonDominated(res[1:], append(slices.Clone(within), beyond...), withCost) {
		if estimatedShare(res[1+i]) > o.EvidenceBound {
			out.Beyond = append(out.Beyond, candidate(ps[i], settings[indexOf(pols, ps[i])], res[1+i]))
		}
	}
	slices.SortStableFunc(front, func(a, b int) int {
		ra, rb := res[1+a], res[1+b]
		return cmp.Or(cmp.Compare(rb.SuccessRate.Value, ra.SuccessRate.Value), cmp.Compare(ra.Attempts.Value, rb.Attempts.Value))
	})
	var frontPols []*retry.Policy
	for _, i := range front {
		out.Front = append(out.Front, candidate(ps[i], settings[indexOf(pols, ps[i])], res[1+i]))
		frontPols = append(frontPols, ps[i])
	}

	if len(hold) > 0 && len(frontPols) > 0 {
		hres, err := replay.Simulate(ctx, hold, baseline, frontPols, replay.Options{Seed: o.Seed, Resamples: o.Resamples})
		if err != nil {
			return nil, nil, err
		}
		out.Replays += len(hold) * (len(frontPols) + 1)
		out.Baseline.Holdout = &hres[0]
		for i := range out.Front {
			h := hres[1+i]
			out.Front[i].Holdout = &h
			out.Front[i].Kept = kept(out.Front[i].Search, base, h, hres[0], withCost)
		}
	}
	pick(out, o.Constraints)
	if out.Pick >= 0 {
		frontPols[out.Pick].Name = "optimized (" + frontPols[out.Pick].Name + ")"
	}
	return out, frontPols, nil
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

// split keeps the newest share of eps apart, by time (then id, so that
// the split repeats).
func split(eps []episode.Episode, share float64) (search, hold []episode.Episode) {
	sorted := slices.Clone(eps)
	slices.SortStableFunc(sorted, func(a, b episode.Episode) int {
		return cmp.Or(a.Time.Compare(b.Time), cmp.Compare(a.ID, b.ID))
	})
	n := int(math.Round(float64(len(sorted)) * share))
	if share > 0 && n == 0 && len(sorted) > 1 {
		n = 1
	}
	return sorted[:len(sorted)-n], sorted[len(sorted)-n:]
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

func estimatedShare(r simulated.Result) float64 {
	if r.Episodes == 0 {
		return 0
	}
	return float64(r.Estimated) / float64(r.Episodes)
}

// objectives are r's objective values, each turned so that less is
// better; an undefined value is the worst.
func objectives(r simulated.Result, withCost bool) []float64 {
	var v []float64
	for _, o := range simulated.Objectives {
		if o.Key == "cost_usd" && !withCost {
			continue
		}
		x := simulated.ObjectiveValue(r, o.Key)
		if o.Higher {
			x = -x
		}
		if math.IsNaN(x) {
			x = math.Inf(1)
		}
		v = append(v, x)
	}
	return v
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
func dominates(a, b []float64, slack float64) bool {
	better := false
	last := len(a) - 1
	for i := range a {
		if a[i] > b[i] {
			return false
		}
		tol := slack * max(math.Abs(a[i]), math.Abs(b[i]))
		if i == last && slack > 0 {
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
func nonDominated(rs []simulated.Result, idx []int, withCost bool) []int {
	var out []int
	seen := map[string]bool{}
	obj := make(map[int][]float64, len(idx))
	for _, i := range idx {
		obj[i] = objectives(rs[i], withCost)
	}
	for _, i := range idx {
		vi := obj[i]
		dominated := false
		for _, j := range idx {
			if j != i && dominates(obj[j], vi, 0) {
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
func survivors(rs []simulated.Result, bound float64, n int) []int {
	var within, beyond []int
	for i, r := range rs {
		if estimatedShare(r) > bound {
			beyond = append(beyond, i)
		} else {
			within = append(within, i)
		}
	}
	var out []int
	for _, group := range [][]int{within, beyond} {
		ranked, first := rank(rs, group, n)
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
func rank(rs []simulated.Result, idx []int, n int) (ranked []int, first int) {
	slack := 2 / math.Sqrt(float64(max(n, 1)))
	obj := map[int][]float64{}
	for _, i := range idx {
		obj[i] = objectives(rs[i], true)
	}
	level := map[int]int{}
	left := slices.Clone(idx)
	for l := 0; len(left) > 0; l++ {
		var next, front []int
		for _, i := range left {
			if slices.ContainsFunc(left, func(j int) bool { return j != i && dominates(obj[j], obj[i], slack) }) {
				next = append(next, i)
			} else {
				front = append(front, i)
			}
		}
		if len(front) == 0 { // a cycle of slack-dominance: take the rest as one front
			front, next = left, nil
		}
		for _, i := range front {
			level[i] = l
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

func candidate(p *retry.Policy, settings []string, r simulated.Result) simulated.Candidate {
	return simulated.Candidate{Policy: p.Name, Settings: settings, Search: r, EstimatedShare: estimatedShare(r)}
}

func indexOf(pols []*retry.Policy, p *retry.Policy) int { return slices.Index(pols, p) }

// kept says whether a policy better than the baseline on the search (in
// some objective, by its point value) is still better on the holdout in
// one of those objectives without its success falling significantly
// below the baseline's there (the paired difference's interval wholly
// below zero). nil when it was better in nothing.
func kept(search, base, hold, holdBase simulated.Result, withCost bool) *bool {
	s, b := objectives(search, withCost), objectives(base, withCost)
	hs, hb := objectives(hold, withCost), objectives(holdBase, withCost)
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
	if d, ok := hold.Diff["success_rate"]; ok && !d.Exact && d.Hi < 0 {
		still = false
	}
	return &still
}

// pick sets the front's pick: of the policies meeting every constraint,
// the fewest attempts, then the lowest cost, time to resolution and the
// highest success. Without one, NoPick names the constraint that most
// policies fail.
func pick(out *simulated.Optimization, cs []Constraint) {
	base := out.Baseline.Search
	failed := make([]int, len(cs))
	best := -1
	for i := range out.Front {
		c := &out.Front[i]
		for k, con := range cs {
			if !con.holds(c.Search, base) {
				c.Fails = append(c.Fails, con.Text)
				failed[k]++
			}
		}
		if len(c.Fails) > 0 {
			continue
		}
		if best < 0 || better(c.Search, out.Front[best].Search) {
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

func better(a, b simulated.Result) bool {
	return cmp.Or(cmp.Compare(a.Attempts.Value, b.Attempts.Value), cmp.Compare(a.CostUSD.Value, b.CostUSD.Value),
		cmp.Compare(a.ResolutionP95.Value, b.ResolutionP95.Value), cmp.Compare(b.SuccessRate.Value, a.SuccessRate.Value)) < 0
}

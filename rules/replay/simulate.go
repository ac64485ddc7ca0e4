package replay

import (
	"context"
	"fmt"
	"hash/fnv"
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"sync"
	"time"

	"github.com/orchstat/orchstat/model/episode"
	"github.com/orchstat/orchstat/model/simulated"
	"github.com/orchstat/orchstat/rules/retry"
)

// Options tune a simulation.
type Options struct {
	Seed uint64
	// Resamples is the number of bootstrap resamples behind each interval
	// (default 200, at most MaxResamples).
	Resamples int
	// Blocks is how many groups of runs the bootstrap resamples (default
	// 500). Episodes of one run stay together, as they share limits and
	// conditions, so intervals are not too narrow.
	Blocks int
}

// MaxResamples caps Options.Resamples. Intervals settle long before
// (1,000 to 2,000 resamples is the usual advice for a 95% interval), and
// each resample costs every policy time and memory.
const MaxResamples = 10000

// checkEvery is how many episodes or resamples go by between looks at the
// context: often enough to stop within a second, rarely enough to cost
// nothing.
const checkEvery = 256

// exact is a figure with no interval.
func exact(v float64) simulated.Metric {
	return simulated.Metric{Value: v, Lo: v, Hi: v, Exact: true}
}

// sums are one block's totals.
type sums struct {
	episodes, success, attempts, wasted, backoff, halts, escalations, cost float64
	l2loops, l2success, l2iterations, l2stops, diagnoses                   float64
	hist                                                                   [histBins]float64
}

// The resolution-time histogram: bin i holds times up to histBase×histRatio^i,
// so quantiles are read to within 10%, from 1 ms to about two days.
const (
	histBins  = 220
	histBase  = float64(time.Millisecond)
	histRatio = 1.1
)

func histBin(d time.Duration) int {
	if float64(d) <= histBase {
		return 0
	}
	i := int(math.Ceil(math.Log(float64(d)/histBase) / math.Log(histRatio)))
	return min(i, histBins-1)
}

func binUpper(i int) float64 {
	return histBase * math.Pow(histRatio, float64(i)) / float64(time.Second)
}

// Simulate replays the provider requests, L2 repair loops and L3 steps
// under the baseline and each policy. The first result is the baseline's:
// the record's figures, with the self-check of the baseline's replay
// against the record.
//
// A policy that changes nothing an episode kind depends on (see
// Unchanged) is not replayed on that kind: its figures there are the
// baseline's, exactly.
//
// It stops, returning ctx's error, soon after ctx is done.
func Simulate(ctx context.Context, eps []episode.Episode, baseline *retry.Policy, policies []*retry.Policy, opts Options) ([]simulated.Result, error) {
	opts, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	sim := newSimulation(eps, baseline, opts)
	all := append([]*retry.Policy{baseline}, policies...)
	out := sim.replayAll(ctx, all)
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	shareUnchanged(out)
	bs, err := resample(ctx, out, sim.blocks, opts)
	if err != nil {
		return nil, err
	}
	results := make([]simulated.Result, len(all))
	for pi := range all {
		results[pi] = bs.result(pi, out[pi].res)
	}
	return results, nil
}

func (o Options) withDefaults() (Options, error) {
	if o.Resamples <= 0 {
		o.Resamples = 200
	}
	if o.Resamples > MaxResamples {
		return o, fmt.Errorf("%d resamples: at most %d", o.Resamples, MaxResamples)
	}
	if o.Blocks <= 0 {
		o.Blocks = 500
	}
	return o, nil
}

// simulation is what every policy's replay shares: the episodes grouped
// for replay, the bootstrap block of each, and the replayers.
type simulation struct {
	baseline *retry.Policy
	// prov is the provider requests and L2 loops, in the record's order;
	// l2 is each loop's record, prepared once for every policy.
	prov []*episode.Episode
	l2   map[*episode.Episode]*l2Record
	// l3 is the L3 steps by run: the diagnosis trigger counts across steps.
	l3 []*l3Run
	// blocks is how many groups of runs the bootstrap resamples; blockOf
	// is each of prov's.
	blocks  int
	blockOf []int
	// runOf is the index of each of prov's runs, runs how many there are:
	// the replay keeps a run's tracker by index, not by a map of names.
	runOf []int
	runs  int
	// rp replays the policies; rb the baseline for the self-check, drawing
	// nothing from the seed, as the baseline is the same whatever --seed
	// says.
	rp, rb *Replayer
}

func newSimulation(eps []episode.Episode, baseline *retry.Policy, opts Options) *simulation {
	sim := &simulation{baseline: baseline, l2: map[*episode.Episode]*l2Record{}}
	runs := map[string]bool{}
	sim.groupRequests(eps, runs)
	sim.groupL3(eps, runs)
	sim.blocks = min(opts.Blocks, max(len(runs), 1))
	sim.blockOf = make([]int, len(sim.prov))
	sim.runOf = make([]int, len(sim.prov))
	index := map[string]int{}
	for i, e := range sim.prov {
		sim.blockOf[i] = sim.blockOfRun(e.Run)
		k, ok := index[e.Run]
		if !ok {
			k = len(index)
			index[e.Run] = k
		}
		sim.runOf[i] = k
	}
	sim.runs = len(index)
	model := Fit(eps, baseline)
	sim.rp = &Replayer{Baseline: baseline, Model: model, Seed: opts.Seed}
	sim.rb = &Replayer{Baseline: baseline, Model: model}
	return sim
}

// groupRequests collects the provider requests and L2 loops, adding their
// runs to runs.
func (sim *simulation) groupRequests(eps []episode.Episode, runs map[string]bool) {
	for i := range eps {
		if e := &eps[i]; e.Kind == episode.KindProvider || e.Kind == episode.KindL2 {
			sim.prov = append(sim.prov, e)
			runs[e.Run] = true
			if e.Kind == episode.KindL2 {
				rec := prepareL2(e, sim.baseline)
				sim.l2[e] = &rec
			}
		}
	}
}

// groupL3 collects the L3 steps by run, adding their runs to runs.
func (sim *simulation) groupL3(eps []episode.Episode, runs map[string]bool) {
	l3Of := map[string]*l3Run{}
	for i := range eps {
		if e := &eps[i]; e.Kind == episode.KindL3 {
			r := l3Of[e.Run]
			if r == nil {
				r = &l3Run{run: e.Run}
				l3Of[e.Run] = r
				sim.l3 = append(sim.l3, r)
				runs[e.Run] = true
			}
			r.steps = append(r.steps, e)
		}
	}
}

// blockOfRun is the bootstrap block of a run: its episodes stay together.
func (sim *simulation) blockOfRun(run string) int {
	h := fnv.New32a()
	h.Write([]byte(run))
	return int(h.Sum32() % uint32(sim.blocks))
}

// replayed is one policy's replay before the bootstrap: its counts, and
// the sums of each block.
type replayed struct {
	res    simulated.Result
	blocks []sums
}

// replayAll replays every policy (the baseline first), as many at once as
// there are processors. A replay stopped by ctx leaves its slot empty.
func (sim *simulation) replayAll(ctx context.Context, all []*retry.Policy) []replayed {
	out := make([]replayed, len(all))
	var wg sync.WaitGroup
	sem := make(chan struct{}, runtime.GOMAXPROCS(0))
	for pi, p := range all {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			if rd, ok := sim.replay(ctx, pi, p); ok {
				out[pi] = rd
			}
		}()
	}
	wg.Wait()
	return out
}

// replay replays policy pi (0: the baseline) on every episode kind it
// touches; false when ctx stopped it.
func (sim *simulation) replay(ctx context.Context, pi int, p *retry.Policy) (replayed, bool) {
	rd := replayed{res: simulated.Result{Policy: p.Name}, blocks: make([]sums, sim.blocks)}
	isBaseline := pi == 0
	touched := map[episode.Kind]bool{episode.KindProvider: true, episode.KindL2: true, episode.KindL3: true}
	if !isBaseline {
		touched = Touches(p, sim.baseline)
		rd.res.Unchanged = unchangedKinds(touched)
	}
	s := NewStream()
	trackers := make([]*retry.Tracker, sim.runs)
	for i, e := range sim.prov {
		if i%checkEvery == 0 && ctx.Err() != nil {
			return rd, false
		}
		b := &rd.blocks[sim.blockOf[i]]
		if e.Kind == episode.KindL2 {
			rd.res.L2Loops++
			if touched[episode.KindL2] { // else the baseline's figures, shared later
				sim.replayL2(&rd.res, b, e, isBaseline, p, s)
			}
			continue
		}
		rd.res.Episodes++
		if e.CostUSD > 0 {
			rd.res.HasCost = true
		}
		if touched[episode.KindProvider] {
			sim.replayRequest(&rd.res, b, e, isBaseline, p, trackerOf(trackers, sim.runOf[i], p), s)
		}
	}
	for i, r := range sim.l3 {
		if i%checkEvery == 0 && ctx.Err() != nil {
			return rd, false
		}
		rd.res.L3Runs++
		if touched[episode.KindL3] {
			rd.blocks[sim.blockOfRun(r.run)].diagnoses += float64(sim.replayL3(&rd.res, r, isBaseline, p))
		}
	}
	return rd, true
}

// unchangedKinds are the episode kinds touched leaves alone.
func unchangedKinds(touched map[episode.Kind]bool) []episode.Kind {
	var out []episode.Kind
	for _, k := range []episode.Kind{episode.KindProvider, episode.KindL2, episode.KindL3} {
		if !touched[k] {
			out = append(out, k)
		}
	}
	return out
}

// trackerOf is run's retry tracker: a run's requests share its limits.
func trackerOf(trackers []*retry.Tracker, run int, p *retry.Policy) *retry.Tracker {
	tr := trackers[run]
	if tr == nil {
		tr = retry.NewTracker(p, nil)
		trackers[run] = tr
	}
	return tr
}

// replayL2 replays one L2 loop into b. The baseline's figures are the
// record's, and its replay is checked against it.
func (sim *simulation) replayL2(res *simulated.Result, b *sums, e *episode.Episode, isBaseline bool, p *retry.Policy, s *Stream) {
	rec := sim.l2[e]
	var o Outcome
	if isBaseline {
		o = recordL2(e)
		l2Check(res, e.ID, rec)
	} else {
		o = sim.rp.L2(e, rec.its, p, s)
		// Beyond the record it is estimated anyway; else it is when the
		// missing signatures could change it.
		if !o.Estimated && !rec.exactUnder(p) {
			o.Estimated = true
		}
	}
	if o.Estimated {
		res.L2Estimated++
	}
	b.addL2(o)
}

// replayRequest replays one provider request into b. The baseline's
// figures are the record's, and its replay is checked against it.
func (sim *simulation) replayRequest(res *simulated.Result, b *sums, e *episode.Episode, isBaseline bool, p *retry.Policy, tr *retry.Tracker, s *Stream) {
	var o Outcome
	if isBaseline {
		r := sim.rb.Provider(e, p, tr, s)
		same := r.Success == e.Success && r.Attempts == len(e.Attempts)
		selfCheck(res, e.ID, same, fmt.Sprintf("the baseline makes %d attempts (success %t); the record %d (success %t)",
			r.Attempts, r.Success, len(e.Attempts), e.Success))
		o = sim.rb.recordProvider(e, r, same)
	} else {
		o = sim.rp.Provider(e, p, tr, s)
	}
	if o.Estimated {
		res.Estimated++
	}
	b.addRequest(o)
}

// replayL3 is the diagnoses one run's L3 steps start: under the baseline
// the recorded ones, checked against the baseline's trigger.
func (sim *simulation) replayL3(res *simulated.Result, r *l3Run, isBaseline bool, p *retry.Policy) int {
	n := r.recordedDiagnoses()
	if !isBaseline {
		return r.diagnoses(p)
	}
	selfCheck(res, r.run+"/l3", r.diagnoses(p) == n, fmt.Sprintf("the baseline starts %d diagnoses; the record %d", r.diagnoses(p), n))
	return n
}

// shareUnchanged gives the policies that leave a kind alone the
// baseline's figures for it.
func shareUnchanged(out []replayed) {
	for pi := 1; pi < len(out); pi++ {
		for _, k := range out[pi].res.Unchanged {
			for b := range out[pi].blocks {
				out[pi].blocks[b].copyKind(k, &out[0].blocks[b])
			}
		}
	}
}

// bootstrap is every policy's figures (points) and their values in each
// resample (samples: policy → figure → resample), figures in the
// catalog's order.
type bootstrap struct {
	resamples int
	points    [][]float64
	samples   [][][]float64
}

// resample draws one set of resamples for every policy, so differences
// are paired. Each resample is drawn, summed and dropped in turn: only
// the figures are kept, figure by figure.
func resample(ctx context.Context, out []replayed, blocks int, opts Options) (*bootstrap, error) {
	bs := &bootstrap{
		resamples: opts.Resamples,
		points:    make([][]float64, len(out)),
		samples:   make([][][]float64, len(out)),
	}
	for pi := range out {
		var total sums
		for b := range out[pi].blocks {
			total.add(&out[pi].blocks[b])
		}
		bs.points[pi] = figures(&total, nil)
		bs.samples[pi] = make([][]float64, len(catalog))
		for f := range catalog {
			bs.samples[pi][f] = make([]float64, opts.Resamples)
		}
	}
	// Every policy's resamples are drawn from the same blocks, so
	// differences are paired: the picks are drawn first, then each
	// policy summed on its own, as many at once as there are processors.
	r := rand.New(rand.NewPCG(opts.Seed, 0x626f6f74))
	picks := make([]int32, opts.Resamples*blocks)
	for j := range picks {
		picks[j] = int32(r.IntN(blocks))
	}
	var wg sync.WaitGroup
	sem := make(chan struct{}, runtime.GOMAXPROCS(0))
	for pi := range out {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			vals := make([]float64, len(catalog))
			for i := range opts.Resamples {
				// One resample sums a policy's blocks, a fraction of a
				// millisecond, so 256 of them pass before a look at ctx.
				if i%checkEvery == 0 && ctx.Err() != nil {
					return
				}
				var t sums
				for _, b := range picks[i*blocks : (i+1)*blocks] {
					t.add(&out[pi].blocks[b])
				}
				for f, v := range figures(&t, vals) {
					bs.samples[pi][f][i] = v
				}
			}
		}()
	}
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return bs, nil
}

// result fills res, policy pi's replay, with its figures and their
// intervals, and for a policy its differences from the baseline.
func (bs *bootstrap) result(pi int, res simulated.Result) simulated.Result {
	for f, fig := range catalog {
		m := fig.In(&res)
		if pi == 0 || slices.Contains(res.Unchanged, fig.Kind) {
			*m = exact(bs.points[pi][f])
			continue
		}
		lo, hi := interval(slices.Clone(bs.samples[pi][f]))
		*m = simulated.Metric{Value: bs.points[pi][f], Lo: lo, Hi: hi}
	}
	if pi > 0 {
		res.Diff = bs.diff(pi, res.Unchanged)
	}
	return res
}

// diff is each figure of policy pi minus the baseline's, with the interval
// of the paired difference; exact for the kinds the policy leaves alone.
func (bs *bootstrap) diff(pi int, unchanged []episode.Kind) map[string]simulated.Metric {
	d := map[string]simulated.Metric{}
	vals := make([]float64, bs.resamples)
	for f, fig := range catalog {
		if slices.Contains(unchanged, fig.Kind) {
			d[fig.Key] = exact(bs.points[pi][f] - bs.points[0][f])
			continue
		}
		for i := range vals {
			vals[i] = bs.samples[pi][f][i] - bs.samples[0][f][i]
		}
		lo, hi := interval(vals)
		d[fig.Key] = simulated.Metric{Value: bs.points[pi][f] - bs.points[0][f], Lo: lo, Hi: hi}
	}
	return d
}

// recordProvider is a provider request as recorded: the baseline's
// figures. The record has no backoff of its own, so the waits are the
// baseline's schedule at the middle of its jitter, the same for any seed;
// the resolution time is the recorded duration when there is one. A halt
// is the replay's, when the replay reproduces the request.
func (rp *Replayer) recordProvider(e *episode.Episode, replayed Outcome, reproduced bool) Outcome {
	n := len(e.Attempts)
	o := Outcome{Success: e.Success, Attempts: n, CostUSD: e.CostUSD}
	if !o.Success {
		o.Wasted = max(n-1, 0)
	}
	var prev time.Duration
	for k := 1; k < n; k++ {
		prev = rp.Baseline.Backoff.Next(k, prev, midpoint{})
		o.Backoff += prev
	}
	o.Resolution = e.Duration
	if o.Resolution <= 0 {
		o.Resolution = time.Duration(n)*rp.Model.AttemptTime + o.Backoff
	}
	if reproduced {
		o.Halted, o.Reason = replayed.Halted, replayed.Reason
	}
	return o
}

// figures computes every figure from block totals, in the catalog's
// order, into buf (a new slice when nil).
func figures(t *sums, buf []float64) []float64 {
	if buf == nil {
		buf = make([]float64, len(catalog))
	}
	for i, total := range totals {
		buf[i] = total(t)
	}
	return buf
}

// selfCheck counts one baseline replay against its record; why says what
// the replay did instead.
func selfCheck(r *simulated.Result, id string, reproduced bool, why string) {
	r.Checked++
	switch {
	case reproduced:
		r.Reproduced++
	case len(r.Mismatches) < MaxListed:
		r.Mismatches = append(r.Mismatches, simulated.Note{ID: id, Reason: why})
	}
}

// l2Check counts one L2 loop in the self-check.
func l2Check(r *simulated.Result, id string, rec *l2Record) {
	if !rec.checkable {
		r.NotCheckable++
		if len(r.Unchecked) < MaxListed {
			r.Unchecked = append(r.Unchecked, simulated.Note{ID: id, Reason: rec.why})
		}
		return
	}
	if rec.inferred {
		r.L2Inferred++
	}
	selfCheck(r, id, rec.reproduced, rec.why)
}

// copyKind sets the figures of kind k to o's.
func (s *sums) copyKind(k episode.Kind, o *sums) {
	switch k {
	case episode.KindProvider:
		s.episodes, s.success, s.attempts, s.wasted, s.backoff, s.halts, s.cost, s.hist =
			o.episodes, o.success, o.attempts, o.wasted, o.backoff, o.halts, o.cost, o.hist
	case episode.KindL2:
		s.l2loops, s.l2success, s.l2iterations, s.escalations, s.l2stops = o.l2loops, o.l2success, o.l2iterations, o.escalations, o.l2stops
	case episode.KindL3:
		s.diagnoses = o.diagnoses
	}
}

// addRequest counts one provider request's outcome.
func (s *sums) addRequest(o Outcome) {
	s.episodes++
	s.success += b2f(o.Success)
	s.attempts += float64(o.Attempts)
	s.wasted += float64(o.Wasted)
	s.backoff += o.Backoff.Seconds()
	s.halts += b2f(o.Halted)
	s.cost += o.CostUSD
	s.hist[histBin(o.Resolution)]++
}

// addL2 counts one L2 loop's outcome.
func (s *sums) addL2(o Outcome) {
	s.l2loops++
	s.l2success += b2f(o.Success)
	s.l2iterations += float64(o.Attempts)
	s.escalations += b2f(o.Escalated)
	s.l2stops += b2f(o.Halted)
}

func (s *sums) add(o *sums) {
	s.episodes += o.episodes
	s.success += o.success
	s.attempts += o.attempts
	s.wasted += o.wasted
	s.backoff += o.backoff
	s.halts += o.halts
	s.escalations += o.escalations
	s.cost += o.cost
	s.l2loops += o.l2loops
	s.l2success += o.l2success
	s.l2iterations += o.l2iterations
	s.l2stops += o.l2stops
	s.diagnoses += o.diagnoses
	for i := range s.hist {
		s.hist[i] += o.hist[i]
	}
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

func ratio(a, b float64) float64 {
	if b == 0 {
		return math.NaN()
	}
	return a / b
}

// quantile of sorted values, by the nearest-rank method.
func quantile(sorted []float64, q float64) float64 {
	if len(sorted) == 0 {
		return math.NaN()
	}
	i := int(math.Ceil(q*float64(len(sorted)))) - 1
	return sorted[max(i, 0)]
}

// histQuantile is the upper edge of the bin holding the q-quantile.
func histQuantile(h *[histBins]float64, q float64) float64 {
	var n float64
	for _, c := range h {
		n += c
	}
	if n == 0 {
		return math.NaN()
	}
	want, acc := math.Ceil(q*n), 0.0
	for i, c := range h {
		acc += c
		if acc >= want {
			return binUpper(i)
		}
	}
	return binUpper(histBins - 1)
}

// interval is the 2.5th and 97.5th percentiles, ignoring NaNs.
func interval(vals []float64) (float64, float64) {
	v := slices.DeleteFunc(vals, math.IsNaN)
	if len(v) == 0 {
		return math.NaN(), math.NaN()
	}
	slices.Sort(v)
	return quantile(v, 0.025), quantile(v, 0.975)
}

package replay

import (
	"context"
	"fmt"
	"hash/fnv"
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"time"

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

// Metric is a figure with its 95% interval (from the bootstrap). Exact
// figures have Lo == Hi == Value only when every outcome is exact and the
// figure is the record's; intervals still show sampling uncertainty.
type Metric struct {
	Value float64 `json:"value"`
	Lo    float64 `json:"lo"`
	Hi    float64 `json:"hi"`
}

// Result is one policy's replay of the episodes.
type Result struct {
	Policy   string `json:"policy"`
	Episodes int    `json:"episodes"`
	// Estimated counts episodes whose outcome under this policy is
	// estimated rather than read from the record.
	Estimated int `json:"estimated_episodes"`

	SuccessRate    Metric `json:"success_rate"`
	Attempts       Metric `json:"attempts"`
	Wasted         Metric `json:"wasted_attempts"`
	BackoffSeconds Metric `json:"backoff_seconds"`
	ResolutionP50  Metric `json:"resolution_p50_seconds"`
	ResolutionP95  Metric `json:"resolution_p95_seconds"`
	Halts          Metric `json:"halts"`
	CostUSD        Metric `json:"cost_usd"`

	// The L2 repair loops, replayed by the loop's own rules.
	L2Loops       int    `json:"l2_loops"`
	L2Estimated   int    `json:"l2_estimated_loops"`
	L2SuccessRate Metric `json:"l2_success_rate"`
	L2Iterations  Metric `json:"l2_iterations"`
	Escalations   Metric `json:"escalations"`
	NonImproving  Metric `json:"l2_non_improving_stops"`

	// L3: runs with L3 steps, and the diagnoses the trigger starts.
	L3Runs    int    `json:"l3_runs"`
	Diagnoses Metric `json:"diagnoses"`
	// Diff is each figure minus the baseline's, with the interval of the
	// paired difference (both replays see the same resampled runs).
	Diff map[string]Metric `json:"diff_from_baseline,omitempty"`

	// Reproduced of Checked episodes replayed under the baseline gave the
	// recorded outcome (success and attempt count). Baseline only.
	Reproduced int `json:"reproduced,omitempty"`
	Checked    int `json:"checked,omitempty"`
	// Unfinished counts L2 loops without a recorded end or ended by an
	// error, which the self-check skips.
	Unfinished int `json:"unfinished_loops,omitempty"`
	// Mismatches lists up to 10 episodes that did not reproduce.
	Mismatches []string `json:"mismatches,omitempty"`
	// HasCost is set when some episode had a recorded cost.
	HasCost bool `json:"has_cost"`
}

// MarshalJSON writes an undefined figure (NaN, such as a rate over no
// episodes) as null.
func (m Metric) MarshalJSON() ([]byte, error) {
	f := func(v float64) string {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return "null"
		}
		return strconv.FormatFloat(v, 'g', -1, 64)
	}
	return []byte(`{"value":` + f(m.Value) + `,"lo":` + f(m.Lo) + `,"hi":` + f(m.Hi) + `}`), nil
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

// Simulate replays the provider requests and L2 repair loops under the
// baseline and each policy. The first result is the baseline's, with its
// self-check over both.
//
// It stops, returning ctx's error, soon after ctx is done.
func Simulate(ctx context.Context, eps []Episode, baseline *retry.Policy, policies []*retry.Policy, opts Options) ([]Result, error) {
	if opts.Resamples <= 0 {
		opts.Resamples = 200
	}
	if opts.Resamples > MaxResamples {
		return nil, fmt.Errorf("%d resamples: at most %d", opts.Resamples, MaxResamples)
	}
	if opts.Blocks <= 0 {
		opts.Blocks = 500
	}
	var prov []*Episode
	runs := map[string]bool{}
	for i := range eps {
		if eps[i].Kind == KindProvider || eps[i].Kind == KindL2 {
			prov = append(prov, &eps[i])
			runs[eps[i].Run] = true
		}
	}
	// L3 steps replay per run: the diagnosis trigger counts across steps.
	var l3 []*l3Run
	l3Of := map[string]*l3Run{}
	for i := range eps {
		if e := &eps[i]; e.Kind == KindL3 {
			r := l3Of[e.Run]
			if r == nil {
				r = &l3Run{run: e.Run}
				l3Of[e.Run] = r
				l3 = append(l3, r)
				runs[e.Run] = true
			}
			r.steps = append(r.steps, e)
		}
	}
	blocks := min(opts.Blocks, max(len(runs), 1))
	blockOfRun := func(run string) int {
		h := fnv.New32a()
		h.Write([]byte(run))
		return int(h.Sum32() % uint32(blocks))
	}
	blockOf := make([]int, len(prov))
	for i, e := range prov {
		blockOf[i] = blockOfRun(e.Run)
	}
	model := Fit(eps, baseline)
	rp := &Replayer{Baseline: baseline, Model: model, Seed: opts.Seed}
	all := append([]*retry.Policy{baseline}, policies...)

	type replayed struct {
		res    Result
		blocks []sums
	}
	out := make([]replayed, len(all))
	var wg sync.WaitGroup
	sem := make(chan struct{}, runtime.GOMAXPROCS(0))
	for pi, p := range all {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			rd := replayed{blocks: make([]sums, blocks)}
			rd.res = Result{Policy: p.Name}
			s := NewStream()
			trackers := map[string]*retry.Tracker{}
			for i, e := range prov {
				if i%checkEvery == 0 && ctx.Err() != nil {
					return
				}
				b := &rd.blocks[blockOf[i]]
				if e.Kind == KindL2 {
					o := rp.L2(e, p, s)
					rd.res.L2Loops++
					if o.Estimated {
						rd.res.L2Estimated++
					}
					// A loop with no recorded end (its run still writing, or cut
					// short), or ended by an error rather than by the loop's
					// rules, has no policy outcome to reproduce.
					unfinished := !e.Success && !e.Escalated && e.StopReason != "non_improving" && e.StopReason != "budget_exceeded"
					if pi == 0 && unfinished {
						rd.res.Unfinished++
					} else if pi == 0 {
						rd.res.selfCheck(e.ID, o.Success == e.Success && o.Attempts == len(e.Attempts) && o.Escalated == e.Escalated)
					}
					b.l2loops++
					b.l2success += b2f(o.Success)
					b.l2iterations += float64(o.Attempts)
					b.escalations += b2f(o.Escalated)
					b.l2stops += b2f(o.Halted)
					continue
				}
				rd.res.Episodes++
				tr := trackers[e.Run]
				if tr == nil {
					tr = retry.NewTracker(p, nil)
					trackers[e.Run] = tr
				}
				o := rp.Provider(e, p, tr, s)
				if o.Estimated {
					rd.res.Estimated++
				}
				if e.CostUSD > 0 {
					rd.res.HasCost = true
				}
				if pi == 0 {
					rd.res.selfCheck(e.ID, o.Success == e.Success && o.Attempts == len(e.Attempts))
				}
				b.episodes++
				b.success += b2f(o.Success)
				b.attempts += float64(o.Attempts)
				b.wasted += float64(o.Wasted)
				b.backoff += o.Backoff.Seconds()
				b.halts += b2f(o.Halted)
				b.cost += o.CostUSD
				b.hist[histBin(o.Resolution)]++
			}
			for i, r := range l3 {
				if i%checkEvery == 0 && ctx.Err() != nil {
					return
				}
				n := r.diagnoses(p)
				rd.res.L3Runs++
				rd.blocks[blockOfRun(r.run)].diagnoses += float64(n)
				if pi == 0 {
					rd.res.selfCheck(r.run+"/l3", n == r.recordedDiagnoses())
				}
			}
			out[pi] = rd
		}()
	}
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return nil, err
	}

	// One set of resamples for every policy, so differences are paired.
	// Each resample is drawn, summed and dropped in turn: only the figures
	// are kept, figure by figure.
	r := rand.New(rand.NewPCG(opts.Seed, 0x626f6f74))
	pick := make([]int32, blocks)
	samples := make([][len(figureNames)][]float64, len(all)) // policy → figure → resample
	points := make([][len(figureNames)]float64, len(all))
	for pi := range all {
		var total sums
		for b := range out[pi].blocks {
			total.add(&out[pi].blocks[b])
		}
		points[pi] = figures(&total)
		for f := range figureNames {
			samples[pi][f] = make([]float64, opts.Resamples)
		}
	}
	for i := range opts.Resamples {
		if i%checkEvery == 0 && ctx.Err() != nil {
			return nil, ctx.Err()
		}
		for j := range pick {
			pick[j] = int32(r.IntN(blocks))
		}
		for pi := range all {
			var t sums
			for _, b := range pick {
				t.add(&out[pi].blocks[b])
			}
			for f, v := range figures(&t) {
				samples[pi][f][i] = v
			}
		}
	}
	results := make([]Result, len(all))
	for pi := range all {
		res := out[pi].res
		metric := func(name string) Metric {
			f := figureIndex(name)
			lo, hi := interval(slices.Clone(samples[pi][f]))
			return Metric{Value: points[pi][f], Lo: lo, Hi: hi}
		}
		res.SuccessRate, res.Attempts, res.Wasted = metric("success_rate"), metric("attempts"), metric("wasted_attempts")
		res.BackoffSeconds, res.Halts, res.Escalations = metric("backoff_seconds"), metric("halts"), metric("escalations")
		res.ResolutionP50, res.ResolutionP95, res.CostUSD = metric("resolution_p50_seconds"), metric("resolution_p95_seconds"), metric("cost_usd")
		res.L2SuccessRate, res.L2Iterations, res.NonImproving = metric("l2_success_rate"), metric("l2_iterations"), metric("l2_non_improving_stops")
		res.Diagnoses = metric("diagnoses")
		if pi > 0 {
			res.Diff = map[string]Metric{}
			vals := make([]float64, opts.Resamples)
			for f, name := range figureNames {
				for i := range vals {
					vals[i] = samples[pi][f][i] - samples[0][f][i]
				}
				lo, hi := interval(vals)
				res.Diff[name] = Metric{Value: points[pi][f] - points[0][f], Lo: lo, Hi: hi}
			}
		}
		results[pi] = res
	}
	return results, nil
}

// figureNames are the figures of a replay, as Result.Diff names them.
var figureNames = [...]string{"success_rate", "attempts", "wasted_attempts", "backoff_seconds", "halts",
	"escalations", "cost_usd", "l2_success_rate", "l2_iterations", "l2_non_improving_stops", "diagnoses",
	"resolution_p50_seconds", "resolution_p95_seconds"}

func figureIndex(name string) int {
	for i, n := range figureNames {
		if n == name {
			return i
		}
	}
	panic("replay: unknown figure " + name)
}

// figures computes every figure from block totals, in figureNames' order.
func figures(t *sums) [len(figureNames)]float64 {
	return [...]float64{ratio(t.success, t.episodes), t.attempts, t.wasted, t.backoff, t.halts,
		t.escalations, t.cost, ratio(t.l2success, t.l2loops), t.l2iterations, t.l2stops, t.diagnoses,
		histQuantile(&t.hist, 0.5), histQuantile(&t.hist, 0.95)}
}

// selfCheck counts one baseline replay against its record.
func (r *Result) selfCheck(id string, reproduced bool) {
	r.Checked++
	switch {
	case reproduced:
		r.Reproduced++
	case len(r.Mismatches) < 10:
		r.Mismatches = append(r.Mismatches, id)
	}
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

package replay

import (
	"context"

	"github.com/orchstat/orchstat/model/episode"
	"github.com/orchstat/orchstat/model/simulated"
	"github.com/orchstat/orchstat/rules/retry"
)

// MaxListed bounds the run ids a result lists.
const MaxListed = 20

// runOutcome is how one run ends under a policy.
type runOutcome struct {
	attempts int
	passed   bool
	beyond   bool
	reason   string
}

// ReplayAttempts replays runs under base and each policy. Runs are taken
// in order, a batch's in the order given; the baseline is checked against
// the record when check is set (a baseline that is not the policy the
// records were made under, such as "retry as recorded", has nothing to
// reproduce).
// It stops, returning ctx's error, soon after ctx is done.
func ReplayAttempts(ctx context.Context, runs []episode.AttemptRun, base *retry.Policy, policies []*retry.Policy, check bool) ([]simulated.AttemptResult, error) {
	var out []simulated.AttemptResult
	for i, p := range append([]*retry.Policy{base}, policies...) {
		res, err := replayAll(ctx, runs, p, i == 0, i == 0 && check)
		if err != nil {
			return nil, err
		}
		out = append(out, res)
	}
	return out, nil
}

// replayAll replays runs under p. The baseline's figures are the
// record's: a run ends as recorded, stopped by the reason its replay
// gives when the replay reproduces it, else by "record".
func replayAll(ctx context.Context, runs []episode.AttemptRun, p *retry.Policy, baseline, check bool) (simulated.AttemptResult, error) {
	res := simulated.AttemptResult{Policy: p.Name, Stops: map[string]int{}, Changed: []string{}, Unknown: []string{}}
	trackers := map[string]*retry.Tracker{}
	for i, r := range runs {
		if i%checkEvery == 0 && ctx.Err() != nil {
			return res, ctx.Err()
		}
		if len(r.Attempts) == 0 {
			continue
		}
		pol := p
		if baseline && r.MaxAttempts > 0 && r.MaxAttempts != p.MaxAttempts {
			pol = p.Clone()
			pol.MaxAttempts = r.MaxAttempts
			pol.MaxRetries = max(pol.MaxRetries, r.MaxAttempts-1)
		}
		key := r.Batch
		if key == "" {
			key = "\x00" + r.System + "\x00" + r.RunID
		}
		tr := trackers[key]
		if tr == nil {
			tr = retry.NewTracker(pol, midpoint{})
			trackers[key] = tr
		}
		tr.Policy = pol // the baseline's limit is each run's own
		o := replayRun(tr, r)
		recPassed := r.Attempts[len(r.Attempts)-1].Passed
		reproduced := !o.beyond && o.passed == recPassed && o.attempts == len(r.Attempts)
		if check {
			res.Checked++
			if reproduced {
				res.Reproduced++
			} else if len(res.Mismatches) < MaxListed {
				res.Mismatches = append(res.Mismatches, r.RunID)
			}
		}
		if baseline && !reproduced {
			// The baseline is the record: where the record stopped, the
			// run stopped.
			o = runOutcome{attempts: len(r.Attempts), passed: recPassed, reason: "record"}
		}
		res.Runs++
		res.Attempts += o.attempts
		res.Saved += max(0, len(r.Attempts)-o.attempts)
		switch {
		case o.beyond:
			res.BeyondRecord++
			if len(res.Unknown) < MaxListed {
				res.Unknown = append(res.Unknown, r.RunID)
			}
		case o.passed:
			res.Succeeded++
		default:
			res.Failed++
			res.Stops[o.reason]++
		}
		if recPassed && !o.passed && !o.beyond {
			res.SuccessesLost++
		}
		if !o.beyond && o.passed != recPassed && len(res.Changed) < MaxListed {
			res.Changed = append(res.Changed, r.RunID)
		}
	}
	return res, nil
}

// replayRun walks one run's recorded attempts under the tracker's policy:
// it stops where the policy stops, or where the record does.
func replayRun(tr *retry.Tracker, r episode.AttemptRun) runOutcome {
	tr.StartItem()
	for i, a := range r.Attempts {
		if a.Passed {
			tr.Success()
			tr.EndItem(false)
			return runOutcome{attempts: i + 1, passed: true}
		}
		d := tr.Failed(retry.Failure{Class: a.Class, Signature: a.Signature, Operation: a.Stage, Attempt: i + 1, Message: a.Message})
		if !d.Retry {
			tr.EndItem(true)
			return runOutcome{attempts: i + 1, reason: d.Reason}
		}
	}
	return runOutcome{attempts: len(r.Attempts), beyond: true}
}

// midpoint is the randomness of a replay that reports no waits: the
// records hold no attempt times to compare them with, and a wait changes
// no decision.
type midpoint struct{}

func (midpoint) Float64() float64 { return 0.5 }

package replay

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/orchstat/orchstat/model/episode"
	"github.com/orchstat/orchstat/rules/retry"
)

// AttemptResult is one policy's replay of one system's runs.
type AttemptResult struct {
	Policy    string `json:"policy"`
	Runs      int    `json:"runs"`
	Succeeded int    `json:"succeeded"`
	Failed    int    `json:"failed"`
	// BeyondRecord counts runs the policy would retry past their last
	// recorded attempt, which had failed: what that retry would have done
	// is not in the record, so these runs' outcomes are unknown: neither
	// succeeded nor failed. The baseline, the record, has none.
	BeyondRecord int `json:"unknown"`
	// Unknown lists the first MaxListed of them.
	Unknown []string `json:"unknown_runs"`
	// Attempts the policy makes within the record, and recorded attempts
	// it does not make.
	Attempts int `json:"attempts"`
	Saved    int `json:"attempts_saved"`
	// SuccessesLost counts runs that passed in the record at an attempt
	// the policy does not reach.
	SuccessesLost int `json:"successes_lost"`
	// Stops counts why runs stopped failing: the retry core's reasons
	// (class, max_retries, max_attempts, signature_halt, global_cap,
	// cascade, budget), or "record" where a baseline that only stands for
	// the record stopped because the record does.
	Stops map[string]int `json:"stops"`
	// Changed lists runs whose known outcome differs from the record, the
	// first MaxListed.
	Changed []string `json:"changed_runs"`
	// For the baseline: runs whose replay ends as the record does, out of
	// those checked, and the first MaxListed that do not.
	Reproduced int      `json:"reproduced,omitempty"`
	Checked    int      `json:"checked,omitempty"`
	Mismatches []string `json:"mismatches,omitempty"`
}

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
func ReplayAttempts(ctx context.Context, runs []episode.AttemptRun, base *retry.Policy, policies []*retry.Policy, check bool) ([]AttemptResult, error) {
	var out []AttemptResult
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
func replayAll(ctx context.Context, runs []episode.AttemptRun, p *retry.Policy, baseline, check bool) (AttemptResult, error) {
	res := AttemptResult{Policy: p.Name, Stops: map[string]int{}, Changed: []string{}, Unknown: []string{}}
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

// AttemptVerdict says in plain words what r changes against the
// baseline (the record) for one system's runs. Runs r retries past the
// record have an unknown outcome: they count as neither success nor
// failure, and when they could account for the whole difference in
// successes the verdict says that the comparison means nothing.
func AttemptVerdict(base, r AttemptResult) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: ", r.Policy)
	if r.Runs == 0 {
		b.WriteString("no recorded runs to replay.")
		return b.String()
	}
	s0, s, u := base.Succeeded, r.Succeeded, r.BeyondRecord
	if u == 0 {
		fmt.Fprintf(&b, "%d of %d runs succeed and %d fail, against %d and %d in the record", s, r.Runs, r.Failed, s0, base.Failed)
	} else {
		fmt.Fprintf(&b, "%d of %d runs (%.1f%%) would be retried past the record, so their outcome is unknown: "+
			"between %d and %d runs would succeed against %d in the record, and between %d and %d would fail against %d",
			u, r.Runs, 100*float64(u)/float64(r.Runs), s, s+u, s0, r.Failed, r.Failed+u, base.Failed)
		switch {
		case s > s0:
			fmt.Fprintf(&b, "; at least %d more succeed whatever the unknown runs do", s-s0)
		case s+u < s0:
			fmt.Fprintf(&b, "; at least %d fewer succeed whatever the unknown runs do", s0-s-u)
		default:
			fmt.Fprintf(&b, ". The comparison is meaningless: the %d unknown runs can account for the whole difference, "+
				"so it cannot tell whether %s would make more runs succeed or fewer", u, r.Policy)
		}
	}
	if r.Saved > 0 {
		fmt.Fprintf(&b, "; it saves %d recorded attempts", r.Saved)
	} else {
		b.WriteString("; it saves no recorded attempt")
	}
	if r.SuccessesLost > 0 {
		fmt.Fprintf(&b, " and gives up %d runs that passed", r.SuccessesLost)
	}
	b.WriteString(".")
	return b.String()
}

// StopReasons lists the stop reasons of results, sorted, for a table.
func StopReasons(rs []AttemptResult) []string {
	set := map[string]bool{}
	for _, r := range rs {
		for k := range r.Stops {
			set[k] = true
		}
	}
	return slices.Sorted(maps.Keys(set))
}

// midpoint is the randomness of a replay that reports no waits: the
// records hold no attempt times to compare them with, and a wait changes
// no decision.
type midpoint struct{}

func (midpoint) Float64() float64 { return 0.5 }

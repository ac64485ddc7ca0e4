package main

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/orchstat/orchstat/ingest/records"
	"github.com/orchstat/orchstat/query"
	"github.com/orchstat/orchstat/reports"
	"github.com/orchstat/orchstat/reports/render"
	"github.com/orchstat/orchstat/rules/replay"
	"github.com/orchstat/orchstat/rules/retry"
)

// systemReplay is how simulate replays one system's records.
type systemReplay struct {
	// baseline is the policy the records were made under, or a stand-in
	// that retries as the record did.
	baseline func() *retry.Policy
	// check: the baseline is the system's own policy, so its replay must
	// reproduce the record.
	check bool
	// defaults are compared when no policy is named: the questions the
	// seeds ask of each system.
	defaults func(base *retry.Policy) []*retry.Policy
	// mismatch explains the usual reason a run does not reproduce.
	mismatch string
}

func preset(name string) *retry.Policy {
	p, err := retry.Preset(name)
	if err != nil {
		panic(err) // the names below are the core's own presets
	}
	return p
}

// asRecorded retries whatever failed, as often as the record shows: the
// baseline of systems whose retries a person or an outer loop decided.
func asRecorded() *retry.Policy {
	p := preset("auto-retry")
	p.Name, p.MaxRetries, p.MaxAttempts, p.SignatureHalt, p.GlobalCap = "as recorded", 1<<30, 0, 0, 0
	return p
}

// variant is base changed by set, named for the change.
func variant(base *retry.Policy, name string, set func(p *retry.Policy)) *retry.Policy {
	p := base.Clone()
	set(p)
	p.Name = base.Name + " with " + name
	return p
}

var systemReplays = map[string]systemReplay{
	// Seed 003: what not retrying deterministic stages, halting on a
	// repeated signature, and other attempt limits would have done.
	records.Factory: {
		baseline: func() *retry.Policy { return preset("factory") },
		check:    true,
		mismatch: "older run summaries do not record the max_attempts a run was made under; they are replayed " +
			"under the preset's 5, so one that gave up after fewer failed attempts does not reproduce.",
		defaults: func(base *retry.Policy) []*retry.Policy {
			out := []*retry.Policy{preset("factory-audited"),
				variant(base, "signature-halt 3", func(p *retry.Policy) { p.SignatureHalt = 3 })}
			for _, n := range []int{2, 3, 5} {
				out = append(out, variant(base, fmt.Sprintf("max-attempts %d", n), func(p *retry.Policy) {
					p.MaxAttempts, p.MaxRetries = n, max(p.MaxRetries, n)
				}))
			}
			return out
		},
	},
	// Seed 002: the auto-retry caps (per issue 10, global 15, signature
	// halt 3) against the loops as they ran.
	records.Claudestrator: {
		baseline: asRecorded,
		defaults: func(*retry.Policy) []*retry.Policy { return []*retry.Policy{preset("auto-retry")} },
	},
	// Seed 004: the adaptive rule's maxRetries against the retries the
	// user chose.
	records.Orchestr8: {
		baseline: asRecorded,
		defaults: func(*retry.Policy) []*retry.Policy { return []*retry.Policy{preset("adaptive")} },
	},
	// Seed 001: exec decides with the retry handler; what if it did not
	// retry at all?
	records.Exec: {
		baseline: func() *retry.Policy { return preset("retry-handler") },
		check:    true,
		defaults: func(*retry.Policy) []*retry.Policy { return []*retry.Policy{preset("none")} },
	},
}

// systemSimulation is one system's replay, for output.
type systemSimulation struct {
	System   string                 `json:"system"`
	Unknown  int                    `json:"runs_not_replayable"`
	Hint     string                 `json:"-"`
	Baseline replay.AttemptResult   `json:"baseline"`
	Policies []replay.AttemptResult `json:"policies"`
	// Verdicts say, policy by policy, what changes against the record,
	// and when the runs of unknown outcome leave nothing to compare.
	Verdicts []string `json:"verdicts"`
}

// simulateRecords replays each system's record runs under its baseline and
// the named policies, or the system's defaults when none is named.
func simulateRecords(ctx context.Context, o *simulateOptions, recs *query.RecordedRuns, named []*retry.Policy) ([]systemSimulation, error) {
	var systems []string
	for s := range recs.Runs {
		systems = append(systems, s)
	}
	slices.Sort(systems)
	var out []systemSimulation
	for _, system := range systems {
		runs := recs.Runs[system]
		if len(runs) == 0 {
			continue
		}
		sr, ok := systemReplays[system]
		if !ok {
			continue
		}
		base := sr.baseline()
		policies := named
		q, err := quickPolicy(o, base)
		if err != nil {
			return nil, err
		}
		if q != nil {
			policies = append(slices.Clone(policies), q)
		}
		if len(policies) == 0 {
			policies = sr.defaults(base)
		}
		res, err := replay.ReplayAttempts(ctx, runs, base, policies, sr.check)
		if err != nil {
			return nil, err
		}
		ss := systemSimulation{System: system, Unknown: recs.Unknown[system], Baseline: res[0], Policies: res[1:], Hint: sr.mismatch, Verdicts: []string{}}
		for _, r := range res[1:] {
			ss.Verdicts = append(ss.Verdicts, replay.AttemptVerdict(res[0], r))
		}
		out = append(out, ss)
	}
	return out, nil
}

// renderSystemSimulation writes one system's replay as a table.
func renderSystemSimulation(io *IO, s systemSimulation, f render.Format) error {
	all := append([]replay.AttemptResult{s.Baseline}, s.Policies...)
	title := fmt.Sprintf("%s: %d recorded runs replayed exactly; the baseline column is the record", s.System, s.Baseline.Runs)
	if s.Baseline.Checked > 0 {
		title += fmt.Sprintf("; baseline reproduces %d/%d", s.Baseline.Reproduced, s.Baseline.Checked)
	}
	if s.Unknown > 0 {
		title += fmt.Sprintf("; %d runs left out (an attempt's outcome is not recorded)", s.Unknown)
	}
	cols := []string{"figure", s.Baseline.Policy + " (baseline)"}
	for _, r := range s.Policies {
		cols = append(cols, r.Policy)
	}
	t := reports.Table{Title: title, Columns: cols}
	row := func(label string, get func(replay.AttemptResult) int) {
		cells := []any{label}
		for _, r := range all {
			cells = append(cells, get(r))
		}
		t.Rows = append(t.Rows, cells)
	}
	// Three outcomes: a run retried past its last recorded attempt has an
	// unknown outcome, which is neither a success nor a failure.
	row("runs that succeed", func(r replay.AttemptResult) int { return r.Succeeded })
	row("runs that fail", func(r replay.AttemptResult) int { return r.Failed })
	row("runs of unknown outcome (retried past the record)", func(r replay.AttemptResult) int { return r.BeyondRecord })
	row("attempts", func(r replay.AttemptResult) int { return r.Attempts })
	row("attempts saved", func(r replay.AttemptResult) int { return r.Saved })
	row("passing runs given up", func(r replay.AttemptResult) int { return r.SuccessesLost })
	for _, reason := range replay.StopReasons(all) {
		row("stopped by "+strings.ReplaceAll(reason, "_", " "), func(r replay.AttemptResult) int { return r.Stops[reason] })
	}
	if err := render.RenderTable(io.Out, t, f); err != nil {
		return err
	}
	if f == render.FormatCSV {
		return nil
	}
	if len(s.Baseline.Mismatches) > 0 {
		fmt.Fprintf(io.Out, "\nRuns the baseline does not reproduce (first %d): %s\n", len(s.Baseline.Mismatches), strings.Join(s.Baseline.Mismatches, ", "))
		if s.Hint != "" {
			fmt.Fprintf(io.Out, "Usually because %s\n", s.Hint)
		}
	}
	for _, r := range s.Policies {
		if len(r.Changed) > 0 {
			fmt.Fprintf(io.Out, "\nUnder %s these runs end differently (first %d): %s\n", r.Policy, len(r.Changed), strings.Join(r.Changed, ", "))
		}
		if len(r.Unknown) > 0 {
			fmt.Fprintf(io.Out, "\nUnder %s these runs are retried past the record, outcome unknown (first %d): %s\n", r.Policy, len(r.Unknown), strings.Join(r.Unknown, ", "))
		}
	}
	for _, v := range s.Verdicts {
		fmt.Fprintf(io.Out, "\n%s\n", v)
	}
	fmt.Fprintln(io.Out)
	return nil
}

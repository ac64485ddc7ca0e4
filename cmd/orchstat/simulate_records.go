package main

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/orchstat/orchstat/model/reports"
	"github.com/orchstat/orchstat/query"
	"github.com/orchstat/orchstat/reports/render"
	"github.com/orchstat/orchstat/rules/replay"
	"github.com/orchstat/orchstat/rules/retry"
)

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
// the named policies, or the system's defaults when none is named. Runs it
// cannot replay are counted in left, with why.
func simulateRecords(ctx context.Context, o *simulateOptions, recs *query.RecordedRuns, named []*retry.Policy) (out []systemSimulation, left []leftOut, err error) {
	var systems []string
	for s := range recs.Runs {
		systems = append(systems, s)
	}
	for s := range recs.Unknown {
		if _, ok := recs.Runs[s]; !ok {
			systems = append(systems, s)
		}
	}
	slices.Sort(systems)
	for _, system := range systems {
		runs := recs.Runs[system]
		if n := recs.Unknown[system]; n > 0 {
			left = append(left, leftOut{system, n, "runs", "an attempt's outcome is not recorded"})
		}
		if len(runs) == 0 {
			continue
		}
		sr, ok := replay.ForSystem(system)
		if !ok {
			left = append(left, leftOut{system, len(runs), "runs", "simulate has no replay of this system's records"})
			continue
		}
		base := sr.Baseline
		policies := named
		q, err := quickPolicy(o, base)
		if err != nil {
			return nil, nil, err
		}
		if q != nil {
			policies = append(slices.Clone(policies), q)
		}
		if len(policies) == 0 {
			policies = sr.Defaults
		}
		res, err := replay.ReplayAttempts(ctx, runs, base, policies, sr.Check)
		if err != nil {
			return nil, nil, err
		}
		ss := systemSimulation{System: system, Unknown: recs.Unknown[system], Baseline: res[0], Policies: res[1:], Hint: sr.Mismatch, Verdicts: []string{}}
		for _, r := range res[1:] {
			ss.Verdicts = append(ss.Verdicts, replay.AttemptVerdict(res[0], r))
		}
		out = append(out, ss)
	}
	return out, left, nil
}

// renderSystemSimulation writes one system's replay as a table.
func renderSystemSimulation(io *IO, s systemSimulation, f render.Format) error {
	w := io.OutWidth
	all := append([]replay.AttemptResult{s.Baseline}, s.Policies...)
	title := fmt.Sprintf("%s: %d recorded runs replayed exactly; baseline %s (the record column)", s.System, s.Baseline.Runs, s.Baseline.Policy)
	if s.Baseline.Checked > 0 {
		title += fmt.Sprintf("; baseline reproduces %d/%d", s.Baseline.Reproduced, s.Baseline.Checked)
	}
	if s.Unknown > 0 {
		title += fmt.Sprintf("; %d runs left out (an attempt's outcome is not recorded)", s.Unknown)
	}
	cols := []string{"figure", "record"}
	for _, r := range s.Policies {
		cols = append(cols, r.Policy)
	}
	t := reports.Table{Title: title, Columns: cols, Width: w}
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
	para := func(format string, args ...any) {
		fmt.Fprintf(io.Out, "\n%s\n", render.WrapText(fmt.Sprintf(format, args...), w))
	}
	if len(s.Baseline.Mismatches) > 0 {
		para("Runs the baseline does not reproduce (first %d): %s", len(s.Baseline.Mismatches), strings.Join(s.Baseline.Mismatches, ", "))
		if s.Hint != "" {
			fmt.Fprintln(io.Out, render.WrapText("Usually because "+s.Hint, w))
		}
	}
	for _, r := range s.Policies {
		if len(r.Changed) > 0 {
			para("Under %s these runs end differently (first %d): %s", r.Policy, len(r.Changed), strings.Join(r.Changed, ", "))
		}
		if len(r.Unknown) > 0 {
			para("Under %s these runs are retried past the record, outcome unknown (first %d): %s", r.Policy, len(r.Unknown), strings.Join(r.Unknown, ", "))
		}
	}
	for _, v := range s.Verdicts {
		para("%s", v)
	}
	fmt.Fprintln(io.Out)
	return nil
}

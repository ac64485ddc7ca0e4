package render

import (
	"fmt"
	"io"
	"strings"

	"github.com/orchstat/orchstat/model/episode"
	"github.com/orchstat/orchstat/model/reports"
	"github.com/orchstat/orchstat/model/simulated"
)

// RenderSimulation writes simulate's output: a first line that says what
// is replayed and what is left out, then the replay of episodes (when
// there is one) and the other systems'. Notes that must be seen whatever
// the format (what CSV and the page leave out) go to errw. Tables fit
// width columns (0: any).
func RenderSimulation(w, errw io.Writer, sim *simulated.Simulation, f Format, width int) error {
	res, systems := sim.Results, sim.Systems
	switch f {
	case FormatJSON:
		b, err := MarshalJSON(simulationJSONOf(sim))
		if err != nil {
			return err
		}
		_, err = w.Write(b)
		return err
	case FormatHTML:
		if sim.Optimization != nil {
			return optimizationPage(w, sim)
		}
		return simulationPage(w, errw, sim)
	case FormatCSV:
		// Tables only: what is left out goes to stderr, where it is seen.
		if len(sim.LeftOut) > 0 {
			fmt.Fprintf(errw, "orchstat: %s\n", EscapeControls("leaves out "+leftOutList(sim)+"."))
		}
	default:
		fmt.Fprintln(w, WrapText(simulationSummary(sim), width))
		if f == FormatMarkdown {
			fmt.Fprintln(w)
		}
		fmt.Fprintln(w, ScopeText(sim.DB, sim.Scope, width))
		if f == FormatMarkdown {
			fmt.Fprintln(w)
		}
	}
	if len(res) > 0 {
		if err := renderEpisodeSimulation(w, res, episodesText(sim), f, width); err != nil {
			return err
		}
	}
	if sim.Optimization != nil {
		if err := renderOptimization(w, errw, sim.Optimization, f, width); err != nil {
			return err
		}
	}
	for i, s := range systems {
		if i > 0 || len(res) > 0 {
			fmt.Fprintln(w)
		}
		if err := renderSystemSimulation(w, s, f, width); err != nil {
			return err
		}
	}
	return nil
}

// simulationJSON is `simulate --format json`. Its fields are in the order
// of their JSON names, as the document had them when it was a map; the
// replay's parts are present only when there are episodes (pointers, so a
// replay with no policies still prints "policies": [] and "verdicts": null).
type simulationJSON struct {
	Baseline *simulated.Result   `json:"baseline,omitempty"`
	Database string              `json:"database"`
	LeftOut  []simulated.LeftOut `json:"left_out"`
	// Optimization is --optimize's whole search.
	Optimization *simulated.Optimization `json:"optimization,omitempty"`
	Policies     *[]simulated.Result     `json:"policies,omitempty"`
	Scope        reports.Scope           `json:"scope"`
	SelfCheck    *string                 `json:"self_check,omitempty"`
	Summary      string                  `json:"summary"`
	Systems      []simulated.System      `json:"systems"`
	Verdicts     *[]string               `json:"verdicts,omitempty"`
}

func simulationJSONOf(sim *simulated.Simulation) simulationJSON {
	out := simulationJSON{Database: sim.DB, Scope: sim.Scope, Summary: simulationSummary(sim),
		LeftOut: nonNil(sim.LeftOut), Systems: nonNil(sim.Systems), Optimization: sim.Optimization}
	if res := sim.Results; len(res) > 0 {
		base := res[0]
		var verdicts []string
		for _, r := range res[1:] {
			verdicts = append(verdicts, simulated.Verdict(base, r))
		}
		check, policies := selfCheck(base), res[1:]
		out.SelfCheck, out.Baseline, out.Policies, out.Verdicts = &check, &base, &policies, &verdicts
	}
	return out
}

// leftOutText is l as the first line names it.
func leftOutText(l simulated.LeftOut) string {
	what := l.What
	if l.Count == 1 {
		what = strings.TrimSuffix(what, "s")
	}
	return fmt.Sprintf("%s's %d %s (%s)", l.System, l.Count, what, l.Why)
}

// simulationSummary is the output's first line: what is replayed, against
// which baseline, and what is left out and why.
func simulationSummary(sim *simulated.Simulation) string {
	if sim.Note != "" {
		return simulationParts(sim) + " " + sim.Note
	}
	return simulationParts(sim)
}

func simulationParts(sim *simulated.Simulation) string {
	var parts []string
	if len(sim.Results) > 0 {
		parts = append(parts, episodesText(sim)+" against "+sim.Results[0].Policy)
	}
	if o := sim.Optimization; o != nil && len(o.Layers) > 0 {
		n := 0
		for _, l := range o.Layers {
			n += l.SearchEpisodes + l.HoldoutEpisodes
		}
		parts = append(parts, fmt.Sprintf("%s's %s under the policies --optimize draws, against %s",
			o.System, count(n, "episode"), o.Layers[0].Baseline.Policy))
	}
	for _, sys := range sim.Systems {
		against := sys.Baseline.Policy
		if against == "as recorded" {
			against = "their record"
		}
		parts = append(parts, fmt.Sprintf("%s's %s against %s", sys.System, count(sys.Baseline.Runs, "run"), against))
	}
	switch {
	case len(parts) == 0:
		return nothingReplayed(sim) + "."
	case len(sim.LeftOut) == 0:
		return "Replays " + strings.Join(parts, "; ") + "; nothing in scope is left out."
	}
	return "Replays " + strings.Join(parts, "; ") + ". Leaves out " + leftOutList(sim) + "."
}

func leftOutList(sim *simulated.Simulation) string {
	var out []string
	for _, l := range sim.LeftOut {
		out = append(out, leftOutText(l))
	}
	return strings.Join(out, "; ")
}

// nothingReplayed says why nothing in scope can be replayed.
func nothingReplayed(sim *simulated.Simulation) string {
	if len(sim.LeftOut) == 0 {
		return "Nothing to replay: the scope holds no provider request, L2 loop, L3 step or recorded attempt"
	}
	return "Nothing to replay: " + leftOutList(sim)
}

// count is n things: "1 run", "2 runs".
func count(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}

// episodesText names what a replay of episodes covers: "orchestrator's
// 152 provider requests, 9 L2 loops and 3 runs with L3 steps".
func episodesText(sim *simulated.Simulation) string {
	who, b := strings.Join(sim.Replayed, " and "), sim.Results[0]
	// An agent's episodes are its model calls; the orchestrator's, its
	// provider requests.
	what := "model call"
	if who == simulated.Orchestrator {
		what = "provider request"
	}
	parts := []string{count(b.Episodes, what)}
	if b.L2Loops > 0 {
		parts = append(parts, count(b.L2Loops, "L2 loop"))
	}
	if b.L3Runs > 0 {
		parts = append(parts, count(b.L3Runs, "run")+" with L3 steps")
	}
	text := parts[0]
	if len(parts) > 1 {
		text = strings.Join(parts[:len(parts)-1], ", ") + " and " + parts[len(parts)-1]
	}
	return who + "'s " + text
}

// selfCheck says in three numbers how the baseline's replay compares
// with the record: reproduced, not reproduced and not checkable.
func selfCheck(base simulated.Result) string {
	return fmt.Sprintf("baseline reproduces %d of %d episodes; %d not reproduced; %d not checkable",
		base.Reproduced, base.Checked+base.NotCheckable, base.Checked-base.Reproduced, base.NotCheckable)
}

func renderEpisodeSimulation(w io.Writer, res []simulated.Result, what string, f Format, width int) error {
	if err := RenderTable(w, simulationTable(res, what, width), f); err != nil {
		return err
	}
	if f == FormatCSV {
		return nil
	}
	fmt.Fprintln(w)
	writeSimulationNotes(w, res, width)
	return nil
}

// simulationTable is the baseline's figures beside each policy's and its
// difference from the baseline, by episode kind, each kind's figures
// followed by how many of its outcomes are estimated; the figures are the
// replay's catalog's (simulated.Shown). It fits width columns (0: any).
func simulationTable(res []simulated.Result, what string, width int) reports.Table {
	base := res[0]
	// The baseline's column is the record; its name is in the title, so
	// that the column stays as narrow as its figures.
	cols := []string{"figure", "record"}
	for _, r := range res[1:] {
		cols = append(cols, r.Policy, "Δ "+r.Policy)
	}
	t := reports.Table{Title: fmt.Sprintf("orchstat simulate: %s; baseline %s (the record column); %s",
		what, base.Policy, selfCheck(base)), Columns: cols, Width: width, Peers: true}
	figs := simulated.Shown(base)
	for i, fig := range figs {
		cells := []any{fig.Label, fig.Text(fig.Of(base), false, false)}
		for _, r := range res[1:] {
			est := fig.Estimated(r)
			cells = append(cells, fig.Text(fig.Of(r), false, est), fig.Text(r.Diff[fig.Key], true, est))
		}
		if fig.Unrecorded(base) {
			for j := 1; j < len(cells); j++ {
				cells[j] = "-"
			}
		}
		t.Rows = append(t.Rows, cells)
		if i+1 == len(figs) || figs[i+1].Kind != fig.Kind {
			if row := estimatedCells(res, fig.Kind); row != nil {
				t.Rows = append(t.Rows, row)
			}
		}
	}
	return t
}

// estimatedCells says, for the baseline and each policy, how many of its
// outcomes of kind are estimated; nil for a kind never estimated.
func estimatedCells(res []simulated.Result, kind episode.Kind) []any {
	label, _, _, ok := simulated.EstimatedOf(res[0], kind)
	if !ok {
		return nil
	}
	cells := []any{label}
	for i, r := range res {
		_, est, total, _ := simulated.EstimatedOf(r, kind)
		cells = append(cells, fmt.Sprintf("%d of %d", est, total))
		if i > 0 {
			cells = append(cells, "")
		}
	}
	return cells
}

// writeSimulationNotes writes, under the table, the self-check's
// exceptions, how to read the table, and each policy's verdict, wrapped
// to width columns (0: unwrapped).
func writeSimulationNotes(w io.Writer, res []simulated.Result, width int) {
	base := res[0]
	writeNotes(w, "Not reproduced by the baseline", base.Checked-base.Reproduced, base.Mismatches, width)
	writeNotes(w, "Not checkable", base.NotCheckable, base.Unchecked, width)
	if base.L2Inferred > 0 {
		loops := fmt.Sprintf("%d L2 loops lack", base.L2Inferred)
		if base.L2Inferred == 1 {
			loops = "1 L2 loop lacks"
		}
		fmt.Fprintf(w, "%s\n\n", WrapText(loops+" verification reports: which failure signatures repeated is inferred from how each loop ended.", width))
	}
	fmt.Fprintln(w, WrapText("The baseline is the record, counted without interval. A policy's values are followed by their 95% interval over runs; "+
		"a figure with no interval is exact. \"est.\" marks a policy some of whose outcomes are estimated.", width))
	for _, r := range res[1:] {
		fmt.Fprintf(w, "\n%s\n", WrapText(simulated.Verdict(base, r), width))
	}
}

// writeNotes lists the episodes of a self-check exception: n of them,
// of which list names the first.
func writeNotes(w io.Writer, title string, n int, list []simulated.Note, width int) {
	if n == 0 {
		return
	}
	fmt.Fprintf(w, "%s (%d", title, n)
	if len(list) < n {
		fmt.Fprintf(w, ", the first %d", len(list))
	}
	fmt.Fprintln(w, "):")
	for _, m := range list {
		line := WrapText(m.ID+": "+m.Reason, max(width-2, 0))
		fmt.Fprintf(w, "  %s\n", strings.ReplaceAll(line, "\n", "\n  "))
	}
	fmt.Fprintln(w)
}

// simulationPage writes the HTML page of the replay of episodes. Other
// systems' replays are not on it yet: they are asked for in the table
// formats, and errw says they are left out.
func simulationPage(w, errw io.Writer, sim *simulated.Simulation) error {
	res := sim.Results
	if len(res) == 0 {
		return fmt.Errorf("--format html draws the replay of provider requests, and the scope holds none; use --format table for other systems' records")
	}
	var verdicts []string
	for _, r := range res[1:] {
		verdicts = append(verdicts, simulated.Verdict(res[0], r))
	}
	summary := simulationSummary(sim)
	if len(sim.Systems) > 0 {
		var names []string
		for _, s := range sim.Systems {
			names = append(names, s.System)
		}
		note := fmt.Sprintf("the page leaves out the replay of %s's records; --format table shows them", strings.Join(names, "'s, "))
		fmt.Fprintf(errw, "orchstat: %s\n", note)
		summary += " " + strings.ToUpper(note[:1]) + note[1:] + "."
	}
	return SimulationHTML(w, SimulationPage{DB: sim.DB, Scope: sim.Scope, Summary: summary,
		Baseline: res[0], Policies: res[1:], Verdicts: verdicts})
}

// renderSystemSimulation writes one system's replay as a table.
func renderSystemSimulation(w io.Writer, s simulated.System, f Format, width int) error {
	all := append([]simulated.AttemptResult{s.Baseline}, s.Policies...)
	title := fmt.Sprintf("%s: %s replayed exactly; baseline %s (the record column)", s.System, plural(int64(s.Baseline.Runs), "recorded run"), s.Baseline.Policy)
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
	t := reports.Table{Title: title, Columns: cols, Width: width}
	row := func(label string, get func(simulated.AttemptResult) int) {
		cells := []any{label}
		for _, r := range all {
			cells = append(cells, get(r))
		}
		t.Rows = append(t.Rows, cells)
	}
	// Three outcomes: a run retried past its last recorded attempt has an
	// unknown outcome, which is neither a success nor a failure.
	row("runs that succeed", func(r simulated.AttemptResult) int { return r.Succeeded })
	row("runs that fail", func(r simulated.AttemptResult) int { return r.Failed })
	row("runs of unknown outcome (retried past the record)", func(r simulated.AttemptResult) int { return r.BeyondRecord })
	row("attempts", func(r simulated.AttemptResult) int { return r.Attempts })
	row("attempts saved", func(r simulated.AttemptResult) int { return r.Saved })
	row("passing runs given up", func(r simulated.AttemptResult) int { return r.SuccessesLost })
	for _, reason := range simulated.StopReasons(all) {
		row("stopped by "+strings.ReplaceAll(reason, "_", " "), func(r simulated.AttemptResult) int { return r.Stops[reason] })
	}
	if err := RenderTable(w, t, f); err != nil {
		return err
	}
	if f == FormatCSV {
		return nil
	}
	para := func(format string, args ...any) {
		fmt.Fprintf(w, "\n%s\n", WrapText(fmt.Sprintf(format, args...), width))
	}
	if len(s.Baseline.Mismatches) > 0 {
		para("Runs the baseline does not reproduce (first %d): %s", len(s.Baseline.Mismatches), strings.Join(s.Baseline.Mismatches, ", "))
		if s.Hint != "" {
			fmt.Fprintln(w, WrapText("Usually because "+s.Hint, width))
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
	fmt.Fprintln(w)
	return nil
}

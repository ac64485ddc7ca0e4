package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/orchstat/orchstat/query"
	"github.com/orchstat/orchstat/reports"
	"github.com/orchstat/orchstat/reports/render"
	"github.com/orchstat/orchstat/rules/failure"
	"github.com/orchstat/orchstat/rules/replay"
	"github.com/orchstat/orchstat/rules/retry"
	"github.com/orchstat/orchstat/rules/retry/policyfile"
	"github.com/orchstat/orchstat/rules/yamlast"
)

type simulateOptions struct {
	g *globals
	ingestFirst
	Since, Until string
	Runs         []string
	Provider     string
	Format       string
	Output       string

	Baseline      string
	Policies      []string
	MaxRetries    int
	MaxAttempts   int
	SignatureHalt int
	Backoff       string
	NoRetry       []string
	Seed          uint64
	Resamples     int
}

func newSimulateCmd(g *globals, runF func(context.Context, *simulateOptions) error) *cobra.Command {
	o := &simulateOptions{g: g}
	cmd := &cobra.Command{
		Use:   "simulate [PATH...]",
		Short: "Replay recorded failures under other retry policies: what if?",
		Long: `Replay every recorded provider request under the baseline policy (the
orchestrator's by default; Claude Code's or Codex's when the requests are
all that agent's calls) and under each --policy, with the same retry
core that decides retries live, and compare success, attempts, wasted
retries, time in backoff, time to resolution, halts and cost.

The baseline column is the record: counted from what happened, without
interval or "est.", the same for any --seed. Outcomes the record fixes are
computed exactly: a policy that retries less stops on the recorded prefix,
a class it does not retry stops at the first attempt. Outcomes beyond the
record (more retries after a request gave up, or the class of a failure
the trace does not name) are estimated from the data and marked "est.";
a policy's figures have a 95% interval from a bootstrap over runs. A
policy that changes nothing an episode kind depends on (provider
requests: retry limits, classes, backoff; L2 loops: max_iterations,
non_improving_stop, escalation; L3: diagnosis_after) shows that kind's
figures as the record's, exactly.

L2 failure signatures come from the verification reports; where those are
missing they are inferred from how each loop ended (RunStopped
non_improving, RunEscalated). The self-check gives three numbers: episodes
the baseline's replay reproduces, those it does not (named, with what it
does instead) and those it cannot check (named, with why).

Other systems' records (factory, claudestrator, orchestr8, exec) replay
exactly; a run a policy retries past its last recorded attempt has an
unknown outcome, shown apart from succeeded and failed, and the verdict
says when the unknown runs make a comparison meaningless.

--policy takes a preset (orchestrator, retry-handler, auto-retry, factory,
factory-audited, adaptive, none, aws-full, aws-equal, aws-decorrelated,
constant) or a policy file. The quick flags --max-retries, --backoff and
--no-retry-class make one more policy: the baseline with those changes.`,
		Example: `  orchstat simulate --max-retries 5 --backoff full
  orchstat simulate --no-retry-class rate_limit --since 7d
  orchstat simulate --policy aws-decorrelated --policy my-policy.yaml --format json`,
		RunE: func(cmd *cobra.Command, args []string) error {
			o.Paths = args
			if _, err := render.ParsePageFormat(o.Format); err != nil {
				return usageError{err}
			}
			if !cmd.Flags().Changed("max-retries") {
				o.MaxRetries = -1
			}
			if err := o.checkLimits(); err != nil {
				return usageError{err}
			}
			if runF != nil {
				return runF(cmd.Context(), o)
			}
			return simulateRun(cmd.Context(), o)
		},
	}
	f := cmd.Flags()
	o.ingestFirst.flags(cmd, "simulate on the store as it is, without ingesting first")
	o.ingestFirst.lakeFlag(cmd)
	addFilterFlags(cmd, &o.Since, &o.Until, &o.Runs, &o.Provider)
	f.StringVarP(&o.Format, "format", "f", "table", "output format: table, markdown, json, csv or html (one page with charts; see -o)")
	addOutputFlag(cmd, &o.Output)
	f.StringVar(&o.Baseline, "baseline", "", "the policy the records were made under: a preset or a policy file (default: orchestrator, or claude-code or codex for that agent's calls alone)")
	f.StringArrayVar(&o.Policies, "policy", nil, "a policy to compare: a preset or a policy file (repeatable)")
	f.IntVar(&o.MaxRetries, "max-retries", 0, "quick policy: the baseline with this many retries")
	f.IntVar(&o.MaxAttempts, "max-attempts", 0, "quick policy: the baseline with at most this many attempts at an item")
	f.IntVar(&o.SignatureHalt, "signature-halt", 0, "quick policy: the baseline halting after this many identical failure signatures in a row")
	f.StringVar(&o.Backoff, "backoff", "", "quick policy: the baseline with this backoff: none, constant, exponential, proportional, full, equal or decorrelated")
	f.StringArrayVar(&o.NoRetry, "no-retry-class", nil, "quick policy: the baseline without retrying this failure class (repeatable)")
	f.Uint64Var(&o.Seed, "seed", 1, "seed of the random draws, so results repeat")
	f.IntVar(&o.Resamples, "resamples", 200, fmt.Sprintf("bootstrap resamples behind each interval (1 to %d)", replay.MaxResamples))
	return cmd
}

// checkLimits holds the flags to what a policy file may say
// (retry.MaxRetriesCap) and the bootstrap to replay.MaxResamples, before
// any work: past those, simulate would run for hours or run out of memory.
func (o *simulateOptions) checkLimits() error {
	for _, f := range []struct {
		name string
		n    int
	}{{"max-retries", o.MaxRetries}, {"max-attempts", o.MaxAttempts}, {"signature-halt", o.SignatureHalt}} {
		if f.n > retry.MaxRetriesCap {
			return fmt.Errorf("--%s %d: at most %d", f.name, f.n, retry.MaxRetriesCap)
		}
	}
	if o.Resamples < 1 || o.Resamples > replay.MaxResamples {
		return fmt.Errorf("--resamples %d: from 1 to %d", o.Resamples, replay.MaxResamples)
	}
	return nil
}

// loadPolicy reads a policy: a file when one exists at spec, else a preset.
// A spec with a slash or a dot is a path, so a mistyped file name is not
// reported as an unknown preset.
func loadPolicy(spec string) (*retry.Policy, error) {
	data, err := yamlast.ReadFile(spec)
	switch {
	case err == nil:
		return policyfile.Parse(spec, data)
	case !errors.Is(err, fs.ErrNotExist):
		return nil, err
	case strings.ContainsAny(spec, "/."):
		return nil, fmt.Errorf("policy %s: no such file", spec)
	}
	p, err := retry.Preset(spec)
	if err != nil {
		return nil, usageError{err}
	}
	return p, nil
}

// quickPolicy is the baseline changed by the quick flags, or nil when none
// is set.
func quickPolicy(o *simulateOptions, base *retry.Policy) (*retry.Policy, error) {
	if o.MaxRetries < 0 && o.MaxAttempts <= 0 && o.SignatureHalt <= 0 && o.Backoff == "" && len(o.NoRetry) == 0 {
		return nil, nil
	}
	p := base.Clone()
	var name []string
	if o.MaxRetries >= 0 {
		p.MaxRetries = o.MaxRetries
		p.PerOperation = nil
		name = append(name, fmt.Sprintf("max-retries %d", o.MaxRetries))
	}
	if o.MaxAttempts > 0 {
		p.MaxAttempts = o.MaxAttempts
		if o.MaxRetries < 0 {
			// Attempts, not retries, are what this policy limits, and
			// its stops say so.
			p.MaxRetries, p.PerOperation = max(p.MaxRetries, o.MaxAttempts), nil
		}
		name = append(name, fmt.Sprintf("max-attempts %d", o.MaxAttempts))
	}
	if o.SignatureHalt > 0 {
		p.SignatureHalt = o.SignatureHalt
		name = append(name, fmt.Sprintf("signature-halt %d", o.SignatureHalt))
	}
	if o.Backoff != "" {
		b, err := quickBackoff(o.Backoff, base.Backoff)
		if err != nil {
			return nil, usageError{err}
		}
		p.Backoff = b
		name = append(name, "backoff "+o.Backoff)
	}
	for _, c := range o.NoRetry {
		if !failure.Class(c).Known() {
			return nil, usageError{fmt.Errorf("--no-retry-class: unknown class %q (%s)", c, strings.Join(failure.ClassNames(), ", "))}
		}
		delete(p.Retriable, failure.Class(c))
		name = append(name, "no retry of "+c)
	}
	p.Name = base.Name + " with " + strings.Join(name, ", ")
	return p, nil
}

func quickBackoff(s string, base retry.Backoff) (retry.Backoff, error) {
	b := base
	if b.Initial == 0 {
		b = retry.Orchestrator
	}
	switch s {
	case "none":
		return retry.Backoff{}, nil
	case "constant":
		b.Factor, b.Jitter = 1, retry.JitterNone
	case "exponential":
		b.Jitter = retry.JitterNone
	case "proportional":
		b.Jitter, b.Spread = retry.JitterProportional, 0.1
	case "full":
		b.Jitter = retry.JitterFull
	case "equal":
		b.Jitter = retry.JitterEqual
	case "decorrelated":
		b.Jitter = retry.JitterDecorrelated
	default:
		return b, fmt.Errorf("--backoff: unknown schedule %q (none, constant, exponential, proportional, full, equal, decorrelated)", s)
	}
	if b.Factor == 0 && s != "constant" {
		b.Factor = 2
	}
	return b, nil
}

func simulateRun(ctx context.Context, o *simulateOptions) error {
	format, _ := render.ParsePageFormat(o.Format)
	now := o.g.io.Now().UTC()
	f, err := buildFilter(now, o.Since, o.Until, o.Runs, o.Provider)
	if err != nil {
		return err
	}
	base, named, q, err := loadPolicies(o, cmp.Or(o.Baseline, "orchestrator"))
	if err != nil {
		return err
	}
	o.Window = query.LakeOptions{Since: f.Since, Until: f.Until}
	st, unread, err := o.ingestFirst.open(ctx, o.g, false)
	if err != nil {
		return err
	}
	defer st.Close()
	scope, err := o.narrow(ctx, o.g, st, &f)
	if err != nil {
		return err
	}
	recs, err := st.AttemptRuns(ctx, f)
	if err != nil {
		return interrupted(err)
	}
	systems, err := simulateRecords(ctx, o, recs, named) // each system has its own baseline to change
	if err != nil {
		return interrupted(err)
	}
	// The baseline's classify rules name the recorded errors for every policy.
	eps, err := st.Episodes(ctx, f, base.Classifier(failure.DefaultProvider).Classify)
	if err != nil {
		return interrupted(err)
	}
	if name := agentBaseline(eps); o.Baseline == "" && name != "" {
		if base, named, q, err = loadPolicies(o, name); err != nil {
			return err
		}
	}
	policies := named
	if q != nil {
		policies = append(slices.Clip(named), q)
	}
	var res []replay.Result
	switch {
	case len(policies) > 0 && (len(eps) > 0 || len(systems) == 0):
		res, err = replay.Simulate(ctx, eps, base, policies, replay.Options{Seed: o.Seed, Resamples: o.Resamples})
		if err != nil {
			return interrupted(err)
		}
	case len(systems) == 0:
		return usageError{errors.New("name a policy to compare: --policy NAME|FILE, or a quick flag such as --max-retries 5")}
	}
	where := simScope{simDB(o, st), scope}
	err = withOutput(o.g.io, o.Output, func(io *IO) error { return renderSimulation(io, where, res, systems, format) })
	if err != nil {
		return err
	}
	if unread {
		return silentError{1}
	}
	return nil
}

// loadPolicies reads the baseline, the policies --policy names, and the
// quick flags' policy (nil without quick flags), which changes the
// baseline. Two policies of one name are a usage error.
func loadPolicies(o *simulateOptions, baseline string) (base *retry.Policy, named []*retry.Policy, quick *retry.Policy, err error) {
	if base, err = loadPolicy(baseline); err != nil {
		return nil, nil, nil, err
	}
	for _, spec := range o.Policies {
		p, err := loadPolicy(spec)
		if err != nil {
			return nil, nil, nil, err
		}
		named = append(named, p)
	}
	if quick, err = quickPolicy(o, base); err != nil {
		return nil, nil, nil, err
	}
	seen := map[string]bool{base.Name: true}
	for _, p := range append(slices.Clip(named), quick) {
		if p == nil {
			continue
		}
		if seen[p.Name] {
			return nil, nil, nil, usageError{fmt.Errorf("two policies are named %q; give one file a different name", p.Name)}
		}
		seen[p.Name] = true
	}
	return base, named, quick, nil
}

// agentBaseline is the preset of the agent whose calls are all the
// provider requests to replay ("claude-code", "codex"), or "" when they
// are the orchestrator's, several systems', or an agent's without a
// preset of its own. Without --baseline, an agent's calls are replayed
// against its own policy, so that the baseline reproduces the record.
func agentBaseline(eps []replay.Episode) string {
	system := ""
	for _, e := range eps {
		if e.Kind != replay.KindProvider {
			continue
		}
		s, _, ok := strings.Cut(e.ID, ":")
		if !ok || strings.Contains(s, "/") || system != "" && s != system {
			return ""
		}
		system = s
	}
	if _, err := retry.Preset(system); err != nil || system == "" {
		return ""
	}
	return system
}

// interrupted says so when err is Ctrl-C's (or SIGTERM's) cancellation.
func interrupted(err error) error {
	if errors.Is(err, context.Canceled) {
		return fmt.Errorf("simulate interrupted: %w", err)
	}
	return err
}

// renderSimulation writes the orchestrator's replay (res, when there is
// one) and the other systems'.
func renderSimulation(io *IO, where simScope, res []replay.Result, systems []systemSimulation, f render.Format) error {
	if f == render.FormatJSON {
		out := map[string]any{"database": where.db, "scope": where.scope, "systems": nonNilSlice(systems)}
		if len(res) > 0 {
			base := res[0]
			var verdicts []string
			for _, r := range res[1:] {
				verdicts = append(verdicts, replay.Verdict(base, r))
			}
			out["self_check"], out["baseline"], out["policies"], out["verdicts"] = selfCheck(base), base, res[1:], verdicts
		}
		b, err := render.MarshalJSON(out)
		if err != nil {
			return err
		}
		_, err = io.Out.Write(b)
		return err
	}
	if f == render.FormatHTML {
		return simulationPage(io, where, res, systems)
	}
	if f != render.FormatCSV {
		fmt.Fprintln(io.Out, render.ScopeText(where.db, where.scope, io.OutWidth))
	}
	if len(res) > 0 {
		if err := renderProviderSimulation(io, res, f); err != nil {
			return err
		}
	}
	for i, s := range systems {
		if i > 0 || len(res) > 0 {
			fmt.Fprintln(io.Out)
		}
		if err := renderSystemSimulation(io, s, f); err != nil {
			return err
		}
	}
	return nil
}

// simScope is which store, and which of its runs, a simulation covers.
type simScope struct {
	db    string
	scope reports.Scope
}

func nonNilSlice[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

// selfCheck says in three numbers how the baseline's replay compares
// with the record: reproduced, not reproduced and not checkable.
func selfCheck(base replay.Result) string {
	return fmt.Sprintf("baseline reproduces %d of %d episodes; %d not reproduced; %d not checkable",
		base.Reproduced, base.Checked+base.NotCheckable, base.Checked-base.Reproduced, base.NotCheckable)
}

func renderProviderSimulation(io *IO, res []replay.Result, f render.Format) error {
	if err := render.RenderTable(io.Out, simulationTable(res), f); err != nil {
		return err
	}
	if f == render.FormatCSV {
		return nil
	}
	fmt.Fprintln(io.Out)
	writeSimulationNotes(io.Out, res)
	return nil
}

// simFigure is one figure row of simulate's table: a figure of one
// episode kind, whose estimate count marks a policy's cells "est.".
type simFigure struct {
	kind       replay.Kind
	label, key string // key: the figure's name in Result.Diff
	get        func(replay.Result) replay.Metric
	unit       string
}

// requestFigures are the provider requests' rows; cost shows only when
// some episode recorded one.
var requestFigures = []simFigure{
	{replay.KindProvider, "success rate", "success_rate", func(r replay.Result) replay.Metric { return r.SuccessRate }, "%"},
	{replay.KindProvider, "attempts", "attempts", func(r replay.Result) replay.Metric { return r.Attempts }, ""},
	{replay.KindProvider, "wasted attempts", "wasted_attempts", func(r replay.Result) replay.Metric { return r.Wasted }, ""},
	{replay.KindProvider, "time in backoff (s)", "backoff_seconds", func(r replay.Result) replay.Metric { return r.BackoffSeconds }, ""},
	{replay.KindProvider, "time to resolution p50 (s)", "resolution_p50_seconds", func(r replay.Result) replay.Metric { return r.ResolutionP50 }, ""},
	{replay.KindProvider, "time to resolution p95 (s)", "resolution_p95_seconds", func(r replay.Result) replay.Metric { return r.ResolutionP95 }, ""},
	{replay.KindProvider, "halts", "halts", func(r replay.Result) replay.Metric { return r.Halts }, ""},
}

var costFigure = simFigure{replay.KindProvider, "cost (USD, estimated)", "cost_usd", func(r replay.Result) replay.Metric { return r.CostUSD }, ""}

var l2Figures = []simFigure{
	{replay.KindL2, "L2 loops that pass", "l2_success_rate", func(r replay.Result) replay.Metric { return r.L2SuccessRate }, "%"},
	{replay.KindL2, "L2 iterations", "l2_iterations", func(r replay.Result) replay.Metric { return r.L2Iterations }, ""},
	{replay.KindL2, "escalations to L3", "escalations", func(r replay.Result) replay.Metric { return r.Escalations }, ""},
	{replay.KindL2, "non-improving stops", "l2_non_improving_stops", func(r replay.Result) replay.Metric { return r.NonImproving }, ""},
}

// L3 diagnoses are replayed exactly.
var l3Figure = simFigure{replay.KindL3, "L3 diagnoses", "diagnoses", func(r replay.Result) replay.Metric { return r.Diagnoses }, ""}

// simulationTable is the baseline's figures beside each policy's and its
// difference from the baseline, by episode kind, each kind's figures
// followed by how many of its outcomes are estimated.
func simulationTable(res []replay.Result) reports.Table {
	base := res[0]
	cols := []string{"figure", base.Policy + " (baseline: the record)"}
	for _, r := range res[1:] {
		cols = append(cols, r.Policy, "Δ "+r.Policy)
	}
	t := reports.Table{Title: fmt.Sprintf("orchstat simulate: %d provider requests, %d L2 loops, %d runs with L3 steps; %s",
		base.Episodes, base.L2Loops, base.L3Runs, selfCheck(base)), Columns: cols}
	figures := slices.Clone(requestFigures)
	if base.HasCost {
		figures = append(figures, costFigure)
	}
	t.Rows = append(figureRows(res, figures),
		estimatedRow(res, "outcomes estimated", func(r replay.Result) (int, int) { return r.Estimated, r.Episodes }))
	if base.L2Loops > 0 {
		t.Rows = append(append(t.Rows, figureRows(res, l2Figures)...),
			estimatedRow(res, "L2 outcomes estimated", func(r replay.Result) (int, int) { return r.L2Estimated, r.L2Loops }))
	}
	if base.L3Runs > 0 {
		t.Rows = append(t.Rows, figureRows(res, []simFigure{l3Figure})...)
	}
	return t
}

// figureRows are the figures' rows: the baseline's value, then each
// policy's with its difference.
func figureRows(res []replay.Result, figures []simFigure) [][]any {
	var rows [][]any
	for _, fig := range figures {
		dunit := fig.unit
		if fig.unit == "%" {
			dunit = " pp" // a difference of rates is in points
		}
		cells := []any{fig.label, cell(fig.get(res[0]), fig.unit, false)}
		for _, r := range res[1:] {
			est := estimatedKind(r, fig.kind)
			cells = append(cells, cell(fig.get(r), fig.unit, est), cell(r.Diff[fig.key], dunit, est))
		}
		rows = append(rows, cells)
	}
	return rows
}

// estimatedKind reports whether some of r's outcomes of kind are estimated.
func estimatedKind(r replay.Result, kind replay.Kind) bool {
	switch kind {
	case replay.KindProvider:
		return r.Estimated > 0
	case replay.KindL2:
		return r.L2Estimated > 0
	}
	return false
}

// estimatedRow says, for the baseline and each policy, how many of n's
// outcomes (estimated, total) are estimated.
func estimatedRow(res []replay.Result, label string, n func(replay.Result) (int, int)) []any {
	cells := []any{label}
	for i, r := range res {
		est, total := n(r)
		cells = append(cells, fmt.Sprintf("%d of %d", est, total))
		if i > 0 {
			cells = append(cells, "")
		}
	}
	return cells
}

// writeSimulationNotes writes, under the table, the self-check's
// exceptions, how to read the table, and each policy's verdict.
func writeSimulationNotes(w io.Writer, res []replay.Result) {
	base := res[0]
	writeNotes(w, "Not reproduced by the baseline", base.Checked-base.Reproduced, base.Mismatches)
	writeNotes(w, "Not checkable", base.NotCheckable, base.Unchecked)
	if base.L2Inferred > 0 {
		loops := fmt.Sprintf("%d L2 loops lack", base.L2Inferred)
		if base.L2Inferred == 1 {
			loops = "1 L2 loop lacks"
		}
		fmt.Fprintf(w, "%s verification reports: which failure signatures repeated is inferred from how each loop ended.\n\n", loops)
	}
	fmt.Fprintln(w, "The baseline is the record, counted without interval. A policy's values are followed by their 95% interval over runs;\n"+
		"a figure with no interval is exact. \"est.\" marks a policy some of whose outcomes are estimated.")
	for _, r := range res[1:] {
		fmt.Fprintf(w, "\n%s\n", replay.Verdict(base, r))
	}
}

// writeNotes lists the episodes of a self-check exception: n of them,
// of which list names the first.
func writeNotes(w io.Writer, title string, n int, list []replay.Note) {
	if n == 0 {
		return
	}
	fmt.Fprintf(w, "%s (%d", title, n)
	if len(list) < n {
		fmt.Fprintf(w, ", the first %d", len(list))
	}
	fmt.Fprintln(w, "):")
	for _, m := range list {
		fmt.Fprintf(w, "  %s: %s\n", m.ID, m.Reason)
	}
	fmt.Fprintln(w)
}

// cell formats a metric with its interval, "est." when estimated. An
// exact metric has no interval.
func cell(m replay.Metric, unit string, estimated bool) string {
	if math.IsNaN(m.Value) {
		return "-"
	}
	scale, prec := 1.0, 1
	if unit == "%" || unit == " pp" {
		scale = 100
	}
	if math.Abs(m.Value*scale) < 10 {
		prec = 2
	}
	if m.Exact {
		return fmt.Sprintf("%.*f%s", prec, m.Value*scale, unit)
	}
	s := fmt.Sprintf("%.*f%s [%.*f–%.*f]", prec, m.Value*scale, unit, prec, m.Lo*scale, prec, m.Hi*scale)
	if estimated {
		s += " est."
	}
	return s
}

// simDB names what a simulation read: the store, or a lake.
func simDB(o *simulateOptions, st *query.Store) string {
	if o.Lake != "" {
		return "lake " + o.lakeName
	}
	return st.Path
}

// simulationPage writes the HTML page of the provider-request replay.
// Other systems' replays are not on it yet: they are asked for in the
// table formats.
func simulationPage(io *IO, where simScope, res []replay.Result, systems []systemSimulation) error {
	if len(res) == 0 {
		return fmt.Errorf("--format html draws the replay of provider requests, and the scope holds none; use --format table for other systems' records")
	}
	var verdicts []string
	for _, r := range res[1:] {
		verdicts = append(verdicts, replay.Verdict(res[0], r))
	}
	if len(systems) > 0 {
		fmt.Fprintf(io.Err, "orchstat: the page leaves out the replay of %d other systems' records; --format table shows them\n", len(systems))
	}
	return render.SimulationHTML(io.Out, render.SimulationPage{DB: where.db, Scope: where.scope, Baseline: res[0], Policies: res[1:], Verdicts: verdicts})
}

package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/orchstat/orchstat/model/episode"
	"github.com/orchstat/orchstat/model/failure"
	"github.com/orchstat/orchstat/model/reports"
	"github.com/orchstat/orchstat/model/simulated"
	"github.com/orchstat/orchstat/query"
	"github.com/orchstat/orchstat/reports/render"
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
		Long:  simulateLong(),
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
	addWideFlag(cmd, g.io)
	addFilterFlags(cmd, &o.Since, &o.Until, &o.Runs, &o.Provider)
	f.StringVarP(&o.Format, "format", "f", "table", "output format: table, markdown, json, csv or html (one page with charts; see -o)")
	addOutputFlag(cmd, &o.Output)
	f.StringVar(&o.Baseline, "baseline", "", "the policy the provider requests were made under: a preset or a policy file (default: the system's own, orchestrator or the agent's)")
	f.StringArrayVar(&o.Policies, "policy", nil, "a policy to compare: a preset ("+strings.Join(retry.PresetNames(), ", ")+") or a policy file (repeatable)")
	f.IntVar(&o.MaxRetries, "max-retries", 0, "quick policy: the baseline with this many retries")
	f.IntVar(&o.MaxAttempts, "max-attempts", 0, "quick policy: the baseline with at most this many attempts at an item")
	f.IntVar(&o.SignatureHalt, "signature-halt", 0, "quick policy: the baseline halting after this many identical failure signatures in a row")
	f.StringVar(&o.Backoff, "backoff", "", "quick policy: the baseline with this backoff: "+orList(retry.ScheduleNames()))
	f.StringArrayVar(&o.NoRetry, "no-retry-class", nil, "quick policy: the baseline without retrying this failure class (repeatable)")
	f.Uint64Var(&o.Seed, "seed", 1, "seed of the random draws, so results repeat")
	f.IntVar(&o.Resamples, "resamples", 200, fmt.Sprintf("bootstrap resamples behind each interval (1 to %d)", replay.MaxResamples))
	return cmd
}

// simulateLong is simulate's help. Its lists (presets, figures, backoff
// schedules) are the code's own, so the help names every one there is.
func simulateLong() string {
	var figs []string
	for _, f := range simulated.Figures() {
		figs = append(figs, f.Label)
	}
	return paragraphs(`Replay every system's recorded failures in scope, each against its own
baseline (the policy its records were made under), with the same retry
core that decides retries live, and compare them with each --policy.

Every system in scope is replayed or named, on the first line, as left out
with why: the orchestrator's provider requests, L2 loops and L3 steps
(against orchestrator); an agent's calls whose attempts the record shows
(against claude-code or codex; OpenTelemetry calls need --baseline); the
records of factory, claudestrator, orchestr8 and exec. Calls whose attempts
are unknown (a Codex rollout's) are never replayed: no policy can be said
to change attempts nobody counted. --baseline names the policy of every
provider request instead. With no --policy and no quick flag, each system
is compared with its own questions (none for provider requests and exec;
see docs/simulate.md).

For provider requests, L2 loops and L3 steps the figures are: ` + strings.Join(figs, ", ") + `.
The baseline column is the record: counted from what happened, without
interval or "est.", the same for any --seed. Outcomes the record fixes are
computed exactly: a policy that retries less stops on the recorded prefix,
a class it does not retry stops at the first attempt. Outcomes beyond the
record (more retries after a request gave up, or the class of a failure
the trace does not name) are estimated from the data and marked "est.";
a policy's figures have a 95% interval ("12 [8 to 17]") from a bootstrap
over runs. A policy that changes nothing an episode kind depends on
(provider requests: retry limits, classes, backoff; L2 loops:
max_iterations, non_improving_stop, escalation; L3: diagnosis_after)
shows that kind's figures as the record's, exactly.

L2 failure signatures come from the verification reports; where those are
missing they are inferred from how each loop ended (RunStopped
non_improving, RunEscalated). The self-check gives three numbers: episodes
the baseline's replay reproduces, those it does not (named, with what it
does instead) and those it cannot check (named, with why).

Other systems' records (factory, claudestrator, orchestr8, exec) replay
exactly; a run a policy retries past its last recorded attempt has an
unknown outcome, shown apart from succeeded and failed, and the verdict
says when the unknown runs make a comparison meaningless.

--policy and --baseline take a preset (` + strings.Join(retry.PresetNames(), ", ") + `)
or a policy file. The quick flags --max-retries, --max-attempts,
--signature-halt, --backoff (` + strings.Join(retry.ScheduleNames(), ", ") + `)
and --no-retry-class make one more policy: each baseline with those
changes. Tables fit the terminal's width (--wide: in full).`)
}

// paragraphs rewraps text's paragraphs (split at blank lines) to 74
// columns, as cobra prints help as it is written.
func paragraphs(text string) string {
	var out []string
	for _, p := range strings.Split(text, "\n\n") {
		out = append(out, render.WrapText(strings.Join(strings.Fields(p), " "), 74))
	}
	return strings.Join(out, "\n\n")
}

// orList is "a, b or c".
func orList(names []string) string {
	if len(names) < 2 {
		return strings.Join(names, "")
	}
	return strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
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
		b, err := retry.WithSchedule(o.Backoff, base.Backoff)
		if err != nil {
			return nil, usageError{fmt.Errorf("--backoff: %w", err)}
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

func simulateRun(ctx context.Context, o *simulateOptions) error {
	format, _ := render.ParsePageFormat(o.Format)
	now := o.g.io.Now().UTC()
	f, err := buildFilter(now, o.Since, o.Until, o.Runs, o.Provider)
	if err != nil {
		return err
	}
	// The policies load before the store opens, so that a bad one costs
	// no ingest.
	if _, _, _, err := loadPolicies(o, cmp.Or(o.Baseline, replay.Orchestrator)); err != nil {
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
	sim := &simulation{where: simScope{simDB(o, st), scope}}
	recs, err := st.AttemptRuns(ctx, f)
	if err != nil {
		return interrupted(err)
	}
	named, err := namedPolicies(o)
	if err != nil {
		return err
	}
	// Each system has its own baseline to change.
	if sim.systems, sim.leftOut, err = simulateRecords(ctx, o, recs, named); err != nil {
		return interrupted(err)
	}
	if err := simulateEpisodes(ctx, o, st, f, sim); err != nil {
		return err
	}
	err = withOutput(o.g.io, o.Output, func(io *IO) error { return renderSimulation(io, sim, format) })
	if err != nil {
		return err
	}
	if unread {
		return silentError{1}
	}
	return nil
}

// simulation is what simulate found in its scope: the replay of provider
// requests, L2 loops and L3 steps (res, the baseline first; nil when
// none), each other system's replay, and what it left out and why.
type simulation struct {
	where simScope
	// episodes says whose episodes res replays and how many.
	episodes string
	res      []simulated.Result
	systems  []systemSimulation
	leftOut  []leftOut
}

// leftOut is something in scope that simulate does not replay, with why:
// it is named on the output's first line, never skipped in silence.
type leftOut struct {
	System string `json:"system"`
	Count  int    `json:"count"`
	What   string `json:"what"`
	Why    string `json:"why"`
}

func (l leftOut) String() string {
	what := l.What
	if l.Count == 1 {
		what = strings.TrimSuffix(what, "s")
	}
	return fmt.Sprintf("%s's %d %s (%s)", l.System, l.Count, what, l.Why)
}

// summary is the output's first line: what is replayed, against which
// baseline, and what is left out and why.
func (s *simulation) summary() string {
	var parts []string
	if len(s.res) > 0 {
		parts = append(parts, s.episodes+" against "+s.res[0].Policy)
	}
	for _, sys := range s.systems {
		against := sys.Baseline.Policy
		if against == "as recorded" {
			against = "their record"
		}
		parts = append(parts, fmt.Sprintf("%s's %s against %s", sys.System, count(sys.Baseline.Runs, "run"), against))
	}
	switch {
	case len(parts) == 0:
		return s.nothing() + "."
	case len(s.leftOut) == 0:
		return "Replays " + strings.Join(parts, "; ") + "; nothing in scope is left out."
	}
	return "Replays " + strings.Join(parts, "; ") + ". Leaves out " + s.leftOutList() + "."
}

// leftOutText is what is left out, as stderr says it.
func (s *simulation) leftOutText() string { return "leaves out " + s.leftOutList() + "." }

func (s *simulation) leftOutList() string {
	var out []string
	for _, l := range s.leftOut {
		out = append(out, l.String())
	}
	return strings.Join(out, "; ")
}

// nothing says why nothing in scope can be replayed.
func (s *simulation) nothing() string {
	if len(s.leftOut) == 0 {
		return "Nothing to replay: the scope holds no provider request, L2 loop, L3 step or recorded attempt"
	}
	return "Nothing to replay: " + s.leftOutList()
}

// count is n things: "1 run", "2 runs".
func count(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}

// namedPolicies are the policies --policy names.
func namedPolicies(o *simulateOptions) ([]*retry.Policy, error) {
	var named []*retry.Policy
	for _, spec := range o.Policies {
		p, err := loadPolicy(spec)
		if err != nil {
			return nil, err
		}
		named = append(named, p)
	}
	return named, nil
}

// simulateEpisodes replays the provider requests, L2 loops and L3 steps
// in scope into sim.res, against --baseline, or without it against the
// policy of the system they come from (the orchestrator's, or an agent's
// whose calls they all are). Episodes it cannot replay so go to
// sim.leftOut with why, as do agents' calls whose attempts are unknown.
func simulateEpisodes(ctx context.Context, o *simulateOptions, st *query.Store, f query.Filter, sim *simulation) error {
	classifyWith, _, _, err := loadPolicies(o, cmp.Or(o.Baseline, replay.Orchestrator))
	if err != nil {
		return err
	}
	// The baseline's classify rules name the recorded errors for every policy.
	eps, err := st.Episodes(ctx, f, classifyWith.Classifier(failure.DefaultProvider).Classify)
	if err != nil {
		return interrupted(err)
	}
	calls, err := st.UnreplayedCalls(ctx, f)
	if err != nil {
		return interrupted(err)
	}
	for _, c := range calls {
		if c.UnknownAttempts > 0 {
			why := "the record does not show their attempts, so no policy can be said to change them"
			if c.System == "codex" {
				why = "a Codex rollout records no attempts or retries, so no policy can be said to change them"
			}
			sim.leftOut = append(sim.leftOut, leftOut{c.System, c.UnknownAttempts, "model calls", why})
		}
		if c.NoTime > 0 {
			sim.leftOut = append(sim.leftOut, leftOut{c.System, c.NoTime, "model calls", "the record gives them no time"})
		}
	}
	if idle, err := st.IdleTraceRuns(ctx, f); err != nil {
		return interrupted(err)
	} else if idle > 0 {
		sim.leftOut = append(sim.leftOut, leftOut{replay.Orchestrator, idle, "runs",
			"nothing in them to replay: no provider request, L2 loop or L3 step"})
	}
	bySystem := map[string][]episode.Episode{}
	var order []string
	for _, e := range eps {
		s := replay.EpisodeSystem(&e)
		if bySystem[s] == nil {
			order = append(order, s)
		}
		bySystem[s] = append(bySystem[s], e)
	}
	slices.SortFunc(order, func(a, b string) int { // the orchestrator first
		first := func(s string) int {
			if s == replay.Orchestrator {
				return 0
			}
			return 1
		}
		return cmp.Or(cmp.Compare(first(a), first(b)), cmp.Compare(a, b))
	})
	var chosen []string
	var defaults []*retry.Policy
	base := cmp.Or(o.Baseline, replay.Orchestrator)
	if o.Baseline != "" {
		chosen = order // the user's baseline, for every episode
		if sr, ok := replay.ForEpisodes(replay.Orchestrator); ok {
			defaults = sr.Defaults
		}
	} else {
		for _, s := range order {
			sr, ok := replay.ForEpisodes(s)
			switch {
			case !ok:
				sim.leftOut = append(sim.leftOut, leftOut{s, countKind(bySystem[s]), "model calls",
					"they name no agent whose policy would be their baseline; name it with --baseline"})
			case len(chosen) > 0:
				sim.leftOut = append(sim.leftOut, leftOut{s, countKind(bySystem[s]), "model calls",
					"provider requests are replayed against one baseline at a time, here " + order[0] + "'s: simulate their records alone"})
			default:
				chosen, base, defaults = []string{s}, sr.Baseline.Name, sr.Defaults
			}
		}
	}
	if len(chosen) == 0 {
		return nil
	}
	var picked []episode.Episode
	for _, s := range chosen {
		picked = append(picked, bySystem[s]...)
	}
	if len(chosen) < len(order) {
		// Back in the record's order, as the store gave them.
		slices.SortStableFunc(picked, func(a, b episode.Episode) int { return a.Time.Compare(b.Time) })
	}
	baseline, named, q, err := loadPolicies(o, base)
	if err != nil {
		return err
	}
	policies := named
	if q != nil {
		policies = append(slices.Clip(named), q)
	}
	if len(policies) == 0 {
		// The defaults, less one the baseline already is (--baseline none).
		policies = slices.DeleteFunc(defaults, func(p *retry.Policy) bool { return p.Name == baseline.Name })
	}
	if len(policies) == 0 {
		return usageError{errors.New("name a policy to compare: --policy NAME|FILE, or a quick flag such as --max-retries 5")}
	}
	sim.res, err = replay.Simulate(ctx, picked, baseline, policies, replay.Options{Seed: o.Seed, Resamples: o.Resamples})
	if err != nil {
		return interrupted(err)
	}
	sim.episodes = episodesText(strings.Join(chosen, " and "), sim.res[0])
	return nil
}

// countKind counts an agent's calls among eps (its provider requests).
func countKind(eps []episode.Episode) int {
	n := 0
	for _, e := range eps {
		if e.Kind == episode.KindProvider {
			n++
		}
	}
	return n
}

// episodesText names what a replay of episodes covers: "orchestrator's
// 152 provider requests, 9 L2 loops and 3 runs with L3 steps".
func episodesText(who string, b simulated.Result) string {
	// An agent's episodes are its model calls; the orchestrator's, its
	// provider requests.
	what := "model call"
	if who == replay.Orchestrator {
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

// interrupted says so when err is Ctrl-C's (or SIGTERM's) cancellation.
func interrupted(err error) error {
	if errors.Is(err, context.Canceled) {
		return fmt.Errorf("simulate interrupted: %w", err)
	}
	return err
}

// renderSimulation writes the replay of episodes (when there is one) and
// the other systems', after a first line that says what is replayed and
// what is left out.
func renderSimulation(io *IO, sim *simulation, f render.Format) error {
	res, systems, where := sim.res, sim.systems, sim.where
	if f == render.FormatJSON {
		out := simulationJSON{Database: where.db, Scope: where.scope, Summary: sim.summary(),
			LeftOut: nonNilSlice(sim.leftOut), Systems: nonNilSlice(systems)}
		if len(res) > 0 {
			base := res[0]
			var verdicts []string
			for _, r := range res[1:] {
				verdicts = append(verdicts, simulated.Verdict(base, r))
			}
			check, policies := selfCheck(base), res[1:]
			out.SelfCheck, out.Baseline, out.Policies, out.Verdicts = &check, &base, &policies, &verdicts
		}
		b, err := render.MarshalJSON(out)
		if err != nil {
			return err
		}
		_, err = io.Out.Write(b)
		return err
	}
	if f == render.FormatHTML {
		return simulationPage(io, sim)
	}
	if f == render.FormatCSV {
		// Tables only: what is left out goes to stderr, where it is seen.
		if len(sim.leftOut) > 0 {
			fmt.Fprintf(io.Err, "orchstat: %s\n", render.EscapeControls(sim.leftOutText()))
		}
	} else {
		fmt.Fprintln(io.Out, render.WrapText(sim.summary(), io.OutWidth))
		if f == render.FormatMarkdown {
			fmt.Fprintln(io.Out)
		}
		fmt.Fprintln(io.Out, render.ScopeText(where.db, where.scope, io.OutWidth))
		if f == render.FormatMarkdown {
			fmt.Fprintln(io.Out)
		}
	}
	if len(res) > 0 {
		if err := renderProviderSimulation(io, res, sim.episodes, f); err != nil {
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
// simulationJSON is `simulate --format json`. Its fields are in the order
// of their JSON names, as the document had them when it was a map; the
// replay's parts are present only when there are episodes (pointers, so a
// replay with no policies still prints "policies": [] and "verdicts": null).
type simulationJSON struct {
	Baseline  *simulated.Result   `json:"baseline,omitempty"`
	Database  string              `json:"database"`
	LeftOut   []leftOut           `json:"left_out"`
	Policies  *[]simulated.Result `json:"policies,omitempty"`
	Scope     reports.Scope       `json:"scope"`
	SelfCheck *string             `json:"self_check,omitempty"`
	Summary   string              `json:"summary"`
	Systems   []systemSimulation  `json:"systems"`
	Verdicts  *[]string           `json:"verdicts,omitempty"`
}

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
func selfCheck(base simulated.Result) string {
	return fmt.Sprintf("baseline reproduces %d of %d episodes; %d not reproduced; %d not checkable",
		base.Reproduced, base.Checked+base.NotCheckable, base.Checked-base.Reproduced, base.NotCheckable)
}

func renderProviderSimulation(io *IO, res []simulated.Result, what string, f render.Format) error {
	if err := render.RenderTable(io.Out, simulationTable(res, what, io.OutWidth), f); err != nil {
		return err
	}
	if f == render.FormatCSV {
		return nil
	}
	fmt.Fprintln(io.Out)
	writeSimulationNotes(io.Out, res, io.OutWidth)
	return nil
}

// simulationTable is the baseline's figures beside each policy's and its
// difference from the baseline, by episode kind, each kind's figures
// followed by how many of its outcomes are estimated; the figures are the
// replay's catalog's (replay.Shown). It fits width columns (0: any).
func simulationTable(res []simulated.Result, what string, width int) reports.Table {
	base := res[0]
	// The baseline's column is the record; its name is in the title, so
	// that the column stays as narrow as its figures.
	cols := []string{"figure", "record"}
	for _, r := range res[1:] {
		cols = append(cols, r.Policy, "Δ "+r.Policy)
	}
	t := reports.Table{Title: fmt.Sprintf("orchstat simulate: %s; baseline %s (the record column); %s",
		what, base.Policy, selfCheck(base)), Columns: cols, Width: width}
	figs := simulated.Shown(base)
	for i, fig := range figs {
		cells := []any{fig.Label, fig.Text(fig.Of(base), false, false)}
		for _, r := range res[1:] {
			est := fig.Estimated(r)
			cells = append(cells, fig.Text(fig.Of(r), false, est), fig.Text(r.Diff[fig.Key], true, est))
		}
		t.Rows = append(t.Rows, cells)
		if i+1 == len(figs) || figs[i+1].Kind != fig.Kind {
			if row := estimatedRow(res, fig.Kind); row != nil {
				t.Rows = append(t.Rows, row)
			}
		}
	}
	return t
}

// estimatedRow says, for the baseline and each policy, how many of its
// outcomes of kind are estimated; nil for a kind never estimated.
func estimatedRow(res []simulated.Result, kind episode.Kind) []any {
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
		fmt.Fprintf(w, "%s\n\n", render.WrapText(loops+" verification reports: which failure signatures repeated is inferred from how each loop ended.", width))
	}
	fmt.Fprintln(w, render.WrapText("The baseline is the record, counted without interval. A policy's values are followed by their 95% interval over runs; "+
		"a figure with no interval is exact. \"est.\" marks a policy some of whose outcomes are estimated.", width))
	for _, r := range res[1:] {
		fmt.Fprintf(w, "\n%s\n", render.WrapText(simulated.Verdict(base, r), width))
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
		line := render.WrapText(m.ID+": "+m.Reason, max(width-2, 0))
		fmt.Fprintf(w, "  %s\n", strings.ReplaceAll(line, "\n", "\n  "))
	}
	fmt.Fprintln(w)
}

// simDB names what a simulation read: the store, or a lake.
func simDB(o *simulateOptions, st *query.Store) string {
	if o.Lake != "" {
		return "lake " + o.lakeName
	}
	return st.Path
}

// simulationPage writes the HTML page of the replay of episodes. Other
// systems' replays are not on it yet: they are asked for in the table
// formats, and stderr says they are left out.
func simulationPage(io *IO, sim *simulation) error {
	res := sim.res
	if len(res) == 0 {
		return fmt.Errorf("--format html draws the replay of provider requests, and the scope holds none; use --format table for other systems' records")
	}
	var verdicts []string
	for _, r := range res[1:] {
		verdicts = append(verdicts, simulated.Verdict(res[0], r))
	}
	summary := sim.summary()
	if len(sim.systems) > 0 {
		var names []string
		for _, s := range sim.systems {
			names = append(names, s.System)
		}
		note := fmt.Sprintf("the page leaves out the replay of %s's records; --format table shows them", strings.Join(names, "'s, "))
		fmt.Fprintf(io.Err, "orchstat: %s\n", note)
		summary += " " + strings.ToUpper(note[:1]) + note[1:] + "."
	}
	return render.SimulationHTML(io.Out, render.SimulationPage{DB: sim.where.db, Scope: sim.where.scope, Summary: summary,
		Baseline: res[0], Policies: res[1:], Verdicts: verdicts})
}

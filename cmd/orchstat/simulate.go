package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/orchstat/orchstat/model/failure"
	"github.com/orchstat/orchstat/model/simulated"
	"github.com/orchstat/orchstat/query"
	"github.com/orchstat/orchstat/reports/render"
	"github.com/orchstat/orchstat/rules/optimize"
	"github.com/orchstat/orchstat/rules/replay"
	"github.com/orchstat/orchstat/rules/retry"
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

	// --optimize and its settings (see rules/optimize).
	Optimize      bool
	Search        string
	SearchFile    string
	Constraints   []string
	EvidenceBound float64
	NoHoldout     bool
	Candidates    int
	WritePolicy   string
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
	f.BoolVar(&o.Optimize, "optimize", false, "search the retry core's parameters for the Pareto front of success, attempts, cost and p95, on the older 70% of episodes, checked on the newer 30% (see docs/simulate.md)")
	f.StringVar(&o.Search, "search", "", "with --optimize: narrow the space, such as max_retries=0..4,backoff=full|decorrelated")
	f.StringVar(&o.SearchFile, "search-file", "", "with --optimize: read narrowings from `FILE`, one name=values per line (--search's win)")
	f.StringArrayVar(&o.Constraints, "constraint", nil, "with --optimize: what the pick must meet, such as \"success >= baseline\" or \"attempts <= 1.1*baseline\" (repeatable; default "+strconv.Quote(optimize.DefaultConstraint)+")")
	f.Float64Var(&o.EvidenceBound, "evidence-bound", 0.2, "with --optimize: the largest share of a policy's outcomes estimated beyond the record for it to be picked")
	f.BoolVar(&o.NoHoldout, "no-holdout", false, "with --optimize: search on every episode, checking the front on none")
	f.IntVar(&o.Candidates, "candidates", 500, "with --optimize: how many policies to draw from the space")
	f.StringVar(&o.WritePolicy, "write-policy", "", "with --optimize: write the picked policy to this policy file")
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
	if !o.Optimize && (o.Search != "" || o.SearchFile != "" || len(o.Constraints) > 0 || o.NoHoldout || o.WritePolicy != "") {
		return errors.New("--search, --constraint, --no-holdout and --write-policy go with --optimize")
	}
	if o.Optimize && (len(o.Policies) > 0 || o.MaxRetries >= 0 || o.MaxAttempts > 0 || o.SignatureHalt > 0 || o.Backoff != "" || len(o.NoRetry) > 0) {
		return errors.New("--optimize searches the policies itself: it takes no --policy or quick flag (narrow it with --search)")
	}
	if o.EvidenceBound <= 0 || o.EvidenceBound > 1 {
		return fmt.Errorf("--evidence-bound %v: a share above 0, at most 1", o.EvidenceBound)
	}
	if o.Candidates < 1 || o.Candidates > 100000 {
		return fmt.Errorf("--candidates %d: from 1 to 100000", o.Candidates)
	}
	// The narrowing is checked before any work; the classes the episodes
	// failed with only add values to it.
	if o.SearchFile != "" {
		data, err := os.ReadFile(o.SearchFile)
		if err != nil {
			return fmt.Errorf("--search-file: %w", err)
		}
		fromFile, err := optimize.ReadSearchFile(o.SearchFile, data)
		if err != nil {
			return err
		}
		o.Search = strings.Trim(fromFile+","+o.Search, ",")
	}
	if err := optimize.CheckSearch(o.Search); err != nil {
		return err
	}
	for _, c := range o.Constraints {
		if _, err := optimize.ParseConstraint(c); err != nil {
			return err
		}
	}
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

// quickPolicy is the baseline changed by the quick flags, or nil when none
// is set.
func quickPolicy(o *simulateOptions, base *retry.Policy) (*retry.Policy, error) {
	q := retry.Quick{MaxRetries: o.MaxRetries, MaxAttempts: o.MaxAttempts, SignatureHalt: o.SignatureHalt, Backoff: o.Backoff, NoRetry: o.NoRetry}
	p, err := q.Apply(base)
	if err != nil {
		return nil, usageError{err}
	}
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
	pols, err := readPolicies(o)
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
	sim := &simulated.Simulation{DB: simDB(o, st), Scope: scope}
	recs, err := st.AttemptRuns(ctx, f)
	if err != nil {
		return interrupted(err)
	}
	if o.Optimize {
		// The search replays episodes; other systems' records replay
		// exactly under named policies, which --optimize does not draw.
		for _, system := range slices.Sorted(maps.Keys(recs.Runs)) {
			sim.LeftOut = append(sim.LeftOut, simulated.LeftOut{System: system, Count: len(recs.Runs[system]), What: "record runs",
				Why: "--optimize searches provider requests and agents' calls; compare policies for these runs with --policy"})
		}
	} else {
		// Each system has its own baseline to change.
		quick := func(base *retry.Policy) (*retry.Policy, error) { return quickPolicy(o, base) }
		if sim.Systems, sim.LeftOut, err = replay.Systems(ctx, recs.Runs, recs.Unknown, pols.named, quick); err != nil {
			return interrupted(err)
		}
	}
	if err := simulateEpisodes(ctx, o, pols, st, f, sim); err != nil {
		return err
	}
	err = withOutput(o.g.io, o.Output, func(io *IO) error { return render.RenderSimulation(io.Out, io.Err, sim, format, io.OutWidth) })
	if err != nil {
		return err
	}
	if unread {
		return silentError{1}
	}
	return nil
}

// simulateEpisodes replays the provider requests, L2 loops and L3 steps
// in scope into sim.Results, against --baseline, or without it against
// the policy of the system they come from (the orchestrator's, or an
// agent's whose calls they all are; see replay.PickEpisodes). Episodes it
// cannot replay so go to sim.LeftOut with why, as do agents' calls whose
// attempts are unknown.
func simulateEpisodes(ctx context.Context, o *simulateOptions, pols simulatePolicies, st *query.Store, f query.Filter, sim *simulated.Simulation) error {
	// The baseline's classify rules name the recorded errors for every policy.
	eps, err := st.Episodes(ctx, f, pols.base.Classifier(failure.DefaultProvider).Classify)
	if err != nil {
		return interrupted(err)
	}
	calls, err := st.UnreplayedCalls(ctx, f)
	if err != nil {
		return interrupted(err)
	}
	for _, c := range calls {
		sim.LeftOut = append(sim.LeftOut, replay.CallsLeftOut(c.System, c.UnknownAttempts, c.NoTime)...)
	}
	idle, err := st.IdleTraceRuns(ctx, f)
	if err != nil {
		return interrupted(err)
	}
	sim.LeftOut = append(sim.LeftOut, replay.IdleLeftOut(idle)...)
	pick := replay.PickEpisodes(eps, o.Baseline)
	sim.LeftOut = append(sim.LeftOut, pick.LeftOut...)
	if len(pick.Systems) == 0 {
		return nil
	}
	baseline, named, q, err := pols.against(o, pick.Baseline)
	if err != nil {
		return err
	}
	if o.Optimize {
		return optimizeEpisodes(ctx, o, pick, baseline, sim)
	}
	policies := named
	if q != nil {
		policies = append(slices.Clip(named), q)
		if len(named) > 0 {
			var names []string
			for _, p := range named {
				names = append(names, p.Name)
			}
			sim.Note = fmt.Sprintf("%d policies, not one: %s (--policy) and %s (the quick flags change the baseline, not --policy's policies; a policy file combines them).",
				len(policies), strings.Join(names, ", "), q.Name)
		}
	}
	if len(policies) == 0 {
		// The defaults, less one the baseline already is (--baseline none).
		policies = slices.DeleteFunc(pick.Defaults, func(p *retry.Policy) bool { return p.Name == baseline.Name })
	}
	if len(policies) == 0 {
		return usageError{errors.New("name a policy to compare: --policy NAME|FILE, or a quick flag such as --max-retries 5")}
	}
	sim.Results, err = replay.Simulate(ctx, pick.Episodes, baseline, policies, replay.Options{Seed: o.Seed, Resamples: o.Resamples})
	if err != nil {
		return interrupted(err)
	}
	sim.Replayed = pick.Systems
	return nil
}

// simulatePolicies are --baseline's policy (the orchestrator's without
// it) and the policies --policy names, each file read and parsed once and
// handed on: what simulate replays against. The replays share these
// policies and only read them; whatever would change one must clone it
// first (replay.ForSystem's own are fresh, the caller's to change).
type simulatePolicies struct {
	baseSpec string
	base     *retry.Policy
	named    []*retry.Policy
}

// readPolicies reads the baseline and the policies --policy names, and
// checks them with the quick flags' change of the baseline (see against).
func readPolicies(o *simulateOptions) (simulatePolicies, error) {
	ps := simulatePolicies{baseSpec: cmp.Or(o.Baseline, simulated.Orchestrator)}
	var err error
	if ps.base, err = loadPolicy(ps.baseSpec); err != nil {
		return simulatePolicies{}, err
	}
	for _, spec := range o.Policies {
		p, err := loadPolicy(spec)
		if err != nil {
			return simulatePolicies{}, err
		}
		ps.named = append(ps.named, p)
	}
	if _, _, _, err := ps.against(o, ps.baseSpec); err != nil {
		return simulatePolicies{}, err
	}
	return ps, nil
}

// against is the baseline named baseline (the one read already, or the
// preset of the system the episodes come from), the policies --policy
// names, and the quick flags' policy (nil without quick flags), which
// changes the baseline. Two policies of one name are a usage error.
func (ps simulatePolicies) against(o *simulateOptions, baseline string) (base *retry.Policy, named []*retry.Policy, quick *retry.Policy, err error) {
	base, named = ps.base, ps.named
	if baseline != ps.baseSpec {
		if base, err = loadPolicy(baseline); err != nil {
			return nil, nil, nil, err
		}
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

// simDB names what a simulation read: the store, or a lake.
func simDB(o *simulateOptions, st *query.Store) string {
	if o.Lake != "" {
		return "lake " + o.lakeName
	}
	return st.Path
}

// optimizeEpisodes searches the picked episodes' policies into
// sim.Optimization, and writes the pick to --write-policy.
func optimizeEpisodes(ctx context.Context, o *simulateOptions, pick replay.Pick, baseline *retry.Policy, sim *simulated.Simulation) error {
	var cs []optimize.Constraint
	for _, text := range o.Constraints {
		c, err := optimize.ParseConstraint(text)
		if err != nil {
			return usageError{err}
		}
		cs = append(cs, c)
	}
	opts := optimize.Options{Seed: o.Seed, Candidates: o.Candidates, Holdout: 0.3, EvidenceBound: o.EvidenceBound,
		Constraints: cs, Search: o.Search, Resamples: o.Resamples}
	if o.NoHoldout {
		opts.Holdout = 0
	}
	opt, picked, err := optimize.Search(ctx, pick.Episodes, baseline, opts)
	if err != nil {
		return interrupted(err)
	}
	opt.System = strings.Join(pick.Systems, ", ")
	sim.Optimization, sim.Replayed = opt, pick.Systems
	if o.WritePolicy == "" {
		return nil
	}
	var notes, none []string
	for _, l := range opt.Layers {
		if l.Pick < 0 {
			notes = append(notes, fmt.Sprintf("%s: the baseline's, as no policy was picked: %s", l.Name, l.NoPick))
			none = append(none, l.Name+": "+l.NoPick)
		} else {
			notes = append(notes, fmt.Sprintf("%s: pick %d, %s", l.Name, l.Pick+1, strings.Join(l.Front[l.Pick].Settings, " ")))
		}
	}
	if picked == nil {
		return fmt.Errorf("--write-policy: nothing to write: %s", strings.Join(none, "; "))
	}
	extends := ""
	if slices.Contains(retry.PresetNames(), baseline.Name) {
		extends = baseline.Name
	}
	name := strings.TrimSuffix(filepath.Base(o.WritePolicy), filepath.Ext(o.WritePolicy))
	// Written beside its place and renamed there, so that a reader never
	// sees half a policy.
	tmp, err := os.CreateTemp(filepath.Dir(o.WritePolicy), ".orchstat-policy-*")
	if err != nil {
		return fmt.Errorf("--write-policy: %w", err)
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(optimize.PolicyFile(picked, name, extends, notes...)); err != nil {
		tmp.Close()
		return fmt.Errorf("--write-policy: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("--write-policy: %w", err)
	}
	if err := os.Rename(tmp.Name(), o.WritePolicy); err != nil {
		return fmt.Errorf("--write-policy: %w", err)
	}
	return nil
}

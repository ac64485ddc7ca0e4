package main

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/orchstat/orchstat/model/episode"
	"github.com/orchstat/orchstat/model/factory/spec"
	"github.com/orchstat/orchstat/model/records"
	"github.com/orchstat/orchstat/model/reports"
	"github.com/orchstat/orchstat/reports/render"
	"github.com/orchstat/orchstat/rules/adaptive"
	"github.com/orchstat/orchstat/rules/retry"
	"github.com/orchstat/orchstat/rules/yamlast"
)

type recommendOptions struct {
	g *globals
	ingestFirst
	Stage   string
	Attempt int
	Item    string
	System  string
	Config  string
	Format  string
}

// recordSystems are what --system takes: the systems whose records may
// have stages.
var recordSystems = []string{records.Factory, records.Claudestrator, records.Orchestr8, records.Exec}

func newRecommendCmd(g *globals, runF func(context.Context, *recommendOptions) error) *cobra.Command {
	o := &recommendOptions{g: g}
	cmd := &cobra.Command{
		Use:   "recommend --stage STAGE [PATH...]",
		Short: "Recommend a retry strategy for a failed stage, from its recent failure rate",
		Long: `orchestr8's adaptive retry: after a stage fails, recommend how to retry it.
Ingest the PATHs first (unless --no-ingest), then take the recorded runs found
under them (--all: the whole store) of the systems whose records have stages,
oldest first, and the share of the last windowSize runs that failed at STAGE:

  attempt > maxRetries                → abort-recommended (abort or skip)
  failure rate > highFailureThreshold → the stage's strategy for the attempt
  otherwise, or with no history       → retry

The settings come from orchestr8's .claude/retry-config.json (--config; see
orchstat retry-config). A missing file is the defaults; a corrupt one, or a
corrupt history file, is a warning and the command still answers (exit 0):
the recommendation is advice, and the user decides.

STAGE is a stage as the report's Stages table names it: the factory's
"verify", not its failure brief's "verify_failed" (a run that ended at
verify_failed counts as failing at verify). A stage that neither the records
nor the retry configuration name is a usage error (exit 2) that lists the
known stages and suggests the closest.

With no PATH, the history beside the configuration
(.claude/pipeline-history.json) is ingested if it exists; otherwise the store
is read as it is. --attempt defaults to one more than the recorded failures
of --item at STAGE, or 1.`,
		Example: `  orchstat recommend --stage nigel
  orchstat recommend --stage cass --attempt 2 --format json
  orchstat recommend --stage codey-implement --item dark-mode --system orchestr8 path/to/project`,
		RunE: func(cmd *cobra.Command, args []string) error {
			o.Paths = args
			if strings.TrimSpace(o.Stage) == "" {
				return usageError{errors.New("--stage is required: the stage that failed, such as nigel")}
			}
			if o.Format != "text" && o.Format != "json" {
				return usageError{fmt.Errorf("--format %q: text or json", o.Format)}
			}
			if o.System != "" && !slices.Contains(recordSystems, o.System) {
				return usageError{fmt.Errorf("--system %q: one of %s", o.System, strings.Join(recordSystems, ", "))}
			}
			if !cmd.Flags().Changed("attempt") {
				o.Attempt = 0
			} else if o.Attempt < 1 {
				return usageError{fmt.Errorf("--attempt must be 1 or more (the first attempt is 1), got %d", o.Attempt)}
			}
			if runF != nil {
				return runF(cmd.Context(), o)
			}
			return recommendRun(cmd.Context(), o)
		},
	}
	f := cmd.Flags()
	o.ingestFirst.flags(cmd, "recommend from the store as it is, without ingesting first")
	f.StringVar(&o.Stage, "stage", "", "the stage that failed, as the report names it (orchestr8: alex, cass, nigel, codey-plan, codey-implement; factory: write, apply, verify, acceptance)")
	f.IntVar(&o.Attempt, "attempt", 0, "the attempt at the stage that failed, from 1 (default: one more than the recorded failures of --item at the stage, or 1)")
	f.StringVar(&o.Item, "item", "", "the feature (orchestr8's slug) or work item, to count its earlier attempts")
	f.StringVar(&o.System, "system", "", "only this system's runs: "+strings.Join(recordSystems, ", ")+" (default: every system whose records have stages)")
	f.StringVar(&o.Config, "config", adaptive.DefaultPath, "the retry configuration file")
	f.StringVarP(&o.Format, "format", "f", "text", "output format: text or json")
	return cmd
}

// recommendation is the JSON output; the text output says the same.
type recommendation struct {
	Stage   string `json:"stage"`
	Attempt int    `json:"attempt"`
	// AttemptFrom is "flag" (--attempt), "history" (the recorded failures
	// of --item at the stage, plus one) or "default" (1).
	AttemptFrom string  `json:"attempt_from"`
	Item        string  `json:"item,omitempty"`
	System      string  `json:"system"`
	FailureRate float64 `json:"failure_rate"`
	Numerator   int     `json:"numerator"`
	Denominator int     `json:"denominator"`
	// Runs is every recorded run in the history, the window's or not.
	Runs        int     `json:"runs"`
	Window      int     `json:"window"`
	Threshold   float64 `json:"threshold"`
	MaxRetries  int     `json:"max_retries"`
	Strategy    string  `json:"strategy"`
	ShouldRetry bool    `json:"should_retry"`
	Reason      string  `json:"reason"`
	Config      string  `json:"config"`
	// ConfigDefaults names the settings not taken from the file.
	ConfigDefaults []string `json:"config_defaults"`
	Warnings       []string `json:"warnings"`
	// Store and Scope say where the history came from; empty when no
	// store was read.
	Store string         `json:"store,omitempty"`
	Scope *reports.Scope `json:"scope,omitempty"`
}

func recommendRun(ctx context.Context, o *recommendOptions) error {
	cfg, cwarns := adaptive.Load(o.Config)
	r := recommendation{Stage: o.Stage, Item: o.Item, System: o.System, Config: o.Config, ConfigDefaults: defaultedKeys(cfg), Warnings: []string{}}
	if r.System == "" {
		r.System = "all"
	}
	for _, w := range cwarns {
		r.Warnings = append(r.Warnings, "retry configuration "+w.String())
	}

	hist, attempts, recorded, hwarns, err := stageHistory(ctx, o, &r)
	if err != nil {
		return err
	}
	if err := checkStage(o.Stage, recorded, cfg); err != nil {
		return err
	}
	r.Warnings = append(r.Warnings, hwarns...)

	switch {
	case o.Attempt > 0:
		r.Attempt, r.AttemptFrom = o.Attempt, "flag"
	case o.Item != "" && attempts >= 0:
		r.Attempt, r.AttemptFrom = attempts+1, "history"
	default:
		r.Attempt, r.AttemptFrom = 1, "default"
	}

	// The rule is the retry core's: Advise decides, and says on what
	// numbers and by which case, which is all this reports.
	a := cfg.Adaptive()
	adv := a.Advise(o.Stage, r.Attempt, hist)
	r.Runs, r.Window, r.Threshold, r.MaxRetries = len(hist), a.Window, a.Threshold, a.MaxRetries
	r.FailureRate, r.Numerator, r.Denominator = adv.Rate, adv.Failed, adv.Runs
	r.Strategy = adv.Strategy
	r.ShouldRetry = r.Strategy != retry.StrategyAbort // retry.js shouldRetry
	r.Reason = explain(r, adv, a, hist)
	return renderRecommendation(o.g.io, r, o.Format)
}

// checkStage refuses a stage that neither the records nor the retry
// configuration name: a typo would otherwise read as a stage that never
// failed, and get a confident "retry". With no records there is nothing to
// check against, and the recommendation says it has no history.
func checkStage(stage string, recorded []string, cfg adaptive.Config) error {
	if len(recorded) == 0 || slices.Contains(recorded, stage) {
		return nil
	}
	if _, ok := cfg.Strategies[stage]; ok {
		return nil
	}
	var configured []string
	for s := range cfg.Strategies {
		if !slices.Contains(recorded, s) {
			configured = append(configured, s)
		}
	}
	slices.Sort(configured)
	hint := yamlast.Suggest(stage, append(slices.Clone(recorded), configured...))
	if s := spec.ReportStage(stage); s != stage && slices.Contains(recorded, s) {
		hint = fmt.Sprintf("; did you mean %q? (the report's name for it)", s)
	}
	msg := fmt.Sprintf("--stage %q: no recorded run has this stage%s\n  stages in the records: %s", stage, hint, strings.Join(recorded, ", "))
	if len(configured) > 0 {
		msg += "\n  stages in the retry configuration: " + strings.Join(configured, ", ")
	}
	return usageError{errors.New(msg)}
}

// stageHistory opens the store, ingesting first as report does, and reads
// the history, with its stages named as the report names them, and the
// stages the records know. What goes wrong with the history is a warning: seed 004
// wants failures in the retry module "caught and logged, not propagated"
// (line 170), and with no history the advice is a simple retry. Only the
// user's own mistakes (a PATH that does not exist, a bad flag) and an
// interrupt are errors. attempts is -1 when not counted.
func stageHistory(ctx context.Context, o *recommendOptions, r *recommendation) (hist []episode.StageOutcome, attempts int, recorded, warns []string, err error) {
	attempts = -1
	g := o.g
	if len(o.Paths) == 0 && !o.NoIngest {
		// orchestr8 keeps its history beside its configuration (retry.js,
		// history.js: both under .claude/).
		h := filepath.Join(filepath.Dir(o.Config), "pipeline-history.json")
		if st, err := os.Stat(h); err == nil && st.Mode().IsRegular() {
			o.Paths = []string{h}
		} else if _, err := os.Stat(g.dbPath(nil)); err != nil {
			return nil, attempts, nil, []string{fmt.Sprintf("no history: no %s and no store at %s; recommending as for a first failure", h, g.dbPath(nil))}, nil
		} else {
			o.NoIngest = true // read the store as it is
		}
	}
	if o.NoIngest {
		if _, err := os.Stat(g.dbPath(o.Paths)); err != nil {
			return nil, attempts, nil, []string{fmt.Sprintf("no history: no store at %s; recommending as for a first failure", g.dbPath(o.Paths))}, nil
		}
	} else if err := checkPaths(o.Paths); err != nil {
		return nil, attempts, nil, nil, err
	}
	st, unread, err := o.ingestFirst.open(ctx, g, false)
	if err != nil {
		var ue usageError
		if errors.As(err, &ue) || ctx.Err() != nil {
			return nil, attempts, nil, nil, err
		}
		return nil, attempts, nil, []string{fmt.Sprintf("cannot read the history (%v); recommending as for a first failure", err)}, nil
	}
	defer st.Close()
	if unread {
		warns = append(warns, "some files could not be read (named above on stderr); recommending from the rest")
	}
	scope, paths, err := o.scopeOf(ctx, st, true)
	if err != nil {
		return nil, attempts, nil, nil, err
	}
	r.Store, r.Scope = st.Path, &scope
	hist, hw, err := st.StageHistory(ctx, o.System, paths)
	if err != nil {
		return nil, attempts, nil, append(warns, fmt.Sprintf("cannot read the history (%v); recommending as for a first failure", err)), nil
	}
	warns = append(warns, hw...)
	for i := range hist {
		hist[i].Stage = spec.ReportStage(hist[i].Stage)
	}
	if recorded, err = st.RecordedStages(ctx, o.System); err != nil {
		warns = append(warns, fmt.Sprintf("cannot list the recorded stages (%v); --stage is not checked", err))
	}
	if o.Item != "" && o.Attempt == 0 {
		attempts = 0
		for _, name := range spec.StageAliases(o.Stage) {
			n, err := st.StageAttempts(ctx, o.System, o.Item, name)
			if err != nil {
				warns = append(warns, fmt.Sprintf("cannot count the attempts of %s at %s (%v); taking attempt 1", o.Item, o.Stage, err))
				attempts = -1
				break
			}
			attempts += n
		}
	}
	return hist, attempts, recorded, warns, nil
}

// explain says which of rule 2's cases applied, and on what numbers.
func explain(r recommendation, adv retry.Advice, a retry.Adaptive, hist []episode.StageOutcome) string {
	rate := fmt.Sprintf("%s failed in %d of the last %d runs (%s)", r.Stage, r.Numerator, r.Denominator, percent(r.FailureRate))
	if r.Denominator == 1 {
		rate = fmt.Sprintf("%s failed in %d of the 1 recorded run (%s)", r.Stage, r.Numerator, percent(r.FailureRate))
	}
	switch adv.Rule {
	case retry.AdvicePastMaxRetries:
		return fmt.Sprintf("attempt %d is past maxRetries %d: abort, or skip the stage (the choice stays yours)", r.Attempt, a.MaxRetries)
	case retry.AdviceNoHistory:
		return "no recorded runs: a first failure gets a simple retry"
	case retry.AdviceNoStrategy:
		return fmt.Sprintf("%s, above the %s threshold, but no strategy is configured for %s: simple retry", rate, percent(a.Threshold), r.Stage)
	case retry.AdviceStrategy:
		s := a.Strategies[r.Stage]
		return fmt.Sprintf("%s, above the %s threshold: strategy %d of %s's %s", rate, percent(a.Threshold), adv.Step, r.Stage, strings.Join(s, " -> "))
	}
	if r.Numerator == 0 {
		msg := fmt.Sprintf("no run among the last %d failed at %s: simple retry", r.Denominator, r.Stage)
		if r.Denominator == 1 {
			msg = fmt.Sprintf("the 1 recorded run did not fail at %s: simple retry", r.Stage)
		}
		if failed := failedStages(hist); !slices.Contains(failed, r.Stage) {
			// Most likely a stage name the records do not use: say which
			// they do, so a typo shows.
			msg += fmt.Sprintf(" (no recorded run ever failed at %s", r.Stage)
			if len(failed) > 0 {
				msg += "; stages that failed: " + strings.Join(failed, ", ")
			}
			msg += ")"
		}
		return msg
	}
	return fmt.Sprintf("%s, not above the %s threshold: simple retry", rate, percent(a.Threshold))
}

func failedStages(hist []episode.StageOutcome) []string {
	var out []string
	for _, h := range hist {
		if h.Failed && h.Stage != "" && !slices.Contains(out, h.Stage) {
			out = append(out, h.Stage)
		}
	}
	slices.Sort(out)
	return out
}

// percent is 0.2 as "20%" and 1/3 as "33.3%".
func percent(f float64) string {
	return strconv.FormatFloat(math.Round(f*1000)/10, 'f', -1, 64) + "%"
}

func defaultedKeys(c adaptive.Config) []string {
	out := []string{}
	for k, d := range c.Defaulted {
		if d {
			out = append(out, k)
		}
	}
	// The file's order: top-level keys, then stages by name.
	rank := func(k string) int {
		if i := slices.Index(adaptive.Keys, k); i >= 0 {
			return i
		}
		return len(adaptive.Keys)
	}
	slices.SortFunc(out, func(a, b string) int {
		if ra, rb := rank(a), rank(b); ra != rb {
			return ra - rb
		}
		return strings.Compare(a, b)
	})
	return out
}

func renderRecommendation(io *IO, r recommendation, format string) error {
	if format == "json" {
		b, err := render.MarshalJSON(r)
		if err != nil {
			return err
		}
		_, err = io.Out.Write(b)
		return err
	}
	for _, w := range r.Warnings {
		fmt.Fprintf(io.Err, "orchstat: warning: %s\n", w)
	}
	// The first line is the seed's prompt to the user (line 60).
	fmt.Fprintf(io.Out, "Recommended strategy: %s\n", r.Strategy)
	attempt := fmt.Sprintf("attempt %d", r.Attempt)
	if r.AttemptFrom == "history" {
		switch n := r.Attempt - 1; n {
		case 0:
			attempt += fmt.Sprintf(" (%s has no earlier failure at %s)", r.Item, r.Stage)
		case 1:
			attempt += fmt.Sprintf(" (%s failed at %s once before)", r.Item, r.Stage)
		default:
			attempt += fmt.Sprintf(" (%s failed at %s %d times before)", r.Item, r.Stage, n)
		}
	}
	fmt.Fprintf(io.Out, "  %s, %s: %s\n", r.Stage, attempt, r.Reason)
	settings := fmt.Sprintf("window %d runs (%d recorded), threshold %s, maxRetries %d; %s", r.Window, r.Runs, percent(r.Threshold), r.MaxRetries, r.Config)
	switch {
	case !slices.ContainsFunc(adaptive.Keys, func(k string) bool { return !slices.Contains(r.ConfigDefaults, k) }):
		settings += " (defaults)"
	case len(r.ConfigDefaults) > 0:
		settings += " (defaults for " + strings.Join(r.ConfigDefaults, ", ") + ")"
	}
	fmt.Fprintf(io.Out, "  %s\n", settings)
	if r.Scope != nil {
		fmt.Fprintf(io.Out, "  %s\n", render.ScopeText(r.Store, *r.Scope, 0))
	}
	return nil
}

package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/orchstat/orchstat/model/episode"
	"github.com/orchstat/orchstat/model/factory/spec"
	"github.com/orchstat/orchstat/model/reports"
	"github.com/orchstat/orchstat/model/systems"
	"github.com/orchstat/orchstat/reports/render"
	"github.com/orchstat/orchstat/rules/adaptive"
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
var recordSystems = systems.Names(func(s systems.System) bool { return s.Stages })

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

func recommendRun(ctx context.Context, o *recommendOptions) error {
	cfg, cwarns := adaptive.Load(o.Config)
	var warns []string
	for _, w := range cwarns {
		warns = append(warns, "retry configuration "+w.String())
	}
	var from source
	hist, earlier, recorded, hwarns, err := stageHistory(ctx, o, &from)
	if err != nil {
		return err
	}
	if err := cfg.CheckStage(o.Stage, recorded); err != nil {
		return usageError{err}
	}
	// The rule is the retry core's: Recommend decides, and says on what
	// numbers and by which case, which is all this reports.
	r := cfg.Recommend(o.Config, adaptive.Question{Stage: o.Stage, Item: o.Item, System: o.System, Attempt: o.Attempt, Earlier: earlier, History: hist})
	r.Warnings = append(append(r.Warnings, warns...), hwarns...)
	r.Store, r.Scope = from.store, from.scope
	return render.RenderRecommendation(o.g.io.Out, o.g.io.Err, r, o.Format == "json")
}

// source is where a recommendation's history came from: empty when no
// store was read.
type source struct {
	store string
	scope *reports.Scope
}

// stageHistory opens the store, ingesting first as report does, and reads the
// history, with its stages named as the report names them, and the stages the
// records know. What goes wrong with the history is a warning: orchestr8's
// adaptive retry spec wants failures in the retry module "caught and logged,
// not propagated" (line 170), and with no history the advice is a simple
// retry. Only the user's own mistakes (a PATH that does not exist, a bad
// flag) and an interrupt are errors. attempts is -1 when not counted.
func stageHistory(ctx context.Context, o *recommendOptions, from *source) (hist []episode.StageOutcome, attempts int, recorded, warns []string, err error) {
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
	from.store, from.scope = st.Path, &scope
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

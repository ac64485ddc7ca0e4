package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/spf13/cobra"

	"github.com/orchstat/orchstat/reports/render"
	"github.com/orchstat/orchstat/rules/alerting"
	"github.com/orchstat/orchstat/rules/promrules"
)

type rulesExportOptions struct {
	g        *globals
	Format   string
	Rules    string
	Output   string
	Interval time.Duration
	Windows  []string
	Tests    string
	From     []string
}

func newRulesExportCmd(g *globals, runF func(context.Context, *rulesExportOptions) error) *cobra.Command {
	o := &rulesExportOptions{g: g}
	cmd := &cobra.Command{
		Use:   "export [FILE]",
		Short: "Turn a rule file into Prometheus recording and alerting rules over orchstat's counters",
		Long: `Turn alerts.yaml (or FILE) into a Prometheus rule file over the counters
orchstat metrics exports (docs/prometheus.md).

Each ratio metric gets recording rules for each window: the ratio of its
counts' increases, summed over runners, fleet-wide and by the labels the
catalog splits it by, as

  sum by (…) (increase(NUM[w])) / (sum by (…) (increase(DEN[w])) > 0)

(the "> 0" because a ratio over nothing has no value, as in the report).
The windows are the rule file's own and those --window adds.

Each rule over a window of time becomes an alerting rule: its condition's
comparisons joined by "and", the minimum samples as
"and sum by (…) (increase(DEN[w])) >= N"; for, keep_firing_for, labels,
severity and annotations carry over (a for of N checks becomes N-1
--interval's; the annotations' numerator and denominator become queries).
A rule that cannot be expressed over counters (a window of the last N
runs, an sql: rule, a condition beyond comparisons) is listed with why in
the file's head and on stderr.

--tests DIR with --tests-from FILE (orchstat rule tests, rules test's
format) also writes each file's tests as a promtool test file in DIR,
over a copy of the export without annotations (DIR/orchstat.rules.yml):
each test's events ingested at each evaluation, as rules test does, and
the store's counters then as the input series. A test that Prometheus
cannot agree with (input that is not inline events, an event outside a
window by its time, a for: whose checks and time differ) is named, with
why, on stderr.

Check the output with promtool check rules, and the tests with promtool
test rules DIR/*.promtool.yml.`,
		Example: `  orchstat rules export --format prometheus > orchstat.rules.yml
  orchstat rules export --format prometheus --window 1h --window 7d -o /etc/prometheus/orchstat.rules.yml my-alerts.yaml
  promtool check rules orchstat.rules.yml
  orchstat rules export -o orchstat.rules.yml --tests promtool-tests --tests-from testdata/rules/provider_retry_rate_high.yaml
  promtool test rules promtool-tests/*.promtool.yml`,
		Args: usageArgs(cobra.MaximumNArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 1 {
				o.Rules = args[0]
			}
			if o.Format != "prometheus" {
				return usageError{fmt.Errorf("--format %q: prometheus is the one format", o.Format)}
			}
			if o.Interval <= 0 {
				return usageError{fmt.Errorf("--interval %s: must be positive", o.Interval)}
			}
			if (o.Tests == "") != (len(o.From) == 0) {
				return usageError{fmt.Errorf("--tests and --tests-from go together")}
			}
			if runF != nil {
				return runF(cmd.Context(), o)
			}
			return rulesExportRun(cmd.Context(), o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.Format, "format", "prometheus", "what to export to: prometheus")
	f.StringVarP(&o.Output, "output", "o", "", "write to `FILE` (atomically) rather than stdout")
	f.DurationVar(&o.Interval, "interval", time.Minute, "the rule groups' evaluation `INTERVAL`")
	f.StringVar(&o.Tests, "tests", "", "also translate the rule tests --tests-from names into promtool test files in `DIR`")
	f.StringArrayVar(&o.From, "tests-from", nil, "an orchstat rule test `FILE` to translate (repeatable; see --tests)")
	f.StringSliceVar(&o.Windows, "window", nil, "also record every ratio metric over this `WINDOW` (24h, 1h, 5m; repeatable)")
	return cmd
}

func rulesExportRun(ctx context.Context, o *rulesExportOptions) error {
	io := o.g.io
	f, err := loadRules(o.Rules)
	if err != nil {
		return err
	}
	opts := promrules.Options{Source: f.Path, Interval: o.Interval}
	for _, w := range o.Windows {
		d, err := alerting.ParseDuration(w)
		if err != nil || d <= 0 {
			return usageError{fmt.Errorf("--window %q: a duration such as 24h, 1h or 5m", w)}
		}
		opts.Windows = append(opts.Windows, d)
	}
	e, err := promrules.New(f, opts)
	if err != nil {
		return err
	}
	for _, s := range e.Skipped {
		fmt.Fprintf(io.Err, "orchstat rules export: %s not exported: %s\n", render.EscapeControls(s.Rule), s.Why)
	}
	var b bytes.Buffer
	if err := e.Write(&b); err != nil {
		return err
	}
	if o.Output == "" {
		if _, err := io.Out.Write(b.Bytes()); err != nil {
			return err
		}
	} else if err := render.WriteFileAtomic(o.Output, b.Bytes()); err != nil {
		return err
	}
	if o.Tests == "" {
		return nil
	}
	return writePromTests(ctx, io, e, o)
}

// writePromTests writes the export again for the tests, without its
// annotations (promtool compares an alert's annotations with the test's,
// and the tests state none), and the translated tests beside it.
func writePromTests(ctx context.Context, io *IO, e *promrules.Export, o *rulesExportOptions) error {
	bare := *e
	bare.Alerting = slices.Clone(e.Alerting)
	for i := range bare.Alerting {
		bare.Alerting[i].Annotations = nil
	}
	var b bytes.Buffer
	if err := bare.Write(&b); err != nil {
		return err
	}
	if err := os.MkdirAll(o.Tests, 0o755); err != nil {
		return err
	}
	rules := filepath.Join(o.Tests, "orchstat.rules.yml")
	if err := render.WriteFileAtomic(rules, b.Bytes()); err != nil {
		return err
	}
	return translateTests(ctx, io, e, rules, o.Tests, o.Interval, o.From)
}

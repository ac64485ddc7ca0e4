package main

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/spf13/cobra"

	"github.com/orchstat/orchstat/model/reports"
	"github.com/orchstat/orchstat/query"
	"github.com/orchstat/orchstat/reports/render"
)

type metricsOptions struct {
	g         *globals
	Textfile  string
	Runner    string
	TopModels int
	Format    string
}

// defaultTopModels bounds the model label: a fleet of agents can name
// hundreds of models, and each is a series per counter.
const defaultTopModels = 20

func newMetricsCmd(g *globals, runF func(context.Context, *metricsOptions) error) *cobra.Command {
	o := &metricsOptions{g: g}
	cmd := &cobra.Command{
		Use:   "metrics",
		Short: "Print the store's counts as Prometheus counters (OpenMetrics), or write them for node_exporter",
		Long: `Print, as monotonic counters, every count the report's metrics are made
of: each ratio's numerator and denominator, the counts, the calls, the
tokens by kind and the cost, labelled as alert rules can split them
(provider and model for provider requests, system for the other systems'
records, system, provider and model for agents' calls). The counters are
generated from the metric catalog (docs/metrics.md); their names are
listed in docs/prometheus.md.

A counter is the store's total, with no window: ingest only adds, so it
never goes backwards while the store lives. A store replaced by a new one
starts again from its own totals, which Prometheus reads as a counter
reset, as it does a restarted process; increase() and rate() count across
it. Counters count at ingest time, not at the time of the event.

Only the --top-models models with the most requests (or calls) keep their
own model label; the others are counted under model="other", and the
gauge orchstat_models_folded (and stderr) says how many.

--textfile DIR writes the same counters for node_exporter's textfile
collector, in the Prometheus text format it parses (0.0.4: OpenMetrics'
# UNIT and # EOF lines would make it read them untyped), to
DIR/orchstat-RUNNER.prom through a temporary file renamed over it, so the
collector never reads half a file and runners sharing DIR never clash.
Every sample then carries runner="RUNNER".

orchstat receive serves the same counters on /metrics.`,
		Example: `  orchstat metrics
  orchstat metrics --db runner1.duckdb --textfile /var/lib/prometheus/node-exporter --runner ci-1
  */5 * * * * orchstat ingest runs && orchstat metrics --textfile /var/lib/prometheus/node-exporter`,
		Args: usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := o.check(); err != nil {
				return err
			}
			if runF != nil {
				return runF(cmd.Context(), o)
			}
			return metricsRun(cmd.Context(), o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.Textfile, "textfile", "", "write the counters to `DIR`/orchstat-RUNNER.prom for node_exporter's textfile collector, not to stdout")
	f.StringVar(&o.Runner, "runner", "", "label every sample runner=`NAME` (default with --textfile: the host name)")
	f.IntVar(&o.TopModels, "top-models", defaultTopModels, "keep the `N` models with the most requests or calls; count the others as model=\"other\" (0: keep all)")
	f.StringVar(&o.Format, "format", "openmetrics", "stdout's format: openmetrics or text (Prometheus 0.0.4, as --textfile writes)")
	return cmd
}

var runnerName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*$`)

func (o *metricsOptions) check() error {
	if o.TopModels < 0 {
		return usageError{fmt.Errorf("--top-models %d: 0 (keep all) or more", o.TopModels)}
	}
	if o.Format != "openmetrics" && o.Format != "text" {
		return usageError{fmt.Errorf("--format %q: openmetrics or text", o.Format)}
	}
	if o.Textfile != "" && o.Runner == "" {
		h, err := os.Hostname()
		if err != nil {
			return usageError{fmt.Errorf("--textfile needs --runner: no host name to default to (%w)", err)}
		}
		o.Runner = h
	}
	if o.Runner != "" && !runnerName.MatchString(o.Runner) {
		return usageError{fmt.Errorf("--runner %q: letters, digits, '.', '_' and '-', starting with a letter or digit (it names a file)", o.Runner)}
	}
	return nil
}

func metricsRun(ctx context.Context, o *metricsOptions) error {
	io := o.g.io
	st, err := o.g.openExisting(ctx, true)
	if err != nil {
		return err
	}
	defer st.Close()
	e := render.OpenMetrics
	if o.Textfile != "" || o.Format == "text" {
		e = render.PromText
	}
	var b bytes.Buffer
	folded, err := writeCounters(ctx, &b, st, e, o.TopModels, o.Runner)
	if err != nil {
		return err
	}
	for _, f := range folded {
		fmt.Fprintf(io.Err, "orchstat metrics: %d %s models beyond the top %d counted as model=%q: %s\n",
			len(f.Models), f.Family, o.TopModels, reports.OtherModel, render.EscapeControls(strings.Join(f.Models, ", ")))
	}
	if o.Textfile == "" {
		_, err := io.Out.Write(b.Bytes())
		return err
	}
	return render.WriteFileAtomic(filepath.Join(o.Textfile, "orchstat-"+o.Runner+".prom"), b.Bytes())
}

// writeCounters writes st's counters in e, the models beyond top folded,
// every sample labelled runner when it is set; it returns what it folded.
func writeCounters(ctx context.Context, w *bytes.Buffer, st *query.Store, e render.Exposition, top int, runner string) ([]reports.Folded, error) {
	specs, err := reports.Counters()
	if err != nil {
		return nil, err
	}
	groups, err := st.Counters(ctx)
	if err != nil {
		return nil, err
	}
	groups, folded := reports.FoldModels(groups, top, reports.ModelRank)
	if runner != "" {
		for _, g := range groups {
			g.Labels["runner"] = runner
		}
	}
	return folded, render.Counters(w, e, specs, groups, folded)
}

// metricsHandler serves the store's counters for orchstat receive's
// /metrics: each scrape opens the store read-only on a snapshot (so it
// holds no lock an ingest waits for) and closes it. OpenMetrics when the
// scraper accepts it, as Prometheus does, else the text format 0.0.4.
func metricsHandler(g *globals, top int) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		st, err := g.openExisting(req.Context(), true)
		if err != nil {
			http.Error(w, "orchstat: "+err.Error(), http.StatusServiceUnavailable)
			return
		}
		defer st.Close()
		e := render.PromText
		if strings.Contains(req.Header.Get("Accept"), "application/openmetrics-text") {
			e = render.OpenMetrics
		}
		var b bytes.Buffer
		if _, err := writeCounters(req.Context(), &b, st, e, top, ""); err != nil {
			http.Error(w, "orchstat: "+err.Error(), http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", e.ContentType())
		w.Write(b.Bytes())
	})
}

package query_test

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/orchstat/orchstat/benchmarks/tracegen"
	"github.com/orchstat/orchstat/ingest"
	"github.com/orchstat/orchstat/model/reports"
	"github.com/orchstat/orchstat/query"
	"github.com/orchstat/orchstat/reports/reference"
)

// The SQL behind every report must agree exactly with METRICS.md. The
// reference package computes it independently in plain Go from the trace
// files; these tests compare the two on hand-made, real and generated data,
// under every kind of filter.

// dataset is a folder of runs and a store it was ingested into.
type dataset struct {
	name string
	dir  string
	db   string
}

// datasets are the oracle tests' data. They are generated and ingested
// once per test binary (sharedDatasets): the reference comparison and the
// episode comparison read the same stores, and neither writes to them.
func datasets(t *testing.T) []dataset {
	t.Helper()
	skipShort(t, "end-to-end: generates and ingests the oracle datasets (the reference comparison)")
	sets, err := sharedDatasets()
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(sets, func(d dataset) bool { return d.name == "external" }) {
		t.Log("../shared/testdata-external is absent: comparing on project data only")
	}
	return sets
}

// openDataset opens the store ds was ingested into.
func openDataset(t *testing.T, ds dataset) *query.Store {
	t.Helper()
	st, err := query.Open(context.Background(), ds.db, query.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

var sharedDatasets = sync.OnceValues(func() ([]dataset, error) {
	tmp, err := os.MkdirTemp("", "orchstat-oracle")
	if err != nil {
		return nil, err
	}
	query.AfterTests = append(query.AfterTests, func() { os.RemoveAll(tmp) })
	sets := []dataset{{name: "testdata", dir: "../testdata/runs"}}
	if m, _ := filepath.Glob("../../shared/testdata-external/orchestrator/runs/*/trace.jsonl"); len(m) > 0 {
		sets = append(sets, dataset{name: "external", dir: "../../shared/testdata-external/orchestrator/runs"})
	}
	exotic := filepath.Join(tmp, "exotic")
	if err := writeExoticRuns(exotic); err != nil {
		return nil, err
	}
	sets = append(sets, dataset{name: "exotic", dir: exotic})
	for i, cfg := range generatedConfigs() {
		dir := filepath.Join(tmp, fmt.Sprint("gen", i))
		if _, err := tracegen.Generate(dir, cfg); err != nil {
			return nil, err
		}
		sets = append(sets, dataset{name: fmt.Sprintf("generated-%d", i), dir: dir})
	}
	ctx := context.Background()
	for i := range sets {
		sets[i].db = filepath.Join(tmp, sets[i].name+".duckdb")
		st, err := query.Open(ctx, sets[i].db, query.Options{})
		if err != nil {
			return nil, err
		}
		_, err = ingest.Run(ctx, st, ingest.Options{Paths: []string{sets[i].dir}})
		if e := st.Close(); err == nil {
			err = e
		}
		if err != nil {
			return nil, fmt.Errorf("ingesting %s: %w", sets[i].dir, err)
		}
	}
	return sets, nil
})

func generatedConfigs() []tracegen.Config {
	base := tracegen.DefaultConfig()
	base.Runs, base.Seed, base.Days = 150, 11, 4
	base.Start = time.Date(2026, 10, 1, 0, 0, 0, 0, time.UTC)
	base.TornLineProb = 0.05
	stormy := base
	stormy.Seed, stormy.RetryProb, stormy.FatalProb, stormy.InterleaveProb = 12, 0.6, 0.1, 0.4
	stormy.VerifyFailProb, stormy.StartAtL3Prob, stormy.JudgeProb, stormy.SameApplyErrorProb = 0.9, 0.3, 0.6, 0.7
	return []tracegen.Config{base, stormy}
}

func tracesUnder(t *testing.T, dir string) []string {
	files, err := filepath.Glob(filepath.Join(dir, "*", "trace.jsonl"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no traces under %s: %v", dir, err)
	}
	sort.Strings(files)
	return files
}

func TestMetricsAgreeWithReference(t *testing.T) {
	ctx := context.Background()
	for _, ds := range datasets(t) {
		t.Run(ds.name, func(t *testing.T) {
			st := openDataset(t, ds)
			files := tracesUnder(t, ds.dir)
			all, err := reference.Compute(files, reference.Filter{})
			if err != nil {
				t.Fatal(err)
			}
			filters := []query.Filter{{}}
			// A window through the middle, one run, and each provider.
			var starts []time.Time
			var runs []string
			for day := range all.ByDay {
				d, _ := time.Parse("2006-01-02", day)
				starts = append(starts, d)
			}
			sort.Slice(starts, func(i, j int) bool { return starts[i].Before(starts[j]) })
			if len(starts) > 1 {
				since, until := starts[0].Add(6*time.Hour), starts[len(starts)-1]
				filters = append(filters, query.Filter{Since: &since}, query.Filter{Until: &until}, query.Filter{Since: &since, Until: &until})
			}
			for _, f := range files[:min(2, len(files))] {
				runs = append(runs, filepath.Base(filepath.Dir(f)))
			}
			filters = append(filters, query.Filter{Runs: runs})
			// Bounds finer than the microseconds events are kept at.
			sub := time.Date(2026, 1, 1, 0, 0, 0, 500, time.UTC)
			filters = append(filters, query.Filter{Since: &sub}, query.Filter{Until: &sub})
			seen := map[string]bool{}
			for _, p := range all.ByProvider {
				if !seen[p.Provider] && p.Provider != "" {
					seen[p.Provider] = true
					// In any case: the filter does not mind it.
					filters = append(filters, query.Filter{Provider: p.Provider}, query.Filter{Provider: strings.ToUpper(p.Provider)})
				}
			}
			for _, f := range filters {
				rf := reference.Filter{Runs: f.Runs, Provider: f.Provider}
				if f.Since != nil {
					rf.Since = *f.Since
				}
				if f.Until != nil {
					rf.Until = *f.Until
				}
				want, err := reference.Compute(files, rf)
				if err != nil {
					t.Fatal(err)
				}
				got, err := st.Report(ctx, f)
				if err != nil {
					t.Fatal(err)
				}
				name := fmt.Sprintf("filter %+v", rf)
				compareMetrics(t, name, got.Metrics, want.Metrics)
				if len(got.Breakdowns.ByDay) != len(want.ByDay) {
					t.Errorf("%s: %d days, want %d", name, len(got.Breakdowns.ByDay), len(want.ByDay))
				}
				for _, d := range got.Breakdowns.ByDay {
					compareMetrics(t, name+" day "+d.Day, d.Metrics, want.ByDay[d.Day])
				}
				compareProviders(t, name, got.Breakdowns.ByProvider, want.ByProvider)
				// A store without kept figures (an older orchstat's, read
				// as it is) computes them from the events: the same report.
				restore := query.SetFigures(st, false)
				fromEvents, err := st.Report(ctx, f)
				restore()
				if err != nil {
					t.Fatal(err)
				}
				if !reflect.DeepEqual(fromEvents, got) {
					t.Errorf("%s: the report from the events differs from the report from the kept figures", name)
				}
			}
		})
	}
}

func same(a, b *float64) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	return *a == *b || math.Abs(*a-*b) <= 1e-12*math.Max(math.Abs(*a), math.Abs(*b))
}

func show(p *float64) string {
	if p == nil {
		return "null"
	}
	return fmt.Sprint(*p)
}

func compareMetrics(t *testing.T, name string, got reports.Metrics, want map[string]reference.Metric) {
	t.Helper()
	for _, m := range reports.MetricNames {
		if reports.RecordMetric(m) || reports.CallMetric(m) {
			continue // other systems' records and agents' calls: the reference reads traces only
		}
		g, w := got[m], want[m]
		if !same(g.Value, w.Value) || !same(g.Numerator, w.Numerator) || !same(g.Denominator, w.Denominator) {
			t.Errorf("%s: %s = %s (%s/%s), reference %s (%s/%s)", name, m,
				show(g.Value), show(g.Numerator), show(g.Denominator), show(w.Value), show(w.Numerator), show(w.Denominator))
		}
	}
}

func compareProviders(t *testing.T, name string, got []reports.ProviderRow, want []reference.ProviderRow) {
	t.Helper()
	if len(got) != len(want) {
		t.Errorf("%s: %d provider rows, reference %d", name, len(got), len(want))
		return
	}
	for i := range got {
		g, w := got[i], want[i]
		gm, wm := "<nil>", "<nil>"
		if g.Model != nil {
			gm = *g.Model
		}
		if w.Model != nil {
			wm = *w.Model
		}
		if g.Provider != w.Provider || gm != wm || g.Requests != w.Requests || g.Retried != w.Retried || g.Failed != w.Failed || g.RetriesTotal != w.RetriesTotal {
			t.Errorf("%s: provider row %d = %+v (%s), reference %+v (%s)", name, i, g, gm, w, wm)
		}
	}
}

// writeExoticRuns writes values at the edges of the definitions: numbers out of
// float64 range, sub-microsecond and far-off timestamps, strings where
// numbers belong, duplicate keys.
func writeExoticRuns(dir string) error {
	lines := map[string][]string{
		"e1": {
			`{"type":"RunStarted","schemaVersion":1,"timestamp":"2026-01-01T00:00:00.0000001Z","runId":"e1","payload":{}}`,
			`{"type":"ProviderRequestStarted","schemaVersion":1,"timestamp":"2026-01-01T00:00:01Z","runId":"e1","payload":{"provider":"p","model":"m"}}`,
			`{"type":"ProviderRequestFinished","schemaVersion":1,"timestamp":"2026-01-01T00:00:02Z","runId":"e1","payload":{"provider":"p","retries":1e999,"success":true}}`,
			`{"type":"ProviderRequestFinished","schemaVersion":1,"timestamp":"2026-01-01T00:00:03Z","runId":"e1","payload":{"provider":"p","retries":"2","success":"false"}}`,
			`{"type":"ProviderRequestFinished","schemaVersion":1,"timestamp":"2026-01-01T00:00:04Z","runId":"e1","payload":{"provider":"p","retries":0,"retries":3,"success":false}}`,
			`{"type":"CandidateGenerated","schemaVersion":1,"timestamp":"2026-01-01T00:00:05Z","runId":"e1","payload":{"iteration":1e999,"valid":true}}`,
			`{"type":"CandidateGenerated","schemaVersion":1,"timestamp":"2026-01-01T00:00:06Z","runId":"e1","payload":{"valid":"true"}}`,
			`{"type":"CandidateGenerated","schemaVersion":1,"timestamp":"2026-01-01T00:00:07Z","runId":"e1","payload":{"iteration":-0,"valid":true}}`,
			`{"type":"CandidateGenerated","schemaVersion":1,"timestamp":"2026-01-01T00:00:08Z","runId":"e1","payload":{"iteration":0,"valid":false}}`,
			`{"type":"DiagnosisStarted","schemaVersion":1,"timestamp":"2026-01-01T00:00:09Z","runId":"e1","payload":{"iteration":"0"}}`,
			`{"type":"RepairAttempted","schemaVersion":1,"timestamp":"2026-01-01T00:00:10Z","runId":"e1","payload":{"iteration":"4"}}`,
			`{"type":"RunEscalated","schemaVersion":1,"timestamp":"2026-01-01T00:00:11Z","runId":"e1","payload":{"from":"L2 ","to":"L3"}}`,
		},
		"e2": {
			`{"type":"RunStarted","schemaVersion":1,"timestamp":"0000-01-01T00:30:00+01:00","runId":"e2","payload":{}}`,
			`{"type":"IterationStarted","schemaVersion":1,"timestamp":"2026-01-01T00:00:00.0000009Z","runId":"e2","payload":{"iteration":1}}`,
			`{"type":"RepairAttempted","schemaVersion":1,"timestamp":"2026-01-01T00:00:01Z","runId":"e2","payload":{"iteration":2.5}}`,
			`{"type":"ProviderRequestFinished","schemaVersion":1,"timestamp":"2026-01-01T00:00:02Z","runId":"e2","payload":{"provider":"p","retries":1.7e308}}`,
			`{"type":"ProviderRequestFinished","schemaVersion":1,"timestamp":"2026-01-01T00:00:03Z","runId":"e2","payload":{"provider":"p","retries":1.7e308}}`,
		},
	}
	for run, ls := range lines {
		p := filepath.Join(dir, run, "trace.jsonl")
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(strings.Join(ls, "\n")+"\n"), 0o644); err != nil {
			return err
		}
	}
	return nil
}

package query_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/orchstat/orchstat/model/reports"
	"github.com/orchstat/orchstat/query"
	"github.com/orchstat/orchstat/rules/alerting"
	"github.com/orchstat/orchstat/rules/check"
)

// writeFiles writes name -> content under dir and returns dir.
func writeFiles(t *testing.T, dir string, files map[string]string) string {
	t.Helper()
	for name, content := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func ev(typ, run, ts, payload string) string {
	return `{"type":"` + typ + `","schemaVersion":1,"timestamp":"` + ts + `","runId":"` + run + `","payload":` + payload + "}\n"
}

func value(t *testing.T, m reports.Metrics, name string) float64 {
	t.Helper()
	v, ok := m[name]
	if !ok || v.Value == nil {
		t.Fatalf("%s has no value: %+v", name, v)
	}
	return *v.Value
}

func fraction(t *testing.T, m reports.Metrics, name string) [2]float64 {
	t.Helper()
	v := m[name]
	if v.Numerator == nil || v.Denominator == nil {
		t.Fatalf("%s is not a ratio: %+v", name, v)
	}
	return [2]float64{*v.Numerator, *v.Denominator}
}

// Run a asked anthropic twice (one retried) and openai once (failed); run
// b asked openai only. A provider filter selects run a, but its
// request-level figures are anthropic's requests alone.
func TestProviderFilterCountsThatProvidersRequests(t *testing.T) {
	skipShort(t, "end-to-end: filters the generated oracle datasets")
	ctx := context.Background()
	dir := writeFiles(t, t.TempDir(), map[string]string{
		"a/trace.jsonl": ev("RunStarted", "a", "2026-03-01T10:00:00Z", `{}`) +
			ev("ProviderRequestStarted", "a", "2026-03-01T10:00:01Z", `{"provider":"anthropic","model":"claude"}`) +
			ev("ProviderRequestFinished", "a", "2026-03-01T10:00:02Z", `{"provider":"anthropic","success":true,"retries":2}`) +
			ev("ProviderRequestFinished", "a", "2026-03-01T10:00:03Z", `{"provider":"anthropic","success":true,"retries":0}`) +
			ev("ProviderRequestFinished", "a", "2026-03-01T10:00:04Z", `{"provider":"openai","success":false,"retries":1}`) +
			ev("RunFinished", "a", "2026-03-01T10:00:05Z", `{"status":"failure"}`),
		"b/trace.jsonl": ev("RunStarted", "b", "2026-03-01T11:00:00Z", `{}`) +
			ev("ProviderRequestFinished", "b", "2026-03-01T11:00:01Z", `{"provider":"openai","success":true,"retries":0}`) +
			ev("RunFinished", "b", "2026-03-01T11:00:02Z", `{"status":"success"}`),
	})
	st := openIngested(t, dir)
	type want struct {
		runs, failedRuns, requests, retriesTotal float64
		retry, failure                           [2]float64
		providers                                []string
	}
	tests := []struct {
		provider string
		want     want
	}{
		{"", want{2, 1, 4, 3, [2]float64{2, 4}, [2]float64{1, 4}, []string{"anthropic", "openai"}}},
		{"anthropic", want{1, 1, 2, 2, [2]float64{1, 2}, [2]float64{0, 2}, []string{"anthropic"}}},
		// Names match in any case.
		{"ANTHROPIC", want{1, 1, 2, 2, [2]float64{1, 2}, [2]float64{0, 2}, []string{"anthropic"}}},
		{"OpenAI", want{2, 1, 2, 1, [2]float64{1, 2}, [2]float64{1, 2}, []string{"openai"}}},
	}
	for _, tt := range tests {
		t.Run("provider="+tt.provider, func(t *testing.T) {
			r, err := st.Report(ctx, query.Filter{Provider: tt.provider})
			if err != nil {
				t.Fatal(err)
			}
			m := r.Metrics
			got := want{value(t, m, "runs"), value(t, m, "failed_runs"), value(t, m, "provider_requests"),
				value(t, m, "provider_retries_total"), fraction(t, m, "provider_retry_rate"), fraction(t, m, "provider_failure_rate"), nil}
			var requests int64
			for _, p := range r.Breakdowns.ByProvider {
				got.providers = append(got.providers, p.Provider)
				requests += p.Requests
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got %+v, want %+v", got, tt.want)
			}
			if float64(requests) != got.requests {
				t.Errorf("by provider: %d requests, metrics %v", requests, got.requests)
			}
			// The days add up to the whole.
			var dayRequests float64
			for _, d := range r.Breakdowns.ByDay {
				dayRequests += value(t, d.Metrics, "provider_requests")
			}
			if dayRequests != got.requests {
				t.Errorf("by day: %v requests, metrics %v", dayRequests, got.requests)
			}
		})
	}
}

// recordFixture is a factory whose write-factory summaries record no time
// (two runs), one patch-factory summary that does, and a claudestrator
// queue with a finished, a started, a pending and a blocked task. Every
// file's modification time is set to mtime: a copy or clone made then.
func recordFixture(t *testing.T, mtime time.Time) string {
	summary := func(id, verdict string, extra string) string {
		return `{"run_id":"` + id + `","work_order_id":"WO-` + id + `","verdict":"` + verdict + `",` + extra +
			`"attempts":[{"attempt_index":1,"write_ok":true,"verify":[],"acceptance":[],"failure_brief":null}]}`
	}
	task := func(id, status string) string {
		return "### " + id + ": Task " + id + "\n**Priority:** high\n**Status:** " + status + "\n**Description:** work.\n\n"
	}
	dir := writeFiles(t, t.TempDir(), map[string]string{
		"fac/aaaa000000000001/run_summary.json": summary("aaaa000000000001", "PASS", `"total_attempts":1,`),
		"fac/bbbb000000000002/run_summary.json": summary("bbbb000000000002", "FAIL", `"total_attempts":1,`),
		"fac/cccc00000003/run_summary.json": summary("cccc00000003", "PASS",
			`"started_utc":"2026-03-01T10:00:00Z","ended_utc":"2026-03-01T10:05:00Z","max_attempts":2,`),
		"proj/.orchestrator/task_queue.md": "# Task Queue\n\n## BUILD Tasks\n\n" +
			task("T-1", "completed") + task("T-2", "in_progress") + task("T-3", "pending") + task("T-4", "blocked"),
	})
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			err = os.Chtimes(p, mtime, mtime)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

// Runs whose record holds no time are undated: no time filter or alert
// window selects them, whatever their files' modification times, and the
// overview counts them. Queued tasks are not runs at all.
func TestUndatedRunsAndQueuedTasks(t *testing.T) {
	skipShort(t, "end-to-end: ingests a whole record fixture and filters it")
	ctx := context.Background()
	mtime := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	st := openIngested(t, recordFixture(t, mtime))
	at := func(s string) *time.Time {
		v, err := time.Parse(time.RFC3339, s)
		if err != nil {
			t.Fatal(err)
		}
		return &v
	}
	type want struct {
		recordRuns      float64
		systems         map[string]int64
		undated, queued int64
	}
	// aaaa, bbbb and the started T-2 have no time; cccc started at 10:00.
	tests := []struct {
		name string
		f    query.Filter
		want want
	}{
		{"no time filter", query.Filter{}, want{4, map[string]int64{"claudestrator": 1, "factory": 3}, 3, 2}},
		// Before the files' modification time, after cccc's start.
		{"since", query.Filter{Since: at("2026-03-01T09:00:00Z")}, want{1, map[string]int64{"factory": 1}, 3, 2}},
		{"since the copy", query.Filter{Since: at("2026-03-01T11:00:00Z")}, want{0, map[string]int64{}, 3, 2}},
		{"until after the copy", query.Filter{Until: at("2026-03-02T00:00:00Z")}, want{1, map[string]int64{"factory": 1}, 3, 2}},
		{"runs", query.Filter{Runs: []string{"aaaa000000000001", "proj/T-3"}}, want{1, map[string]int64{"factory": 1}, 1, 1}},
		{"provider", query.Filter{Provider: "openai"}, want{0, map[string]int64{}, 0, 0}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := st.Report(ctx, tt.f)
			if err != nil {
				t.Fatal(err)
			}
			got := want{value(t, r.Metrics, "record_runs"), map[string]int64{}, r.Overview.Undated, r.Overview.QueuedTasks}
			for _, s := range r.Systems.BySystem {
				got.systems[s.System] = s.Runs
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got %+v, want %+v", got, tt.want)
			}
		})
	}

	// An alert rule's time window holds the runs that started in it: the
	// files' modification time is no start.
	s := check.NewSampler(query.NewCheckStore(st), mtime.Add(time.Hour))
	day := alerting.Window{Duration: 24 * time.Hour}
	samples, err := s.Samples(ctx, &alerting.Rule{Name: "records", Metric: "record_runs", Window: day})
	if err != nil {
		t.Fatal(err)
	}
	if len(samples) != 1 || samples[0].Value == nil || *samples[0].Value != 1 {
		t.Errorf("24h window: samples %+v, want the one dated run", samples)
	}
	failures := func(w alerting.Window) map[string]string {
		bySystem, err := s.Samples(ctx, &alerting.Rule{Name: "by system", Metric: "record_failure_rate", Window: w, By: []string{"system"}})
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]string{}
		for _, b := range bySystem {
			out[b.Labels["system"]] = fmt.Sprintf("%v/%v", *b.Numerator, *b.Denominator)
		}
		return out
	}
	if got, want := failures(day), map[string]string{"factory": "0/1"}; !reflect.DeepEqual(got, want) {
		t.Errorf("24h window by system: %v, want %v", got, want)
	}
	// The last run of each system: the dated cccc (passed) before the
	// undated bbbb (failed); claudestrator's only run is the undated T-2,
	// and its queued tasks are no runs.
	if got, want := failures(alerting.Window{Runs: 1}), map[string]string{"factory": "0/1", "claudestrator": "0/0"}; !reflect.DeepEqual(got, want) {
		t.Errorf("last run by system: %v, want %v", got, want)
	}
	if got, want := failures(alerting.Window{Runs: 10}), map[string]string{"factory": "1/3", "claudestrator": "0/0"}; !reflect.DeepEqual(got, want) {
		t.Errorf("last 10 runs by system: %v, want %v", got, want)
	}
}

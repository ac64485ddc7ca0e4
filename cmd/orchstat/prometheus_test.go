package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/orchstat/orchstat/benchmarks/tracegen"
	"github.com/orchstat/orchstat/model/reports"
)

// promBinary finds one of Prometheus's programs (prometheus, promtool,
// prometheus-node-exporter) on PATH. Without it the test skips, unless
// ORCHSTAT_REQUIRE_PROMETHEUS is set (.ci/run sets it), when it fails.
func promBinary(t *testing.T, name string) string {
	t.Helper()
	if p, err := exec.LookPath(name); err == nil {
		return p
	}
	if os.Getenv("ORCHSTAT_REQUIRE_PROMETHEUS") != "" {
		t.Fatalf("ORCHSTAT_REQUIRE_PROMETHEUS is set, but %s is not on PATH (apt-get install prometheus prometheus-node-exporter)", name)
	}
	t.Skipf("%s not on PATH (apt-get install prometheus prometheus-node-exporter); .ci/run installs it", name)
	return ""
}

// promtool runs promtool with args (and stdin), failing the test with its
// output unless it exits 0.
func promtool(t *testing.T, stdin string, args ...string) string {
	t.Helper()
	cmd := exec.Command(promBinary(t, "promtool"), args...)
	cmd.Stdin = strings.NewReader(stdin)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("promtool %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// TestMetricsPromtool holds orchstat metrics' text (as --textfile writes
// it) to promtool check metrics, Prometheus's own parser and linter, and
// rules export's output to promtool check rules.
func TestMetricsPromtool(t *testing.T) {
	endToEnd(t, "checks metrics and rules export with promtool")
	promBinary(t, "promtool")
	dir := t.TempDir()
	db := filepath.Join(dir, "s.duckdb")
	if code, _, stderr := runCLI(t, "", "--db", db, "ingest", "--quiet", abs(t, "../../testdata/runs"),
		abs(t, "../../testdata/agents"), abs(t, "../../testdata/factory")); code != 0 && code != 1 {
		t.Fatalf("ingest: exit %d\n%s", code, stderr)
	}
	code, text, stderr := runCLI(t, "", "--db", db, "metrics", "--format", "text")
	if code != 0 {
		t.Fatalf("metrics: exit %d\n%s", code, stderr)
	}
	promtool(t, text, "check", "metrics")

	// receive's /metrics: the same counters, OpenMetrics when asked for.
	h := metricsHandler(&globals{io: &IO{In: strings.NewReader(""), Out: io.Discard, Err: io.Discard, Now: time.Now}, db: db}, defaultTopModels)
	for _, c := range []struct{ accept, ctype, last string }{
		{"", "text/plain; version=0.0.4", "orchstat_models_folded{family=\"call\"} 0\n"},
		{"application/openmetrics-text; version=1.0.0,text/plain;q=0.5", "application/openmetrics-text", "# EOF\n"},
	} {
		req := httptest.NewRequest("GET", "/metrics", nil)
		req.Header.Set("Accept", c.accept)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		body := rec.Body.String()
		if rec.Code != 200 || !strings.HasPrefix(rec.Header().Get("Content-Type"), c.ctype) || !strings.HasSuffix(body, c.last) {
			t.Fatalf("GET /metrics (Accept %q): %d %s, ending %q", c.accept, rec.Code, rec.Header().Get("Content-Type"), body[max(0, len(body)-80):])
		}
		if c.accept == "" {
			if body != text {
				t.Errorf("/metrics differs from orchstat metrics --format text:\n%s", lineDiff(text, body))
			}
			promtool(t, body, "check", "metrics")
		}
	}
	// orchstat's own rule tests, as promtool's, pass under promtool.
	tests := filepath.Join(dir, "promtool")
	args := []string{"rules", "export", "-o", filepath.Join(dir, "r.yml"), "--tests", tests}
	ruleTests, _ := filepath.Glob(abs(t, "../../testdata/rules/*.yaml"))
	for _, f := range ruleTests {
		args = append(args, "--tests-from", f)
	}
	if code, _, stderr := runCLI(t, "", args...); code != 0 {
		t.Fatalf("rules export --tests: exit %d\n%s", code, stderr)
	} else if !strings.Contains(stderr, "out of evaluation 1's window") {
		t.Errorf("rules export --tests did not say why the window test is not translated:\n%s", stderr)
	}
	generated, _ := filepath.Glob(filepath.Join(tests, "*.promtool.yml"))
	firing := 0
	for _, g := range generated {
		b, _ := os.ReadFile(g)
		firing += strings.Count(string(b), "exp_labels:")
	}
	if len(generated) < 6 || firing < 6 {
		t.Fatalf("%d promtool test files with %d firing alerts expected; want at least 6 of each", len(generated), firing)
	}
	promtool(t, "", append([]string{"test", "rules"}, generated...)...)

	for _, args := range [][]string{nil, {"--window", "1h", "--interval", "30s"}} {
		out := filepath.Join(dir, "rules.yml")
		if code, _, stderr := runCLI(t, "", append([]string{"rules", "export", "-o", out}, args...)...); code != 0 {
			t.Fatalf("rules export %v: exit %d\n%s", args, code, stderr)
		}
		promtool(t, "", "check", "rules", out)
	}
}

// TestPrometheusFleet is the fleet's path end to end, against real
// servers: three runners ingest their runs and write their counters into
// one node_exporter's textfile folder; a real Prometheus scrapes it each
// second and evaluates the exported rules each second. The runners then
// ingest more runs and write again, and each exported fleet-wide
// recording rule's value over the window equals `orchstat report --lake`
// over those later runs; an exported alert fires in Prometheus and
// reaches Alertmanager.
//
// Why the values are exact, though increase() extrapolates: all series
// come from one target, so every sample of every series has the same
// timestamps, and each counter already counted (the earlier runs, twice
// the later ones) when first scraped, so each increase is extrapolated by
// the same factor, which cancels in a ratio of sums.
//
// Prometheus and node_exporter are started here, on free loopback ports
// with a fresh TSDB in a temporary folder, rather than shared from .ci/run
// as Alertmanager is: exactness needs a TSDB that holds no earlier series
// and the test's own rule file and textfile folder. Alertmanager is
// .ci/run's (ORCHSTAT_ALERTMANAGER_URL) or started here.
func TestPrometheusFleet(t *testing.T) {
	endToEnd(t, "runs three runners against a real Prometheus and node_exporter")
	prom, nodeExp := promBinary(t, "prometheus"), promBinary(t, "prometheus-node-exporter")
	am := alertmanagerForTest(t)
	dir := t.TempDir()
	textfiles := filepath.Join(dir, "textfiles")
	if err := os.MkdirAll(textfiles, 0o755); err != nil {
		t.Fatal(err)
	}

	// Three runners; each gets every third generated run, its first two
	// thirds at once and the rest later. Each runner also keeps a store
	// of the later runs alone, for the lake the report reads.
	cfg := tracegen.DefaultConfig()
	cfg.Runs, cfg.Days = 240, 3
	cfg.RetryProb, cfg.ExhaustProb, cfg.FatalProb = 0.3, 0.5, 0.05
	type runner struct{ name, store, later, early, more string }
	var runners []runner
	for r := range 3 {
		ru := runner{name: fmt.Sprintf("runner-%d", r+1), store: filepath.Join(dir, fmt.Sprintf("r%d.duckdb", r)),
			later: filepath.Join(dir, fmt.Sprintf("r%d-later.duckdb", r)),
			early: filepath.Join(dir, fmt.Sprintf("r%d", r), "early"), more: filepath.Join(dir, fmt.Sprintf("r%d", r), "more")}
		for i := r; i < cfg.Runs; i += 3 {
			run := tracegen.BuildRun(cfg, i)
			if _, err := tracegen.WriteRun(ru.early, run); err != nil {
				t.Fatal(err)
			}
			if i%2 == 0 {
				// The later runs are again every other earlier one, under
				// a new id: so whatever a later run counts, the earlier
				// ones counted too (see samplesOf below).
				again := run.ID + "-again"
				for j := range run.Files {
					run.Files[j].Data = bytes.ReplaceAll(run.Files[j].Data, []byte(run.ID), []byte(again))
				}
				run.ID = again
				if _, err := tracegen.WriteRun(ru.more, run); err != nil {
					t.Fatal(err)
				}
			}
		}
		runners = append(runners, ru)
	}
	ingestAndWrite := func(ru runner, db string, runs ...string) {
		t.Helper()
		if code, _, stderr := runCLI(t, "", append([]string{"--db", db, "ingest", "--quiet"}, runs...)...); code != 0 && code != 1 {
			t.Fatalf("%s: ingest: exit %d\n%s", ru.name, code, stderr)
		}
		if db != ru.store {
			return
		}
		if code, _, stderr := runCLI(t, "", "--db", db, "metrics", "--textfile", textfiles, "--runner", ru.name); code != 0 {
			t.Fatalf("%s: metrics: exit %d\n%s", ru.name, code, stderr)
		}
	}
	earlySamples := map[string]string{}
	for _, ru := range runners {
		ingestAndWrite(ru, ru.store, ru.early)
		earlySamples[ru.name] = textfileOf(t, textfiles, ru.name)
	}

	// The rules: the built-in file's, and one rule that fires at once.
	name := fmt.Sprintf("orchstat_prom_it_%d", time.Now().UnixNano())
	window := "10m"
	alerts := filepath.Join(dir, "alerts.yaml")
	writeFile(t, alerts, fmt.Sprintf(`rules:
  - name: %s
    metric: provider_retry_rate
    window: %s
    threshold: 0.01
    condition: value > threshold && denominator >= 20
    for: 2
    severity: critical
    labels: {team: fleet}
    annotations:
      summary: "retry rate {{ .Value }} ({{ .Numerator }}/{{ .Denominator }})"
`, name, window))
	ruleFile := filepath.Join(dir, "orchstat.rules.yml")
	if code, _, stderr := runCLI(t, "", "rules", "export", "--format", "prometheus", "--interval", "1s", "-o", ruleFile, alerts); code != 0 {
		t.Fatalf("rules export: exit %d\n%s", code, stderr)
	}
	promtool(t, "", "check", "rules", ruleFile)

	nodeAddr := startServer(t, dir, "node_exporter", func(addr string) []string {
		return []string{nodeExp, "--web.listen-address=" + addr, "--collector.disable-defaults",
			"--collector.textfile", "--collector.textfile.directory=" + textfiles}
	}, "/metrics")
	amURL, _ := url.Parse(am)
	writeFile(t, filepath.Join(dir, "prometheus.yml"), fmt.Sprintf(`global:
  scrape_interval: 1s
  evaluation_interval: 1s
rule_files: [%q]
alerting:
  alertmanagers:
    - static_configs: [{targets: [%q]}]
scrape_configs:
  - job_name: orchstat
    static_configs: [{targets: [%q]}]
`, ruleFile, amURL.Host, nodeAddr))
	promAddr := startServer(t, dir, "prometheus", func(addr string) []string {
		return []string{prom, "--config.file=" + filepath.Join(dir, "prometheus.yml"),
			"--storage.tsdb.path=" + filepath.Join(dir, "tsdb"), "--web.listen-address=" + addr}
	}, "/-/ready")
	api := "http://" + promAddr

	// Five scrapes of the earlier counts, then the later runs.
	earlyRuns := promValue(t, api, "sum(orchstat_runs_total)")
	waitProm(t, api, fmt.Sprintf("min(count_over_time(orchstat_runs_total[%s])) >= 5", window), "five scrapes of every runner")
	for _, ru := range runners {
		ingestAndWrite(ru, ru.store, ru.more)
		ingestAndWrite(ru, ru.later, ru.more)
	}
	// The exactness argued above holds when every series that grows had
	// counted something before: one that starts at 0 (or appears) would
	// be extrapolated apart.
	for _, ru := range runners {
		early, later := samplesOf(t, ru.name, earlySamples[ru.name]), samplesOf(t, ru.name, textfileOf(t, textfiles, ru.name))
		for k, v := range later {
			if v > early[k] && early[k] <= 0 {
				t.Fatalf("%s: %s counted 0 from the earlier runs and %v from all: the test's runs must give every series some count early", ru.name, k, v)
			}
		}
	}
	waitProm(t, api, fmt.Sprintf("sum(orchstat_runs_total) == %d", cfg.Runs+cfg.Runs/2), "the later runs' counts")
	// Five more scrapes and evaluations after the last change.
	time.Sleep(6 * time.Second)
	if earlyRuns != float64(cfg.Runs) {
		t.Fatalf("the earlier scrapes counted %v runs of %d", earlyRuns, cfg.Runs)
	}

	lk := filepath.Join(dir, "lake")
	for _, ru := range runners {
		if code, out, stderr := runCLI(t, "", "--db", ru.later, "export", "--no-ingest", "--lake", lk, "--runner", ru.name); code != 0 {
			t.Fatalf("export %s: exit %d\n%s%s", ru.name, code, out, stderr)
		}
	}
	report := lakeReportJSONCmd(t, "report", "--lake", lk)
	metrics := report["metrics"].(map[string]any)
	compared := 0
	for _, s := range reports.Catalog {
		if !s.Kind.Ratio() {
			continue
		}
		got, ok := promSample(t, api, "fleet:orchstat_"+s.Name+":ratio"+window)
		want, _ := metrics[s.Name].(map[string]any)["value"].(float64)
		has := metrics[s.Name].(map[string]any)["value"] != nil
		switch {
		case ok != has:
			t.Errorf("%s: Prometheus has a value: %v (%v); report --lake has one: %v (%v)", s.Name, ok, got, has, want)
		case ok && math.Abs(got-want) > 1e-9*math.Max(1, math.Abs(want)):
			t.Errorf("%s: Prometheus's recording rule %v, report --lake %v", s.Name, got, want)
		case ok:
			compared++
			t.Logf("%s: %v in both", s.Name, got)
		}
	}
	// And split by provider and model, as the report's breakdown is.
	rows := report["breakdowns"].(map[string]any)["by_provider"].([]any)
	if len(rows) < 2 {
		t.Errorf("the report has %d provider and model rows; the generated runs should give several", len(rows))
	}
	for _, c := range []struct{ metric, key string }{{"provider_retry_rate", "retry_rate"}, {"provider_failure_rate", "failure_rate"}} {
		got := promVector(t, api, "provider_model:orchstat_"+c.metric+":ratio"+window)
		if len(got) != len(rows) {
			t.Errorf("%s by provider and model: Prometheus has %d series, the report %d rows", c.metric, len(got), len(rows))
		}
		for _, r := range rows {
			row := r.(map[string]any)
			key := fmt.Sprintf("model=%v,provider=%v", row["model"], row["provider"])
			want := row[c.key].(map[string]any)["value"].(float64)
			if v, ok := got[key]; !ok || math.Abs(v-want) > 1e-9*math.Max(1, math.Abs(want)) {
				t.Errorf("%s {%s}: Prometheus %v (present: %v), report --lake %v", c.metric, key, v, ok, want)
			}
		}
		compared += len(rows)
	}
	if compared < 6 {
		t.Errorf("only %d ratio metrics had values to compare; the generated runs should give the trace metrics' eight", compared)
	}

	waitProm(t, api, fmt.Sprintf(`ALERTS{alertname=%q,alertstate="firing"}`, name), "the exported alert to fire")
	got := waitForAlerts(t, am, name, "the alert Prometheus sent", func(as []amAlert) bool { return len(as) == 1 })[0]
	for k, v := range map[string]string{"alertname": name, "severity": "critical", "team": "fleet"} {
		if got.Labels[k] != v {
			t.Errorf("Alertmanager's alert: label %s = %q, want %q (all: %v)", k, got.Labels[k], v, got.Labels)
		}
	}
	if s := got.Annotations["summary"]; !strings.HasPrefix(s, "retry rate ") || strings.Contains(s, "error") {
		t.Errorf("Alertmanager's alert: summary %q, want the retry rate with its counts", s)
	}
}

func textfileOf(t *testing.T, dir, runner string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "orchstat-"+runner+".prom"))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// samplesOf reads a textfile's counter samples by name and labels.
func samplesOf(t *testing.T, runner, text string) map[string]float64 {
	t.Helper()
	out := map[string]float64{}
	for _, line := range strings.Split(text, "\n") {
		if !strings.HasPrefix(line, "orchstat_") || !strings.Contains(line, "_total") {
			continue
		}
		i := strings.LastIndex(line, " ")
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			t.Fatalf("%s's textfile: %q: %v", runner, line, err)
		}
		out[line[:i]] = v
	}
	return out
}

func writeFile(t *testing.T, path, text string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

// startServer starts a server on a free loopback port, its log in dir,
// waits until GET ready answers 200, and stops it when the test ends.
func startServer(t *testing.T, dir, name string, argv func(addr string) []string, ready string) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	logPath := filepath.Join(dir, name+".log")
	logFile, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute) // a backstop
	args := argv(addr)
	cmd := exec.CommandContext(ctx, args[0], args[1:]...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		cancel()
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		cmd.Process.Kill()
		<-exited
		cancel()
		logFile.Close()
	})
	client := &http.Client{Timeout: 2 * time.Second}
	deadline := time.Now().Add(30 * time.Second)
	for {
		if _, err := httpGet(client, "http://"+addr+ready); err == nil {
			return addr
		}
		select {
		case <-exited:
			log, _ := os.ReadFile(logPath)
			t.Fatalf("%s exited before it was ready:\n%s", name, log)
		default:
		}
		if time.Now().After(deadline) {
			log, _ := os.ReadFile(logPath)
			t.Fatalf("%s not ready within 30 s:\n%s", name, log)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// promQuery runs an instant query and returns its vector's samples' values.
func promQuery(t *testing.T, api, q string) []float64 {
	t.Helper()
	body, err := httpGet(&http.Client{Timeout: 5 * time.Second}, api+"/api/v1/query?"+url.Values{"query": {q}}.Encode())
	if err != nil {
		t.Fatalf("query %s: %v", q, err)
	}
	var r struct {
		Status string `json:"status"`
		Data   struct {
			Result []struct {
				Value [2]any `json:"value"`
			} `json:"result"`
		} `json:"data"`
	}
	if err := json.Unmarshal(body, &r); err != nil || r.Status != "success" {
		t.Fatalf("query %s: %v: %s", q, err, body)
	}
	var out []float64
	for _, s := range r.Data.Result {
		v, err := strconv.ParseFloat(fmt.Sprint(s.Value[1]), 64)
		if err != nil {
			t.Fatalf("query %s: value %v", q, s.Value[1])
		}
		out = append(out, v)
	}
	return out
}

// promVector runs an instant query and returns its samples by their
// labels (name=value, sorted, joined by commas).
func promVector(t *testing.T, api, q string) map[string]float64 {
	t.Helper()
	body, err := httpGet(&http.Client{Timeout: 5 * time.Second}, api+"/api/v1/query?"+url.Values{"query": {q}}.Encode())
	if err != nil {
		t.Fatalf("query %s: %v", q, err)
	}
	var r struct {
		Data struct {
			Result []struct {
				Metric map[string]string `json:"metric"`
				Value  [2]any            `json:"value"`
			} `json:"result"`
		} `json:"data"`
	}
	if err := json.Unmarshal(body, &r); err != nil {
		t.Fatalf("query %s: %v: %s", q, err, body)
	}
	out := map[string]float64{}
	for _, s := range r.Data.Result {
		var parts []string
		for k, v := range s.Metric {
			if k != "__name__" {
				parts = append(parts, k+"="+v)
			}
		}
		slices.Sort(parts)
		v, err := strconv.ParseFloat(fmt.Sprint(s.Value[1]), 64)
		if err != nil {
			t.Fatalf("query %s: value %v", q, s.Value[1])
		}
		out[strings.Join(parts, ",")] = v
	}
	return out
}

// promSample is the one sample q returns, if it returns one.
func promSample(t *testing.T, api, q string) (float64, bool) {
	t.Helper()
	vs := promQuery(t, api, q)
	if len(vs) > 1 {
		t.Fatalf("query %s: %d samples, want at most 1", q, len(vs))
	}
	if len(vs) == 0 {
		return 0, false
	}
	return vs[0], true
}

// promValue waits for q to return a sample and returns it.
func promValue(t *testing.T, api, q string) float64 {
	t.Helper()
	waitProm(t, api, q, q)
	v, _ := promSample(t, api, q)
	return v
}

// waitProm polls q for up to 60 s until it returns a sample.
func waitProm(t *testing.T, api, q, what string) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for len(promQuery(t, api, q)) == 0 {
		if time.Now().After(deadline) {
			t.Fatalf("waited 60 s for %s (%s)", what, q)
		}
		time.Sleep(250 * time.Millisecond)
	}
}

package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/orchstat/orchstat/ingest/fakeprovider"
	"github.com/orchstat/orchstat/ingest/receiver"
)

// Real agents under scripted failures (issue 39): Claude Code and Codex,
// the binaries npm ships, run non-interactively against
// ingest/fakeprovider on 127.0.0.1, one scripted case each, in a
// temporary home. Their transcript or rollout, and the OpenTelemetry they
// export, are ingested by orchstat, and orchstat's calls, attempts and
// failed attempts are held to the fake server's own request log. Where a
// source does not record attempts, the test holds orchstat to saying
// "unknown", which docs/formats/ says for that source, measured here.
// The telemetry goes to `orchstat receive`, run in the test's process.
//
// The agents are found as ORCHSTAT_CLAUDE and ORCHSTAT_CODEX, else as
// claude and codex on PATH. Without them the test skips, unless
// ORCHSTAT_REQUIRE_AGENTS=1 (.ci/run installs both at pinned versions and
// sets it), where a missing agent fails it.

// fakeKey is the API key the agents are given: the fake server takes any.
const fakeKey = "sk-fake-orchstat-test"

// agentTimeout bounds one agent run. The slowest case (Claude Code's
// retries exhausted) waits its backoffs, a few seconds; this is a
// deadline against a hung agent, not a measurement.
const agentTimeout = 3 * time.Minute

// agentSlots bounds the agents running at once: each is a large process
// and CI has two cores. Cases that wait on a client timeout leave their
// slot idle, so three keep the run short without crowding it.
var agentSlots = make(chan struct{}, 3)

// agentCase is one scripted case: the faults the fake server answers the
// call's attempts with, in order, then an answer.
type agentCase struct {
	name   string
	faults []fakeprovider.Fault
	// requests is how many requests the pinned agent sends for the
	// script (measured: it changes only when the agent's retry behaviour
	// does, which the failure then says), and ok whether the call ends
	// with an answer.
	requests int
	ok       bool
}

// realAgent is one agent under test.
type realAgent struct {
	name string // also the system its records have in orchstat
	env  string // the variable that names its binary
	bin  string // the binary's name on PATH
	// run runs one prompt against the fake server, exporting telemetry to
	// tel, and returns the folder of its own records.
	run   func(ctx context.Context, bin, home string, p *fakeprovider.Server, tel *telemetrySink) (records string, out []byte, err error)
	cases []agentCase
	// telemetryAttempts says whether the agent's telemetry records the
	// attempts of a call that ended in state ok (measured; see
	// docs/formats/otlp.md).
	telemetryAttempts func(ok bool) bool
	// telemetryComplete says whether the agent exports all of a run's
	// telemetry before it exits, for a call that ended in state ok.
	telemetryComplete func(ok bool) bool
	// recordAttempts likewise for its transcript or rollout.
	recordAttempts bool
}

const (
	rateLimit   = fakeprovider.RateLimit
	serverError = fakeprovider.ServerError
	overloaded  = fakeprovider.Overloaded
	cutStream   = fakeprovider.CutStream
	hang        = fakeprovider.Hang
	stall       = fakeprovider.Stall
)

// Claude Code retries 3 times here (CLAUDE_CODE_MAX_RETRIES), so four
// failures exhaust it.
var claudeCases = []agentCase{
	{"answer", nil, 1, true},
	{"529 twice", []fakeprovider.Fault{overloaded, overloaded}, 3, true},
	{"500", []fakeprovider.Fault{serverError}, 2, true},
	{"429 with Retry-After", []fakeprovider.Fault{rateLimit}, 2, true},
	{"stream cut", []fakeprovider.Fault{cutStream}, 2, true},
	{"timeout", []fakeprovider.Fault{hang}, 2, true},
	{"cut, timeout, 429", []fakeprovider.Fault{cutStream, hang, rateLimit}, 4, true},
	{"500 until it gives up", []fakeprovider.Fault{serverError, serverError, serverError, serverError}, 4, false},
}

// Codex retries each request once and each stream once here
// (request_max_retries, stream_max_retries = 1), so a call takes at most
// 2 × 2 requests. It sets no deadline on a request's headers (measured:
// a request answered with nothing waits past any timeout), so its
// timeout case stalls a stream after the headers, where its stream idle
// timeout applies.
var codexCases = []agentCase{
	{"answer", nil, 1, true},
	{"500", []fakeprovider.Fault{serverError}, 2, true},
	{"529", []fakeprovider.Fault{overloaded}, 2, true},
	{"429 with Retry-After", []fakeprovider.Fault{rateLimit}, 2, true},
	{"stream cut", []fakeprovider.Fault{cutStream}, 2, true},
	{"stream idle timeout", []fakeprovider.Fault{stall}, 2, true},
	{"stall, then 529", []fakeprovider.Fault{stall, overloaded}, 3, true},
	{"500 until it gives up", []fakeprovider.Fault{serverError, serverError, serverError, serverError}, 4, false},
}

func realAgents() []realAgent {
	return []realAgent{{
		name: "claude-code", env: "ORCHSTAT_CLAUDE", bin: "claude", run: runClaude, cases: claudeCases,
		// Claude Code 2.1.332 logs no api_error event for an attempt it
		// retried: a call that got an answer has its api_request alone,
		// with no attempt number. Only a call that failed for good says
		// how many attempts it took (api_retries_exhausted).
		telemetryAttempts: func(ok bool) bool { return !ok },
		telemetryComplete: func(bool) bool { return true },
		recordAttempts:    true,
	}, {
		name: "codex", env: "ORCHSTAT_CODEX", bin: "codex", run: runCodex, cases: codexCases,
		// codex.api_request is logged for every request.
		telemetryAttempts: func(bool) bool { return true },
		// codex exec exits 1 when it gives a turn up without flushing
		// its batched log events: of the four requests' events, runs
		// exported 2, 0 and 0 (measured), so that case's telemetry is a
		// lower bound.
		telemetryComplete: func(ok bool) bool { return ok },
		// A rollout holds no trace of a retry (see docs/formats/codex.md).
		recordAttempts: false,
	}}
}

// agentBinary finds an agent's binary, or skips (fails, under
// ORCHSTAT_REQUIRE_AGENTS=1) when there is none.
func agentBinary(t *testing.T, a realAgent) string {
	t.Helper()
	if p := os.Getenv(a.env); p != "" {
		if _, err := os.Stat(p); err != nil {
			t.Fatalf("%s=%s: %v", a.env, p, err)
		}
		return p
	}
	if p, err := exec.LookPath(a.bin); err == nil {
		return p
	}
	if os.Getenv("ORCHSTAT_REQUIRE_AGENTS") == "1" {
		t.Fatalf("ORCHSTAT_REQUIRE_AGENTS=1, but %s is not on PATH and %s is unset (.ci/run installs it from npm)", a.bin, a.env)
	}
	t.Skipf("%s not on PATH and %s unset: npm install the agent (see .ci/run) to run this test", a.bin, a.env)
	return ""
}

// agentEnv is the environment every agent runs in: a home of its own, and
// no proxy but a closed port for anything not on 127.0.0.1, so that
// nothing reaches the network even if an agent ignores its settings.
// Nothing else is inherited from the test's environment: no API key, no
// agent's configuration.
func agentEnv(home string) []string {
	const deadProxy = "http://127.0.0.1:9" // the discard port: nothing listens
	return []string{
		"PATH=" + os.Getenv("PATH"),
		"HOME=" + home,
		"XDG_CONFIG_HOME=" + filepath.Join(home, ".config"),
		"XDG_DATA_HOME=" + filepath.Join(home, ".local", "share"),
		"XDG_CACHE_HOME=" + filepath.Join(home, ".cache"),
		"TMPDIR=" + filepath.Join(home, "tmp"), // made by agentCmd; left with the home
		"LANG=C.UTF-8",
		"HTTPS_PROXY=" + deadProxy, "HTTP_PROXY=" + deadProxy, "ALL_PROXY=" + deadProxy,
		"https_proxy=" + deadProxy, "http_proxy=" + deadProxy, "all_proxy=" + deadProxy,
		"NO_PROXY=127.0.0.1,localhost", "no_proxy=127.0.0.1,localhost",
	}
}

// agentCmd is an agent's command, in a process group of its own: when
// ctx ends the whole group is killed, helpers (node workers, Codex's
// children) included, and the wait for its output ends 10 s later even if
// something still holds the pipe.
func agentCmd(ctx context.Context, home, bin string, args ...string) *exec.Cmd {
	_ = os.MkdirAll(filepath.Join(home, "tmp"), 0o700)
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 10 * time.Second
	return cmd
}

// runClaude runs `claude -p` with the fake server as its API, a short
// request timeout (API_TIMEOUT_MS) for the timeout case, and its
// OpenTelemetry logs sent to tel.
func runClaude(ctx context.Context, bin, home string, p *fakeprovider.Server, tel *telemetrySink) (string, []byte, error) {
	cmd := agentCmd(ctx, home, bin, "-p", "say ok", "--model", "claude-haiku-4-5")
	cmd.Dir = home
	cmd.Env = append(agentEnv(home),
		"ANTHROPIC_BASE_URL="+p.URL,
		"ANTHROPIC_API_KEY="+fakeKey,
		// Offline: no update checks, error reports or other traffic.
		"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1",
		"DISABLE_AUTOUPDATER=1",
		"DISABLE_ERROR_REPORTING=1",
		// A hung request fails after 3 s, and 3 retries are the budget.
		"API_TIMEOUT_MS=3000",
		"CLAUDE_CODE_MAX_RETRIES=3",
		"CLAUDE_CODE_ENABLE_TELEMETRY=1",
		"OTEL_LOGS_EXPORTER=otlp",
		"OTEL_METRICS_EXPORTER=none",
		"OTEL_EXPORTER_OTLP_PROTOCOL="+tel.protocol,
		"OTEL_EXPORTER_OTLP_ENDPOINT="+tel.url,
		"OTEL_LOGS_EXPORT_INTERVAL=500",
	)
	out, err := cmd.CombinedOutput()
	return filepath.Join(home, ".claude"), out, err
}

// runCodex runs `codex exec` with a config.toml whose model provider is
// the fake server (the Responses API), one request retry and one stream
// retry, a 2 s stream idle timeout, and OpenTelemetry logs sent to tel.
func runCodex(ctx context.Context, bin, home string, p *fakeprovider.Server, tel *telemetrySink) (string, []byte, error) {
	codexHome := filepath.Join(home, ".codex")
	if err := os.MkdirAll(codexHome, 0o755); err != nil {
		return "", nil, err
	}
	protocol := "binary" // Codex's name for http/protobuf
	if tel.protocol == "http/json" {
		protocol = "json"
	}
	config := fmt.Sprintf(`model = "gpt-5.1-codex"
model_provider = "fake"
check_for_update_on_startup = false

[model_providers.fake]
name = "orchstat's fake provider"
base_url = %q
env_key = "ORCHSTAT_FAKE_PROVIDER_KEY"
wire_api = "responses"
request_max_retries = 1
stream_max_retries = 1
stream_idle_timeout_ms = 2000

[otel]
log_user_prompt = false
exporter = { otlp-http = { endpoint = %q, protocol = %q } }

[analytics]
enabled = false
`, p.URL+"/v1", tel.url+"/v1/logs", protocol)
	if err := os.WriteFile(filepath.Join(codexHome, "config.toml"), []byte(config), 0o644); err != nil {
		return "", nil, err
	}
	cmd := agentCmd(ctx, home, bin, "exec", "--skip-git-repo-check", "--sandbox", "read-only", "say ok")
	cmd.Dir = home
	cmd.Env = append(agentEnv(home), "CODEX_HOME="+codexHome, "ORCHSTAT_FAKE_PROVIDER_KEY="+fakeKey)
	out, err := cmd.CombinedOutput()
	return filepath.Join(codexHome, "sessions"), out, err
}

// telemetrySink is where an agent exports OTLP: `orchstat receive`, run
// in this process.
type telemetrySink struct {
	url, protocol, dir string
	stop               func() error
}

// startReceive runs the receiver `orchstat receive` runs, in this
// process, HTTP only, on a port it takes itself (a port found free and
// handed over could be taken by a parallel case's listener first), into a
// folder of the test's. TestReceiveThenReport covers the command itself.
func startReceive(t *testing.T) *telemetrySink {
	t.Helper()
	dir := t.TempDir()
	r, err := receiver.Listen(receiver.Config{HTTPAddr: "127.0.0.1:0", Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.Serve(ctx) }()
	// Protobuf, the encoding both agents default to.
	return &telemetrySink{url: "http://" + r.HTTP, protocol: "http/protobuf", dir: dir, stop: func() error {
		cancel()
		select {
		case err := <-done:
			return err
		case <-time.After(30 * time.Second):
			return fmt.Errorf("the receiver did not stop within 30 s of its context ending")
		}
	}}
}

// orchCall is one call as orchstat stored it.
type orchCall struct {
	Success  *bool
	Attempts *int
	Evidence string
}

// orchCalls ingests path into a fresh store and returns its calls in
// order, as the store holds them; and holds `report --by session` (what a
// user reads) to the same counts.
func orchCalls(t *testing.T, source, path string) []orchCall {
	t.Helper()
	db := filepath.Join(t.TempDir(), "s.duckdb")
	// The records were written a moment ago: the clock is the real one,
	// so that the report's window holds them.
	now := time.Now()
	if code, _, errOut := runCLIAt(t, now, "", "ingest", "--db", db, path); code != 0 {
		t.Fatalf("%s: ingest %s: exit %d: %s", source, path, code, errOut)
	}
	code, out, errOut := runCLIAt(t, now, "", "sql", "--db", db, "--format", "json",
		"SELECT success, attempts, evidence FROM calls ORDER BY ts, line")
	if code != 0 {
		t.Fatalf("%s: sql: exit %d: %s", source, code, errOut)
	}
	var calls []orchCall
	if err := json.Unmarshal([]byte(out), &calls); err != nil {
		t.Fatalf("%s: sql output: %v: %s", source, err, out)
	}

	code, out, errOut = runCLIAt(t, now, "", "report", "--db", db, "--by", "session", "--format", "json")
	if code != 0 {
		t.Fatalf("%s: report --by session: exit %d: %s", source, code, errOut)
	}
	type totals struct {
		Calls        int `json:"calls"`
		Failed       int `json:"failed"`
		WithAttempts int `json:"with_attempts"`
		Attempts     int `json:"attempts"`
	}
	var r struct {
		Usage struct{ Total totals }
	}
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("%s: report output: %v: %s", source, err, out)
	}
	var want totals
	for _, c := range calls {
		want.Calls++
		if c.Success != nil && !*c.Success {
			want.Failed++
		}
		if c.Attempts != nil {
			want.WithAttempts++
			want.Attempts += *c.Attempts
		}
	}
	if r.Usage.Total != want {
		t.Errorf("%s: report --by session totals %+v; the store's calls give %+v", source, r.Usage.Total, want)
	}
	return calls
}

// agentRow is one line of the closing table; order sorts it as the
// cases are declared.
type agentRow struct {
	order                                 int
	agent, name, fake, records, telemetry string
}

type agentTable struct {
	mu   sync.Mutex
	rows []agentRow
}

func (tb *agentTable) add(r agentRow) {
	tb.mu.Lock()
	defer tb.mu.Unlock()
	tb.rows = append(tb.rows, r)
}

// String draws the table as Markdown, for the log and the note.
func (tb *agentTable) String() string {
	sort.Slice(tb.rows, func(i, j int) bool { return tb.rows[i].order < tb.rows[j].order })
	var b strings.Builder
	b.WriteString("| agent | case | fake server: requests (failed) | orchstat from transcript/rollout: attempts (failed) | orchstat from telemetry: attempts (failed) |\n|---|---|---|---|---|\n")
	for _, r := range tb.rows {
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s |\n", r.agent, r.name, r.fake, r.records, r.telemetry)
	}
	return b.String()
}

// showAttempts draws orchstat's calls as "attempts (failed)", call by
// call; "unknown" where the record does not show them.
func showAttempts(calls []orchCall) string {
	var parts []string
	for _, c := range calls {
		if c.Attempts == nil {
			parts = append(parts, "unknown")
			continue
		}
		failed := *c.Attempts
		if c.Success != nil && *c.Success {
			failed--
		}
		parts = append(parts, fmt.Sprintf("%d (%d)", *c.Attempts, failed))
	}
	if len(parts) == 0 {
		return "no call"
	}
	return strings.Join(parts, ", ")
}

func TestRealAgents(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("real agents; go test ./... runs it (skipped under -short)")
	}
	var table agentTable
	t.Run("cases", func(t *testing.T) {
		for i, a := range realAgents() {
			t.Run(a.name, func(t *testing.T) {
				bin := agentBinary(t, a)
				for j, c := range a.cases {
					t.Run(c.name, func(t *testing.T) {
						t.Parallel()
						runAgentCase(t, a, bin, c, 100*i+j, &table)
					})
				}
			})
		}
	})
	if len(table.rows) > 0 {
		t.Logf("per scripted case:\n%s", table.String())
	}
}

// runAgentCase runs one case and holds orchstat to the fake server's log.
func runAgentCase(t *testing.T, a realAgent, bin string, c agentCase, order int, table *agentTable) {
	p, err := fakeprovider.Start(fakeprovider.Script{Calls: [][]fakeprovider.Fault{c.faults}, RetryAfter: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	tel := startReceive(t)
	home := t.TempDir()

	agentSlots <- struct{}{}
	ctx, cancel := context.WithTimeout(context.Background(), agentTimeout)
	records, out, runErr := a.run(ctx, bin, home, p, tel)
	timedOut := ctx.Err() == context.DeadlineExceeded
	cancel()
	<-agentSlots
	if err := tel.stop(); err != nil {
		t.Error(err)
	}
	if timedOut {
		t.Fatalf("%s did not finish within %v: %s", a.name, agentTimeout, out)
	}
	// The agent exits 0 with an answer and non-zero when it gave up.
	if (runErr == nil) != c.ok {
		t.Errorf("%s exited with %v, want success %v: %s", a.name, runErr, c.ok, out)
	}

	calls := p.Calls()
	for _, r := range p.Log() {
		if r.Call == 0 && !strings.HasPrefix(r.Path, "/v1/analytics/") {
			// Codex posts its turn costs to the provider's analytics
			// path, which the fake answers 404: nothing else should come.
			t.Errorf("the fake server got a request that is no model call: %s %s", r.Method, r.Path)
		}
	}
	if len(calls) != 1 {
		t.Fatalf("the fake server saw %d calls, want 1: %+v\n%s", len(calls), p.Log(), out)
	}
	fake := calls[0]
	if len(fake.Requests) != c.requests || fake.Succeeded() != c.ok {
		t.Errorf("the fake server got %d requests, answered %v; the pinned %s sends %d, answered %v (has its retrying changed?): %+v",
			len(fake.Requests), fake.Succeeded(), a.name, c.requests, c.ok, fake.Requests)
	}
	row := agentRow{order: order, agent: a.name, name: c.name, fake: fmt.Sprintf("%d (%d)", len(fake.Requests), fake.Failed())}

	// What the agent's own records say.
	fromRecords := orchCalls(t, "transcript/rollout", records)
	row.records = showAttempts(fromRecords)
	checkAgainst(t, "transcript/rollout", fromRecords, fake, a.recordAttempts)

	// What its telemetry says.
	source := "telemetry via orchstat receive"
	if !a.telemetryComplete(fake.Succeeded()) {
		// A lossy export may be empty: then receive wrote nothing, and
		// there is nothing to ingest, which is no call.
		var fromTelemetry []orchCall
		// Its files alone: the folder also holds the receiver's lock.
		if files, err := filepath.Glob(filepath.Join(tel.dir, "*.jsonl")); err != nil {
			t.Fatal(err)
		} else if len(files) > 0 {
			fromTelemetry = orchCalls(t, "telemetry", tel.dir)
		}
		row.telemetry = showAttempts(fromTelemetry) + " (events lost at exit)"
		checkLowerBound(t, source, fromTelemetry, fake)
	} else {
		fromTelemetry := orchCalls(t, "telemetry", tel.dir)
		row.telemetry = showAttempts(fromTelemetry)
		checkAgainst(t, source, fromTelemetry, fake, a.telemetryAttempts(fake.Succeeded()))
	}
	table.add(row)
}

// checkAgainst holds orchstat's calls from one source to the fake server's
// one call: one call, its outcome, and its attempts and failed attempts
// when the source records them, else attempts unknown (never a guess).
func checkAgainst(t *testing.T, source string, calls []orchCall, fake fakeprovider.Call, recorded bool) {
	t.Helper()
	if len(calls) != 1 {
		t.Errorf("%s: orchstat has %d calls, the fake server 1: %+v", source, len(calls), calls)
		return
	}
	c := calls[0]
	if c.Success == nil || *c.Success != fake.Succeeded() {
		t.Errorf("%s: orchstat's call succeeded = %v, the fake server's %v", source, showBool(c.Success), fake.Succeeded())
	}
	if !recorded {
		if c.Attempts != nil {
			t.Errorf("%s: orchstat counts %d attempts (evidence %s) where the source records none; the fake server got %d",
				source, *c.Attempts, c.Evidence, len(fake.Requests))
		}
		return
	}
	if c.Attempts == nil {
		t.Errorf("%s: orchstat's attempts are unknown (evidence %s), the fake server got %d requests", source, c.Evidence, len(fake.Requests))
		return
	}
	failed := *c.Attempts
	if c.Success != nil && *c.Success {
		failed--
	}
	if *c.Attempts != len(fake.Requests) || failed != fake.Failed() {
		t.Errorf("%s: orchstat counts %d attempts, %d failed (evidence %s); the fake server got %d requests, %d failed",
			source, *c.Attempts, failed, c.Evidence, len(fake.Requests), fake.Failed())
	}
}

// checkLowerBound holds a source that may lose the end of a run to at
// most the fake server's call: no call, or one failed call whose attempts,
// when known, are no more than the requests sent.
func checkLowerBound(t *testing.T, source string, calls []orchCall, fake fakeprovider.Call) {
	t.Helper()
	if len(calls) > 1 {
		t.Errorf("%s: orchstat has %d calls, the fake server 1: %+v", source, len(calls), calls)
		return
	}
	for _, c := range calls {
		if c.Success == nil || *c.Success != fake.Succeeded() {
			t.Errorf("%s: orchstat's call succeeded = %v, the fake server's %v", source, showBool(c.Success), fake.Succeeded())
		}
		if c.Attempts != nil && *c.Attempts > len(fake.Requests) {
			t.Errorf("%s: orchstat counts %d attempts, more than the %d requests the fake server got", source, *c.Attempts, len(fake.Requests))
		}
	}
}

func showBool(b *bool) string {
	if b == nil {
		return "unknown"
	}
	return fmt.Sprint(*b)
}

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/orchstat/orchstat/query"
	"github.com/orchstat/orchstat/rules/check"
	"github.com/orchstat/orchstat/rules/notify"
)

// TestOneRuleFailureIsThatRules: a rule whose annotation template or query
// fails at check time (on data rules check cannot foresee) does not hide another rule's firing critical alert:
// the others are evaluated, shown and notified, the failing rule is shown
// with its error, and the exit status is CRITICAL. Before, the first
// failure made the whole check exit 3 with no alerts and no notification.
func TestOneRuleFailureIsThatRules(t *testing.T) {
	endToEnd(t, "delivers notifications from real checks")
	t.Parallel()
	hook := newHookServer(t)
	dir := t.TempDir()
	runs := filepath.Join(dir, "runs")
	now := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	writeRequests(t, runs, "r1", now, 30, 15)
	rulesFile := filepath.Join(dir, "rules.yaml")
	os.WriteFile(rulesFile, []byte(fmt.Sprintf(`rules:
  - name: bad_index
    metric: provider_retry_rate
    by: [provider]
    window: 24h
    threshold: 0.2
    condition: value > threshold
    severity: warning
    annotations:
      summary: '{{ if eq .Labels.provider "p" }}{{ index .Labels.provider 99 }}{{ end }}'
  - name: bad_sql
    sql: SELECT error('the query failed') AS value
    condition: value > 0
  - name: retries_critical
    metric: provider_retry_rate
    window: 24h
    threshold: 0.2
    condition: value > threshold
    severity: critical
    annotations:
      summary: 'retry rate {{ .Value }}'
receivers:
  - name: hook
    webhook: {url: %q}
`, hook.URL)), 0o644)
	code, out, stderr := runCLIAt(t, now, "", "check", "--format", "json", "-q", "--db", filepath.Join(dir, "o.duckdb"), "--rules", rulesFile, runs)
	if code != checkCritical {
		t.Fatalf("exit %d, want %d (a critical alert fires); stdout %s; stderr %s", code, checkCritical, out, stderr)
	}
	var co struct {
		Alerts []check.Row `json:"alerts"`
	}
	if err := json.Unmarshal([]byte(out), &co); err != nil {
		t.Fatal(err)
	}
	states := map[string]string{}
	errs := map[string]string{}
	for _, a := range co.Alerts {
		states[a.Rule], errs[a.Rule] = a.State, a.Error
	}
	if states["retries_critical"] != "firing" || states["bad_index"] != "firing" || states["bad_sql"] != "error" {
		t.Fatalf("states %v", states)
	}
	if !strings.Contains(errs["bad_sql"], "the query failed") || !strings.Contains(errs["bad_index"], "index") {
		t.Fatalf("errors %v", errs)
	}
	for _, r := range []string{"bad_sql", "bad_index"} {
		if !strings.Contains(stderr, "rule "+r+":") {
			t.Errorf("stderr does not name the failing rule %s: %s", r, stderr)
		}
	}
	// Both firing alerts are notified: the failed template's with its
	// error in place of the annotation.
	hook.mu.Lock()
	defer hook.mu.Unlock()
	got := map[string]map[string]string{}
	for _, m := range hook.received {
		for _, a := range m.Alerts {
			got[a.Labels["alertname"]] = a.Annotations
		}
	}
	if got["retries_critical"]["summary"] != "retry rate 0.5" || got["bad_index"]["annotation_error"] == "" {
		t.Fatalf("notified %v", got)
	}

	// With no critical alert firing, a failed rule makes the check UNKNOWN.
	os.WriteFile(rulesFile, []byte(`rules:
  - name: bad_sql
    sql: SELECT error('the query failed') AS value
    condition: value > 0
  - name: fine
    metric: provider_retry_rate
    window: 24h
    threshold: 0.9
    condition: value > threshold
`), 0o644)
	code, _, _ = runCLIAt(t, now, "", "check", "--format", "json", "-q", "--db", filepath.Join(dir, "o.duckdb"), "--rules", rulesFile, runs)
	if code != checkUnknown {
		t.Fatalf("exit %d, want %d", code, checkUnknown)
	}
}

// slowHook acknowledges the first ack notifications and then, until
// release is closed, never answers another: such a request is not
// acknowledged, and not counted. After release it acknowledges all. It
// counts what it acknowledged by alert name and status.
type slowHook struct {
	*httptest.Server
	mu      sync.Mutex
	ack     int
	got     map[string]int
	held    chan struct{} // receives once a request is being held
	release chan struct{}
}

func newSlowHook(t *testing.T, ack int) *slowHook {
	h := &slowHook{ack: ack, got: map[string]int{}, held: make(chan struct{}, 100), release: make(chan struct{})}
	h.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var m notify.Message
		b, _ := io.ReadAll(r.Body)
		json.Unmarshal(b, &m)
		h.mu.Lock()
		defer h.mu.Unlock()
		total := 0
		for _, n := range h.got {
			total += n
		}
		select {
		case <-h.release:
		default:
			if total >= h.ack {
				h.mu.Unlock()
				h.held <- struct{}{}
				<-r.Context().Done() // the client gave up or died
				h.mu.Lock()
				w.WriteHeader(http.StatusServiceUnavailable)
				return
			}
		}
		for _, a := range m.Alerts {
			h.got[a.Labels["alertname"]+"/"+m.Status]++
		}
	}))
	t.Cleanup(func() {
		h.open()
		h.CloseClientConnections()
		h.Close()
	})
	return h
}

func (h *slowHook) open() {
	select {
	case <-h.release:
	default:
		close(h.release)
	}
}

// fiveRules writes five critical rules that all fire on the test's runs,
// each its own notification, delivered by one webhook.
func fiveRules(t *testing.T, dir, url string, timeout string) string {
	t.Helper()
	var b strings.Builder
	b.WriteString("rules:\n")
	for i := range 5 {
		fmt.Fprintf(&b, "  - name: r%d\n    metric: provider_retry_rate\n    window: 24h\n    threshold: 0.2\n    condition: value > threshold\n    severity: critical\n", i)
	}
	fmt.Fprintf(&b, "receivers:\n  - name: hook\n    webhook: {url: %q, timeout: %s}\nroute:\n  receiver: hook\n  group_by: [alertname]\n", url, timeout)
	p := filepath.Join(dir, "rules.yaml")
	if err := os.WriteFile(p, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestDeliveryHoldsNoLock: while check waits on a receiver that hangs, the
// store is free: another process reads it at once. Before, check held the
// store's lock through its deliveries, so a hanging webhook (timeout 20 s)
// kept a concurrent `report --no-ingest` waiting until it gave up.
func TestDeliveryHoldsNoLock(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("runs real processes; go test ./... runs it (skipped under -short)")
	}
	hook := newSlowHook(t, 0)
	dir := t.TempDir()
	runs, db := filepath.Join(dir, "runs"), filepath.Join(dir, "o.duckdb")
	writeRequests(t, runs, "r1", time.Now(), 30, 15)
	rf := fiveRules(t, dir, hook.URL, "60s")
	cmd := runOrchstat("check", "-q", "--db", db, "--rules", rf, runs)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	select {
	case <-hook.held:
	case <-time.After(60 * time.Second):
		t.Fatalf("check never reached the webhook: %s", stderr.String())
	}
	// The reader must not wait at all.
	st, err := query.Open(context.Background(), db, query.Options{ReadOnly: true, LockTimeout: 0})
	if err != nil {
		t.Fatalf("the store is locked while check delivers: %v", err)
	}
	st.Close()
	cmd.Process.Kill()
	cmd.Wait()
}

// TestKilledDeliveryResendsNothing: check killed with SIGKILL after the
// receiver acknowledged some notifications does not send those again;
// the next check delivers the rest, each exactly once. Before, the
// outcomes were saved only after every delivery, so the acknowledged ones
// went out again.
func TestKilledDeliveryResendsNothing(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("kills real processes; go test ./... runs it (skipped under -short)")
	}
	hook := newSlowHook(t, 3)
	dir := t.TempDir()
	runs, db := filepath.Join(dir, "runs"), filepath.Join(dir, "o.duckdb")
	writeRequests(t, runs, "r1", time.Now(), 30, 15)
	rf := fiveRules(t, dir, hook.URL, "60s")
	cmd := runOrchstat("check", "-q", "--db", db, "--rules", rf, runs)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-hook.held:
	case <-time.After(60 * time.Second):
		cmd.Process.Kill()
		t.Fatal("check never reached the fourth notification")
	}
	// Kill the process doing the work; the supervisor follows.
	if child := childOf(cmd.Process.Pid); child != 0 {
		syscall.Kill(child, syscall.SIGKILL)
	}
	cmd.Process.Kill()
	cmd.Wait()
	hook.open()

	out, err := runOrchstat("check", "-q", "--db", db, "--rules", rf, runs).CombinedOutput()
	if code := exitStatus(err); code != checkCritical {
		t.Fatalf("second check: exit %d: %s", code, out)
	}
	hook.mu.Lock()
	defer hook.mu.Unlock()
	for i := range 5 {
		if n := hook.got[fmt.Sprintf("r%d/firing", i)]; n != 1 {
			t.Errorf("r%d was acknowledged %d times, want once (all: %v)", i, n, hook.got)
		}
	}
}

func exitStatus(err error) int {
	if err == nil {
		return 0
	}
	if e, ok := err.(interface{ ExitCode() int }); ok {
		return e.ExitCode()
	}
	return -1
}

// TestNonFiniteValuesAreNull: a value that is not a number (a rule's sql
// dividing by zero) is null in check's JSON, which stays valid. Before,
// encoding it failed the whole check (exit 3), and report wrote the
// strings "NaN" and "+Inf" where readers expect a number or null.
func TestNonFiniteValuesAreNull(t *testing.T) {
	endToEnd(t, "delivers notifications from real checks")
	t.Parallel()
	dir := t.TempDir()
	runs := filepath.Join(dir, "runs")
	now := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	writeRequests(t, runs, "r1", now, 30, 15)
	rulesFile := filepath.Join(dir, "rules.yaml")
	os.WriteFile(rulesFile, []byte(`rules:
  - name: odd_values
    sql: SELECT 'nan'::DOUBLE AS value, 'inf'::DOUBLE AS numerator, 0.0 AS denominator
    condition: numerator > 0
    severity: warning
`), 0o644)
	code, out, stderr := runCLI(t, "", "check", "--format", "json", "-q", "--db", filepath.Join(dir, "o.duckdb"), "--rules", rulesFile, runs)
	if code != checkWarning {
		t.Fatalf("exit %d: %s %s", code, out, stderr)
	}
	var co struct {
		Alerts []map[string]any `json:"alerts"`
	}
	if err := json.Unmarshal([]byte(out), &co); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if len(co.Alerts) != 1 || co.Alerts[0]["value"] != nil || co.Alerts[0]["numerator"] != nil {
		t.Fatalf("alerts %v", co.Alerts)
	}
}

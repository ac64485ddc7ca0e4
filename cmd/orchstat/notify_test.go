package main

import (
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
	"testing"
	"time"

	"github.com/orchstat/orchstat/rules/notify"
)

// hookServer is a webhook receiver that can be taken down: while down it
// answers 503. It records every message it accepted.
type hookServer struct {
	*httptest.Server
	mu       sync.Mutex
	down     bool
	tries    int
	received []notify.Message
}

func newHookServer(t *testing.T) *hookServer {
	h := &hookServer{}
	h.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.mu.Lock()
		defer h.mu.Unlock()
		h.tries++
		if h.down {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		var m notify.Message
		b, _ := io.ReadAll(r.Body)
		if err := json.Unmarshal(b, &m); err != nil {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		h.received = append(h.received, m)
	}))
	t.Cleanup(h.Close)
	return h
}

// take returns the messages received since the last take, as
// "status(alert statuses)".
func (h *hookServer) take() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []string
	for _, m := range h.received {
		var st []string
		for _, a := range m.Alerts {
			st = append(st, a.Status)
		}
		out = append(out, fmt.Sprintf("%s(%s)", m.Status, strings.Join(st, ",")))
	}
	h.received = nil
	return out
}

// noSleep is the dependencies with retries immediate, so failing
// receivers cost no time.
func noSleep() deps {
	d := defaultDeps()
	real := d.newSender
	d.newSender = func(now func() time.Time) *notify.Sender {
		s := real(now)
		s.Sleep = func(context.Context, time.Duration) error { return nil }
		return s
	}
	return d
}

func writeRules(t *testing.T, dir, extra string) string {
	t.Helper()
	p := filepath.Join(dir, "rules.yaml")
	body := `rules:
  - name: retry_rate_high
    metric: provider_retry_rate
    window: 24h
    threshold: 0.2
    condition: value > threshold && denominator >= 20
    for: 2
    severity: warning
    annotations:
      summary: "retry rate {{ .Value }}"
` + extra
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// Across cron runs: pending notifies nothing, firing notifies once,
// staying firing is silent, and the resolution notifies once.
func TestNotifyOncePerTransition(t *testing.T) {
	endToEnd(t, "runs orchstat against a real store")
	t.Parallel()
	d := noSleep()
	hook := newHookServer(t)
	dir := t.TempDir()
	runs, db := filepath.Join(dir, "runs"), filepath.Join(dir, "o.duckdb")
	rf := writeRules(t, dir, fmt.Sprintf("receivers:\n  - name: hook\n    webhook: {url: %q}\n", hook.URL))
	now := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	writeRequests(t, runs, "bad", now, 30, 12)
	steps := []struct {
		at    time.Duration
		good  int // healthy requests to add first
		state string
		sent  string
	}{
		{0, 0, "pending inactive→pending", "[]"},
		{5 * time.Minute, 0, "firing pending→firing", "[firing(firing)]"},
		{10 * time.Minute, 0, "firing ", "[]"},
		{15 * time.Minute, 300, "resolved firing→resolved", "[resolved(resolved)]"},
		{20 * time.Minute, 0, "resolved ", "[]"},
		{40 * time.Minute, 0, "inactive ", "[]"}, // forgotten after its retention, listed as a rule that does not hold
	}
	for i, s := range steps {
		if s.good > 0 {
			writeRequests(t, runs, "good", now.Add(s.at), s.good, 0)
		}
		_, co := runCheckWith(t, d, now.Add(s.at), "--db", db, "--rules", rf, runs)
		if got := stateOf(co, "retry_rate_high"); got != s.state {
			t.Fatalf("check %d: state %q, want %q", i, got, s.state)
		}
		if got := fmt.Sprint(hook.take()); got != s.sent {
			t.Fatalf("check %d: sent %s, want %s", i, got, s.sent)
		}
	}
}

// A receiver that is down keeps its notifications in the store; the next
// check delivers them, in order, and then nothing more.
func TestNotifyQueueSurvivesOutage(t *testing.T) {
	endToEnd(t, "runs orchstat against a real store")
	t.Parallel()
	d := noSleep()
	hook := newHookServer(t)
	hook.down = true
	dir := t.TempDir()
	runs, db := filepath.Join(dir, "runs"), filepath.Join(dir, "o.duckdb")
	rf := writeRules(t, dir, fmt.Sprintf(`receivers:
  - name: hook
    webhook: {url: %q, timeout: 2s}
route:
  receiver: hook
  repeat_interval: 1h
`, hook.URL))
	now := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	writeRequests(t, runs, "bad", now, 30, 12)
	runCheckWith(t, d, now, "--db", db, "--rules", rf, runs)

	code, out, stderr := runCLIWith(t, now.Add(5*time.Minute), d, "", "check", "--db", db, "--rules", rf, runs)
	if code != 1 || !strings.Contains(stderr, `kept for the next check: receiver "hook"`) || !strings.Contains(stderr, "503") ||
		!strings.Contains(out, "Notifications") {
		t.Fatalf("exit %d\n%s\n%s", code, out, stderr)
	}
	if hook.tries != 3 {
		t.Errorf("%d attempts, want 3", hook.tries)
	}
	// Resolve while the receiver is still down: this check tries the firing
	// notification 3 more times and holds the resolution back behind it.
	writeRequests(t, runs, "good", now.Add(10*time.Minute), 300, 0)
	_, co := runCheckWith(t, d, now.Add(10*time.Minute), "--db", db, "--rules", rf, runs)
	if stateOf(co, "retry_rate_high") != "resolved firing→resolved" {
		t.Fatalf("%+v", co)
	}

	hook.down = false
	_, co = runCheckWith(t, d, now.Add(15*time.Minute), "--db", db, "--rules", rf, runs)
	if got := fmt.Sprint(hook.take()); got != "[firing(firing) resolved(resolved)]" {
		t.Fatalf("after the outage: %s", got)
	}
	runCheckWith(t, d, now.Add(20*time.Minute), "--db", db, "--rules", rf, runs)
	if got := hook.take(); len(got) != 0 {
		t.Fatalf("delivered twice: %s", got)
	}
	code, out, _ = runCLI(t, "", "--db", db, "sql", "--format", "csv",
		"SELECT status, reason, attempts, delivered_at IS NOT NULL AS delivered, last_error IS NULL AS ok FROM notifications ORDER BY id")
	want := "status,reason,attempts,delivered,ok\nfiring,change,7,true,true\nresolved,change,1,true,true\n"
	if code != 0 || out != want {
		t.Fatalf("queue:\n%s\nwant\n%s", out, want)
	}
}

// repeat_interval re-sends a group that keeps firing.
func TestNotifyRepeatInterval(t *testing.T) {
	endToEnd(t, "runs orchstat against a real store")
	t.Parallel()
	d := noSleep()
	hook := newHookServer(t)
	dir := t.TempDir()
	runs, db := filepath.Join(dir, "runs"), filepath.Join(dir, "o.duckdb")
	rf := writeRules(t, dir, fmt.Sprintf("receivers:\n  - name: hook\n    webhook: {url: %q}\nroute: {receiver: hook, repeat_interval: 1h}\n", hook.URL))
	now := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	writeRequests(t, runs, "bad", now, 30, 12)
	var sent []string
	for _, at := range []time.Duration{0, 5, 30, 64, 65, 90, 125} {
		runCheckWith(t, d, now.Add(at*time.Minute), "--db", db, "--rules", rf, runs)
		for _, m := range hook.take() {
			sent = append(sent, fmt.Sprintf("%d:%s", at, m))
		}
	}
	// Fired at 5; repeats once an hour has passed since the last send.
	if got := fmt.Sprint(sent); got != "[5:firing(firing) 65:firing(firing) 125:firing(firing)]" {
		t.Fatalf("sent %s", got)
	}
}

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestAlertmanagerIntegration runs the real binary against a real
// Alertmanager: traces that breach a rule make `orchstat check` push a firing
// alert, healthy traces make the next check resolve it.
//
// Alertmanager is ORCHSTAT_ALERTMANAGER_URL if set (.ci/run starts one),
// else prometheus-alertmanager or alertmanager from PATH, started here. With
// neither the test skips, unless ORCHSTAT_REQUIRE_ALERTMANAGER is set (as in
// CI), when it fails.
//
// It uses the real clock: the binary does, and Alertmanager compares endsAt
// with its own.
func TestAlertmanagerIntegration(t *testing.T) {
	endToEnd(t, "delivers to a real Alertmanager")
	am := alertmanagerForTest(t)
	dir := t.TempDir()
	runs := filepath.Join(dir, "runs")
	db := filepath.Join(dir, "orchstat.duckdb")
	// Unique, so a shared Alertmanager holds nothing from an earlier run.
	name := fmt.Sprintf("orchstat_it_%d", time.Now().UnixNano())
	rulesFile := filepath.Join(dir, "rules.yaml")
	ruleText := fmt.Sprintf(`rules:
  - name: %s
    metric: provider_retry_rate
    window: 24h
    threshold: 0.20
    condition: value > threshold && denominator >= 20
    severity: critical
    labels: {team: ci}
    annotations:
      summary: "retry rate {{ .Value }}"
receivers:
  - name: am
    alertmanager:
      url: %s
      timeout: 5s
route:
  receiver: am
`, name, am)
	if err := os.WriteFile(rulesFile, []byte(ruleText), 0o644); err != nil {
		t.Fatal(err)
	}
	check := func() (int, []amNotification) {
		t.Helper()
		return runCheckNotify(t, "--db", db, "check", "--rules", rulesFile, "--format", "json", "-q", runs)
	}

	// 12 of 30 requests retried: 40%, above 20%.
	writeRequests(t, runs, "bad", time.Now(), 30, 12)
	code, notes := check()
	if code != checkCritical {
		t.Fatalf("first check: exit %d, want %d (critical firing)", code, checkCritical)
	}
	if !hasNotification(notes, "am", "firing") {
		t.Errorf("first check: no delivered firing notification to receiver am in %+v", notes)
	}
	alert := waitForAlerts(t, am, name, "the firing alert to appear", func(as []amAlert) bool {
		return len(as) == 1
	})[0]
	for k, v := range map[string]string{"alertname": name, "severity": "critical", "team": "ci"} {
		if alert.Labels[k] != v {
			t.Errorf("alert label %s = %q, want %q (labels %v)", k, alert.Labels[k], v, alert.Labels)
		}
	}
	if alert.Status.State != "active" {
		t.Errorf("alert status.state = %q, want active", alert.Status.State)
	}
	if s := alert.Annotations["summary"]; !strings.HasPrefix(s, "retry rate") {
		t.Errorf("alert summary = %q, want it to start with %q", s, "retry rate")
	}
	// alert_ttl (1h by default), not Alertmanager's own resolve_timeout
	// (5m), which would resolve the alert between cron runs.
	if now := time.Now(); alert.EndsAt.Before(now.Add(50 * time.Minute)) {
		t.Errorf("firing alert endsAt %v is not about an hour after now (%v): Alertmanager would time it out", alert.EndsAt, now)
	}

	// 300 healthy requests: 12/330, below 20%.
	writeRequests(t, runs, "good", time.Now(), 300, 0)
	code, notes = check()
	if code != checkOK {
		t.Fatalf("second check: exit %d, want %d", code, checkOK)
	}
	if !hasNotification(notes, "am", "resolved") {
		t.Errorf("second check: no delivered resolved notification to receiver am in %+v", notes)
	}
	// The v2 API leaves out alerts whose endsAt has passed; one still listed
	// with endsAt in the past counts as resolved too.
	waitForAlerts(t, am, name, "the alert to resolve", func(as []amAlert) bool {
		now := time.Now()
		for _, a := range as {
			if a.EndsAt.After(now) {
				return false
			}
		}
		return true
	})

	// Nothing new: nothing fires again.
	code, notes = check()
	if code != checkOK {
		t.Fatalf("third check: exit %d, want %d", code, checkOK)
	}
	for _, n := range notes {
		if n.Status == "firing" {
			t.Errorf("third check, with nothing new, sent a firing notification: %+v", n)
		}
	}
}

// amNotification is one entry of check's JSON "notifications"; other fields
// are ignored.
type amNotification struct {
	Receiver  string `json:"receiver"`
	Status    string `json:"status"`
	Delivered bool   `json:"delivered"`
}

func hasNotification(notes []amNotification, receiver, status string) bool {
	for _, n := range notes {
		if n.Receiver == receiver && n.Status == status && n.Delivered {
			return true
		}
	}
	return false
}

// runCheckNotify runs the binary with args (a check with --format json) and
// returns its exit code and the notifications its output lists. The output
// must be JSON with a "notifications" field holding an array (or null, for
// none).
func runCheckNotify(t *testing.T, args ...string) (int, []amNotification) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	base := runOrchstat(args...)
	cmd := exec.CommandContext(ctx, base.Path, base.Args[1:]...)
	cmd.Env = base.Env
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	code := 0
	var exit *exec.ExitError
	switch {
	case ctx.Err() != nil:
		t.Fatalf("orchstat %s: %v\nstdout: %s\nstderr: %s", strings.Join(args, " "), ctx.Err(), &stdout, &stderr)
	case errors.As(err, &exit):
		code = exit.ExitCode()
	case err != nil:
		t.Fatal(err)
	}
	var out map[string]json.RawMessage
	if err := json.Unmarshal(stdout.Bytes(), &out); err != nil {
		t.Fatalf("exit %d, output is not JSON: %v\nstdout: %s\nstderr: %s", code, err, &stdout, &stderr)
	}
	raw, ok := out["notifications"]
	if !ok {
		t.Fatalf("exit %d, output has no notifications field\nstdout: %s\nstderr: %s", code, &stdout, &stderr)
	}
	var notes []amNotification
	if err := json.Unmarshal(raw, &notes); err != nil {
		t.Fatalf("exit %d, notifications is not an array of objects: %v\nstdout: %s\nstderr: %s", code, err, &stdout, &stderr)
	}
	return code, notes
}

// amAlert is the part of an alert in Alertmanager's GET /api/v2/alerts
// that the test looks at.
type amAlert struct {
	Labels      map[string]string `json:"labels"`
	Annotations map[string]string `json:"annotations"`
	StartsAt    time.Time         `json:"startsAt"`
	EndsAt      time.Time         `json:"endsAt"`
	Status      struct {
		State string `json:"state"`
	} `json:"status"`
}

// waitForAlerts polls Alertmanager's alerts named name for up to 15 s until
// done accepts them, and returns them; it fails with the last response if
// they never are.
func waitForAlerts(t *testing.T, am, name, what string, done func([]amAlert) bool) []amAlert {
	t.Helper()
	u := am + "/api/v2/alerts?" + url.Values{"filter": {fmt.Sprintf("alertname=%q", name)}}.Encode()
	client := &http.Client{Timeout: 5 * time.Second}
	deadline := time.Now().Add(15 * time.Second)
	var last string
	for {
		body, err := httpGet(client, u)
		if err != nil {
			last = err.Error()
		} else {
			last = string(body)
			var as []amAlert
			if err := json.Unmarshal(body, &as); err != nil {
				t.Fatalf("GET %s: %v: %s", u, err, body)
			}
			if done(as) {
				return as
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("waited 15 s for %s; last GET %s: %s", what, u, last)
		}
		time.Sleep(150 * time.Millisecond)
	}
}

func httpGet(client *http.Client, u string) ([]byte, error) {
	resp, err := client.Get(u)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return body, fmt.Errorf("%s: %s", resp.Status, body)
	}
	return body, nil
}

// alertmanagerForTest returns the base URL of a ready Alertmanager, or
// skips (fails, with ORCHSTAT_REQUIRE_ALERTMANAGER) when there is none.
func alertmanagerForTest(t *testing.T) string {
	t.Helper()
	if u := os.Getenv("ORCHSTAT_ALERTMANAGER_URL"); u != "" {
		u = strings.TrimRight(u, "/")
		if err := waitReady(u, 30*time.Second, nil); err != nil {
			t.Fatalf("ORCHSTAT_ALERTMANAGER_URL=%s: %v", u, err)
		}
		return u
	}
	var bin string
	for _, name := range []string{"prometheus-alertmanager", "alertmanager"} {
		if p, err := exec.LookPath(name); err == nil {
			bin = p
			break
		}
	}
	if bin == "" {
		if os.Getenv("ORCHSTAT_REQUIRE_ALERTMANAGER") != "" {
			t.Fatal("ORCHSTAT_REQUIRE_ALERTMANAGER is set, but ORCHSTAT_ALERTMANAGER_URL is not and neither prometheus-alertmanager nor alertmanager is on PATH (apt-get install prometheus-alertmanager)")
		}
		t.Skip("alertmanager not on PATH (apt-get install prometheus-alertmanager); .ci/run installs it")
	}
	return startAlertmanager(t, bin)
}

// startAlertmanager starts bin as .ci/run does: on a free port of
// 127.0.0.1, with a throwaway config and storage and no cluster gossip. It
// is stopped when the test ends. A port lost between choosing and binding it
// makes Alertmanager exit; then it tries another.
func startAlertmanager(t *testing.T, bin string) string {
	t.Helper()
	dir := t.TempDir() // removed after the cleanup below has stopped it
	config := filepath.Join(dir, "alertmanager.yml")
	if err := os.WriteFile(config, []byte("route:\n  receiver: blackhole\nreceivers:\n  - name: blackhole\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var lastErr error
	for attempt := 1; attempt <= 3; attempt++ {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := l.Addr().String()
		l.Close()
		logPath := filepath.Join(dir, fmt.Sprintf("alertmanager-%d.log", attempt))
		logFile, err := os.Create(logPath)
		if err != nil {
			t.Fatal(err)
		}
		// A backstop: the cleanup stops it long before.
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
		cmd := exec.CommandContext(ctx, bin,
			"--config.file="+config,
			"--storage.path="+filepath.Join(dir, "data"),
			"--web.listen-address="+addr,
			"--cluster.listen-address=",
		)
		cmd.Stdout, cmd.Stderr = logFile, logFile
		cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
		cmd.WaitDelay = 5 * time.Second
		if err := cmd.Start(); err != nil {
			cancel()
			logFile.Close()
			t.Fatalf("starting %s: %v", bin, err)
		}
		exited := make(chan struct{})
		go func() {
			cmd.Wait()
			logFile.Close()
			close(exited)
		}()
		stop := func() {
			cancel()
			<-exited
		}
		u := "http://" + addr
		err = waitReady(u, 30*time.Second, exited)
		if err == nil {
			t.Cleanup(stop)
			return u
		}
		exitedEarly := false
		select {
		case <-exited:
			exitedEarly = true
		default:
		}
		stop()
		log, _ := os.ReadFile(logPath)
		lastErr = fmt.Errorf("%s on %s: %v; its log:\n%s", bin, addr, err, log)
		if !exitedEarly || !bytes.Contains(log, []byte("address already in use")) {
			break
		}
		t.Logf("attempt %d: %v", attempt, lastErr) // the port was taken meanwhile
	}
	t.Fatal(lastErr)
	return ""
}

// waitReady polls base's /-/ready until it answers 200, for up to timeout or
// until exited (if not nil) closes.
func waitReady(base string, timeout time.Duration, exited <-chan struct{}) error {
	client := &http.Client{Timeout: 2 * time.Second}
	deadline := time.Now().Add(timeout)
	var last error
	for {
		_, err := httpGet(client, base+"/-/ready")
		if err == nil {
			return nil
		}
		last = err
		select {
		case <-exited:
			return fmt.Errorf("exited before /-/ready answered 200 (last: %v)", last)
		default:
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("/-/ready did not answer 200 within %v (last: %v)", timeout, last)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

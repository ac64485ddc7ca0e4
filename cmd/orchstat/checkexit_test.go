package main

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// check exits 2 (CRITICAL) only for a critical alert: a mistyped flag, a
// bad value or a path that is not there is UNKNOWN (3), as
// docs/exit-codes.md says. Before, usage errors exited 2, and a mistyped
// path with --no-ingest printed OK.
func TestCheckFailuresAreUnknown(t *testing.T) {
	endToEnd(t, "runs check as a real process")
	db := bundledStore(t)
	for _, tc := range []struct {
		args []string
		want int
		says string
	}{
		{[]string{"check", "--bogus"}, checkUnknown, "unknown flag"},
		{[]string{"check", "--format", "xml"}, checkUnknown, "xml"},
		{[]string{"check", "--lock-timeout", "abc"}, checkUnknown, "abc"},
		{[]string{"check", "--no-ingest", "/nonexistent/path"}, checkUnknown, "/nonexistent/path: no such file or directory"},
		{[]string{"report", "--no-ingest", "/nonexistent/path"}, exitError, "/nonexistent/path: no such file or directory"},
		{[]string{"report", "--bogus"}, exitUsage, "unknown flag"},
	} {
		code, _, stderr := runCLI(t, "", append(tc.args, "--db", db)...)
		if code != tc.want || !strings.Contains(stderr, tc.says) {
			t.Errorf("%v: exit %d, want %d; stderr %s", tc.args, code, tc.want, stderr)
		}
	}
}

// A check whose worker is SIGKILLed (the out-of-memory killer), or whose
// supervisor gets SIGQUIT, is UNKNOWN with a word on stderr. Before, the
// first exited 137 saying nothing, and the second 2 with a Go dump.
func TestCheckKilledIsUnknown(t *testing.T) {
	if testing.Short() {
		t.Skip("runs real processes; go test ./... runs it (skipped under -short)")
	}
	for _, tc := range []struct {
		name   string
		worker bool
		sig    syscall.Signal
		says   string
	}{
		{"worker SIGKILL", true, syscall.SIGKILL, "orchstat check was killed (SIGKILL"},
		{"supervisor SIGQUIT", false, syscall.SIGQUIT, "internal error: orchstat check crashed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			db := filepath.Join(t.TempDir(), "orchstat.duckdb")
			cmd, child, stdin, stderr := startWaiting(t, db, "check")
			defer stdin.Close()
			target := cmd.Process.Pid
			if tc.worker {
				target = child
			}
			if err := syscall.Kill(target, tc.sig); err != nil {
				t.Fatal(err)
			}
			if got := exitCode(t, cmd); got != checkUnknown || !strings.Contains(stderr.String(), tc.says) {
				t.Fatalf("exit %d, want %d; stderr:\n%s", got, checkUnknown, stderr)
			}
		})
	}
}

// A rule whose annotation template fails on sample data is a warning, not
// a reason to refuse the file: the critical rule beside it is evaluated
// and fires (exit 2). Before, check refused the whole file and exited 3.
func TestCheckKeepsRulesBesideABadTemplate(t *testing.T) {
	dir := t.TempDir()
	rulesFile := filepath.Join(dir, "alerts.yaml")
	doc := `rules:
  - name: odd_template
    metric: provider_retry_rate
    by: [provider]
    window: last 20 runs
    condition: value > 0.2
    annotations:
      summary: '{{ index .Labels.provider 99 }}'
  - name: always
    sql: SELECT 1 AS value
    condition: value > 0
    severity: critical
`
	if err := os.WriteFile(rulesFile, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	db := filepath.Join(dir, "s.duckdb")
	code, out, stderr := runCLI(t, "", "check", "--db", db, "--rules", rulesFile, "../../testdata/runs")
	if code != checkCritical || !strings.Contains(out, "always") {
		t.Errorf("exit %d, want %d; stdout:\n%s\nstderr:\n%s", code, checkCritical, out, stderr)
	}
	code, out, stderr = runCLI(t, "", "rules", "check", rulesFile)
	if code != 0 || !strings.Contains(stderr, "warning: rule \"odd_template\"") {
		t.Errorf("rules check: exit %d; stdout %s; stderr %s", code, out, stderr)
	}
}

// A rule whose own query runs on is that rule's error once its timeout
// passes, and the others are evaluated; the store's lock is released.
// Before, check never returned, and every later ingest, report and check
// gave up on the lock.
func TestCheckSlowSQLRuleTimesOut(t *testing.T) {
	endToEnd(t, "runs check as a real process")
	dir := t.TempDir()
	rulesFile := filepath.Join(dir, "alerts.yaml")
	doc := `rules:
  - name: forever
    sql: SELECT count(*) AS value FROM range(1000000000000) a
    condition: value > 0
    timeout: 500ms
  - name: always
    sql: SELECT 1 AS value
    condition: value > 0
    severity: critical
`
	if err := os.WriteFile(rulesFile, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	db := filepath.Join(dir, "s.duckdb")
	code, out, stderr := runCLI(t, "", "check", "--db", db, "--rules", rulesFile, "../../testdata/runs")
	if code != checkCritical || !strings.Contains(out+stderr, "ran past its timeout of 500ms") || !strings.Contains(out, "always") {
		t.Errorf("exit %d, want %d; stdout:\n%s\nstderr:\n%s", code, checkCritical, out, stderr)
	}
	if code, _, stderr := runCLI(t, "", "report", "-q", "--no-ingest", "--db", db, "--lock-timeout", "1s"); code != 0 {
		t.Errorf("the store stayed locked: %d %s", code, stderr)
	}
	if code, _, stderr := runCLI(t, "", "rules", "check", rulesFile); code != 0 {
		t.Errorf("rules check: %d %s", code, stderr)
	}
}

// While one check is stuck delivering to a receiver that never answers,
// a check with nothing of its own to send evaluates, prints its table and
// exits by its alerts, leaving the queue to the first. Before, it waited
// out --lock-timeout and exited 3 with no table.
func TestCheckDoesNotWaitForAnothersDelivery(t *testing.T) {
	endToEnd(t, "runs check as a real process")
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var conns []net.Conn
	var mu sync.Mutex
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c) // read nothing, answer nothing
			mu.Unlock()
		}
	}()
	defer func() {
		ln.Close()
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
	}()
	dir := t.TempDir()
	always := "rules:\n  - name: always\n    sql: SELECT 1 AS value\n    condition: value > 0\n    severity: critical\n"
	withHook := filepath.Join(dir, "hook.yaml")
	os.WriteFile(withHook, []byte(always+fmt.Sprintf("receivers:\n  - name: hook\n    webhook: {url: %q, timeout: 60s}\nroute:\n  receiver: hook\n", "http://"+ln.Addr().String())), 0o644)
	alone := filepath.Join(dir, "alone.yaml")
	os.WriteFile(alone, []byte(always), 0o644)
	db := filepath.Join(dir, "s.duckdb")
	runs := "../../testdata/runs"
	if code, _, stderr := runCLI(t, "", "ingest", "-q", "--db", db, runs); code != 0 {
		t.Fatalf("ingest: %d %s", code, stderr)
	}
	first := make(chan int, 1)
	go func() {
		code, _, _ := runCLI(t, "", "check", "--db", db, "--no-ingest", "--rules", withHook, runs)
		first <- code
	}()
	deadline := time.Now().Add(60 * time.Second)
	for {
		if b, _ := os.ReadFile(db + ".deliver.lock"); len(b) > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the first check never started delivering")
		}
		time.Sleep(10 * time.Millisecond)
	}
	code, out, stderr := runCLI(t, "", "check", "--db", db, "--no-ingest", "--lock-timeout", "3s", "--rules", alone, runs)
	if code != checkCritical || !strings.Contains(out, "always") || !strings.Contains(stderr, "notifications are being delivered") {
		t.Errorf("exit %d, want %d; stdout:\n%s\nstderr:\n%s", code, checkCritical, out, stderr)
	}
	ln.Close()
	mu.Lock()
	for _, c := range conns {
		c.Close()
	}
	conns = nil
	mu.Unlock()
	<-first
}

// -q says nothing of waiting for the store's lock, which cron would mail;
// without it the wait is said. Both give up naming the holder.
func TestQuietWaitsQuietly(t *testing.T) {
	if testing.Short() {
		t.Skip("runs real processes; go test ./... runs it (skipped under -short)")
	}
	db := bundledStore(t)
	_, release := holdLock(t, db)
	defer release()
	_, _, loud := runCLI(t, "", "ingest", "--db", db, "--lock-timeout", "300ms", "../../testdata/runs")
	_, _, quiet := runCLI(t, "", "ingest", "-q", "--db", db, "--lock-timeout", "300ms", "../../testdata/runs")
	if !strings.Contains(loud, "waiting for") || strings.Contains(quiet, "waiting for") || quiet == "" {
		t.Errorf("without -q:\n%s\nwith -q:\n%s", loud, quiet)
	}
}

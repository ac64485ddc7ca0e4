package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// receiving runs `orchstat receive` with args until the test ends, and
// returns its first lines' folder and OTLP/HTTP address, and a stop that
// cancels it (as SIGTERM does) and returns what it printed last.
func receiving(t *testing.T, args ...string) (dir, addr string, stop func() string) {
	t.Helper()
	pr, pw := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	var errb bytes.Buffer
	done := make(chan int, 1)
	go func() {
		code := run(ctx, append([]string{"receive"}, args...), &IO{In: strings.NewReader(""), Out: pw, Err: &errb, Now: time.Now})
		pw.Close()
		done <- code
	}()
	sc := bufio.NewScanner(pr)
	for sc.Scan() {
		line := sc.Text()
		if d, ok := strings.CutPrefix(line, "orchstat receive: writing to "); ok {
			dir = d
		}
		if a, ok := strings.CutPrefix(line, "OTLP/HTTP on http://"); ok {
			addr, _, _ = strings.Cut(a, " ")
			break
		}
	}
	if addr == "" {
		t.Fatalf("receive did not say where it listens: %s", errb.String())
	}
	var rest bytes.Buffer
	copied := make(chan struct{})
	go func() { io.Copy(&rest, pr); close(copied) }()
	stopped := false
	stop = func() string {
		if !stopped {
			stopped = true
			cancel()
			if code := <-done; code != 0 {
				t.Errorf("receive exited %d: %s", code, errb.String())
			}
			<-copied
		}
		return rest.String()
	}
	t.Cleanup(func() { stop() })
	return dir, addr, stop
}

// TestReceiveThenReport: Claude Code's events, sent to `orchstat receive`
// a request per line, report the same calls, attempts and cost as the
// file they came from; the metrics sent beside them are kept in their
// file and said not to be counted; SIGTERM ends it with what it took.
func TestReceiveThenReport(t *testing.T) {
	endToEnd(t, "runs orchstat against a real store")
	t.Parallel()
	tmp := t.TempDir()
	dir, addr, stop := receiving(t, "--dir", filepath.Join(tmp, "otlp"), "--http", "127.0.0.1:0", "--grpc", "")
	if dir != filepath.Join(tmp, "otlp") {
		t.Errorf("first line names %q", dir)
	}
	src := "../../ingest/otlp/testdata/claude_code_events.jsonl"
	data, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		resp, err := http.Post("http://"+addr+"/v1/logs", "application/json", strings.NewReader(line))
		if err != nil || resp.StatusCode != 200 {
			t.Fatalf("posting a line: %v %v", resp, err)
		}
		resp.Body.Close()
	}
	metrics := `{"resourceMetrics":[{"scopeMetrics":[{"metrics":[{"name":"claude_code.token.usage","sum":{"dataPoints":[{"asInt":"1200"}],"aggregationTemporality":1,"isMonotonic":true}}]}]}]}`
	resp, err := http.Post("http://"+addr+"/v1/metrics", "application/json", strings.NewReader(metrics))
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("posting metrics: %v %v", resp, err)
	}
	resp.Body.Close()
	if last := stop(); !strings.Contains(last, "requests taken (") || !strings.Contains(last, "1 metric points") {
		t.Errorf("on stopping: %q", last)
	}

	summary := func(path string) (string, string) {
		t.Helper()
		code, out, errs := runCLI(t, "", "report", "--db", filepath.Join(t.TempDir(), "s.duckdb"), path, "--format", "json")
		if code != 0 {
			t.Fatalf("report %s: exit %d: %s", path, code, errs)
		}
		var r struct {
			Calls   json.RawMessage `json:"calls"`
			Systems json.RawMessage `json:"systems"`
		}
		if err := json.Unmarshal([]byte(out), &r); err != nil {
			t.Fatal(err)
		}
		return string(r.Calls) + string(r.Systems), errs
	}
	fromReceiver, errs := summary(dir)
	fromFile, _ := summary(src)
	if fromReceiver != fromFile || len(fromFile) < 10 {
		t.Errorf("received:\n%s\nthe file:\n%s", fromReceiver, fromFile)
	}
	if !strings.Contains(errs, "1 lines of OpenTelemetry metrics, kept in their files but not counted") {
		t.Errorf("the report does not say the metrics are not counted: %q", errs)
	}
}

// TestReceiveRefusesAnOpenAddressWithoutAToken: listening beyond loopback
// needs --token, and says so, with usage's exit status.
func TestReceiveRefusesAnOpenAddressWithoutAToken(t *testing.T) {
	t.Parallel()
	code, _, stderr := runCLI(t, "", "receive", "--dir", t.TempDir(), "--http", "0.0.0.0:0", "--grpc", "")
	if code != 2 || !strings.Contains(stderr, "listens beyond loopback: give a --token") {
		t.Errorf("exit %d: %s", code, stderr)
	}
}

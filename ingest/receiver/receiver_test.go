package receiver

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/plog/plogotlp"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlplog/otlploggrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlplog/otlploghttp"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetricgrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetrichttp"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	otellog "go.opentelemetry.io/otel/log"
	sdklog "go.opentelemetry.io/otel/sdk/log"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/orchstat/orchstat/ingest/otlp"
)

// start serves a receiver on loopback ports for the test, writing under
// a new folder, and stops it when the test ends.
func start(t *testing.T, cfg Config) *Receiver {
	t.Helper()
	if cfg.Dir == "" {
		cfg.Dir = t.TempDir()
	}
	if cfg.HTTPAddr == "" {
		cfg.HTTPAddr = "127.0.0.1:0"
	}
	if cfg.GRPCAddr == "" {
		cfg.GRPCAddr = "127.0.0.1:0"
	}
	r, err := Listen(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.Serve(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("serve: %v", err)
		}
	})
	return r
}

// written reads every line the receiver wrote under dir, by signal.
func written(t *testing.T, dir string) map[string][]string {
	t.Helper()
	names, err := filepath.Glob(filepath.Join(dir, "*.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]string{}
	for _, n := range names {
		b, err := os.ReadFile(n)
		if err != nil {
			t.Fatal(err)
		}
		if len(b) > 0 && b[len(b)-1] != '\n' {
			t.Errorf("%s ends without a newline", n)
		}
		sig, _, _ := strings.Cut(filepath.Base(n), "-")
		for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
			if l != "" {
				out[sig] = append(out[sig], l)
			}
		}
	}
	return out
}

// TestSDKExporters: the OpenTelemetry Go SDK's own OTLP exporters, over
// HTTP (protobuf, gzip) and gRPC (gzip), send a span, a log record and a
// metric each; all are answered OK and written in the file exporter's
// format, which ingest's OTLP reader reads back: two spans, two log
// records, two metric lines.
func TestSDKExporters(t *testing.T) {
	r := start(t, Config{})
	ctx := context.Background()

	th, err := otlptracehttp.New(ctx, otlptracehttp.WithEndpoint(r.HTTP), otlptracehttp.WithInsecure(),
		otlptracehttp.WithCompression(otlptracehttp.GzipCompression))
	if err != nil {
		t.Fatal(err)
	}
	tg, err := otlptracegrpc.New(ctx, otlptracegrpc.WithEndpoint(r.GRPC), otlptracegrpc.WithInsecure(),
		otlptracegrpc.WithCompressor("gzip"))
	if err != nil {
		t.Fatal(err)
	}
	for _, exp := range []sdktrace.SpanExporter{th, tg} {
		tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
		_, span := tp.Tracer("test").Start(ctx, "chat claude-sonnet")
		span.End()
		if err := tp.Shutdown(ctx); err != nil {
			t.Fatalf("trace export: %v", err)
		}
	}

	lh, err := otlploghttp.New(ctx, otlploghttp.WithEndpoint(r.HTTP), otlploghttp.WithInsecure(),
		otlploghttp.WithCompression(otlploghttp.GzipCompression))
	if err != nil {
		t.Fatal(err)
	}
	lg, err := otlploggrpc.New(ctx, otlploggrpc.WithEndpoint(r.GRPC), otlploggrpc.WithInsecure(),
		otlploggrpc.WithCompressor("gzip"))
	if err != nil {
		t.Fatal(err)
	}
	for _, exp := range []sdklog.Exporter{lh, lg} {
		lp := sdklog.NewLoggerProvider(sdklog.WithProcessor(sdklog.NewSimpleProcessor(exp)))
		var rec otellog.Record
		rec.SetEventName("claude_code.api_request")
		rec.SetBody(attribute.StringValue("claude_code.api_request"))
		rec.SetTimestamp(time.Date(2026, 11, 29, 4, 0, 0, 0, time.UTC))
		lp.Logger("test").Emit(ctx, rec)
		if err := lp.Shutdown(ctx); err != nil {
			t.Fatalf("log export: %v", err)
		}
	}

	mh, err := otlpmetrichttp.New(ctx, otlpmetrichttp.WithEndpoint(r.HTTP), otlpmetrichttp.WithInsecure(),
		otlpmetrichttp.WithCompression(otlpmetrichttp.GzipCompression))
	if err != nil {
		t.Fatal(err)
	}
	mg, err := otlpmetricgrpc.New(ctx, otlpmetricgrpc.WithEndpoint(r.GRPC), otlpmetricgrpc.WithInsecure(),
		otlpmetricgrpc.WithCompressor("gzip"))
	if err != nil {
		t.Fatal(err)
	}
	for _, exp := range []sdkmetric.Exporter{mh, mg} {
		mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewPeriodicReader(exp)))
		c, _ := mp.Meter("test").Int64Counter("claude_code.token.usage")
		c.Add(ctx, 42)
		if err := mp.Shutdown(ctx); err != nil {
			t.Fatalf("metric export: %v", err)
		}
	}

	got := written(t, r.cfg.Dir)
	if len(got["traces"]) != 2 || len(got["logs"]) != 2 || len(got["metrics"]) != 2 {
		t.Fatalf("lines written: %d traces, %d logs, %d metrics; want 2 each", len(got["traces"]), len(got["logs"]), len(got["metrics"]))
	}
	if r.Stats.Spans.Load() != 2 || r.Stats.Logs.Load() != 2 || r.Stats.Points.Load() != 2 || r.Stats.Refused.Load() != 0 {
		t.Errorf("stats: %d spans, %d logs, %d points, %d refused", r.Stats.Spans.Load(), r.Stats.Logs.Load(), r.Stats.Points.Load(), r.Stats.Refused.Load())
	}
	// ingest's reader takes every line as OTLP JSON.
	for sig, lines := range got {
		for _, l := range lines {
			if !otlp.Sniff([]byte(l)) {
				t.Errorf("%s line not read as OTLP: %.200s", sig, l)
			}
		}
	}
}

// post sends body to the receiver's path with the headers given, and
// returns the status, headers and body of the answer.
func post(t *testing.T, url string, body []byte, headers ...string) (int, http.Header, []byte) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, b
}

// logsJSON is an OTLP/JSON logs request with n records, each body
// "record i" padded to size bytes.
func logsJSON(t *testing.T, n, size int) []byte {
	t.Helper()
	ld := plog.NewLogs()
	sl := ld.ResourceLogs().AppendEmpty().ScopeLogs().AppendEmpty()
	for i := range n {
		body := fmt.Sprintf("record %d", i)
		if len(body) < size {
			body += strings.Repeat("x", size-len(body))
		}
		sl.LogRecords().AppendEmpty().Body().SetStr(body)
	}
	b, err := plogotlp.NewExportRequestFromLogs(ld).MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func gz(t *testing.T, b []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	w := gzip.NewWriter(&buf)
	w.Write(b)
	w.Close()
	return buf.Bytes()
}

// TestHTTPStatuses: each answer the OTLP/HTTP specification gives, in the
// request's encoding: JSON taken; a gzip body; a bad payload 400 with a
// Status body; past the limit (counted after decompression) 413; another
// content type 415; and the token.
func TestHTTPStatuses(t *testing.T) {
	r := start(t, Config{MaxBody: 4096, Token: "s3cret"})
	url := "http://" + r.HTTP + "/v1/logs"
	auth := []string{"Authorization", "Bearer s3cret"}
	js := append([]string{"Content-Type", "application/json"}, auth...)

	code, h, body := post(t, url, logsJSON(t, 3, 10), js...)
	if code != 200 || h.Get("Content-Type") != "application/json" || !json.Valid(body) {
		t.Errorf("JSON: %d %q %s", code, h.Get("Content-Type"), body)
	}
	code, _, _ = post(t, url, gz(t, logsJSON(t, 2, 10)), append(js, "Content-Encoding", "gzip")...)
	if code != 200 {
		t.Errorf("gzip JSON: %d", code)
	}
	code, h, body = post(t, url, []byte(`{"resourceLogs":[{`), js...)
	var st struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	}
	if code != 400 || json.Unmarshal(body, &st) != nil || st.Code != 3 || !strings.Contains(st.Message, "not an OTLP logs export request") {
		t.Errorf("bad payload: %d %s", code, body)
	}
	// 4 KiB of records gzip to far less than the limit, but not after.
	big := logsJSON(t, 8, 1000)
	code, _, body = post(t, url, gz(t, big), append(js, "Content-Encoding", "gzip")...)
	if code != 413 || !strings.Contains(string(body), "after decompression") {
		t.Errorf("oversized gzip body: %d %s", code, body)
	}
	code, _, _ = post(t, url, big, js...)
	if code != 413 {
		t.Errorf("oversized body: %d", code)
	}
	code, _, _ = post(t, url, []byte("x"), append([]string{"Content-Type", "text/plain"}, auth...)...)
	if code != 415 {
		t.Errorf("text/plain: %d", code)
	}
	code, h, _ = post(t, url, logsJSON(t, 1, 10), "Content-Type", "application/json")
	if code != 401 || h.Get("WWW-Authenticate") != "Bearer" {
		t.Errorf("no token: %d", code)
	}
	code, _, _ = post(t, url, logsJSON(t, 1, 10), "Content-Type", "application/json", "Authorization", "Bearer wrong")
	if code != 401 {
		t.Errorf("a wrong token: %d", code)
	}
	// protobuf in, protobuf out.
	pb, _ := plogotlp.NewExportRequestFromLogs(plog.NewLogs()).MarshalProto()
	code, h, _ = post(t, url, pb, append([]string{"Content-Type", "application/x-protobuf"}, auth...)...)
	if code != 200 || h.Get("Content-Type") != "application/x-protobuf" {
		t.Errorf("protobuf: %d %q", code, h.Get("Content-Type"))
	}
	if got := written(t, r.cfg.Dir)["logs"]; len(got) != 2 {
		t.Errorf("%d lines written, want the two requests taken", len(got))
	}

	// gRPC: the token, and gRPC's own limit.
	conn, err := grpc.NewClient(r.GRPC, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	client := plogotlp.NewGRPCClient(conn)
	req := plogotlp.NewExportRequest()
	_ = req.UnmarshalJSON(logsJSON(t, 1, 10))
	if _, err := client.Export(context.Background(), req); status.Code(err) != codes.Unauthenticated {
		t.Errorf("gRPC without a token: %v", err)
	}
	ctx := metadata.AppendToOutgoingContext(context.Background(), "authorization", "Bearer s3cret")
	if _, err := client.Export(ctx, req); err != nil {
		t.Errorf("gRPC with the token: %v", err)
	}
	_ = req.UnmarshalJSON(big)
	if _, err := client.Export(ctx, req); status.Code(err) != codes.ResourceExhausted {
		t.Errorf("gRPC over the limit: %v", err)
	}
}

// TestListenBeyondLoopbackNeedsAToken: an address beyond loopback without
// a token is refused before anything listens.
func TestListenBeyondLoopbackNeedsAToken(t *testing.T) {
	for _, addr := range []string{"0.0.0.0:0", ":0"} {
		_, err := Listen(Config{HTTPAddr: addr, Dir: t.TempDir()})
		if !errors.Is(err, ErrOpen) || !strings.Contains(err.Error(), "give a --token") {
			t.Errorf("%s: %v", addr, err)
		}
	}
	for _, addr := range []string{"127.0.0.1:0", "localhost:0", "[::1]:0"} {
		if !Loopback(addr) {
			t.Errorf("%s is loopback", addr)
		}
	}
}

// TestPartialSuccess: a resource whose records make a line longer than
// ingest reads is rejected, counted in the partial success with why; the
// other resources of the request are written.
func TestPartialSuccess(t *testing.T) {
	ld := plog.NewLogs()
	ld.ResourceLogs().AppendEmpty().ScopeLogs().AppendEmpty().LogRecords().AppendEmpty().Body().SetStr("small")
	sl := ld.ResourceLogs().AppendEmpty().ScopeLogs().AppendEmpty()
	huge := strings.Repeat("y", 9<<20)
	for range 8 {
		sl.LogRecords().AppendEmpty().Body().SetStr(huge)
	}
	lines, items, rejected, why, err := logsPayload{plogotlp.NewExportRequestFromLogs(ld)}.lines()
	if err != nil || len(lines) != 1 || items != 9 || rejected != 8 || !strings.Contains(why, "longer than ingest reads") {
		t.Fatalf("%d lines, %d items, %d rejected, %q, %v", len(lines), items, rejected, why, err)
	}
	b, _ := logsPayload{}.response(rejected, why, true)
	if !strings.Contains(string(b), `"rejectedLogRecords":"8"`) {
		t.Errorf("response %s", b)
	}
}

// TestBusy: when the writer is behind by a whole queue, a request is
// refused with 429 and Retry-After rather than waiting unbounded.
func TestBusy(t *testing.T) {
	s := &spool{reqs: make(chan *write, 1)} // no writer: nothing leaves the queue
	s.reqs <- &write{}
	if err := s.append("logs", nil); err != ErrBusy {
		t.Fatalf("a full queue: %v", err)
	}
	r := &Receiver{cfg: Config{MaxBody: 1 << 20, Logf: func(string, ...any) {}}, spool: s}
	rec := &responseRecorder{header: http.Header{}}
	req, _ := http.NewRequest(http.MethodPost, "/v1/logs", bytes.NewReader(logsJSON(t, 1, 1)))
	req.Header.Set("Content-Type", "application/json")
	r.httpHandler(signalNamed("logs")).ServeHTTP(rec, req)
	if rec.code != 429 || rec.header.Get("Retry-After") == "" {
		t.Errorf("%d, Retry-After %q", rec.code, rec.header.Get("Retry-After"))
	}
}

type responseRecorder struct {
	header http.Header
	code   int
	body   bytes.Buffer
}

func (r *responseRecorder) Header() http.Header         { return r.header }
func (r *responseRecorder) WriteHeader(code int)        { r.code = code }
func (r *responseRecorder) Write(b []byte) (int, error) { return r.body.Write(b) }

// TestRotation: a new file past the size to rotate at, and on a new day
// (UTC), each named for when it was opened.
func TestRotation(t *testing.T) {
	dir := t.TempDir()
	now := time.Date(2026, 11, 29, 23, 59, 0, 0, time.UTC)
	var mu sync.Mutex
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	s, err := openSpool(dir, clock, 100)
	if err != nil {
		t.Fatal(err)
	}
	line := []byte(`{"resourceLogs":[]}`) // 19 bytes and a newline
	for range 6 {                         // 120 bytes: the sixth line goes to a new file
		if err := s.append("logs", [][]byte{line}); err != nil {
			t.Fatal(err)
		}
	}
	mu.Lock()
	now = now.Add(2 * time.Minute) // the next day
	mu.Unlock()
	if err := s.append("logs", [][]byte{line}); err != nil {
		t.Fatal(err)
	}
	s.close()
	names, _ := filepath.Glob(filepath.Join(dir, "*.jsonl"))
	var got []string
	for _, n := range names {
		got = append(got, filepath.Base(n))
	}
	want := "logs-20261129T235900Z-1.jsonl logs-20261129T235900Z.jsonl logs-20261130T000100Z.jsonl"
	if strings.Join(got, " ") != want {
		t.Errorf("files %v, want %s", got, want)
	}
}

// TestMendTail: a line a crash left without its newline, never
// acknowledged, is cut off when the receiver starts again.
func TestMendTail(t *testing.T) {
	dir := t.TempDir()
	name := filepath.Join(dir, "logs-20261129T000000Z.jsonl")
	os.WriteFile(name, []byte("{\"a\":1}\n{\"b\":2}\n{\"c\":"), 0o600)
	s, err := openSpool(dir, time.Now, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	s.close()
	if b, _ := os.ReadFile(name); string(b) != "{\"a\":1}\n{\"b\":2}\n" {
		t.Errorf("after mending: %q", b)
	}
}

// smallDisk mounts a tmpfs of size bytes for the test (as
// cmd/orchstat's full-disk tests do): root only, and CI, as root, sets
// ORCHSTAT_REQUIRE_TMPFS=1 so it cannot skip there.
func smallDisk(t *testing.T, size int64) string {
	t.Helper()
	dir := t.TempDir()
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, fmt.Sprintf("size=%d", size)); err != nil {
		if os.Getenv("ORCHSTAT_REQUIRE_TMPFS") == "1" {
			t.Fatalf("mounting a tmpfs: %v", err)
		}
		t.Skipf("mounting a tmpfs needs root: %v", err)
	}
	t.Cleanup(func() { syscall.Unmount(dir, syscall.MNT_DETACH) })
	return dir
}

// TestFullDisk: on a full disk a request is refused with 503 and
// Retry-After, the file keeps only whole lines, and once there is room
// the same request is taken.
func TestFullDisk(t *testing.T) {
	dir := smallDisk(t, 256<<10)
	r := start(t, Config{Dir: filepath.Join(dir, "otlp")})
	url := "http://" + r.HTTP + "/v1/logs"
	js := []string{"Content-Type", "application/json"}
	if code, _, _ := post(t, url, logsJSON(t, 1, 10), js...); code != 200 {
		t.Fatalf("first request: %d", code)
	}
	filler := filepath.Join(dir, "filler")
	f, _ := os.Create(filler)
	for {
		if _, err := f.Write(make([]byte, 4096)); err != nil {
			break
		}
	}
	f.Close()
	body := logsJSON(t, 20, 2000) // 40 KB: more than any block left
	code, h, resp := post(t, url, body, js...)
	if code != 503 || h.Get("Retry-After") == "" || !strings.Contains(string(resp), "disk is full") {
		t.Fatalf("on a full disk: %d %q %s", code, h.Get("Retry-After"), resp)
	}
	if got := written(t, r.cfg.Dir)["logs"]; len(got) != 1 {
		t.Fatalf("%d lines after the refusal, want the first alone", len(got))
	}
	os.Remove(filler)
	if code, _, _ := post(t, url, body, js...); code != 200 {
		t.Errorf("with room again: %d", code)
	}
	if got := written(t, r.cfg.Dir)["logs"]; len(got) != 2 {
		t.Errorf("%d lines, want 2", len(got))
	}
}

// TestKill9 runs a receiver in a child process (this test binary again),
// sends it requests from several clients at once, and kills it with
// SIGKILL while they are in flight: every record it acknowledged is in
// its files, once, and a receiver started again on the folder takes
// requests, with no torn line left.
func TestKill9(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes; go test ./... runs it (skipped under -short)")
	}
	dir := t.TempDir()
	child := func() (*os.Process, string) {
		cmd := exec(t, dir)
		return cmd.proc, cmd.addr
	}
	proc, addr := child()
	url := "http://" + addr + "/v1/logs"
	var mu sync.Mutex
	acked := map[string]bool{}
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for c := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				id := fmt.Sprintf("c%d-%d", c, i)
				ld := plog.NewLogs()
				ld.ResourceLogs().AppendEmpty().ScopeLogs().AppendEmpty().LogRecords().AppendEmpty().Body().SetStr(id)
				b, _ := plogotlp.NewExportRequestFromLogs(ld).MarshalJSON()
				resp, err := http.Post(url, "application/json", bytes.NewReader(b))
				if err != nil {
					return // the receiver is gone
				}
				resp.Body.Close()
				if resp.StatusCode == 200 {
					mu.Lock()
					acked[id] = true
					mu.Unlock()
				}
			}
		}()
	}
	// Killed once enough requests were acknowledged, whatever the
	// machine's load: the test checks that an acknowledgement comes after
	// the write, not durability past the page cache (kill -9 keeps it).
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		mu.Lock()
		n := len(acked)
		mu.Unlock()
		if n >= 50 {
			break
		}
	}
	if err := proc.Kill(); err != nil {
		t.Fatal(err)
	}
	_, _ = proc.Wait()
	close(stop)
	wg.Wait()
	if len(acked) == 0 {
		t.Fatal("no request acknowledged before the kill")
	}
	seen := map[string]int{}
	for _, l := range written(t, dir)["logs"] {
		for id := range acked {
			if strings.Contains(l, `"`+id+`"`) {
				seen[id]++
			}
		}
	}
	for id := range acked {
		if seen[id] != 1 {
			t.Errorf("%s acknowledged, written %d times", id, seen[id])
		}
	}
	t.Logf("%d requests acknowledged before kill -9, all on disk", len(acked))

	proc, addr = child()
	defer func() { proc.Kill(); proc.Wait() }()
	resp, err := http.Post("http://"+addr+"/v1/logs", "application/json", bytes.NewReader(logsJSON(t, 1, 1)))
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("after a restart: %v %v", resp, err)
	}
	resp.Body.Close()
	for _, n := range mustGlob(t, dir) {
		b, _ := os.ReadFile(n)
		for i, l := range strings.Split(strings.TrimSuffix(string(b), "\n"), "\n") {
			if !json.Valid([]byte(l)) {
				t.Errorf("%s:%d is not a whole line: %.80s", n, i+1, l)
			}
		}
	}
}

func mustGlob(t *testing.T, dir string) []string {
	t.Helper()
	n, err := filepath.Glob(filepath.Join(dir, "*.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	return n
}

type childReceiver struct {
	proc *os.Process
	addr string
}

// exec starts this test binary as a receiver on dir (TestMain) and reads
// its address from its first line.
func exec(t *testing.T, dir string) childReceiver {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	pr, pw, _ := os.Pipe()
	proc, err := os.StartProcess(self, []string{self, "-test.run=^$"}, &os.ProcAttr{
		Env:   append(os.Environ(), "RECEIVER_CHILD_DIR="+dir),
		Files: []*os.File{nil, pw, os.Stderr},
	})
	pw.Close()
	if err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(pr).ReadString('\n')
	if err != nil {
		proc.Kill()
		t.Fatalf("the child said nothing: %v", err)
	}
	return childReceiver{proc, strings.TrimSpace(line)}
}

func TestMain(m *testing.M) {
	if dir := os.Getenv("RECEIVER_CHILD_DIR"); dir != "" {
		r, err := Listen(Config{HTTPAddr: "127.0.0.1:0", Dir: dir})
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
		fmt.Println(r.HTTP)
		if err := r.Serve(context.Background()); err != nil && !errors.Is(err, context.Canceled) {
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// TestRotationWithinABatch: a file rotated away from in the middle of a
// batch is synced with the batch before it is closed, so every request of
// the batch is acknowledged and on disk.
func TestRotationWithinABatch(t *testing.T) {
	dir := t.TempDir()
	s, err := openSpool(dir, func() time.Time { return time.Date(2026, 11, 29, 0, 0, 0, 0, time.UTC) }, 1)
	if err != nil {
		t.Fatal(err)
	}
	line := []byte(`{"resourceLogs":[]}`)
	batch := []*write{{signal: "logs", lines: [][]byte{line}, done: make(chan error, 1)},
		{signal: "logs", lines: [][]byte{line}, done: make(chan error, 1)}}
	s.writeBatch(batch)
	for i, w := range batch {
		if err := <-w.done; err != nil {
			t.Errorf("write %d: %v", i, err)
		}
	}
	s.close()
	if got := written(t, dir)["logs"]; len(got) != 2 {
		t.Errorf("%d lines, want 2", len(got))
	}
}

// TestOneReceiverPerFolder: a second receiver on a folder another writes
// is refused before it touches a file.
func TestOneReceiverPerFolder(t *testing.T) {
	r := start(t, Config{})
	_, err := Listen(Config{HTTPAddr: "127.0.0.1:0", Dir: r.cfg.Dir})
	if err == nil || !strings.Contains(err.Error(), "another orchstat receive writes there") {
		t.Errorf("a second receiver: %v", err)
	}
}

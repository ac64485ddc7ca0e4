package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"

	"github.com/spf13/cobra"

	"github.com/orchstat/orchstat/ingest/receiver"
	"github.com/orchstat/orchstat/reports/render"
)

type receiveOptions struct {
	g                  *globals
	HTTP, GRPC, Dir    string
	Token              string
	MaxBody, RotateMiB int64
	Verbose            bool
	Metrics            bool
	TopModels          int
}

func newReceiveCmd(g *globals) *cobra.Command {
	o := &receiveOptions{g: g}
	cmd := &cobra.Command{
		Use:   "receive",
		Short: "Receive OpenTelemetry (OTLP over HTTP and gRPC) from agents, into files ingest reads",
		Long: `Listen for OTLP, the protocol Claude Code, Codex and OpenTelemetry SDKs
export logs, traces and metrics with, and append every request accepted to
JSON-lines files in the Collector file exporter's format under --dir, one
file per signal, a new one each day (UTC) and past --rotate-mib. ingest,
report and check read that folder like any other.

A request is answered 200 (gRPC OK) only once its lines are on disk, so a
crash, even kill -9, loses nothing a client was told was received. A body
over --max-body (counted after gzip) is refused with 413; a payload that is
not OTLP with 400; when the writer is behind, 429, and when the disk is
full, 503, both with Retry-After, which OTLP exporters retry. SIGTERM or
Ctrl-C finishes the requests in flight, then exits.

It listens on loopback by default. Listening on any other address needs
--token: clients then send "Authorization: Bearer TOKEN".

Point Claude Code at it:

  CLAUDE_CODE_ENABLE_TELEMETRY=1 \
  OTEL_LOGS_EXPORTER=otlp OTEL_METRICS_EXPORTER=otlp \
  OTEL_EXPORTER_OTLP_PROTOCOL=http/protobuf \
  OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:4318 claude

and Codex, in ~/.codex/config.toml:

  [otel.exporter.otlp-http]
  endpoint = "http://127.0.0.1:4318/v1/logs"
  protocol = "binary"`,
		Example: `  orchstat receive
  orchstat receive --dir ~/otlp --http 127.0.0.1:4318 --grpc ""
  orchstat receive --http 0.0.0.0:4318 --token "$(cat ~/.orchstat-token)"
  orchstat report ~/.local/share/orchstat/otlp`,
		Args: usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, args []string) error {
			return receiveRun(cmd.Context(), o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.HTTP, "http", "127.0.0.1:4318", "OTLP/HTTP `ADDR`ess to listen on (\"\" for none)")
	f.StringVar(&o.GRPC, "grpc", "127.0.0.1:4317", "OTLP/gRPC `ADDR`ess to listen on (\"\" for none)")
	f.StringVar(&o.Dir, "dir", "", "folder to write under (default: orchstat/otlp in the user's data directory)")
	f.StringVar(&o.Token, "token", "", "bearer `TOKEN` every request must carry; needed to listen beyond loopback")
	f.Int64Var(&o.MaxBody, "max-body", receiver.DefaultMaxBody, "largest request accepted, in `BYTES`, after decompression")
	f.Int64Var(&o.RotateMiB, "rotate-mib", 64, "start a new file past this many `MiB`")
	f.BoolVarP(&o.Verbose, "verbose", "v", false, "say each request refused, on stderr")
	f.BoolVar(&o.Metrics, "metrics", true, "serve the store's (--db) counters on GET /metrics of the HTTP address, as orchstat metrics prints them")
	f.IntVar(&o.TopModels, "top-models", defaultTopModels, "for /metrics: keep the `N` models with the most requests or calls, the others as model=\"other\"")
	return cmd
}

// dataDir is where the receiver writes by default: the user's data
// directory, as the XDG base directory specification (or macOS) has it.
func dataDir() (string, error) {
	if d := os.Getenv("XDG_DATA_HOME"); filepath.IsAbs(d) {
		return filepath.Join(d, "orchstat", "otlp"), nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("no home directory to write under: give --dir (%w)", err)
	}
	if runtime.GOOS == "darwin" {
		return filepath.Join(home, "Library", "Application Support", "orchstat", "otlp"), nil
	}
	return filepath.Join(home, ".local", "share", "orchstat", "otlp"), nil
}

func receiveRun(ctx context.Context, o *receiveOptions) error {
	io := o.g.io
	if o.MaxBody < 1 {
		return usageError{fmt.Errorf("--max-body %d: at least 1 byte", o.MaxBody)}
	}
	if o.RotateMiB < 1 {
		return usageError{fmt.Errorf("--rotate-mib %d: at least 1", o.RotateMiB)}
	}
	dir := o.Dir
	if dir == "" {
		d, err := dataDir()
		if err != nil {
			return err
		}
		dir = d
	}
	cfg := receiver.Config{HTTPAddr: o.HTTP, GRPCAddr: o.GRPC, Dir: dir, Token: o.Token,
		MaxBody: o.MaxBody, RotateBytes: o.RotateMiB << 20, Now: io.Now}
	if o.Metrics {
		cfg.Metrics = metricsHandler(o.g, o.TopModels)
	}
	if o.Verbose {
		cfg.Logf = func(format string, args ...any) {
			fmt.Fprintf(io.Err, "orchstat receive: %s\n", render.EscapeControls(fmt.Sprintf(format, args...)))
		}
	}
	r, err := receiver.Listen(cfg)
	if errors.Is(err, receiver.ErrOpen) {
		return usageError{err}
	}
	if err != nil {
		return err
	}
	// The folder first: it is what the user points ingest at.
	fmt.Fprintf(io.Out, "orchstat receive: writing to %s\n", render.EscapeControls(dir))
	if r.HTTP != "" {
		fmt.Fprintf(io.Out, "OTLP/HTTP on http://%s (/v1/logs, /v1/traces, /v1/metrics)\n", r.HTTP)
		if o.Metrics {
			fmt.Fprintf(io.Out, "The store's counters on http://%s/metrics\n", r.HTTP)
		}
	}
	if r.GRPC != "" {
		fmt.Fprintf(io.Out, "OTLP/gRPC on %s\n", r.GRPC)
	}
	if o.Token != "" {
		fmt.Fprintln(io.Out, "Requests must carry \"Authorization: Bearer\" with the token given.")
	}
	err = r.Serve(ctx)
	s := &r.Stats
	fmt.Fprintf(io.Out, "orchstat receive: stopped; %d requests taken (%d log records, %d spans, %d metric points), %d refused, %d records rejected\n",
		s.Requests.Load(), s.Logs.Load(), s.Spans.Load(), s.Points.Load(), s.Refused.Load(), s.Rejected.Load())
	return err
}

// Package receiver is `orchstat receive`: an OTLP receiver, over HTTP
// (protobuf and JSON, gzip or not) and gRPC, for logs, traces and
// metrics, that appends what it accepts to JSON-lines files in the
// Collector file exporter's format, which ingest reads like any other.
//
// It answers as the OTLP specification says: 200 (or gRPC OK) once the
// request's lines are synced to disk, with a partial success naming the
// records it rejected; 400 with a status body for a payload it cannot
// decode; 413 past the body limit, counted after decompression; 429 when
// the writer is behind and 503 when the disk is full, both with
// Retry-After. A crash loses nothing it acknowledged. Bodies and errors
// are in the request's encoding. It is pure Go: no DuckDB.
package receiver

import (
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/grpc/tap"

	// Registers gzip with gRPC, so a client may compress.
	_ "google.golang.org/grpc/encoding/gzip"
)

// Config is a receiver's settings.
type Config struct {
	// HTTPAddr and GRPCAddr are where to listen; empty is not at all.
	HTTPAddr, GRPCAddr string
	// Dir is where the files are written.
	Dir string
	// Token, when set, is the bearer token every request must carry.
	Token string
	// MaxBody is the largest request accepted, after decompression
	// (default 20 MiB).
	MaxBody int64
	// RotateBytes starts a new file past this size (default 64 MiB); a
	// new file also starts each day (UTC).
	RotateBytes int64
	// Now is the clock, for files' names and days (default time.Now).
	Now func() time.Time
	// Logf, when set, hears each refused request.
	Logf func(format string, args ...any)
	// Metrics, when set, answers GET /metrics on the HTTP address (the
	// store's counters: the receiver itself never reads the store), with
	// the token required as for OTLP.
	Metrics http.Handler
}

// ErrOpen marks a configuration that may not listen: an address beyond
// loopback without a token, or no address at all.
var ErrOpen = errors.New("refused")

// DefaultMaxBody is the largest request body accepted by default.
const DefaultMaxBody = 20 << 20

// ShutdownGrace bounds how long a stopping receiver waits for the
// requests in flight; one still unanswered then is cut off unacknowledged,
// and its client sends it again.
const ShutdownGrace = 10 * time.Second

// maxInFlight bounds the requests read and decoded at once: each may hold
// a body of MaxBody and its decoded records, so past it a request is
// refused (429) before its body is read.
const maxInFlight = 16

// retryAfter is what a refused client is asked to wait, in seconds: long
// enough for a full disk to be seen to, short enough for a burst to pass.
const (
	retryBusy = 1
	retryFull = 30
)

// Stats count what a receiver took and refused.
type Stats struct {
	Requests, Refused atomic.Int64
	// Items accepted per signal: log records, spans, data points.
	Logs, Spans, Points atomic.Int64
	Rejected            atomic.Int64
}

// Receiver serves OTLP until its context ends.
type Receiver struct {
	cfg   Config
	spool *spool
	Stats Stats
	// HTTP and GRPC are the addresses listened on, once Listen returns.
	HTTP, GRPC string

	httpLn, grpcLn net.Listener
	httpSrv        *http.Server
	grpcSrv        *grpc.Server
	inFlight       chan struct{}
}

// Loopback reports whether addr (host:port) listens on loopback only.
func Loopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// Listen opens the spool and the listeners; Serve then serves.
func Listen(cfg Config) (*Receiver, error) {
	if cfg.MaxBody <= 0 {
		cfg.MaxBody = DefaultMaxBody
	}
	if cfg.RotateBytes <= 0 {
		cfg.RotateBytes = 64 << 20
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Logf == nil {
		cfg.Logf = func(string, ...any) {}
	}
	for _, a := range []string{cfg.HTTPAddr, cfg.GRPCAddr} {
		if a != "" && !Loopback(a) && cfg.Token == "" {
			return nil, fmt.Errorf("%w: %s listens beyond loopback: give a --token that clients send as a bearer token, or listen on 127.0.0.1", ErrOpen, a)
		}
	}
	if cfg.HTTPAddr == "" && cfg.GRPCAddr == "" {
		return nil, fmt.Errorf("%w: nothing to listen on: give --http or --grpc an address", ErrOpen)
	}
	// The ports first: a second receiver started by mistake fails there,
	// before it opens (and would mend) the folder; the folder's lock
	// catches one on other ports.
	r := &Receiver{cfg: cfg, inFlight: make(chan struct{}, maxInFlight)}
	var err error
	if cfg.HTTPAddr != "" {
		if r.httpLn, err = net.Listen("tcp", cfg.HTTPAddr); err != nil {
			return nil, fmt.Errorf("--http %s: %w", cfg.HTTPAddr, err)
		}
		r.HTTP = r.httpLn.Addr().String()
	}
	if cfg.GRPCAddr != "" {
		if r.grpcLn, err = net.Listen("tcp", cfg.GRPCAddr); err != nil {
			r.closeListeners()
			return nil, fmt.Errorf("--grpc %s: %w", cfg.GRPCAddr, err)
		}
		r.GRPC = r.grpcLn.Addr().String()
	}
	if r.spool, err = openSpool(cfg.Dir, cfg.Now, cfg.RotateBytes); err != nil {
		r.closeListeners()
		return nil, err
	}
	return r, nil
}

func (r *Receiver) closeListeners() {
	for _, ln := range []net.Listener{r.httpLn, r.grpcLn} {
		if ln != nil {
			ln.Close()
		}
	}
}

// Serve serves until ctx ends, then finishes the requests in flight,
// writes what they brought and returns.
func (r *Receiver) Serve(ctx context.Context) error {
	errc := make(chan error, 2)
	if r.httpLn != nil {
		mux := http.NewServeMux()
		for _, s := range signals {
			mux.Handle(s.path, r.httpHandler(s))
		}
		if r.cfg.Metrics != nil {
			mux.Handle("GET /metrics", http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
				if !r.authorized(req.Header.Get("Authorization")) {
					w.Header().Set("WWW-Authenticate", "Bearer")
					http.Error(w, "a bearer token is required", http.StatusUnauthorized)
					return
				}
				r.cfg.Metrics.ServeHTTP(w, req)
			}))
		}
		// A client may take a minute to send its body, not forever: a
		// slow one must not hold its slot of maxInFlight.
		r.httpSrv = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second, ReadTimeout: time.Minute,
			IdleTimeout: 2 * time.Minute}
		go func() {
			if err := r.httpSrv.Serve(r.httpLn); err != nil && !errors.Is(err, http.ErrServerClosed) {
				errc <- err
			}
		}()
	}
	if r.grpcLn != nil {
		r.grpcSrv = grpc.NewServer(grpc.MaxRecvMsgSize(int(r.cfg.MaxBody)), grpc.InTapHandle(r.tap))
		r.registerGRPC(r.grpcSrv)
		go func() {
			if err := r.grpcSrv.Serve(r.grpcLn); err != nil && !errors.Is(err, grpc.ErrServerStopped) {
				errc <- err
			}
		}()
	}
	var err error
	select {
	case <-ctx.Done():
	case err = <-errc:
	}
	// Requests in flight are answered; new ones are not taken.
	deadline := time.Now().Add(ShutdownGrace)
	if r.httpSrv != nil {
		sctx, cancel := context.WithDeadline(context.Background(), deadline)
		if r.httpSrv.Shutdown(sctx) != nil {
			_ = r.httpSrv.Close()
		}
		cancel()
	}
	if r.grpcSrv != nil {
		stopped := make(chan struct{})
		go func() { r.grpcSrv.GracefulStop(); close(stopped) }()
		select {
		case <-stopped:
		case <-time.After(time.Until(deadline)):
			r.grpcSrv.Stop()
		}
	}
	r.spool.close()
	return err
}

// authorized checks a request's Authorization header against the token.
func (r *Receiver) authorized(header string) bool {
	if r.cfg.Token == "" {
		return true
	}
	got, ok := strings.CutPrefix(header, "Bearer ")
	return ok && subtle.ConstantTimeCompare([]byte(got), []byte(r.cfg.Token)) == 1
}

// accept decodes body and writes its lines: the items rejected and why,
// or an error.
func (r *Receiver) accept(s signal, p payload) (rejected int64, why string, err error) {
	lines, items, rejected, why, err := p.lines()
	if err != nil {
		return 0, "", err
	}
	if len(lines) > 0 {
		if err := r.spool.append(s.name, lines); err != nil {
			return 0, "", err
		}
	}
	accepted := items - rejected
	switch s.name {
	case "logs":
		r.Stats.Logs.Add(accepted)
	case "traces":
		r.Stats.Spans.Add(accepted)
	case "metrics":
		r.Stats.Points.Add(accepted)
	}
	r.Stats.Rejected.Add(rejected)
	r.Stats.Requests.Add(1)
	return rejected, why, nil
}

// grpcError is the status a write error gets over gRPC: retryable both.
func grpcError(err error) error {
	switch {
	case errors.Is(err, ErrBusy):
		return status.Error(codes.ResourceExhausted, err.Error())
	case errors.Is(err, ErrFull):
		return status.Error(codes.Unavailable, err.Error())
	}
	return status.Error(codes.Internal, err.Error())
}

// tap checks a gRPC request's token and its slot before its message is
// read: a client without the token, or past maxInFlight, costs no
// decoding.
func (r *Receiver) tap(ctx context.Context, info *tap.Info) (context.Context, error) {
	if r.cfg.Token != "" && !slices.ContainsFunc(info.Header.Get("authorization"), r.authorized) {
		r.Stats.Refused.Add(1)
		return ctx, status.Error(codes.Unauthenticated, "a bearer token is required")
	}
	return ctx, nil
}

// slot takes one of maxInFlight, false when all are taken.
func (r *Receiver) slot() bool {
	select {
	case r.inFlight <- struct{}{}:
		return true
	default:
		return false
	}
}

func (r *Receiver) release() { <-r.inFlight }

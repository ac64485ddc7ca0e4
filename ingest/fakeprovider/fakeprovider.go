// Package fakeprovider is a model provider for tests: an HTTP server on
// 127.0.0.1 that speaks enough of Anthropic's Messages API and OpenAI's
// Responses API, both streaming, for Claude Code and Codex to run against
// it, and that fails the requests a script names: 429 with Retry-After,
// 500, 529, a stream cut mid-answer, or no answer at all until the client
// gives up. It keeps its own log of every request, grouped into calls, so
// that a test can hold what an agent recorded (and what orchstat read from
// it) to what the provider saw.
//
// It imports the standard library only: it is a test helper, and the
// agents it serves are real programs run by the tests that use it.
package fakeprovider

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"sort"
	"strconv"
	"sync"
)

// Fault is what the server does with one request.
type Fault int

const (
	// Answer answers in full.
	Answer Fault = iota
	// RateLimit answers 429 with a Retry-After header.
	RateLimit
	// ServerError answers 500.
	ServerError
	// Overloaded answers 529, Anthropic's "overloaded" status.
	Overloaded
	// CutStream answers 200, streams part of the answer, and then closes
	// the connection without ending the stream.
	CutStream
	// Hang sends nothing, not even a status, until the client gives up
	// (closes the connection) or the server is closed.
	Hang
	// Stall answers 200, streams the answer's first event, then sends
	// nothing more until the client gives up or the server is closed: a
	// client that waits for headers without a deadline (Codex does)
	// times out here on its stream's idle timeout.
	Stall
)

var faultNames = map[Fault]string{
	Answer: "answer", RateLimit: "429", ServerError: "500", Overloaded: "529",
	CutStream: "cut-stream", Hang: "hang", Stall: "stall",
}

func (f Fault) String() string {
	if s, ok := faultNames[f]; ok {
		return s
	}
	return "fault(" + strconv.Itoa(int(f)) + ")"
}

// Script says which requests fail. A call is the set of requests with the
// same body (less the fields a client may change between attempts, see
// callKey), numbered from 1 in the order their first request came. The
// attempts of call n take the faults of Calls[n-1] in order; an attempt
// past the list, and every attempt of a call past Calls, is answered.
type Script struct {
	Calls [][]Fault
	// RetryAfter is the Retry-After header of a 429, in seconds: 0 sends
	// "0", which asks the client to retry at once.
	RetryAfter int
}

// Request is one HTTP request as the server saw it.
type Request struct {
	// Seq numbers the requests from 1 in the order they came.
	Seq int
	// API is "anthropic" (POST /v1/messages), "openai" (POST
	// /v1/responses), or "" for any other request (count_tokens, model
	// lists, telemetry sent to the wrong place): those are logged, not
	// model calls, and have no Call.
	API    string
	Method string
	Path   string
	// Call is the call the request belongs to (from 1), Attempt its
	// attempt (from 1); both 0 for a request that is no model call.
	Call, Attempt int
	Fault         Fault
	// Status is the HTTP status sent, 0 when none was (a hang the client
	// gave up on).
	Status int
	// Done is true when the whole answer was sent.
	Done bool
	// Model is the request body's "model".
	Model string
	// Stream is the request body's "stream".
	Stream bool
}

// Call is one call's requests, in order.
type Call struct {
	N        int
	Requests []Request
}

// Failed is the number of the call's requests that got no whole answer.
func (c Call) Failed() int {
	n := 0
	for _, r := range c.Requests {
		if !r.Done {
			n++
		}
	}
	return n
}

// Succeeded says whether the call's last request got a whole answer.
func (c Call) Succeeded() bool {
	return len(c.Requests) > 0 && c.Requests[len(c.Requests)-1].Done
}

// Server is a running fake provider.
type Server struct {
	// URL is the server's root, http://127.0.0.1:PORT; Anthropic clients
	// take it as their base URL, OpenAI clients URL+"/v1".
	URL string

	script Script
	srv    *http.Server
	ln     net.Listener
	closed chan struct{}
	served sync.WaitGroup

	mu    sync.Mutex
	log   []Request
	calls map[string]int // callKey → call number
	tries map[int]int    // call number → attempts so far
}

// Start starts a server on a free port of 127.0.0.1 with the script.
// Close stops it.
func Start(script Script) (*Server, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	s := &Server{
		URL:    "http://" + ln.Addr().String(),
		script: script,
		ln:     ln,
		closed: make(chan struct{}),
		calls:  map[string]int{},
		tries:  map[int]int{},
	}
	s.srv = &http.Server{Handler: http.HandlerFunc(s.serve)}
	s.served.Add(1)
	go func() {
		defer s.served.Done()
		// ErrServerClosed after Close; any other error also ends serving,
		// and the client then sees refused connections, which its test
		// reports.
		_ = s.srv.Serve(ln)
	}()
	return s, nil
}

// Close stops the server: hanging requests end, and connections close.
func (s *Server) Close() error {
	select {
	case <-s.closed:
		return nil
	default:
	}
	close(s.closed)
	err := s.srv.Close()
	s.served.Wait()
	return err
}

// Log returns every request so far, in order.
func (s *Server) Log() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.log...)
}

// Calls returns the model calls so far, by number, each with its requests
// in order.
func (s *Server) Calls() []Call {
	by := map[int]*Call{}
	for _, r := range s.Log() {
		if r.Call == 0 {
			continue
		}
		c := by[r.Call]
		if c == nil {
			c = &Call{N: r.Call}
			by[r.Call] = c
		}
		c.Requests = append(c.Requests, r)
	}
	out := make([]Call, 0, len(by))
	for _, c := range by {
		out = append(out, *c)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].N < out[j].N })
	return out
}

// maxBody bounds a request body: an agent's first request carries its
// system prompt and tool definitions, some hundreds of KiB.
const maxBody = 32 << 20

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(io.LimitReader(r.Body, maxBody))
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	api := ""
	switch {
	case r.Method == http.MethodPost && r.URL.Path == "/v1/messages":
		api = "anthropic"
	case r.Method == http.MethodPost && (r.URL.Path == "/v1/responses" || r.URL.Path == "/responses"):
		api = "openai"
	}
	req := Request{API: api, Method: r.Method, Path: r.URL.Path}
	var fields map[string]any
	if api != "" {
		if err := json.Unmarshal(body, &fields); err != nil {
			api, req.API = "", ""
		}
	}
	if api != "" {
		req.Model, _ = fields["model"].(string)
		req.Stream, _ = fields["stream"].(bool)
	}
	idx := s.record(&req, fields)
	switch {
	case api == "":
		s.other(w, r, idx)
		return
	}
	switch req.Fault {
	case RateLimit:
		w.Header().Set("Retry-After", strconv.Itoa(s.script.RetryAfter))
		s.fail(w, api, idx, http.StatusTooManyRequests, "rate_limit_error", "Rate limited by the fake provider")
	case ServerError:
		s.fail(w, api, idx, http.StatusInternalServerError, "api_error", "Internal server error from the fake provider")
	case Overloaded:
		s.fail(w, api, idx, 529, "overloaded_error", "Overloaded (fake provider)")
	case Hang:
		s.hang(r, idx)
	default:
		if api == "anthropic" {
			s.anthropic(w, r, req, idx)
		} else {
			s.openai(w, r, req, idx)
		}
	}
}

// record logs the request, numbering its call and attempt and picking its
// fault, and returns its index in the log.
func (s *Server) record(req *Request, fields map[string]any) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	req.Seq = len(s.log) + 1
	if req.API != "" {
		key := callKey(fields)
		n, ok := s.calls[key]
		if !ok {
			n = len(s.calls) + 1
			s.calls[key] = n
		}
		s.tries[n]++
		req.Call, req.Attempt = n, s.tries[n]
		if n <= len(s.script.Calls) && req.Attempt <= len(s.script.Calls[n-1]) {
			req.Fault = s.script.Calls[n-1][req.Attempt-1]
		}
	}
	s.log = append(s.log, *req)
	return len(s.log) - 1
}

// callKey identifies a call by its request body. An attempt repeats its
// call's body, but a client may change what says how to send it: Claude
// Code falls back from a cut stream to a request without streaming, with
// its own max_tokens. So the key leaves out "stream", "max_tokens" and
// "stream_options"; every other field (model, messages or input, tools,
// the session's metadata) must match.
func callKey(fields map[string]any) string {
	k := make(map[string]any, len(fields))
	for name, v := range fields {
		switch name {
		case "stream", "max_tokens", "stream_options":
			continue
		}
		k[name] = v
	}
	b, _ := json.Marshal(k) // map keys sorted: the same fields give the same bytes
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// finish sets what was sent for the request at idx.
func (s *Server) finish(idx, status int, done bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.log[idx].Status = status
	s.log[idx].Done = done
}

// other answers what is no model call: count_tokens with a count, the rest
// 404. Neither is a fault: such requests are logged only.
func (s *Server) other(w http.ResponseWriter, r *http.Request, idx int) {
	if r.Method == http.MethodPost && r.URL.Path == "/v1/messages/count_tokens" {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"input_tokens":12}`)
		s.finish(idx, http.StatusOK, true)
		return
	}
	http.NotFound(w, r)
	s.finish(idx, http.StatusNotFound, true)
}

// fail answers with an error status and a body in the API's error shape.
func (s *Server) fail(w http.ResponseWriter, api string, idx, status int, typ, msg string) {
	w.Header().Set("Content-Type", "application/json")
	var body any
	if api == "anthropic" {
		body = map[string]any{"type": "error", "error": map[string]any{"type": typ, "message": msg}}
	} else {
		body = map[string]any{"error": map[string]any{"type": typ, "message": msg, "code": typ}}
	}
	b, _ := json.Marshal(body)
	w.WriteHeader(status)
	w.Write(b)
	s.finish(idx, status, false)
}

// hang holds the request, sending nothing, until the client closes it or
// the server closes.
func (s *Server) hang(r *http.Request, idx int) {
	select {
	case <-r.Context().Done():
	case <-s.closed:
	}
	s.finish(idx, 0, false)
}

// The answer every call gets: a short text, and its usage.
const (
	answerText   = "ok"
	inputTokens  = 12
	outputTokens = 3
)

// sse writes one server-sent event and flushes it.
func sse(w http.ResponseWriter, event string, data any) {
	b, _ := json.Marshal(data)
	fmt.Fprintf(w, "event: %s\ndata: %s\n\n", event, b)
	if f, ok := w.(http.Flusher); ok {
		f.Flush()
	}
}

// broken ends a streamed answer that the script breaks after its first
// events: a cut stream is cut, a stalled one waits for the client to give
// up. It returns only for an answer to finish.
func (s *Server) broken(r *http.Request, idx int, f Fault) {
	switch f {
	case CutStream:
		s.cut(idx)
	case Stall:
		select {
		case <-r.Context().Done():
		case <-s.closed:
		}
		s.finish(idx, http.StatusOK, false)
		panic(http.ErrAbortHandler)
	}
}

// cut ends a streamed answer mid-way: the handler panics with
// http.ErrAbortHandler, on which net/http closes the connection without
// the chunked body's end, so the client sees the stream break.
func (s *Server) cut(idx int) {
	s.finish(idx, http.StatusOK, false)
	panic(http.ErrAbortHandler)
}

// anthropic answers a Messages request, streamed or not.
func (s *Server) anthropic(w http.ResponseWriter, r *http.Request, req Request, idx int) {
	id := fmt.Sprintf("msg_fake%04d_%02d", req.Call, req.Attempt)
	model := req.Model
	usage := map[string]any{"input_tokens": inputTokens, "output_tokens": outputTokens,
		"cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}
	w.Header().Set("request-id", fmt.Sprintf("req_fake%04d_%02d", req.Call, req.Attempt))
	if !req.Stream {
		if req.Fault == CutStream || req.Fault == Stall {
			// No stream to break: a body cut short, or stalled, is the
			// nearest thing.
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusOK)
			io.WriteString(w, `{"id":"`+id+`","type":"mess`)
			w.(http.Flusher).Flush()
			s.broken(r, idx, req.Fault)
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{
			"id": id, "type": "message", "role": "assistant", "model": model,
			"content":     []any{map[string]any{"type": "text", "text": answerText}},
			"stop_reason": "end_turn", "stop_sequence": nil, "usage": usage,
		})
		s.finish(idx, http.StatusOK, true)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	sse(w, "message_start", map[string]any{"type": "message_start", "message": map[string]any{
		"id": id, "type": "message", "role": "assistant", "model": model, "content": []any{},
		"stop_reason": nil, "stop_sequence": nil,
		"usage": map[string]any{"input_tokens": inputTokens, "output_tokens": 1,
			"cache_creation_input_tokens": 0, "cache_read_input_tokens": 0},
	}})
	sse(w, "content_block_start", map[string]any{"type": "content_block_start", "index": 0,
		"content_block": map[string]any{"type": "text", "text": ""}})
	sse(w, "content_block_delta", map[string]any{"type": "content_block_delta", "index": 0,
		"delta": map[string]any{"type": "text_delta", "text": answerText[:1]}})
	s.broken(r, idx, req.Fault)
	sse(w, "content_block_delta", map[string]any{"type": "content_block_delta", "index": 0,
		"delta": map[string]any{"type": "text_delta", "text": answerText[1:]}})
	sse(w, "content_block_stop", map[string]any{"type": "content_block_stop", "index": 0})
	sse(w, "message_delta", map[string]any{"type": "message_delta",
		"delta": map[string]any{"stop_reason": "end_turn", "stop_sequence": nil},
		"usage": map[string]any{"output_tokens": outputTokens}})
	// Done before the last event: an agent that has it may exit before
	// this handler runs on, and the log must already say so.
	s.finish(idx, http.StatusOK, true)
	sse(w, "message_stop", map[string]any{"type": "message_stop"})
}

// openai answers a Responses request as a stream (Codex always streams).
func (s *Server) openai(w http.ResponseWriter, r *http.Request, req Request, idx int) {
	respID := fmt.Sprintf("resp_fake%04d_%02d", req.Call, req.Attempt)
	itemID := fmt.Sprintf("msg_fake%04d_%02d", req.Call, req.Attempt)
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.Header().Set("x-request-id", fmt.Sprintf("req_fake%04d_%02d", req.Call, req.Attempt))
	w.WriteHeader(http.StatusOK)
	base := map[string]any{"id": respID, "object": "response", "model": req.Model, "status": "in_progress", "output": []any{}}
	sse(w, "response.created", map[string]any{"type": "response.created", "response": base})
	item := map[string]any{"type": "message", "id": itemID, "role": "assistant", "status": "in_progress", "content": []any{}}
	sse(w, "response.output_item.added", map[string]any{"type": "response.output_item.added", "output_index": 0, "item": item})
	sse(w, "response.output_text.delta", map[string]any{"type": "response.output_text.delta",
		"item_id": itemID, "output_index": 0, "content_index": 0, "delta": answerText[:1]})
	s.broken(r, idx, req.Fault)
	sse(w, "response.output_text.delta", map[string]any{"type": "response.output_text.delta",
		"item_id": itemID, "output_index": 0, "content_index": 0, "delta": answerText[1:]})
	done := map[string]any{"type": "message", "id": itemID, "role": "assistant", "status": "completed",
		"content": []any{map[string]any{"type": "output_text", "text": answerText, "annotations": []any{}}}}
	sse(w, "response.output_item.done", map[string]any{"type": "response.output_item.done", "output_index": 0, "item": done})
	// Done before the last event: an agent that has it may exit before
	// this handler runs on, and the log must already say so.
	s.finish(idx, http.StatusOK, true)
	sse(w, "response.completed", map[string]any{"type": "response.completed", "response": map[string]any{
		"id": respID, "object": "response", "model": req.Model, "status": "completed", "output": []any{done},
		"usage": map[string]any{
			"input_tokens": inputTokens, "input_tokens_details": map[string]any{"cached_tokens": 0},
			"output_tokens": outputTokens, "output_tokens_details": map[string]any{"reasoning_tokens": 0},
			"total_tokens": inputTokens + outputTokens,
		},
	}})
}

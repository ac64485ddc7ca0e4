package codex

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/orchstat/orchstat/model/records"
)

// usage is a token_count's token usage.
type usage struct {
	Input     *float64 `json:"input_tokens"`
	Cached    *float64 `json:"cached_input_tokens"`
	Output    *float64 `json:"output_tokens"`
	Reasoning *float64 `json:"reasoning_output_tokens"`
	Total     *float64 `json:"total_tokens"`
}

func (u *usage) equal(v *usage) bool {
	same := func(a, b *float64) bool { return a == nil && b == nil || a != nil && b != nil && *a == *b }
	return same(u.Input, v.Input) && same(u.Cached, v.Cached) && same(u.Output, v.Output) &&
		same(u.Reasoning, v.Reasoning) && same(u.Total, v.Total)
}

// failure is a stream_error or error event: a failed attempt. It is kept
// in a state while its call is open, so its fields are named for JSON.
type failure struct {
	No      int    `json:"line"`
	TS      stamp  `json:"ts"`
	Msg     string `json:"msg,omitempty"`
	ErrType string `json:"type,omitempty"`
	Status  *int   `json:"status,omitempty"`
}

// tokenCount reads an event_msg token_count. It is written after each
// completed model response, and also for rate-limit updates (info null)
// and again with an unchanged total; only a changed total is a response.
func (r *rollout) tokenCount(l line, env envelope) (bool, *records.Error) {
	var p struct {
		Info *struct {
			Total *usage `json:"total_token_usage"`
			Last  *usage `json:"last_token_usage"`
		} `json:"info"`
	}
	if perr := decodePayload(l, env.payload, &p); perr != nil {
		return false, perr
	}
	r.readRateLimits(env.ts, env.payload)
	if p.Info == nil {
		return false, nil
	}
	total, last := p.Info.Total, p.Info.Last
	if total == nil && last == nil {
		return false, l.problem("payload.info.total_token_usage", "missing")
	}
	if total != nil && r.PrevTotal != nil && total.equal(r.PrevTotal) {
		return false, nil
	}
	u := delta(total, r.PrevTotal)
	if last != nil {
		u = *last
	}
	// Codex's input_tokens include the cached ones (OpenAI's usage).
	in, cached := records.Uncached(u.Input, u.Cached), u.Cached
	out, reasoning := u.Output, u.Reasoning
	if total != nil {
		r.PrevTotal = total
		if total.Total != nil {
			r.Tokens = total.Total
		}
	}
	c := r.newCall(l.No, env.ts)
	c.Success, c.InputTokens, c.OutputTokens = records.Bool(true), in, out
	c.CacheReadTokens, c.ReasoningTokens = cached, reasoning
	r.addCall(c, &records.CallAttempt{TS: c.TS, Success: records.Bool(true), InputTokens: in, OutputTokens: out,
		CacheReadTokens: cached, ReasoningTokens: reasoning})
	return true, nil
}

// delta is the usage between two cumulative totals; a count that went
// down says nothing about the response, so it gives nil.
func delta(cur, prev *usage) usage {
	if cur == nil {
		return usage{}
	}
	sub := func(a, b *float64) *float64 {
		switch {
		case a == nil:
			return nil
		case b == nil:
			return records.Float(*a)
		case *a < *b:
			return nil
		}
		return records.Float(*a - *b)
	}
	if prev == nil {
		prev = &usage{}
	}
	return usage{Input: sub(cur.Input, prev.Input), Cached: sub(cur.Cached, prev.Cached), Output: sub(cur.Output, prev.Output),
		Reasoning: sub(cur.Reasoning, prev.Reasoning), Total: sub(cur.Total, prev.Total)}
}

// streamError reads a stream_error event ("Reconnecting... n/m"): the
// attempt before it failed, and the call goes on.
func (r *rollout) streamError(l line, env envelope) (bool, *records.Error) {
	f, perr := readFailure(l, env)
	if perr != nil {
		return false, perr
	}
	if len(r.Pending)+1 >= maxAttempts { // the attempt after the last error counts too
		// Codex retries a stream 5 times by default; 100,000 reconnects
		// before one response are no one call's attempts, and holding
		// them all would cost memory without bound. The call closes here,
		// its outcome unknown, and this line says so.
		r.closePending()
		r.Pending = append(r.Pending, f)
		return false, l.problem("payload.type", fmt.Sprintf("more than %d stream errors before one response: "+
			"the call is closed at %d attempts, its outcome unknown, and this reconnect starts another", maxAttempts, maxAttempts))
	}
	r.Pending = append(r.Pending, f)
	return true, nil
}

// maxAttempts bounds the attempts one call is given, as other counts are
// bounded (Claude Code's retry counts at 1,000,000; see limits.md).
const maxAttempts = 1000

// errorEvent reads an error event: Codex gave the turn up, so the call
// it was making failed, after the stream errors before it if any. Without
// them, nothing says how many attempts the failure took.
func (r *rollout) errorEvent(l line, env envelope) (bool, *records.Error) {
	f, perr := readFailure(l, env)
	if perr != nil {
		return false, perr
	}
	r.failCall(l, env, f)
	return true, nil
}

// failCall closes the call under way as failed with f.
func (r *rollout) failCall(l line, env envelope, f failure) {
	c := r.newCall(l.No, env.ts)
	c.Success, c.Error, c.ErrorType, c.StatusCode = records.Bool(false), f.Msg, f.ErrType, f.Status
	r.addCall(c, &records.CallAttempt{TS: c.TS, Success: records.Bool(false), StatusCode: f.Status, Error: f.Msg})
	r.TurnFailed = true
}

// taskComplete reads a task_complete event. With an error (Codex 0.171
// writes {message, codex_error_info} there when it gives a turn up, as
// after its retries ran out against ingest/fakeprovider's 500s, and
// writes no error event outside its extended-history mode) the call the
// turn was making failed, as for an error event; unless an error event of
// the turn already said so. Without one it says nothing about calls.
func (r *rollout) taskComplete(l line, env envelope) (bool, *records.Error) {
	var p struct {
		Error json.RawMessage `json:"error"`
	}
	if perr := decodePayload(l, env.payload, &p); perr != nil {
		return false, perr
	}
	if absentJSON(p.Error) {
		return false, nil
	}
	if r.TurnFailed {
		return true, nil
	}
	inner := env
	inner.payload = p.Error
	f, perr := readFailure(l, inner)
	if perr != nil {
		perr.Field = strings.Replace(perr.Field, "payload", "payload.error", 1)
		return false, perr
	}
	r.failCall(l, env, f)
	return true, nil
}

// absentJSON says a raw value is missing or null.
func absentJSON(raw json.RawMessage) bool {
	t := strings.TrimSpace(string(raw))
	return t == "" || t == "null"
}

// closePending ends a call whose stream errors no response or error
// followed: a new turn, an aborted turn or the end of the file came first,
// so how it ended is unknown.
func (r *rollout) closePending() {
	if len(r.Pending) > 0 {
		r.RunID = r.runID()
	}
	if c, attempts, ok := r.pendingCall(); ok {
		r.out.Calls = append(r.out.Calls, c)
		r.out.CallAttempts = append(r.out.CallAttempts, attempts...)
		r.Pending = nil
	}
}

// pendingCall is the call of the stream errors awaiting a response, as if
// the file ended here. It changes nothing, so that Open can show it.
func (r *rollout) pendingCall() (records.Call, []records.CallAttempt, bool) {
	if len(r.Pending) == 0 {
		return records.Call{}, nil, false
	}
	last := r.Pending[len(r.Pending)-1]
	c := r.callOf(last.No, *last.TS.time())
	c.StatusCode = last.Status
	c, attempts := r.withPending(c, nil)
	return c, attempts, true
}

// newCall starts a call read at line no, and settles the run's id: rows
// made final now name it, so it must not change after.
func (r *rollout) newCall(no int, ts time.Time) records.Call {
	r.RunID = r.runID()
	return r.callOf(no, ts)
}

func (r *rollout) callOf(no int, ts time.Time) records.Call {
	id := r.runID()
	return records.Call{System: records.Codex, RunID: id, Session: id, CallID: fmt.Sprintf("line:%d", no), Source: Source,
		Line: no, TS: &ts, Provider: r.provider(), Model: r.Model, Operation: "chat",
		Evidence: records.EvidenceNone, Cwd: r.cwd()}
}

// cwd is the working folder of the call read now: the last turn's, else
// the session's.
func (r *rollout) cwd() string {
	if r.Cwd == "" && r.Meta != nil {
		return r.Meta.Cwd
	}
	return r.Cwd
}

// addCall closes c, with the stream errors before it as its failed
// attempts and final as its last attempt (nil when unknown).
func (r *rollout) addCall(c records.Call, final *records.CallAttempt) {
	c, attempts := r.withPending(c, final)
	r.out.Calls = append(r.out.Calls, c)
	r.out.CallAttempts = append(r.out.CallAttempts, attempts...)
	r.Pending = nil
}

// withPending gives c the stream errors before it as its failed attempts
// and final as its last (nil when unknown), and returns its attempt rows.
// Without stream errors the rollout shows one record of the call and
// nothing of its attempts.
func (r *rollout) withPending(c records.Call, final *records.CallAttempt) (records.Call, []records.CallAttempt) {
	n := len(r.Pending)
	if n == 0 {
		return c, nil
	}
	first, last := r.Pending[0], r.Pending[n-1]
	c.TS = first.TS.time()
	c.Attempts, c.Evidence = records.Int(n+1), records.EvidenceTranscript
	if c.Error == "" {
		c.Error, c.ErrorType = last.Msg, last.ErrType
	}
	attempts := make([]records.CallAttempt, 0, n+1)
	for i, f := range r.Pending {
		attempts = append(attempts, records.CallAttempt{
			System: records.Codex, RunID: c.RunID, CallID: c.CallID, Source: Source, Attempt: i + 1,
			TS: f.TS.time(), Success: records.Bool(false), StatusCode: f.Status, Error: f.Msg})
	}
	if final != nil {
		a := *final
		a.System, a.RunID, a.CallID, a.Source, a.Attempt = records.Codex, c.RunID, c.CallID, Source, n+1
		attempts = append(attempts, a)
	}
	return c, attempts
}

// readFailure reads a stream_error's or error's message and its
// codex_error_info: a word ("context_window_exceeded") or an object named
// by its one key ({"http_connection_failed": {"http_status_code": 502}}).
func readFailure(l line, env envelope) (failure, *records.Error) {
	var p struct {
		Message string          `json:"message"`
		Info    json.RawMessage `json:"codex_error_info"`
	}
	if perr := decodePayload(l, env.payload, &p); perr != nil {
		return failure{}, perr
	}
	f := failure{No: l.No, TS: *stampOf(env.ts), Msg: excerpt(p.Message)}
	var word string
	var obj map[string]json.RawMessage
	switch {
	case json.Unmarshal(p.Info, &word) == nil:
		f.ErrType = excerpt(word)
	case json.Unmarshal(p.Info, &obj) == nil && len(obj) > 0:
		keys := make([]string, 0, len(obj))
		for k := range obj {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		f.ErrType = excerpt(keys[0])
		// The app server's copy of the type spells it httpStatusCode.
		var v struct {
			Status *float64 `json:"http_status_code"`
			Camel  *float64 `json:"httpStatusCode"`
		}
		if json.Unmarshal(obj[keys[0]], &v) == nil && v.Status == nil {
			v.Status = v.Camel
		}
		if v.Status != nil {
			if s := *v.Status; s >= 100 && s <= 999 && s == float64(int(s)) {
				f.Status = records.Int(int(s))
			}
		}
	}
	return f, nil
}

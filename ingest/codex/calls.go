package codex

import (
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/orchstat/orchstat/ingest/records"
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

// failure is a stream_error or error event: a failed attempt.
type failure struct {
	line    line
	ts      time.Time
	msg     string
	errType string
	status  *int
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
	if p.Info == nil {
		return false, nil
	}
	total, last := p.Info.Total, p.Info.Last
	if total == nil && last == nil {
		return false, l.problem("payload.info.total_token_usage", "missing")
	}
	if total != nil && r.prevTotal != nil && total.equal(r.prevTotal) {
		return false, nil
	}
	u := delta(total, r.prevTotal)
	if last != nil {
		u = *last
	}
	// Codex's input_tokens include the cached ones (OpenAI's usage).
	in, cached := records.Uncached(u.Input, u.Cached), u.Cached
	out, reasoning := u.Output, u.Reasoning
	if total != nil {
		r.prevTotal = total
		if total.Total != nil {
			r.tokens = total.Total
		}
	}
	c := r.newCall(l, env.ts)
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
	if len(r.pending)+1 >= maxAttempts { // the attempt after the last error counts too
		// Codex retries a stream 5 times by default; 100,000 reconnects
		// before one response are no one call's attempts, and holding
		// them all would cost memory without bound. The call closes here,
		// its outcome unknown, and this line says so.
		r.closePending()
		r.pending = append(r.pending, f)
		return false, l.problem("payload.type", fmt.Sprintf("more than %d stream errors before one response: "+
			"the call is closed at %d attempts, its outcome unknown, and this reconnect starts another", maxAttempts, maxAttempts))
	}
	r.pending = append(r.pending, f)
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
	c := r.newCall(l, env.ts)
	c.Success, c.Error, c.ErrorType, c.StatusCode = records.Bool(false), f.msg, f.errType, f.status
	r.addCall(c, &records.CallAttempt{TS: c.TS, Success: records.Bool(false), StatusCode: f.status, Error: f.msg})
	return true, nil
}

// closePending ends a call whose stream errors no response or error
// followed: a new turn, an aborted turn or the end of the file came first,
// so how it ended is unknown.
func (r *rollout) closePending() {
	if len(r.pending) == 0 {
		return
	}
	last := r.pending[len(r.pending)-1]
	c := r.newCall(last.line, last.ts)
	c.StatusCode = last.status
	r.addCall(c, nil)
}

func (r *rollout) newCall(l line, ts time.Time) records.Call {
	return records.Call{System: records.Codex, CallID: fmt.Sprintf("line:%d", l.No), Source: Source,
		Line: l.No, TS: &ts, Provider: r.provider(), Model: r.model, Operation: "chat",
		Evidence: records.EvidenceNone}
}

// addCall adds c, with the stream errors before it as its failed attempts
// and final as its last attempt (nil when unknown). Without stream errors
// the rollout shows one record of the call and nothing of its attempts.
func (r *rollout) addCall(c records.Call, final *records.CallAttempt) {
	n := len(r.pending)
	if n == 0 {
		r.set.Calls = append(r.set.Calls, c)
		return
	}
	first, last := r.pending[0], r.pending[n-1]
	c.TS = &first.ts
	c.Attempts, c.Evidence = records.Int(n+1), records.EvidenceTranscript
	if c.Error == "" {
		c.Error, c.ErrorType = last.msg, last.errType
	}
	for i, f := range r.pending {
		r.set.CallAttempts = append(r.set.CallAttempts, records.CallAttempt{
			System: records.Codex, CallID: c.CallID, Source: Source, Attempt: i + 1,
			TS: &f.ts, Success: records.Bool(false), StatusCode: f.status, Error: f.msg})
	}
	if final != nil {
		final.System, final.CallID, final.Source, final.Attempt = records.Codex, c.CallID, Source, n+1
		r.set.CallAttempts = append(r.set.CallAttempts, *final)
	}
	r.pending = nil
	r.set.Calls = append(r.set.Calls, c)
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
	f := failure{line: l, ts: env.ts, msg: excerpt(p.Message)}
	var word string
	var obj map[string]json.RawMessage
	switch {
	case json.Unmarshal(p.Info, &word) == nil:
		f.errType = excerpt(word)
	case json.Unmarshal(p.Info, &obj) == nil && len(obj) > 0:
		keys := make([]string, 0, len(obj))
		for k := range obj {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		f.errType = excerpt(keys[0])
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
				f.status = records.Int(int(s))
			}
		}
	}
	return f, nil
}

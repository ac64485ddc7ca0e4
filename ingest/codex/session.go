package codex

import (
	"encoding/json"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/orchstat/orchstat/ingest/records"
)

// rollout is what one file says so far.
type rollout struct {
	path      string
	set       *records.Set
	legacy    bool
	envelopes int // lines shaped as {timestamp, type, payload}

	meta           *sessionMeta
	started, last  *time.Time
	model          string
	models         []string
	turns, aborted int
	lastAborted    bool
	toolCalls      int
	prevTotal      *usage
	tokens         *float64
	pending        []failure // stream errors awaiting the response they delay
	used, ignored  int
}

// sessionMeta is the session_meta payload (and the legacy header, whose
// fields have the same names).
type sessionMeta struct {
	ID            string          `json:"id"`
	Cwd           string          `json:"cwd"`
	Originator    string          `json:"originator"`
	CLIVersion    string          `json:"cli_version"`
	Source        json.RawMessage `json:"source"`
	ModelProvider string          `json:"model_provider"`
}

// readCurrent reads a file of enveloped lines.
func (r *rollout) readCurrent(lines []line) {
	for i, l := range lines {
		env, ok, perr := decodeEnvelope(l)
		if ok {
			r.envelopes++
		}
		if perr == nil && i == 0 && env.typ != "session_meta" {
			perr = l.problem("type", "first line: want session_meta, got "+excerpt(env.typ))
		}
		if perr == nil {
			var use bool
			use, perr = r.handle(l, env)
			if perr == nil {
				r.count(use)
				r.seen(env.ts)
				continue
			}
		}
		r.set.Problems = append(r.set.Problems, *perr)
	}
	r.closePending()
}

func (r *rollout) count(use bool) {
	if use {
		r.used++
	} else {
		r.ignored++
	}
}

// seen notes a read line's time: the run ends at the last.
func (r *rollout) seen(ts time.Time) {
	r.last = &ts
	if r.started == nil {
		r.started = &ts
	}
}

// handle reads one envelope; use says whether it fed a row, rather than
// being a record kind the store has no column for.
func (r *rollout) handle(l line, env envelope) (use bool, perr *records.Error) {
	switch env.typ {
	case "session_meta":
		if r.meta != nil {
			// A fork's file may repeat its parent's header after its own.
			return false, nil
		}
		m := &sessionMeta{}
		if perr := decodePayload(l, env.payload, m); perr != nil {
			return false, perr
		}
		r.meta, r.started = m, &env.ts
		return true, nil
	case "turn_context":
		var tc struct {
			Model string `json:"model"`
		}
		if perr := decodePayload(l, env.payload, &tc); perr != nil {
			return false, perr
		}
		r.closePending()
		r.turns++
		r.lastAborted = false
		r.model = tc.Model
		if tc.Model != "" && !slices.Contains(r.models, tc.Model) {
			r.models = append(r.models, tc.Model)
		}
		return true, nil
	case "response_item":
		var it struct {
			Type string `json:"type"`
		}
		if perr := decodePayload(l, env.payload, &it); perr != nil {
			return false, perr
		}
		if isToolCall(it.Type) {
			r.toolCalls++
			return true, nil
		}
		return false, nil
	case "event_msg":
		return r.event(l, env)
	}
	return false, nil
}

// event reads an event_msg line.
func (r *rollout) event(l line, env envelope) (bool, *records.Error) {
	var ev struct {
		Type string `json:"type"`
	}
	if perr := decodePayload(l, env.payload, &ev); perr != nil {
		return false, perr
	}
	switch ev.Type {
	case "":
		return false, l.problem("payload.type", "missing")
	case "token_count":
		return r.tokenCount(l, env)
	case "stream_error":
		return r.streamError(l, env)
	case "error":
		return r.errorEvent(l, env)
	case "turn_aborted":
		r.closePending()
		r.aborted++
		r.lastAborted = true
		return true, nil
	}
	return false, nil
}

// runID is the session id the file states, else the one its name ends
// with, else its name.
func (r *rollout) runID() string {
	if r.meta != nil && strings.TrimSpace(r.meta.ID) != "" {
		return strings.TrimSpace(r.meta.ID)
	}
	if id := fileSessionID(r.path); id != "" {
		return id
	}
	name := strings.TrimSuffix(filepath.Base(strings.ReplaceAll(r.path, `\`, "/")), ".jsonl")
	if name == "" || name == "." || name == "/" {
		return "codex"
	}
	return name
}

// provider is the session's model_provider, lower-case; "" when absent.
func (r *rollout) provider() string {
	if r.meta == nil {
		return ""
	}
	return strings.ToLower(strings.TrimSpace(r.meta.ModelProvider))
}

// finish names every row's run and adds the run.
func (r *rollout) finish() {
	id := r.runID()
	for i := range r.set.Calls {
		r.set.Calls[i].RunID, r.set.Calls[i].Session = id, id
	}
	for i := range r.set.CallAttempts {
		r.set.CallAttempts[i].RunID = id
	}
	run := records.Run{
		System: records.Codex, RunID: id, Source: Source, Batch: id,
		StartedAt: r.started, Status: "unfinished", Tokens: r.tokens,
		Detail: r.detail(),
	}
	if !r.legacy {
		run.FinishedAt = r.last
	}
	r.set.Runs = []records.Run{run}
}

// isToolCall says whether a response item is the model calling a tool.
func isToolCall(typ string) bool {
	return typ == "function_call" || typ == "custom_tool_call" || typ == "local_shell_call"
}

package codex

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/orchstat/orchstat/model/records"
)

// rollout reads one file a line at a time (a records.Stream). out holds
// the rows closed since the last Final; progress is everything else, and
// is what State saves.
type rollout struct {
	path string
	out  *records.Set
	progress
}

// progress is what a rollout holds between lines: the open group (the
// stream errors awaiting the response they delay) and the per-file
// aggregates the run row is made of. Its size does not grow with the
// lines read: maxAttempts bounds Pending and maxModels bounds Models.
type progress struct {
	Lines     int   `json:"lines"` // non-blank lines read
	FirstNo   int   `json:"first_no,omitempty"`
	FirstOff  int64 `json:"first_off,omitempty"`
	Legacy    bool  `json:"legacy,omitempty"`
	Envelopes int   `json:"envelopes,omitempty"` // lines shaped as {timestamp, type, payload}

	// RunID is settled by the first call made: rows already final must
	// not change run, so a session_meta read after it does not rename it.
	RunID   string       `json:"run_id,omitempty"`
	Meta    *sessionMeta `json:"meta,omitempty"`
	Started *stamp       `json:"started,omitempty"`
	Last    *stamp       `json:"last,omitempty"`
	Model   string       `json:"model,omitempty"`
	// Cwd is the last turn_context's working folder: a session's turns
	// may move; before any, the session_meta's is the calls'.
	Cwd         string    `json:"cwd,omitempty"`
	Models      []string  `json:"models,omitempty"`
	ModelsCut   bool      `json:"models_cut,omitempty"`
	Turns       int       `json:"turns,omitempty"`
	Aborted     int       `json:"aborted,omitempty"`
	LastAborted bool      `json:"last_aborted,omitempty"`
	ToolCalls   int       `json:"tool_calls,omitempty"`
	PrevTotal   *usage    `json:"prev_total,omitempty"`
	Tokens      *float64  `json:"tokens,omitempty"`
	Pending     []failure `json:"pending,omitempty"`
	// TurnFailed says an error event already failed the turn's call, so
	// the turn's task_complete with the same error is no second call.
	TurnFailed bool `json:"turn_failed,omitempty"`
	Used       int  `json:"used,omitempty"`
	Ignored    int  `json:"ignored,omitempty"`
	Problems   int  `json:"problems,omitempty"`
	// RateLimits are the latest plan figures a token_count carried.
	RateLimits *rateLimits `json:"rate_limits,omitempty"`
}

// maxModels bounds the distinct models a run's detail lists, so that what
// a file holds open does not grow with its turns; later new models are
// not listed, and the detail says the list was cut.
const maxModels = 100

// stamp is a time as seconds and nanoseconds since 1970. A state keeps
// times so because UTC can move a parsed time to year -1 or 10000, which
// a time's JSON text cannot hold.
type stamp [2]int64

func stampOf(t time.Time) *stamp { return &stamp{t.Unix(), int64(t.Nanosecond())} }

func (s *stamp) time() *time.Time {
	if s == nil {
		return nil
	}
	t := time.Unix(s[0], s[1]).UTC()
	return &t
}

// sessionMeta is the session_meta payload (and the legacy header, whose
// fields have the same names).
type sessionMeta struct {
	ID            string          `json:"id"`
	Cwd           string          `json:"cwd"`
	Originator    string          `json:"originator"`
	CLIVersion    string          `json:"cli_version"`
	Source        json.RawMessage `json:"source,omitempty"`
	ModelProvider string          `json:"model_provider"`
}

// keep drops what of a session_meta the run does not show, before it is
// kept: a source too long to copy into the detail.
func (m *sessionMeta) keep() *sessionMeta {
	if len(m.Source) == 0 || string(m.Source) == "null" || len(m.Source) > 4*maxExcerpt {
		m.Source = nil
	}
	return m
}

func newRollout(path string) *rollout {
	return &rollout{path: path, out: &records.Set{}}
}

// Line reads one line. Blank lines hold no record: they are neither read
// nor counted. The first line read says which of the two formats the file
// is in.
func (r *rollout) Line(no int, off int64, b []byte) {
	if len(bytes.TrimSpace(b)) == 0 {
		return
	}
	l := line{No: no, Off: off, B: b}
	first := r.Lines == 0
	r.Lines++
	if first {
		r.FirstNo, r.FirstOff = no, off
		r.Legacy = legacyHeader(b)
	}
	if r.Legacy {
		r.legacyLine(l, first)
		return
	}
	r.currentLine(l, first)
}

// currentLine reads a line of a file of enveloped lines.
func (r *rollout) currentLine(l line, first bool) {
	env, ok, perr := decodeEnvelope(l)
	if ok {
		r.Envelopes++
	}
	if perr == nil && first && env.typ != "session_meta" {
		perr = l.problem("type", "first line: want session_meta, got "+excerpt(env.typ))
	}
	if perr == nil {
		var use bool
		if use, perr = r.handle(l, env); perr == nil {
			r.count(use)
			r.seen(env.ts)
			return
		}
	}
	r.problem(*perr)
}

func (r *rollout) problem(p records.Error) {
	r.out.Problems = append(r.out.Problems, p)
	r.Problems++
}

func (r *rollout) count(use bool) {
	if use {
		r.Used++
	} else {
		r.Ignored++
	}
}

// seen notes a read line's time: the run ends at the last.
func (r *rollout) seen(ts time.Time) {
	r.Last = stampOf(ts)
	if r.Started == nil {
		r.Started = r.Last
	}
}

// handle reads one envelope; use says whether it fed a row, rather than
// being a record kind the store has no column for.
func (r *rollout) handle(l line, env envelope) (use bool, perr *records.Error) {
	switch env.typ {
	case "session_meta":
		if r.Meta != nil {
			// A fork's file may repeat its parent's header after its own.
			return false, nil
		}
		m := &sessionMeta{}
		if perr := decodePayload(l, env.payload, m); perr != nil {
			return false, perr
		}
		r.Meta, r.Started = m.keep(), stampOf(env.ts)
		return true, nil
	case "turn_context":
		var tc struct {
			Model string `json:"model"`
			Cwd   string `json:"cwd"`
		}
		if perr := decodePayload(l, env.payload, &tc); perr != nil {
			return false, perr
		}
		r.TurnFailed = false // a new turn
		r.closePending()
		r.Turns++
		r.LastAborted = false
		r.Model = tc.Model
		if tc.Cwd != "" {
			r.Cwd = tc.Cwd
		}
		if tc.Model != "" && !slices.Contains(r.Models, tc.Model) {
			if len(r.Models) < maxModels {
				r.Models = append(r.Models, tc.Model)
			} else {
				r.ModelsCut = true
			}
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
			r.ToolCalls++
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
	case "task_complete":
		return r.taskComplete(l, env)
	case "turn_aborted":
		r.closePending()
		r.Aborted++
		r.LastAborted = true
		return true, nil
	}
	return false, nil
}

// runID is the run's id once settled; before, the session id the file
// states, else the one its name ends with, else its name.
func (r *rollout) runID() string {
	if r.RunID != "" {
		return r.RunID
	}
	if r.Meta != nil && strings.TrimSpace(r.Meta.ID) != "" {
		return strings.TrimSpace(r.Meta.ID)
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
	if r.Meta == nil {
		return ""
	}
	return strings.ToLower(strings.TrimSpace(r.Meta.ModelProvider))
}

// run is the file's run as the lines read so far show it.
func (r *rollout) run() records.Run {
	id := r.runID()
	run := records.Run{
		System: records.Codex, RunID: id, Source: Source, Batch: id,
		StartedAt: r.Started.time(), Status: "unfinished", Detail: r.detail(),
	}
	if r.Tokens != nil {
		run.Tokens = records.Float(*r.Tokens)
	}
	if !r.Legacy {
		run.FinishedAt = r.Last.time()
	}
	return run
}

// isToolCall says whether a response item is the model calling a tool.
func isToolCall(typ string) bool {
	return typ == "function_call" || typ == "custom_tool_call" || typ == "local_shell_call"
}

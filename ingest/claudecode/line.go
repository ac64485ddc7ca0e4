package claudecode

import (
	"bytes"
	"encoding/json"
	"time"

	"github.com/orchstat/orchstat/model/records"
)

// rawLine is a transcript line's top-level fields that the parser reads.
type rawLine struct {
	Type              json.RawMessage `json:"type"`
	Subtype           json.RawMessage `json:"subtype"`
	Timestamp         json.RawMessage `json:"timestamp"`
	SessionID         json.RawMessage `json:"sessionId"`
	AgentID           json.RawMessage `json:"agentId"`
	Cwd               json.RawMessage `json:"cwd"`
	Version           json.RawMessage `json:"version"`
	GitBranch         json.RawMessage `json:"gitBranch"`
	UUID              json.RawMessage `json:"uuid"`
	IsSidechain       json.RawMessage `json:"isSidechain"`
	RequestID         json.RawMessage `json:"requestId"`
	Message           json.RawMessage `json:"message"`
	IsAPIErrorMessage json.RawMessage `json:"isApiErrorMessage"`
	APIErrorStatus    json.RawMessage `json:"apiErrorStatus"`
	Error             json.RawMessage `json:"error"`
	CostUSD           json.RawMessage `json:"costUSD"`
	RetryAttempt      json.RawMessage `json:"retryAttempt"`
	MaxRetries        json.RawMessage `json:"maxRetries"`
	RetryInMs         json.RawMessage `json:"retryInMs"`
	Cause             json.RawMessage `json:"cause"`
	Content           json.RawMessage `json:"content"`
}

// entry is one conversation line (user, assistant or system) as read.
type entry struct {
	line int
	typ  string
	// subtype is a system line's kind ("api_error", "compact_boundary", ...).
	subtype                                string
	ts                                     *time.Time
	session, agentID, cwd, version, branch string
	uuid, requestID                        string
	sidechain                              bool
	asst                                   *assistant // assistant lines
	retry                                  *retry     // system api_error lines
}

// Record types. Only the conversation types are read; the others are
// Claude Code's own bookkeeping (file snapshots, queued prompts, titles,
// progress of sub-agents) and say nothing about model calls.
var (
	conversationTypes = map[string]bool{"user": true, "assistant": true, "system": true}
	bookkeepingTypes  = map[string]bool{
		"summary": true, "attachment": true, "file-history-snapshot": true,
		"permission-mode": true, "queue-operation": true, "last-prompt": true,
		"ai-title": true, "custom-title": true, "agent-name": true, "progress": true,
	}
)

var bom = []byte{0xEF, 0xBB, 0xBF}

// lineKind says what became of a line.
type lineKind uint8

const (
	lineBlank   lineKind = iota
	lineUsed             // a conversation line
	lineIgnored          // a bookkeeping or unknown record type
	lineProblem          // not a record, or a known record with a wrong-typed field
)

// decodeLine reads one line. A line that is not a conversation record is
// ignored without looking further, so that versions adding fields to
// bookkeeping records do not produce problems.
func decodeLine(b []byte, n int) (*entry, lineKind, *fieldError) {
	t := bytes.TrimSpace(bytes.TrimPrefix(b, bom))
	if len(t) == 0 {
		return nil, lineBlank, nil
	}
	var r rawLine
	if t[0] != '{' {
		return nil, lineProblem, &fieldError{"", "not a JSON object: " + records.Cut(string(t), 120)}
	}
	if json.Unmarshal(t, &r) != nil {
		return nil, lineProblem, &fieldError{"", "not valid JSON: " + records.Cut(string(t), 120)}
	}
	typ, ferr := str(r.Type, "type")
	if ferr != nil {
		return nil, lineProblem, ferr
	}
	if typ == "" {
		return nil, lineProblem, &fieldError{"type", "no record type"}
	}
	if !conversationTypes[typ] {
		return nil, lineIgnored, nil
	}
	e := &entry{line: n, typ: typ}
	if ferr := e.readCommon(&r); ferr != nil {
		return nil, lineProblem, ferr
	}
	switch {
	case typ == "assistant":
		e.asst, ferr = readAssistant(&r)
	case typ == "system" && e.subtype == "api_error":
		e.retry, ferr = readRetry(&r)
	}
	if ferr != nil {
		return nil, lineProblem, ferr
	}
	return e, lineUsed, nil
}

// readCommon reads the fields every conversation line may carry.
func (e *entry) readCommon(r *rawLine) *fieldError {
	var err *fieldError
	strs := []struct {
		dst   *string
		raw   json.RawMessage
		field string
	}{
		{&e.subtype, r.Subtype, "subtype"}, {&e.session, r.SessionID, "sessionId"},
		{&e.agentID, r.AgentID, "agentId"}, {&e.cwd, r.Cwd, "cwd"},
		{&e.version, r.Version, "version"}, {&e.branch, r.GitBranch, "gitBranch"},
		{&e.uuid, r.UUID, "uuid"}, {&e.requestID, r.RequestID, "requestId"},
	}
	for _, s := range strs {
		if *s.dst, err = str(s.raw, s.field); err != nil {
			return err
		}
	}
	if e.sidechain, err = boolean(r.IsSidechain, "isSidechain"); err != nil {
		return err
	}
	e.ts, err = timestamp(r.Timestamp, "timestamp")
	return err
}

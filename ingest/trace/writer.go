package trace

import (
	"bytes"
	"encoding/json"
	"time"
)

// TimeLayout is the envelope's timestamp as the orchestrator writes it
// (2026-01-29T17:48:11.416Z: UTC, milliseconds), the shape ParseTime
// reads fastest.
const TimeLayout = "2006-01-02T15:04:05.000Z"

// SchemaVersion is the envelope version a Writer writes.
const SchemaVersion = 1

// envelope is a trace line as the orchestrator writes it, in its key order.
type envelope struct {
	Type          string `json:"type"`
	SchemaVersion int    `json:"schemaVersion"`
	Timestamp     string `json:"timestamp"`
	RunID         string `json:"runId"`
	Payload       any    `json:"payload"`
}

// AppendLine appends one trace line, an event of run runID of type typ at
// at with payload, ending in a newline, to dst. A nil payload is written
// as {}. HTML characters are not escaped, as the orchestrator does not.
func AppendLine(dst []byte, runID, typ string, at time.Time, payload any) ([]byte, error) {
	if payload == nil {
		payload = struct{}{}
	}
	b := bytes.NewBuffer(dst)
	enc := json.NewEncoder(b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(envelope{typ, SchemaVersion, at.UTC().Format(TimeLayout), runID, payload}); err != nil {
		return dst, err
	}
	return b.Bytes(), nil
}

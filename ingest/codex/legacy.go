package codex

import (
	"encoding/json"

	"github.com/orchstat/orchstat/model/records"
)

// Rollouts written before mid-2025 have no envelope: the first line is a
// bare header {id, timestamp, instructions, cwd?, originator?,
// cli_version?, git?}, and the rest are {"record_type":"state"} markers
// and bare response items, mostly without timestamps and never with a
// token count or the model. The header gives the run and the tool calls
// are counted; the other lines are ignored.

// legacyHeader says whether a first line is a legacy header: an object
// with an id and a timestamp and no envelope.
func legacyHeader(b []byte) bool {
	var top map[string]json.RawMessage
	if json.Unmarshal(b, &top) != nil {
		return false
	}
	_, typ := top["type"]
	_, payload := top["payload"]
	_, marker := top["record_type"]
	var id string
	_, ts := top["timestamp"]
	return !typ && !payload && !marker && ts && json.Unmarshal(top["id"], &id) == nil && id != ""
}

// legacyLine reads a line of a legacy file: its header, and every other
// line that is a JSON object ignored.
func (r *rollout) legacyLine(l line, first bool) {
	top, perr := object(l)
	if perr == nil && first {
		perr = r.readHeader(l, top)
	}
	if perr != nil {
		r.problem(*perr)
		return
	}
	r.count(first || r.legacyToolCall(top))
}

// readHeader reads a legacy header; a timestamp that does not parse makes
// it a problem, and the run is then named by the file alone.
func (r *rollout) readHeader(l line, top map[string]json.RawMessage) *records.Error {
	ts, perr := parseTime(l, "timestamp", top["timestamp"])
	if perr != nil {
		return perr
	}
	m := &sessionMeta{}
	if perr := decodeAt(l, l.B, "", m); perr != nil {
		return perr
	}
	r.Meta, r.Started = m.keep(), stampOf(ts)
	return nil
}

// legacyToolCall counts a bare tool-call item.
func (r *rollout) legacyToolCall(top map[string]json.RawMessage) bool {
	var typ string
	if json.Unmarshal(top["type"], &typ) != nil || !isToolCall(typ) {
		return false
	}
	r.ToolCalls++
	return true
}

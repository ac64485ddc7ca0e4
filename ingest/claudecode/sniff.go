package claudecode

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"strings"
)

// Sniff reports whether a file's first bytes look like a Claude Code
// transcript: a JSON line with a string sessionId and a record type
// Claude Code writes, or a first line that is an old-style summary record
// ({"type":"summary","summary":...,"leafUuid":...}). A first line longer
// than head (a pasted image) is judged by its keys' text.
func Sniff(head []byte) bool {
	head = bytes.TrimPrefix(head, bom)
	lines := bytes.Split(head, []byte{'\n'})
	complete := lines[:len(lines)-1]
	if len(complete) == 0 || bytes.HasSuffix(head, []byte{'\n'}) {
		complete = lines
	}
	for i, l := range complete {
		l = bytes.TrimSpace(l)
		if len(l) == 0 {
			continue
		}
		var r struct {
			Type      any `json:"type"`
			SessionID any `json:"sessionId"`
			Summary   any `json:"summary"`
			LeafUUID  any `json:"leafUuid"`
		}
		if l[0] != '{' || json.Unmarshal(l, &r) != nil {
			return i == len(lines)-1 && partialLooksRight(l)
		}
		typ, _ := r.Type.(string)
		_, hasSession := r.SessionID.(string)
		if hasSession && (conversationTypes[typ] || bookkeepingTypes[typ]) {
			return true
		}
		if i == 0 && typ == "summary" && r.Summary != nil && r.LeafUUID != nil {
			return true
		}
	}
	return false
}

// partialLooksRight judges a line cut off by the head's end by the keys
// every conversation record starts with.
func partialLooksRight(l []byte) bool {
	if !bytes.HasPrefix(l, []byte("{")) || !bytes.Contains(l, []byte(`"sessionId":"`)) {
		return false
	}
	for typ := range conversationTypes {
		if bytes.Contains(l, []byte(`"type":"`+typ+`"`)) {
			return true
		}
	}
	return false
}

// IsTranscriptPath reports whether a path is where Claude Code writes
// transcripts: a .jsonl file at least one directory below projects/ in a
// .claude or claude configuration directory (~/.claude/projects/<p>/x.jsonl,
// ~/.config/claude/projects/<p>/<s>/subagents/agent-x.jsonl), or an
// agent-*.jsonl file in a subagents/ directory. It is deliberately strict:
// discovery reads what it names without being told the format.
func IsTranscriptPath(path string) bool {
	parts := strings.FieldsFunc(filepath.ToSlash(path), func(r rune) bool { return r == '/' || r == '\\' })
	n := len(parts)
	if n < 2 || !strings.HasSuffix(parts[n-1], ".jsonl") || parts[n-1] == ".jsonl" {
		return false
	}
	if parts[n-2] == "subagents" && strings.HasPrefix(parts[n-1], "agent-") {
		return true
	}
	for i := 1; i+2 < n; i++ {
		if parts[i] == "projects" && (parts[i-1] == ".claude" || parts[i-1] == "claude") {
			return true
		}
	}
	return false
}

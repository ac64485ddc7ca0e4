package codex

import (
	"bytes"
	"encoding/json"
	"path"
	"strings"

	"github.com/orchstat/orchstat/model/records"
)

// Sniff says whether head, the first bytes of a file, starts like a
// rollout: {"timestamp": "...", "type": "session_meta", "payload": ...},
// or a legacy header {"id": "...", "timestamp": "...", "instructions": ...}.
// A session_meta line can be long (it carries the agent's instructions),
// so head may end inside it: the keys read before the cut decide.
func Sniff(head []byte) bool {
	head = bytes.TrimPrefix(head, []byte(records.BOM))
	if i := bytes.IndexByte(head, '\n'); i >= 0 {
		head = head[:i]
	}
	keys := topKeys(head)
	if keys["type"] == `"session_meta"` {
		_, ts := keys["timestamp"]
		return ts
	}
	_, typ := keys["type"]
	_, ts := keys["timestamp"]
	_, instructions := keys["instructions"]
	id := keys["id"]
	return !typ && ts && instructions && len(id) > 2 && id[0] == '"'
}

// topKeys reads the keys of the JSON object that starts b, as far as b
// goes, with the text of each scalar value ("" for an object or array).
func topKeys(b []byte) map[string]string {
	keys := map[string]string{}
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	if t, err := d.Token(); err != nil || t != json.Delim('{') {
		return keys
	}
	for d.More() {
		t, err := d.Token()
		k, ok := t.(string)
		if err != nil || !ok {
			return keys
		}
		var v json.RawMessage
		if err := d.Decode(&v); err != nil {
			keys[k] = ""
			return keys
		}
		if c := v[0]; c == '{' || c == '[' {
			keys[k] = ""
		} else {
			keys[k] = string(v)
		}
	}
	return keys
}

// IsRolloutPath says whether a path is named like a rollout Codex wrote:
// rollout-*.jsonl in a sessions/ or archived_sessions/ folder, or below
// one. Compressed rollouts (.jsonl.zst) are not read.
func IsRolloutPath(p string) bool {
	p = path.Clean(strings.ReplaceAll(p, `\`, "/"))
	dir, name := path.Split(p)
	if !strings.HasPrefix(name, "rollout-") || !strings.HasSuffix(name, ".jsonl") || len(name) <= len("rollout-.jsonl") {
		return false
	}
	for _, part := range strings.Split(dir, "/") {
		if part == "sessions" || part == "archived_sessions" {
			return true
		}
	}
	return false
}

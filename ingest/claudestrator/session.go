package claudestrator

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"

	"github.com/orchstat/orchstat/model/records"
)

// plainKV is a session_state.md line "loop_count: 3". Keys are
// identifier-like so that prose with a colon is not read as a field.
var plainKV = regexp.MustCompile(`^([A-Za-z][A-Za-z0-9_ .-]{0,63}):\s*(.*)$`)

// session is what session_state.md says about the orchestrator run, kept
// as a records.Config (see the package comment for why not a Run).
type session struct {
	Kind             string            `json:"kind"`
	RunID            string            `json:"run_id"`
	LoopCount        *int              `json:"loop_count,omitempty"`
	TotalAutoRetries *int              `json:"total_auto_retries,omitempty"`
	AutoRetryEnabled *bool             `json:"auto_retry_enabled,omitempty"`
	LastRetryReason  string            `json:"last_retry_reason,omitempty"`
	Fields           map[string]string `json:"fields"`
}

// ParseSessionState reads .orchestrator/session_state.md: the real file's
// "key: value" lines (run_id, loop_count, ...) and the tables of the
// templates, such as auto-retry's "## Auto-Retry State" (lines 183-190).
// Without a run_id the session cannot be tied to history.csv's runs, and
// the file is an error.
func ParseSessionState(path string, b []byte) (*records.Set, error) {
	lines, err := mdLines(b, "run_id")
	if err != nil {
		return nil, err
	}
	var fs fields
	for _, l := range lines {
		if l.fence {
			continue
		}
		if _, _, ok := heading(l.text); ok {
			continue
		}
		if k, v, ok := fieldRow(l.text); ok {
			fs.add(k, v, l.n)
		} else if k, v, ok := boldLabel(l.text); ok {
			fs.add(k, v, l.n)
		} else if m := plainKV.FindStringSubmatch(strings.TrimSpace(l.text)); m != nil && !strings.Contains(m[1], "  ") {
			fs.add(m[1], m[2], l.n)
		}
	}
	if len(fs.list) == 0 {
		return nil, &records.Error{Line: 1, Field: "run_id", Msg: "no fields: not a claudestrator session_state.md"}
	}
	runID := strings.Trim(fs.value("run_id", "runid", "run id"), "`*")
	if runID == "" || strings.EqualFold(runID, "null") {
		line := 1
		if f, ok := fs.get("run_id"); ok {
			line = f.line
		}
		return nil, &records.Error{Line: line, Field: "run_id", Msg: "no run_id: the session cannot be tied to its runs"}
	}
	set := &records.Set{}
	s := session{Kind: "session_state", RunID: runID, Fields: fs.raw()}
	count := func(dst **int, name string) {
		f, ok := fs.get(name)
		if !ok {
			return
		}
		n, present, valid := parseInt(f.val)
		switch {
		case !valid:
			set.Problems = append(set.Problems, problem(f.line, name, fmt.Sprintf("%q is not a count", f.val)))
		case present:
			*dst = records.Int(n)
		}
	}
	count(&s.LoopCount, "loop_count")
	count(&s.TotalAutoRetries, "total_auto_retries")
	if f, ok := fs.get("auto_retry_enabled"); ok {
		v, known, valid := parseBool(f.val)
		switch {
		case !valid:
			set.Problems = append(set.Problems, problem(f.line, "auto_retry_enabled", fmt.Sprintf("%q is not true or false", f.val)))
		case known:
			s.AutoRetryEnabled = records.Bool(v)
		}
	}
	if r := fs.value("last_retry_reason"); r != "" && !isNull(r) {
		s.LastRetryReason = r
	}
	js, err := json.Marshal(s)
	if err != nil {
		return nil, &records.Error{Line: 1, Field: "run_id", Msg: err.Error()}
	}
	set.Configs = append(set.Configs, records.Config{System: records.Claudestrator, JSON: js})
	sortProblems(set)
	return set, nil
}

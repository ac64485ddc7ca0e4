package claudecode

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"time"

	"github.com/orchstat/orchstat/ingest/records"
)

// runInfo gathers a file's run as its lines and calls are read.
type runInfo struct {
	runID, session, agentID string
	sub                     bool
	start, end              *time.Time
	cwd, version, branch    string
	sessions                map[string]bool
	sidechain               bool
	models                  []string
	toolCalls               int
	calls, failed           int
	lastFailed              bool
	usage                   *usage
	cost                    *float64
}

// describe reads who the file's run is: a session, or a sub-agent of one
// (a file named agent-*.jsonl, or whose lines are a sidechain with an
// agentId). Names the lines do not carry come from the path: a session
// file is named after its session, and a current sub-agent file sits in
// <sessionId>/subagents/.
func describe(path string, entries []*entry) *runInfo {
	ri := &runInfo{sessions: map[string]bool{}}
	seen := map[string]bool{}
	for _, e := range entries {
		if e.session != "" {
			ri.sessions[e.session] = true
			if ri.session == "" {
				ri.session = e.session
			}
		}
		if ri.agentID == "" {
			ri.agentID = e.agentID
		}
		ri.cwd, ri.version, ri.branch = last(ri.cwd, e.cwd), last(ri.version, e.version), last(ri.branch, e.branch)
		ri.sidechain = ri.sidechain || e.sidechain
		ri.start, ri.end = minTime(ri.start, e.ts), maxTime(ri.end, e.ts)
		if e.asst != nil && e.asst.model != "" && e.asst.model != synthetic && !seen[e.asst.model] {
			seen[e.asst.model] = true
			ri.models = append(ri.models, e.asst.model)
		}
	}
	name := stem(path)
	ri.sub = strings.HasPrefix(name, "agent-") || (entries[0].sidechain && ri.agentID != "")
	if !ri.sub {
		if ri.session == "" {
			ri.session = name
		}
		ri.runID = ri.session
	} else {
		if ri.agentID == "" {
			ri.agentID = strings.TrimPrefix(name, "agent-")
		}
		if dir := filepath.Dir(path); ri.session == "" && filepath.Base(dir) == "subagents" {
			ri.session = filepath.Base(filepath.Dir(dir))
		}
		ri.runID = "agent-" + ri.agentID
		if ri.session != "" {
			ri.runID = ri.session + "/" + ri.runID
		}
	}
	if ri.runID == "" || ri.runID == "." {
		ri.runID = "unnamed-session"
	}
	return ri
}

func last(old, s string) string {
	if s != "" {
		return s
	}
	return old
}

// add counts a call into the run.
func (ri *runInfo) add(c *call, rc records.Call) {
	ri.calls++
	ri.toolCalls += c.toolCalls()
	ri.lastFailed = !c.succeeded()
	if !c.succeeded() {
		ri.failed++
		return
	}
	if u := c.usage(); u != nil {
		if ri.usage == nil {
			ri.usage = &usage{}
		}
		ri.usage.input += u.input
		ri.usage.output += u.output
		ri.usage.cacheCreate += u.cacheCreate
		ri.usage.cacheRead += u.cacheRead
	}
	if rc.CostUSD != nil {
		ri.cost = records.Float(deref(ri.cost) + *rc.CostUSD)
	}
}

// detail is the run's Detail, for `orchstat sql`.
type detail struct {
	Cwd           string       `json:"cwd,omitempty"`
	Version       string       `json:"version,omitempty"`
	GitBranch     string       `json:"gitBranch,omitempty"`
	Models        []string     `json:"models,omitempty"`
	Calls         int          `json:"calls"`
	FailedCalls   int          `json:"failed_calls"`
	ToolCalls     int          `json:"tool_calls"`
	Sidechain     bool         `json:"sidechain"`
	ParentSession string       `json:"parent_session,omitempty"`
	AgentID       string       `json:"agent_id,omitempty"`
	SessionIDs    []string     `json:"session_ids,omitempty"`
	Tokens        *tokenDetail `json:"tokens,omitempty"`
}

type tokenDetail struct {
	Input       float64 `json:"input_tokens"`
	CacheCreate float64 `json:"cache_creation_input_tokens"`
	CacheRead   float64 `json:"cache_read_input_tokens"`
	Output      float64 `json:"output_tokens"`
}

// run makes the Run. A transcript never says that a session failed or
// ended: its status is "unfinished" when its last call failed or it made
// none, and "success" when its last call got a response.
func (ri *runInfo) run() records.Run {
	r := records.Run{
		System: records.ClaudeCode, RunID: ri.runID, Source: Source, Batch: ri.session,
		StartedAt: ri.start, FinishedAt: ri.end, Status: "success", CostUSD: ri.cost,
	}
	if ri.calls == 0 || ri.lastFailed {
		r.Status = "unfinished"
	}
	if ri.start != nil && ri.end != nil {
		r.DurationMS = records.Float(float64(ri.end.Sub(*ri.start)) / float64(time.Millisecond))
	}
	d := detail{
		Cwd: ri.cwd, Version: ri.version, GitBranch: ri.branch, Models: ri.models,
		Calls: ri.calls, FailedCalls: ri.failed, ToolCalls: ri.toolCalls, Sidechain: ri.sidechain,
	}
	if ri.sub {
		d.ParentSession, d.AgentID = ri.session, ri.agentID
	}
	if len(ri.sessions) > 1 {
		d.SessionIDs = sortedKeys(ri.sessions)
	}
	if u := ri.usage; u != nil {
		r.Tokens = records.Float(u.input + u.cacheCreate + u.cacheRead + u.output)
		d.Tokens = &tokenDetail{u.input, u.cacheCreate, u.cacheRead, u.output}
	}
	r.Detail, _ = json.Marshal(d)
	return r
}

package claudecode

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"time"

	"github.com/orchstat/orchstat/model/records"
)

// Bounds on the run's lists (see the package doc).
const (
	// maxSessions is the most distinct session ids the run's detail lists.
	maxSessions = 32
	// maxModels is the most distinct models the run's detail lists.
	maxModels = 32
	// maxIdentityWait is how many conversation lines may pass before the
	// run's identity is settled with what they named.
	maxIdentityWait = 100
)

// runInfo gathers a file's run as its lines and calls are read: small
// aggregates, never the lines. Its fields are exported for the stream's
// State.
type runInfo struct {
	// Who the run is: the first session and agent ids the lines name,
	// whether the first conversation line is a sidechain, and whether
	// that is settled (see settle).
	Session        string `json:"session,omitempty"`
	AgentID        string `json:"agent,omitempty"`
	Entries        int    `json:"entries,omitempty"`
	FirstSidechain bool   `json:"firstSide,omitempty"`
	Settled        bool   `json:"settled,omitempty"`

	Start     *time.Time `json:"start,omitempty"`
	End       *time.Time `json:"end,omitempty"`
	Cwd       string     `json:"cwd,omitempty"`
	Version   string     `json:"version,omitempty"`
	Branch    string     `json:"branch,omitempty"`
	Sessions  []string   `json:"sessions,omitempty"`
	Sidechain bool       `json:"side,omitempty"`
	Models    []string   `json:"models,omitempty"`

	// The calls counted so far, in the order they began.
	ToolCalls  int      `json:"tools,omitempty"`
	Calls      int      `json:"calls,omitempty"`
	Failed     int      `json:"failed,omitempty"`
	LastFailed bool     `json:"lastFailed,omitempty"`
	Usage      *usage   `json:"usage,omitempty"`
	Cost       *float64 `json:"cost,omitempty"`
}

// see counts a conversation line into the run.
func (ri *runInfo) see(e *entry) {
	if ri.Entries == 0 {
		ri.FirstSidechain = e.sidechain
	}
	ri.Entries++
	if e.session != "" && !contains(ri.Sessions, e.session) && len(ri.Sessions) < maxSessions {
		ri.Sessions = append(ri.Sessions, e.session)
	}
	if !ri.Settled {
		ri.Session, ri.AgentID = first(ri.Session, e.session), first(ri.AgentID, e.agentID)
	}
	ri.Cwd, ri.Version, ri.Branch = last(ri.Cwd, e.cwd), last(ri.Version, e.version), last(ri.Branch, e.branch)
	ri.Sidechain = ri.Sidechain || e.sidechain
	ri.Start, ri.End = minTime(ri.Start, e.ts), maxTime(ri.End, e.ts)
	if e.asst != nil && e.asst.model != "" && e.asst.model != synthetic &&
		!contains(ri.Models, e.asst.model) && len(ri.Models) < maxModels {
		ri.Models = append(ri.Models, e.asst.model)
	}
}

// settle fixes who the run is once no later line can change it: the
// lines have named the session, and the agent unless the file cannot be
// a sub-agent's; or maxIdentityWait conversation lines have passed. Calls
// are committed only then, as they carry the run's and the session's ids.
func (ri *runInfo) settle(path string) {
	if ri.Settled || ri.Entries == 0 {
		return
	}
	maybeSub := strings.HasPrefix(stem(path), "agent-") || ri.FirstSidechain
	if (ri.Session != "" && (ri.AgentID != "" || !maybeSub)) || ri.Entries >= maxIdentityWait {
		ri.Settled = true
	}
}

// ident is who the run is.
type ident struct {
	runID, session, agentID string
	sub                     bool
}

// describe says who the file's run is: a session, or a sub-agent of one
// (a file named agent-*.jsonl, or whose lines are a sidechain with an
// agentId). Names the lines do not carry come from the path: a session
// file is named after its session, and a current sub-agent file sits in
// <sessionId>/subagents/.
func (ri *runInfo) describe(path string) ident {
	id := ident{session: ri.Session, agentID: ri.AgentID}
	name := stem(path)
	id.sub = strings.HasPrefix(name, "agent-") || (ri.FirstSidechain && id.agentID != "")
	if !id.sub {
		if id.session == "" {
			id.session = name
		}
		id.runID = id.session
	} else {
		if id.agentID == "" {
			id.agentID = strings.TrimPrefix(name, "agent-")
		}
		if dir := filepath.Dir(path); id.session == "" && filepath.Base(dir) == "subagents" {
			id.session = filepath.Base(filepath.Dir(dir))
		}
		id.runID = "agent-" + id.agentID
		if id.session != "" {
			id.runID = id.session + "/" + id.runID
		}
	}
	if id.runID == "" || id.runID == "." {
		id.runID = "unnamed-session"
	}
	return id
}

func last(old, s string) string {
	if s != "" {
		return s
	}
	return old
}

func first(old, s string) string {
	if old != "" {
		return old
	}
	return s
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// add counts a call into the run.
func (ri *runInfo) add(c *call, rc records.Call) {
	ri.Calls++
	ri.ToolCalls += c.toolCalls()
	ri.LastFailed = !c.succeeded()
	if !c.succeeded() {
		ri.Failed++
		return
	}
	if u := c.Usage; u != nil {
		if ri.Usage == nil {
			ri.Usage = &usage{}
		}
		ri.Usage.Input += u.Input
		ri.Usage.Output += u.Output
		ri.Usage.CacheCreate += u.CacheCreate
		ri.Usage.CacheRead += u.CacheRead
	}
	if rc.CostUSD != nil {
		ri.Cost = records.Float(deref(ri.Cost) + *rc.CostUSD)
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
func (ri *runInfo) run(id ident) records.Run {
	r := records.Run{
		System: records.ClaudeCode, RunID: id.runID, Source: Source, Batch: id.session,
		StartedAt: ri.Start, FinishedAt: ri.End, Status: "success", CostUSD: ri.Cost,
	}
	if ri.Calls == 0 || ri.LastFailed {
		r.Status = "unfinished"
	}
	if ri.Start != nil && ri.End != nil {
		r.DurationMS = records.Float(float64(ri.End.Sub(*ri.Start)) / float64(time.Millisecond))
	}
	d := detail{
		Cwd: ri.Cwd, Version: ri.Version, GitBranch: ri.Branch, Models: ri.Models,
		Calls: ri.Calls, FailedCalls: ri.Failed, ToolCalls: ri.ToolCalls, Sidechain: ri.Sidechain,
	}
	if id.sub {
		d.ParentSession, d.AgentID = id.session, id.agentID
	}
	if len(ri.Sessions) > 1 {
		d.SessionIDs = sorted(ri.Sessions)
	}
	if u := ri.Usage; u != nil {
		r.Tokens = records.Float(u.Input + u.CacheCreate + u.CacheRead + u.Output)
		d.Tokens = &tokenDetail{u.Input, u.CacheCreate, u.CacheRead, u.Output}
	}
	r.Detail, _ = json.Marshal(d)
	return r
}

package claudecode

import (
	"strconv"
	"time"
)

// Bounds on what one call keeps while it is open (see the package doc).
const (
	// maxChain is the most failed attempts one call holds. Claude Code's
	// default budget is 10; a longer chain is cut into calls of maxChain.
	maxChain = 1000
	// maxToolIDs is the most distinct tool_use ids one call remembers to
	// count a block repeated by streamed lines once; past it, a new id is
	// counted without being remembered.
	maxToolIDs = 512
	// maxModelGap is how many lines after a call's first line a later
	// assistant line may name the model of a call that names none.
	maxModelGap = 1000
)

// call is one logical model request as it is assembled from lines: the
// api_error lines of its failed attempts, then the assistant lines of its
// response (several when streamed), or a final failure, or nothing when
// the session stopped during the retries. It keeps what its rows need,
// not its lines, so that an open call is small; its fields are exported
// for the stream's State.
type call struct {
	Chain []failedAttempt `json:"chain,omitempty"`
	// The call's first line: its first failed attempt's, else its
	// response's or failure's.
	First     int        `json:"first"`
	FirstUUID string     `json:"uuid,omitempty"`
	FirstTS   *time.Time `json:"ts,omitempty"`
	// Last is the call's last line.
	Last int `json:"last"`
	// Lines counts the assistant lines of the response or the failure;
	// LinesTS is the first one's time, Final the last one.
	Lines   int        `json:"lines,omitempty"`
	LinesTS *time.Time `json:"lts,omitempty"`
	Final   *finalLine `json:"final,omitempty"`
	// Usage and Cost are the last that the response's lines carry:
	// streamed lines repeat the usage as it grows, so the last holds the
	// whole.
	Usage *usage   `json:"usage,omitempty"`
	Cost  *float64 `json:"cost,omitempty"`
	// Tools are the response's distinct tool_use ids; Untracked counts
	// the blocks without an id, and those past maxToolIDs.
	Tools     []string `json:"tools,omitempty"`
	Untracked int      `json:"untracked,omitempty"`
	// Prev is the last assistant line with a real model at or before
	// First, Next the first after it: the candidates for the model of a
	// call that names none.
	Prev *modelAt `json:"prev,omitempty"`
	Next *modelAt `json:"next,omitempty"`
	// Cwd is the working folder its first line that names one states.
	Cwd string `json:"cwd,omitempty"`
}

// failedAttempt is an api_error line, as its attempt row needs it.
type failedAttempt struct {
	Line    int        `json:"l"`
	N       int        `json:"n"` // retryAttempt
	TS      *time.Time `json:"ts,omitempty"`
	Status  *int       `json:"s,omitempty"`
	Msg     string     `json:"m,omitempty"` // an excerpt
	Kind    string     `json:"k,omitempty"`
	Backoff *float64   `json:"b,omitempty"`
}

// finalLine is the last assistant line of a response or a failure.
type finalLine struct {
	MsgID     string `json:"id,omitempty"`
	RequestID string `json:"req,omitempty"`
	Model     string `json:"model,omitempty"`
	Failed    bool   `json:"failed,omitempty"`
	Status    *int   `json:"s,omitempty"`
	Category  string `json:"cat,omitempty"`
	// Text is an excerpt of the first text block; HasText says there was
	// one, as an excerpt of blank text is empty.
	Text    string `json:"text,omitempty"`
	HasText bool   `json:"ht,omitempty"`
}

// modelAt is where a real model name was written.
type modelAt struct {
	Line  int    `json:"l"`
	Model string `json:"m"`
}

// newCall starts a call at line e, the first of its chain or of its
// response; prev is the last real model at or before it.
func newCall(e *entry, prev *modelAt) *call {
	return &call{First: e.line, FirstUUID: e.uuid, FirstTS: e.ts, Last: e.line, Prev: prev, Cwd: e.cwd}
}

func (c *call) succeeded() bool { return c.Final != nil && !c.Final.Failed }

func (c *call) toolCalls() int { return len(c.Tools) + c.Untracked }

// addRetry adds an api_error line's failed attempt.
func (c *call) addRetry(e *entry) {
	r := e.retry
	c.Chain = append(c.Chain, failedAttempt{
		Line: e.line, N: r.attempt, TS: e.ts, Status: r.status,
		Msg: excerpt(r.msg), Kind: r.kind, Backoff: r.backoffMS,
	})
	c.Last = e.line
	c.Cwd = first(c.Cwd, e.cwd)
}

// addLine adds an assistant line of the response or the failure.
func (c *call) addLine(e *entry) {
	a := e.asst
	if c.Lines == 0 {
		c.LinesTS = e.ts
	}
	c.Lines++
	c.Last = e.line
	c.Cwd = first(c.Cwd, e.cwd)
	c.Final = &finalLine{
		MsgID: a.msgID, RequestID: e.requestID, Model: a.model, Failed: a.failed,
		Status: a.status, Category: a.category, Text: excerpt(a.text), HasText: a.text != "",
	}
	if a.usage != nil {
		c.Usage = a.usage
	}
	if a.cost != nil {
		c.Cost = a.cost
	}
	for _, id := range a.toolUses {
		if id == "" {
			c.Untracked++
			continue
		}
		if c.hasTool(id) {
			continue
		}
		if len(c.Tools) < maxToolIDs {
			c.Tools = append(c.Tools, id)
		} else {
			c.Untracked++
		}
	}
}

func (c *call) hasTool(id string) bool {
	for _, t := range c.Tools {
		if t == id {
			return true
		}
	}
	return false
}

// sawModel offers a real model written at a line after the call's first,
// the first of which is the call's Next.
func (c *call) sawModel(m modelAt) {
	if c.Next == nil && m.Line > c.First {
		c.Next = &m
	}
}

// needsModel says the call's own last line names no model: none came, or
// Claude Code's own <synthetic> failure, or an empty one.
func (c *call) needsModel() bool {
	return c.Final == nil || c.Final.Model == "" || c.Final.Model == synthetic
}

// modelKnown says no line after line n can change the call's model.
func (c *call) modelKnown(n int) bool {
	if !c.needsModel() || c.Next != nil {
		return true
	}
	ahead := n + 1 - c.First // the distance of the nearest line yet to come
	return ahead > maxModelGap || (c.Prev != nil && c.First-c.Prev.Line <= ahead)
}

// model is the call's own model, else the nearest real model: the last
// at or before its first line, or the first after it within maxModelGap
// lines, the earlier on a tie.
func (c *call) model() string {
	if !c.needsModel() {
		return c.Final.Model
	}
	next := c.Next
	if next != nil && next.Line-c.First > maxModelGap {
		next = nil
	}
	switch {
	case c.Prev != nil && (next == nil || c.First-c.Prev.Line <= next.Line-c.First):
		return c.Prev.Model
	case next != nil:
		return next.Model
	}
	return ""
}

// id names a call within its file: the message id, else the request id,
// else the first line's uuid, else its line number.
func (c *call) id() string {
	if f := c.Final; f != nil {
		// The message id first: a sub-agent's file can replay its parent's
		// messages under new request ids, and the store counts a message
		// once by its id (the calls_once view).
		if f.MsgID != "" {
			return f.MsgID
		}
		if f.RequestID != "" {
			return f.RequestID
		}
	}
	if c.FirstUUID != "" {
		return c.FirstUUID
	}
	return "line:" + strconv.Itoa(c.First)
}

// key is what joins a response's streamed lines: message.id and
// requestId; "" when a line has neither, and joins nothing.
func key(e *entry) string {
	if e.asst.msgID == "" && e.requestID == "" {
		return ""
	}
	return e.asst.msgID + "\x00" + e.requestID
}

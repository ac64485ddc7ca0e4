package claudecode

import (
	"strconv"
)

// call is one logical model request as it is assembled from lines: the
// api_error lines of its failed attempts, then the assistant lines of its
// response (several when streamed), or a final failure, or nothing when
// the session stopped during the retries.
type call struct {
	chain    []*entry // api_error lines, one per failed attempt
	lines    []*entry // assistant lines of the response or the failure
	toolUses map[string]bool
	noIDUses int // tool_use blocks without an id
}

func (c *call) first() *entry {
	if len(c.chain) > 0 {
		return c.chain[0]
	}
	return c.lines[0]
}

func (c *call) last() *entry {
	if len(c.lines) > 0 {
		return c.lines[len(c.lines)-1]
	}
	return c.chain[len(c.chain)-1]
}

// final is the response's or failure's last line; nil when none came.
func (c *call) final() *entry {
	if len(c.lines) == 0 {
		return nil
	}
	return c.lines[len(c.lines)-1]
}

func (c *call) succeeded() bool { f := c.final(); return f != nil && !f.asst.failed }

// usage is the response's usage: streamed lines repeat it as it grows, so
// the last line that has one holds the whole.
func (c *call) usage() *usage {
	for i := len(c.lines) - 1; i >= 0; i-- {
		if u := c.lines[i].asst.usage; u != nil {
			return u
		}
	}
	return nil
}

func (c *call) cost() *float64 {
	for i := len(c.lines) - 1; i >= 0; i-- {
		if v := c.lines[i].asst.cost; v != nil {
			return v
		}
	}
	return nil
}

func (c *call) toolCalls() int { return len(c.toolUses) + c.noIDUses }

func (c *call) addLine(e *entry) {
	c.lines = append(c.lines, e)
	for _, id := range e.asst.toolUses {
		if id == "" {
			c.noIDUses++
			continue
		}
		if c.toolUses == nil {
			c.toolUses = map[string]bool{}
		}
		c.toolUses[id] = true
	}
}

// grouper assembles calls from the conversation lines in file order.
type grouper struct {
	calls []*call
	byKey map[string]*call
	chain []*entry // api_error lines waiting for the call's outcome
}

// group turns conversation lines into calls.
func group(entries []*entry) []*call {
	g := &grouper{byKey: map[string]*call{}}
	for _, e := range entries {
		switch {
		case e.retry != nil:
			g.retry(e)
		case e.asst != nil && e.asst.failed:
			g.start(e)
		case e.asst != nil:
			g.response(e)
		case e.typ == "user":
			// The user spoke (or a tool answered) before any response:
			// the retried request was abandoned.
			g.flush()
		}
	}
	g.flush()
	return g.calls
}

// retry adds a failed attempt to the pending chain. An attempt number
// lower than the last starts another call; the same number again is a
// repeated notice of the same attempt (persistent mode's keep-alive) and
// is not another attempt.
func (g *grouper) retry(e *entry) {
	if n := len(g.chain); n > 0 {
		last := g.chain[n-1].retry.attempt
		if e.retry.attempt == last {
			return
		}
		if e.retry.attempt < last {
			g.flush()
		}
	}
	g.chain = append(g.chain, e)
}

// response adds a line of a model response. Lines of one streamed response
// share message.id and requestId.
func (g *grouper) response(e *entry) {
	key := ""
	if e.asst.msgID != "" || e.requestID != "" {
		key = e.asst.msgID + "\x00" + e.requestID
	}
	if c, ok := g.byKey[key]; ok && key != "" {
		c.addLine(e)
		return
	}
	c := g.start(e)
	if key != "" {
		g.byKey[key] = c
	}
}

// start begins a call with line e, taking the pending retries as its
// failed attempts.
func (g *grouper) start(e *entry) *call {
	c := &call{chain: g.chain}
	g.chain = nil
	c.addLine(e)
	g.calls = append(g.calls, c)
	return c
}

// flush ends a pending chain that no response or failure followed.
func (g *grouper) flush() {
	if len(g.chain) > 0 {
		g.calls = append(g.calls, &call{chain: g.chain})
		g.chain = nil
	}
}

// id names a call within its file: the message id, else the request id,
// else the first line's uuid, else its line number.
func (c *call) id() string {
	if f := c.final(); f != nil {
		// The message id first: a sub-agent's file can replay its parent's
		// messages under new request ids, and the store counts a message
		// once by its id (the calls_once view).
		if f.asst.msgID != "" {
			return f.asst.msgID
		}
		if f.requestID != "" {
			return f.requestID
		}
	}
	if u := c.first().uuid; u != "" {
		return u
	}
	return "line:" + strconv.Itoa(c.first().line)
}

package claudecode

import (
	"strconv"
	"strings"

	"github.com/orchstat/orchstat/ingest/records"
)

// synthetic is the model Claude Code writes on messages it made itself,
// such as "API Error: ..." after the last retry: no model answered them.
const synthetic = "<synthetic>"

// provider names who served a model from the model id's form: Bedrock ids
// carry "anthropic." ("us.anthropic.claude-...-v1:0") or a Bedrock ARN,
// Vertex ids carry "@" ("claude-...@20250514"). Anything else is taken as
// Anthropic's API: a gateway behind ANTHROPIC_BASE_URL is not visible.
func provider(model string) string {
	switch {
	case strings.HasPrefix(model, "arn:aws:bedrock"), strings.HasPrefix(model, "anthropic."),
		strings.Contains(model, ".anthropic."):
		return "aws.bedrock"
	case strings.Contains(model, "@"):
		return "gcp.vertex_ai"
	}
	return "anthropic"
}

// models is where each real model name was written, for calls whose own
// lines do not name one.
type modelAt struct {
	line  int
	model string
}

// nearest is the model of the assistant line nearest to line, the earlier
// one on a tie.
func nearest(models []modelAt, line int) string {
	best, dist := "", -1
	for _, m := range models {
		d := m.line - line
		if d < 0 {
			d = -d
		}
		if dist < 0 || d < dist {
			best, dist = m.model, d
		}
	}
	return best
}

// convert makes a call's store rows. ids keeps CallIDs unique in a file.
func (c *call) convert(run, session string, models []modelAt, ids map[string]bool) (records.Call, []records.CallAttempt) {
	rc := records.Call{
		System: records.ClaudeCode, RunID: run, Session: session, Source: Source,
		CallID: c.id(), Line: c.last().line, TS: c.first().ts, Operation: "chat",
		Success: records.Bool(c.succeeded()),
	}
	if ids[rc.CallID] {
		rc.CallID += "@" + strconv.Itoa(c.first().line)
	}
	ids[rc.CallID] = true
	if f := c.final(); f != nil && f.asst.model != synthetic {
		rc.Model = f.asst.model
	}
	if rc.Model == "" {
		rc.Model = nearest(models, c.first().line)
	}
	rc.Provider = provider(rc.Model)
	if u := c.usage(); u != nil && c.succeeded() {
		rc.InputTokens, rc.OutputTokens = records.Float(u.input), records.Float(u.output)
		rc.CacheReadTokens, rc.CacheWriteTokens = records.Float(u.cacheRead), records.Float(u.cacheCreate)
	}
	if c.succeeded() {
		rc.CostUSD = c.cost()
	} else {
		c.failure(&rc)
	}
	atts := c.attempts(&rc)
	return rc, atts
}

// failure sets a failed call's error: the final failure's status, text
// and category, else the last failed attempt's.
func (c *call) failure(rc *records.Call) {
	if n := len(c.chain); n > 0 {
		r := c.chain[n-1].retry
		rc.StatusCode, rc.Error, rc.ErrorType = r.status, excerpt(r.msg), r.kind
	}
	if f := c.final(); f != nil {
		if f.asst.status != nil {
			rc.StatusCode = f.asst.status
		}
		if f.asst.text != "" {
			rc.Error = excerpt(f.asst.text)
		}
		if f.asst.category != "" {
			rc.ErrorType = f.asst.category
		}
	}
}

// attempts sets the call's attempt count, evidence and backoff, and makes
// one row per attempt when retry lines show them.
//
// Each api_error line is an attempt that failed and was retried. The
// attempt after the last of them either answered (the response), failed
// for good (the isApiErrorMessage line), or left no record because the
// session stopped: then only the failed attempts are counted.
func (c *call) attempts(rc *records.Call) []records.CallAttempt {
	if len(c.chain) == 0 {
		if c.succeeded() {
			rc.Attempts, rc.Evidence = records.Int(1), records.EvidenceTranscript
		} else {
			rc.Evidence = records.EvidenceNone
		}
		return nil
	}
	rc.Evidence = records.EvidenceTranscript
	var out []records.CallAttempt
	for _, e := range c.chain {
		r := e.retry
		out = append(out, records.CallAttempt{
			System: records.ClaudeCode, RunID: rc.RunID, CallID: rc.CallID, Source: Source,
			Attempt: r.attempt, TS: e.ts, Success: records.Bool(false),
			StatusCode: r.status, Error: excerpt(r.msg), BackoffMS: r.backoffMS,
		})
		if r.backoffMS != nil {
			rc.BackoffMS = records.Float(deref(rc.BackoffMS) + *r.backoffMS)
		}
	}
	n := c.chain[len(c.chain)-1].retry.attempt
	rc.Attempts = records.Int(n)
	if f := c.final(); f != nil {
		rc.Attempts = records.Int(n + 1)
		last := records.CallAttempt{
			System: records.ClaudeCode, RunID: rc.RunID, CallID: rc.CallID, Source: Source,
			Attempt: n + 1, TS: c.lines[0].ts, Success: rc.Success,
		}
		if c.succeeded() {
			last.InputTokens, last.OutputTokens, last.CostUSD = rc.InputTokens, rc.OutputTokens, rc.CostUSD
			last.CacheReadTokens, last.CacheWriteTokens = rc.CacheReadTokens, rc.CacheWriteTokens
		} else {
			last.StatusCode, last.Error = f.asst.status, excerpt(f.asst.text)
		}
		out = append(out, last)
	}
	return out
}

func deref(p *float64) float64 {
	if p == nil {
		return 0
	}
	return *p
}

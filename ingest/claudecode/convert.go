package claudecode

import (
	"strings"

	"github.com/orchstat/orchstat/model/records"
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

// convert makes a call's store rows, under its CallID id.
func (c *call) convert(run, session, id string) (records.Call, []records.CallAttempt) {
	rc := records.Call{
		System: records.ClaudeCode, RunID: run, Session: session, Source: Source,
		CallID: id, Line: c.Last, TS: c.FirstTS, Operation: "chat",
		Success: records.Bool(c.succeeded()), Model: c.model(), Cwd: c.Cwd,
	}
	rc.Provider = provider(rc.Model)
	if u := c.Usage; u != nil && c.succeeded() {
		rc.InputTokens, rc.OutputTokens = records.Float(u.Input), records.Float(u.Output)
		rc.CacheReadTokens, rc.CacheWriteTokens = records.Float(u.CacheRead), records.Float(u.CacheCreate)
		rc.CacheWrite1hTokens = u.CacheCreate1h
	}
	if c.succeeded() {
		rc.CostUSD = c.Cost
	} else {
		c.failure(&rc)
	}
	atts := c.attempts(&rc)
	return rc, atts
}

// failure sets a failed call's error: the final failure's status, text
// and category, else the last failed attempt's.
func (c *call) failure(rc *records.Call) {
	if n := len(c.Chain); n > 0 {
		r := c.Chain[n-1]
		rc.StatusCode, rc.Error, rc.ErrorType = r.Status, r.Msg, r.Kind
	}
	if f := c.Final; f != nil {
		if f.Status != nil {
			rc.StatusCode = f.Status
		}
		if f.HasText {
			rc.Error = f.Text
		}
		if f.Category != "" {
			rc.ErrorType = f.Category
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
	if len(c.Chain) == 0 {
		if c.succeeded() {
			rc.Attempts, rc.Evidence = records.Int(1), records.EvidenceTranscript
		} else {
			rc.Evidence = records.EvidenceNone
		}
		return nil
	}
	rc.Evidence = records.EvidenceTranscript
	var out []records.CallAttempt
	for _, r := range c.Chain {
		out = append(out, records.CallAttempt{
			System: records.ClaudeCode, RunID: rc.RunID, CallID: rc.CallID, Source: Source,
			Attempt: r.N, TS: r.TS, Success: records.Bool(false),
			StatusCode: r.Status, Error: r.Msg, BackoffMS: r.Backoff,
		})
		if r.Backoff != nil {
			rc.BackoffMS = records.Float(deref(rc.BackoffMS) + *r.Backoff)
		}
	}
	n := c.Chain[len(c.Chain)-1].N
	rc.Attempts = records.Int(n)
	if f := c.Final; f != nil {
		rc.Attempts = records.Int(n + 1)
		last := records.CallAttempt{
			System: records.ClaudeCode, RunID: rc.RunID, CallID: rc.CallID, Source: Source,
			Attempt: n + 1, TS: c.LinesTS, Success: rc.Success,
		}
		if c.succeeded() {
			last.InputTokens, last.OutputTokens, last.CostUSD = rc.InputTokens, rc.OutputTokens, rc.CostUSD
			last.CacheReadTokens, last.CacheWriteTokens = rc.CacheReadTokens, rc.CacheWriteTokens
		} else {
			last.StatusCode, last.Error = f.Status, f.Text
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

package records

import "time"

// Agents' systems, as stored in the system columns: any agent's
// OpenTelemetry GenAI spans and logs, Claude Code's session transcripts,
// and Codex CLI's rollout files. Their records are model calls, not
// orchestrator events: each is one logical request with the attempts it
// took, where the record says.
const (
	OTel       = "otel"
	ClaudeCode = "claude-code"
	Codex      = "codex"
)

// Evidence says where a call's attempt count came from. Formats differ in
// what they record, so every count says how it is known, and a call
// without evidence has unknown attempts, never zero retries.
const (
	// EvidenceHTTPSpans: child HTTP client spans, one per attempt
	// (attempt = http.request.resend_count + 1).
	EvidenceHTTPSpans = "http_spans"
	// EvidenceSpanEvents: retry events on the call's span (a framework's
	// retry event, Claude Code's gen_ai.request.attempt).
	EvidenceSpanEvents = "span_events"
	// EvidenceSiblings: failed sibling calls with the same parent and
	// model, followed by a success, taken as one call's attempts.
	EvidenceSiblings = "siblings"
	// EvidenceAttribute: an attribute that counts the attempts (Claude
	// Code's and Codex's attempt, total_attempts).
	EvidenceAttribute = "attribute"
	// EvidenceTranscript: a transcript's retry records (Claude Code's
	// system api_error lines with retryAttempt).
	EvidenceTranscript = "transcript"
	// EvidenceNone: the record shows the call but not its attempts.
	EvidenceNone = "none"
)

// Call is one logical model request: what the agent asked for once,
// however many attempts it took.
type Call struct {
	System string
	// RunID is the agent run the call belongs to (an invoke_agent span, a
	// session, a sub-agent); Session groups runs (gen_ai.conversation.id,
	// the transcript's or rollout's session id).
	RunID, Session string
	// CallID identifies the call within its file: a span id, a message
	// id, a request id, or a line number when the record has none.
	CallID string
	Source string
	// Line is the file line the call was read from (its last line when
	// several make it up); 0 when the format has no lines.
	Line int
	// TS is when the call started, or its first record's time.
	TS         *time.Time
	DurationMS *float64
	Provider   string
	Model      string
	// Operation is gen_ai.operation.name or the format's word for it
	// (chat, embeddings, ...).
	Operation string
	// Success is nil when the record does not say how the call ended.
	Success    *bool
	Error      string // the last error, as recorded (an excerpt)
	ErrorType  string // error.type, or the record's error category
	StatusCode *int   // the last HTTP status, when recorded
	// Attempts is how many attempts the call took, first included; nil
	// when unknown. Evidence says how it is known.
	Attempts *int
	Evidence string
	// BackoffMS is the time the call spent waiting between attempts:
	// recorded (a transcript's retryInMs) or derived from the gaps
	// between attempt spans; nil when neither is possible.
	BackoffMS *float64
	// Tokens and cost of the call's successful attempt, and apart, of its
	// failed attempts, each nil when the record does not say. Tokens mean
	// one thing in every format (docs/formats): InputTokens are the input
	// tokens neither read from nor written to a prompt cache;
	// CacheReadTokens and CacheWriteTokens are those that were (an OpenAI
	// count of input that includes its cached part is split so); the
	// call's whole input is their sum. ReasoningTokens are the part of
	// OutputTokens spent reasoning, where the record says.
	InputTokens, OutputTokens, CostUSD                   *float64
	CacheReadTokens, CacheWriteTokens, ReasoningTokens   *float64
	FailedInputTokens, FailedOutputTokens, FailedCostUSD *float64
	// CacheWrite1hTokens is the part of CacheWriteTokens written with a
	// 1-hour lifetime, which Anthropic bills higher; nil when the record
	// does not split its cache writes.
	CacheWrite1hTokens *float64
	// Cwd is the working folder the call ran in, as the record states it
	// (a transcript's cwd, a rollout's turn or session cwd); "" when it
	// does not. It names the call's project (model/devices).
	Cwd string
}

// Uncached is the uncached part of an input count that includes its
// cached parts (as OpenAI's usage, LiteLLM's and the GenAI conventions'
// input tokens do). Cached parts that add up to more than the input
// cannot be part of it: the input is then taken as already uncached.
func Uncached(input *float64, cached ...*float64) *float64 {
	if input == nil {
		return nil
	}
	sum := 0.0
	for _, c := range cached {
		if c != nil {
			sum += *c
		}
	}
	if sum > *input {
		return input
	}
	return Float(*input - sum)
}

// CallAttempt is one attempt of a call, for formats that record attempts
// one by one.
type CallAttempt struct {
	System, RunID, CallID, Source string
	Attempt                       int // 1-based
	TS                            *time.Time
	DurationMS                    *float64
	Success                       *bool
	StatusCode                    *int
	Error                         string
	// BackoffMS is the wait after this attempt, before the next.
	BackoffMS                          *float64
	InputTokens, OutputTokens, CostUSD *float64
	// As Call's.
	CacheReadTokens, CacheWriteTokens, ReasoningTokens *float64
}

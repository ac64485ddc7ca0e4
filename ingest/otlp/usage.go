package otlp

import (
	"go.opentelemetry.io/collector/pdata/pcommon"

	"github.com/orchstat/orchstat/ingest/records"
)

// spanUsage sets a call's tokens from a span's usage attributes, split as
// records.Call's tokens are. The GenAI conventions' input tokens include
// the cached input, as LiteLLM's (Laminar, OpenLLMetry) and the Vercel AI
// SDK's do, so the cache reads and writes are taken out of them.
func spanUsage(c *records.Call, a pcommon.Map) {
	read := numPtr(a, "gen_ai.usage.cache_read.input_tokens", "gen_ai.usage.cache_read_input_tokens",
		"ai.usage.cachedInputTokens")
	write := numPtr(a, "gen_ai.usage.cache_creation.input_tokens", "gen_ai.usage.cache_creation_input_tokens")
	c.InputTokens = records.Uncached(inputTokens(a), read, write)
	c.CacheReadTokens, c.CacheWriteTokens = read, write
	c.OutputTokens = outputTokens(a)
	c.ReasoningTokens = numPtr(a, "gen_ai.usage.reasoning_tokens", "gen_ai.usage.reasoning.output_tokens",
		"ai.usage.reasoningTokens")
}

// claudeUsage reads the tokens of Claude Code's api_request event, whose
// input_tokens are the uncached input already (Anthropic's usage).
func claudeUsage(a pcommon.Map) (in, out, read, write *float64) {
	return numPtr(a, "input_tokens"), numPtr(a, "output_tokens"), numPtr(a, "cache_read_tokens"), numPtr(a, "cache_creation_tokens")
}

// codexUsage reads the tokens of Codex's response.completed sse_event,
// whose input_token_count includes the cached input (OpenAI's usage).
func codexUsage(c *records.Call, a pcommon.Map) {
	read, write := numPtr(a, "cached_token_count"), numPtr(a, "cache_write_token_count")
	c.InputTokens = records.Uncached(numPtr(a, "input_token_count"), read, write)
	c.CacheReadTokens, c.CacheWriteTokens = read, write
	c.OutputTokens, c.ReasoningTokens = numPtr(a, "output_token_count"), numPtr(a, "reasoning_token_count")
}

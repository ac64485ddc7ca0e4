package otlp

import (
	"encoding/json"
	"math"

	"go.opentelemetry.io/collector/pdata/pcommon"

	"github.com/orchstat/orchstat/model/records"
)

// spanUsage sets a call's tokens from a span's usage attributes, split as
// records.Call's tokens are. The GenAI conventions' input tokens include
// the cached input, as LiteLLM's (Laminar, OpenLLMetry) and OpenInference's
// llm.token_count.prompt do, so the cache reads and writes are taken out
// of them. The Vercel AI SDK's spans are read by vercelUsage.
func spanUsage(c *records.Call, name string, a pcommon.Map) {
	if isVercelCall(name) {
		vercelUsage(c, a)
		return
	}
	read := numPtr(a, "gen_ai.usage.cache_read.input_tokens", "gen_ai.usage.cache_read_input_tokens",
		"llm.token_count.prompt_details.cache_read")
	write := numPtr(a, "gen_ai.usage.cache_creation.input_tokens", "gen_ai.usage.cache_creation_input_tokens",
		"llm.token_count.prompt_details.cache_write")
	c.InputTokens = records.Uncached(inputTokens(a), read, write)
	c.CacheReadTokens, c.CacheWriteTokens = read, write
	c.OutputTokens = outputTokens(a)
	c.ReasoningTokens = numPtr(a, "gen_ai.usage.reasoning_tokens", "gen_ai.usage.reasoning.output_tokens",
		"llm.token_count.completion_details.reasoning")
}

// vercelUsage reads an AI SDK doGenerate/doStream span's tokens. From AI
// SDK 6 the input total comes with its split (inputTokenDetails); before,
// ai.usage.cachedInputTokens is the cache reads and the cache writes are
// only in the provider's metadata, and Anthropic's input (and so the span's
// input) excluded the cache while OpenAI's included it.
func vercelUsage(c *records.Call, a pcommon.Map) {
	meta := providerMetadata(a)
	c.OutputTokens = outputTokens(a)
	c.ReasoningTokens = numPtr(a, "ai.usage.outputTokenDetails.reasoningTokens", "ai.usage.reasoningTokens",
		"gen_ai.usage.reasoning.output_tokens", "gen_ai.usage.reasoning_tokens")
	if c.ReasoningTokens == nil {
		c.ReasoningTokens = meta.num("openai", "reasoningTokens")
	}
	read := numPtr(a, "ai.usage.inputTokenDetails.cacheReadTokens", "ai.usage.cachedInputTokens",
		"gen_ai.usage.cache_read.input_tokens")
	write := numPtr(a, "ai.usage.inputTokenDetails.cacheWriteTokens", "gen_ai.usage.cache_creation.input_tokens")
	c.CacheReadTokens, c.CacheWriteTokens = read, write
	if noCache := numPtr(a, "ai.usage.inputTokenDetails.noCacheTokens"); noCache != nil {
		c.InputTokens = noCache
		return
	}
	if read == nil {
		read = first(meta.num("anthropic", "cacheReadInputTokens"), meta.num("openai", "cachedPromptTokens"))
	}
	if write == nil {
		write = meta.num("anthropic", "cacheCreationInputTokens")
	}
	c.CacheReadTokens, c.CacheWriteTokens = read, write
	if provider(str(a, "ai.model.provider", "gen_ai.system")) == "anthropic" || meta["anthropic"] != nil {
		c.InputTokens = inputTokens(a) // Anthropic's input_tokens: the uncached input already
		return
	}
	c.InputTokens = records.Uncached(inputTokens(a), read, write)
}

// metadata is ai.response.providerMetadata: per provider, its fields.
type metadata map[string]map[string]any

// providerMetadata decodes ai.response.providerMetadata, a JSON string;
// nil when absent or not an object of objects.
func providerMetadata(a pcommon.Map) metadata {
	s := str(a, "ai.response.providerMetadata")
	if s == "" {
		return nil
	}
	var m metadata
	if json.Unmarshal([]byte(s), &m) != nil {
		return nil
	}
	return m
}

// num is one provider's numeric field, nil unless a finite number.
func (m metadata) num(prov, key string) *float64 {
	f, ok := m[prov][key].(float64)
	if !ok || math.IsNaN(f) || math.IsInf(f, 0) {
		return nil
	}
	return &f
}

func first(vs ...*float64) *float64 {
	for _, v := range vs {
		if v != nil {
			return v
		}
	}
	return nil
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

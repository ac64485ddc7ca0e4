package otlp

import "github.com/orchstat/orchstat/model/records"

// siblingCall adds one logical call made of sibling attempt spans, g in
// start order: the call is named by its first span and ends as its last.
func (t *traceIndex) siblingCall(set *records.Set, g []*callSpan) {
	first, last := g[0], g[len(g)-1]
	call := t.baseCall(first)
	end := t.baseCall(last)
	call.Line, call.Success, call.Error, call.ErrorType, call.StatusCode =
		end.Line, end.Success, end.Error, end.ErrorType, end.StatusCode
	call.DurationMS = msBetween(call.TS, when(last.EndTimestamp()))
	call.Evidence, call.Attempts = records.EvidenceSiblings, records.Int(len(g))
	call.InputTokens, call.OutputTokens, call.CacheReadTokens, call.CacheWriteTokens, call.ReasoningTokens = nil, nil, nil, nil, nil
	call.CostUSD = nil
	backoff := 0.0
	for i, c := range g {
		a := t.baseCall(c)
		ok := !failed(c.span)
		if ok {
			call.CostUSD = a.CostUSD
			call.InputTokens, call.OutputTokens = a.InputTokens, a.OutputTokens
			call.CacheReadTokens, call.CacheWriteTokens, call.ReasoningTokens = a.CacheReadTokens, a.CacheWriteTokens, a.ReasoningTokens
		} else {
			call.FailedInputTokens = add(call.FailedInputTokens, a.InputTokens)
			call.FailedOutputTokens = add(call.FailedOutputTokens, a.OutputTokens)
			call.FailedCostUSD = add(call.FailedCostUSD, a.CostUSD)
		}
		att := records.CallAttempt{System: records.OTel, RunID: call.RunID, CallID: call.CallID,
			Source: sourceSpan, Attempt: i + 1, TS: a.TS, DurationMS: a.DurationMS,
			Success: records.Bool(ok), StatusCode: a.StatusCode, Error: a.Error, CostUSD: a.CostUSD,
			InputTokens: a.InputTokens, OutputTokens: a.OutputTokens,
			CacheReadTokens: a.CacheReadTokens, CacheWriteTokens: a.CacheWriteTokens, ReasoningTokens: a.ReasoningTokens}
		if i+1 < len(g) {
			att.BackoffMS = gap(c.span, g[i+1].span)
			if att.BackoffMS != nil {
				backoff += *att.BackoffMS
			}
		}
		set.CallAttempts = append(set.CallAttempts, att)
	}
	call.BackoffMS = &backoff
	set.Calls = append(set.Calls, call)
}

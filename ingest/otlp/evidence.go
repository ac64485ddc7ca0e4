package otlp

import (
	"regexp"
	"sort"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/orchstat/orchstat/model/records"
)

// retryEvent matches framework retry events (OpenLIT's "retry",
// "gen_ai.retry"); Claude Code's per-attempt event is named apart.
var retryEvent = regexp.MustCompile(`(?i)retry`)

const attemptEvent = "gen_ai.request.attempt"

// httpChildren are a span's child HTTP client spans, in start order.
func (t *traceIndex) httpChildren(s *span) []*span {
	var out []*span
	for _, k := range t.children[s.trace+s.id] {
		if isHTTP(k) {
			out = append(out, k)
		}
	}
	return out
}

// ownEvidence is what a call span shows of its attempts, in order of
// precedence: HTTP child spans, retry events, an attempt attribute.
func (t *traceIndex) ownEvidence(s *span) evidence {
	if kids := t.httpChildren(s); len(kids) > 0 {
		n := len(kids)
		for _, k := range kids {
			if r, ok := intAttr(k.Attributes(), "http.request.resend_count"); ok && r+1 > n {
				n = r + 1
			}
		}
		var backoff float64
		for i := 1; i < len(kids); i++ {
			if g := gap(kids[i-1], kids[i]); g != nil {
				backoff += *g
			}
		}
		return evidence{kind: records.EvidenceHTTPSpans, attempts: records.Int(n), backoff: &backoff, http: kids}
	}
	if ev, ok := eventEvidence(s); ok {
		return ev
	}
	if n, ok := intAttr(s.Attributes(), "attempt", "total_attempts"); ok && n >= 1 {
		return evidence{kind: records.EvidenceAttribute, attempts: records.Int(n)}
	}
	return evidence{kind: records.EvidenceNone}
}

// eventEvidence counts retry events: attempts = 1 + retries, unless the
// events number their attempts (Claude Code's gen_ai.request.attempt
// carries attempt), when the largest number wins, since the docs do not
// say whether the first attempt has an event. The span's own attempt
// attribute wins when larger. Backoff is the events' recorded delays,
// when they record any.
func eventEvidence(s *span) (evidence, bool) {
	evs := s.Events()
	var n, numbered int
	var backoff *float64
	for i := range evs.Len() {
		e := evs.At(i)
		if e.Name() != attemptEvent && !retryEvent.MatchString(e.Name()) {
			continue
		}
		n++
		if e.Name() == attemptEvent {
			if a, ok := intAttr(e.Attributes(), "attempt"); ok && a > numbered {
				numbered = a
			}
		}
		backoff = add(backoff, eventDelay(e))
	}
	if n == 0 {
		return evidence{}, false
	}
	attempts := 1 + n
	if numbered > 0 {
		attempts = numbered
	}
	if a, ok := intAttr(s.Attributes(), "attempt", "total_attempts"); ok && a > attempts {
		attempts = a
	}
	return evidence{kind: records.EvidenceSpanEvents, attempts: records.Int(attempts), backoff: backoff}, true
}

// eventDelay is a retry event's recorded delay in ms, if any.
func eventDelay(e ptrace.SpanEvent) *float64 {
	a := e.Attributes()
	if f, ok := num(a, "backoff_seconds", "retry.delay_seconds"); ok && f >= 0 {
		return records.Float(f * 1000)
	}
	if f, ok := num(a, "retry.delay_ms", "backoff_ms", "retry_delay_ms"); ok && f >= 0 {
		return records.Float(f)
	}
	return nil
}

// siblingGroups groups call spans into logical calls, in file order of
// each group's first span. Spans with no evidence of their own that share
// a parent and a model, taken by start time, form a run of failures
// closed by the next success (or by the end): the Vercel AI SDK opens one
// span per attempt.
func siblingGroups(cs []*callSpan) [][]*callSpan {
	buckets := map[string][]*callSpan{}
	var keys []string
	var out [][]*callSpan
	for _, c := range cs {
		if c.ev.kind != records.EvidenceNone || c.parent == "" {
			out = append(out, []*callSpan{c})
			continue
		}
		k := c.trace + "\x00" + c.parent + "\x00" + requestModel(c.Attributes())
		if _, ok := buckets[k]; !ok {
			keys = append(keys, k)
		}
		buckets[k] = append(buckets[k], c)
	}
	for _, k := range keys {
		b := buckets[k]
		sort.SliceStable(b, func(i, j int) bool { return b[i].StartTimestamp() < b[j].StartTimestamp() })
		var g []*callSpan
		for _, c := range b {
			g = append(g, c)
			if !failed(c.span) {
				out, g = append(out, g), nil
			}
		}
		if len(g) > 0 {
			out = append(out, g)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return minIdx(out[i]) < minIdx(out[j]) })
	return out
}

func minIdx(g []*callSpan) int {
	m := g[0].idx
	for _, c := range g {
		m = min(m, c.idx)
	}
	return m
}

// requestModel is the model a call asked for, in each convention's name.
func requestModel(a pcommon.Map) string {
	return str(a, "gen_ai.request.model", "ai.model.id", "llm.model_name", "embedding.model_name",
		"llm.request.model", "model")
}

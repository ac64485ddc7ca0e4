package otlp

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// A long parent chain of call spans stays fast: ancestor walks are
// bounded and cached per span.
func TestDeepChain(t *testing.T) {
	var b strings.Builder
	b.WriteString(`{"resourceSpans":[{"scopeSpans":[{"spans":[`)
	const n = 5000
	for i := 1; i <= n; i++ {
		if i > 1 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, `{"traceId":"0102030405060708090a0b0c0d0e0f10","spanId":"%016x","parentSpanId":"%016x","startTimeUnixNano":"%d","attributes":[{"key":"gen_ai.operation.name","value":{"stringValue":"chat"}}],"status":{"code":2}}`, i, i-1, i)
	}
	b.WriteString("]}]}]}\n")
	start := time.Now()
	set, _, err := parse([]byte(b.String()))
	if err != nil {
		t.Fatal(err)
	}
	checkSet(t, set, nil)
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("%d chained spans took %v", n, d)
	}
	t.Logf("%d calls in %v", len(set.Calls), time.Since(start))
}

// Many traces and sessions in one file stay fast too.
func TestManyRuns(t *testing.T) {
	var b strings.Builder
	const n = 5000
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&b, `{"resourceSpans":[{"scopeSpans":[{"spans":[{"traceId":"%032x","spanId":"%016x","startTimeUnixNano":"%d","endTimeUnixNano":"%d","attributes":[{"key":"gen_ai.operation.name","value":{"stringValue":"chat"}}]}]}]}]}`+"\n", i, i, i, i+1)
		fmt.Fprintf(&b, `{"resourceLogs":[{"scopeLogs":[{"logRecords":[{"timeUnixNano":"%d","eventName":"claude_code.api_error","attributes":[{"key":"session.id","value":{"stringValue":"s%d"}}]}]}]}]}`+"\n", i, i)
	}
	start := time.Now()
	set, _, err := parse([]byte(b.String()))
	if err != nil {
		t.Fatal(err)
	}
	checkSet(t, set, nil)
	if len(set.Calls) != 2*n || len(set.Runs) != 2*n {
		t.Errorf("%d calls, %d runs, want %d each", len(set.Calls), len(set.Runs), 2*n)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("%d traces and sessions took %v", n, d)
	}
}

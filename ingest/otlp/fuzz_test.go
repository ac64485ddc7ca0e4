package otlp

import (
	"os"
	"path/filepath"
	"testing"
)

// FuzzParse checks that no input panics and every result keeps the
// contract.
func FuzzParse(f *testing.F) {
	paths, _ := filepath.Glob("testdata/*.json*")
	for _, p := range paths {
		if b, err := os.ReadFile(p); err == nil {
			f.Add(b)
		}
	}
	f.Add([]byte(`{"resourceSpans":[{"scopeSpans":[{"spans":[{"traceId":"01","spanId":"02"}]}]}]}`))
	f.Add([]byte("{\"resourceLogs\":[{\"scopeLogs\":[{\"logRecords\":[{\"eventName\":\"codex.api_request\",\"attributes\":[{\"key\":\"conversation.id\",\"value\":{\"stringValue\":\"c\"}},{\"key\":\"attempt\",\"value\":{\"intValue\":\"-5\"}}]}]}]}]}\n{}"))
	f.Fuzz(func(t *testing.T, b []byte) {
		set, err := Parse("x.jsonl", b)
		checkSet(t, set, err)
	})
}

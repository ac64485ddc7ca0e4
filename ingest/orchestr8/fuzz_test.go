package orchestr8

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/orchstat/orchstat/model/records"
)

func fuzzParser(f *testing.F, name string, parse records.Parser) {
	paths, _ := filepath.Glob(filepath.Join(fixtures, "*", ".claude", name))
	for _, p := range paths {
		if b, err := os.ReadFile(p); err == nil {
			f.Add(b)
		}
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		set, err := parse("proj/.claude/"+name, b)
		checkSet(t, set, err)
	})
}

func FuzzParseHistory(f *testing.F) {
	f.Add([]byte(`[{"slug":"a","status":"failed","failedStage":"x","retryAttempts":{"x":1e9}},{"slug":"a","attempts":1e300}]`))
	f.Add([]byte(`[{"slug":"a","startedAt":1},{"mode":"murmuration","features":[{"slug":"a","status":"murm_complete"},{"slug":"a"}]}]`))
	fuzzParser(f, "pipeline-history.json", ParseHistory)
}

func FuzzParseConfig(f *testing.F) { fuzzParser(f, "retry-config.json", ParseConfig) }

package factory_test

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
	"unicode/utf8"

	"github.com/orchstat/orchstat/ingest/factory"
	"github.com/orchstat/orchstat/model/records"
)

// seed adds every real and fixture file of one name to f's corpus.
func seed(f *testing.F, name string) {
	for _, root := range []string{realData, fixtures} {
		filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
			if err == nil && !d.IsDir() && d.Name() == name {
				if b, rerr := os.ReadFile(p); rerr == nil {
					f.Add(b)
				}
			}
			return nil
		})
	}
}

// fuzzParser checks what every parser promises on any input: no panic;
// either a located *records.Error or a set whose rows are usable.
func fuzzParser(f *testing.F, name string, parse records.Parser, path string) {
	seed(f, name)
	f.Fuzz(func(t *testing.T, b []byte) {
		set, err := parse(path, b)
		if err != nil {
			var re *records.Error
			if !errors.As(err, &re) {
				t.Fatalf("error %v is %T, not *records.Error", err, err)
			}
			if set != nil {
				t.Fatalf("both a set and an error")
			}
			if re.Line < 0 || re.Offset < 0 || re.Offset > int64(len(b)) {
				t.Fatalf("error located outside the input: %+v (input %d bytes)", re, len(b))
			}
			return
		}
		if set == nil {
			t.Fatal("nil set without an error")
		}
		for _, r := range set.Runs {
			if r.RunID == "" || r.System != records.Factory || len(r.Detail) > 0 && !utf8.Valid(r.Detail) {
				t.Fatalf("bad run %+v", r)
			}
		}
		for _, a := range set.Attempts {
			if a.Attempt < 1 || a.RunID == "" {
				t.Fatalf("bad attempt %+v", a)
			}
		}
		for _, p := range set.Problems {
			if p.Line < 1 || p.Offset < 0 || p.Offset > int64(len(b)) {
				t.Fatalf("problem located outside the input: %+v (input %d bytes)", p, len(b))
			}
		}
	})
}

func FuzzParseSummary(f *testing.F) {
	fuzzParser(f, "run_summary.json", factory.ParseSummary, "/a/run1/run_summary.json")
}

func FuzzParseBrief(f *testing.F) {
	fuzzParser(f, "failure_brief.json", factory.ParseBrief, "/a/run1/attempt_2/failure_brief.json")
}

func FuzzParseEvents(f *testing.F) {
	fuzzParser(f, "events.jsonl", factory.ParseEvents, "/a/runs/01P/events.jsonl")
}

func FuzzParseMeta(f *testing.F) {
	fuzzParser(f, "meta.json", factory.ParseMeta, "/a/runs/01P/meta.json")
}

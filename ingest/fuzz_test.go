package ingest_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/orchstat/orchstat/ingest"
	"github.com/orchstat/orchstat/query"
	"github.com/orchstat/orchstat/reports/reference"
)

// FuzzIngest feeds arbitrary bytes to a real ingest. Whatever the input,
// ingest must succeed, and accept and quarantine exactly the lines the
// independent reference does.
func FuzzIngest(f *testing.F) {
	if b, err := os.ReadFile("../testdata/runs/1762300000000-bad/trace.jsonl"); err == nil {
		f.Add(b)
	}
	f.Add([]byte(line("r", "RunStarted", 0, `{}`) + "not json\n\n[1]\n" + `{"type":"X"`))
	f.Add([]byte("\xEF\xBB\xBF" + line("r", "A", 1, `{"a":"\u00e9"}`) + "\r\n"))
	// The fuzzer runs several worker processes; each needs its own store.
	// Every execution commits and checkpoints, so on a busy disk fsync
	// dominates: use tmpfs when there is one.
	base := ""
	if fi, err := os.Stat("/dev/shm"); err == nil && fi.IsDir() {
		base = "/dev/shm"
	}
	dir, err := os.MkdirTemp(base, "orchstat-fuzz")
	if err != nil {
		f.Fatal(err)
	}
	defer os.RemoveAll(dir)
	st, err := query.Open(context.Background(), filepath.Join(dir, "fuzz.duckdb"), query.Options{})
	if err != nil {
		f.Fatal(err)
	}
	defer st.Close()
	n := 0
	f.Fuzz(func(t *testing.T, data []byte) {
		n++
		path := filepath.Join(dir, "runs", fmt.Sprint(n), "trace.jsonl")
		os.MkdirAll(filepath.Dir(path), 0o755)
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		res, err := ingest.Run(context.Background(), st, ingest.Options{Paths: []string{path}})
		if err != nil {
			t.Fatalf("ingest failed: %v", err)
		}
		ref, err := reference.Compute([]string{path}, reference.Filter{})
		if err != nil {
			t.Fatal(err)
		}
		if res.Events != ref.Events || res.Quarantined != ref.Quarantined {
			t.Fatalf("ingest accepted %d and quarantined %d lines; the reference %d and %d\ninput %q",
				res.Events, res.Quarantined, ref.Events, ref.Quarantined, data)
		}
	})
}

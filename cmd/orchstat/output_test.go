package main

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// -o writes what standard output would have held, and only a complete
// output replaces the file.
func TestOutputFlag(t *testing.T) {
	endToEnd(t, "runs orchstat against a real store")
	t.Parallel()
	dir := t.TempDir()
	db, out := filepath.Join(dir, "s.duckdb"), filepath.Join(dir, "report.json")
	runs := abs(t, "../../testdata/runs")
	if code, _, stderr := runCLI(t, "", "--db", db, "ingest", runs); code != 0 {
		t.Fatal(stderr)
	}
	code, want, stderr := runCLI(t, "", "--db", db, "report", "--no-ingest", "--format", "json")
	if code != 0 {
		t.Fatal(stderr)
	}
	code, stdout, stderr := runCLI(t, "", "--db", db, "report", "--no-ingest", "--format", "json", "-o", out)
	if code != 0 || stdout != "" {
		t.Fatalf("exit %d, stdout %q: %s", code, stdout, stderr)
	}
	if got, _ := os.ReadFile(out); string(got) != want {
		t.Errorf("-o wrote %d bytes, standard output had %d", len(got), len(want))
	}

	io := &IO{Out: os.Stdout}
	failed := errors.New("the renderer failed")
	err := withOutput(io, out, func(io *IO) error {
		io.Out.Write([]byte("half a report"))
		return failed
	})
	if !errors.Is(err, failed) {
		t.Errorf("withOutput returned %v", err)
	}
	if got, _ := os.ReadFile(out); string(got) != want {
		t.Errorf("a failed render replaced the file (%d bytes now)", len(got))
	}
	left, _ := filepath.Glob(filepath.Join(dir, ".report.json.*"))
	if len(left) > 0 || !strings.HasSuffix(out, ".json") {
		t.Errorf("temporary files left: %v", left)
	}
}

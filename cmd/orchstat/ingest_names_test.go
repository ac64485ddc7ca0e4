package main

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestIngestMessagesEscapeNames: a file name holding a terminal escape
// sequence is printed escaped, as the tables print it, so it cannot drive
// the user's terminal.
func TestIngestMessagesEscapeNames(t *testing.T) {
	endToEnd(t, "runs orchstat against a real store")
	t.Parallel()
	runs := filepath.Join(t.TempDir(), "runs")
	run := filepath.Join(runs, "r\x1b[2J\x1b[31mred")
	os.MkdirAll(run, 0o755)
	if err := syscall.Mkfifo(filepath.Join(run, "trace.jsonl"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, stderr := runCLI(t, "", "--db", filepath.Join(t.TempDir(), "o.duckdb"), "ingest", runs)
	if code != exitError {
		t.Fatalf("exit %d: %s %s", code, out, stderr)
	}
	if strings.ContainsRune(stderr+out, '\x1b') {
		t.Fatalf("a raw escape sequence was printed: %q", stderr)
	}
	if !strings.Contains(stderr, `r\x1b[2J\x1b[31mred`) {
		t.Fatalf("the name is not shown escaped: %q", stderr)
	}
}

// TestNamedSymlinkLoop: a PATH that is a symbolic link loop is called one,
// not "does not exist".
func TestNamedSymlinkLoop(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	loop := filepath.Join(dir, "loop")
	os.Symlink(loop, loop)
	dangling := filepath.Join(dir, "dangling")
	os.Symlink(filepath.Join(dir, "gone"), dangling)
	code, _, stderr := runCLI(t, "", "--db", filepath.Join(dir, "o.duckdb"), "ingest", loop, dangling)
	if code != exitError || !strings.Contains(stderr, "loop is a symbolic link loop") ||
		!strings.Contains(stderr, "dangling is a symbolic link to "+filepath.Join(dir, "gone")+", which does not exist") {
		t.Fatalf("exit %d: %s", code, stderr)
	}
}

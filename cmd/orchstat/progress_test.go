package main

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/orchstat/orchstat/ingest"
)

func TestProgress(t *testing.T) {
	t.Parallel()
	now := time.Unix(0, 0)
	clock := func() time.Time { return now }
	var buf bytes.Buffer
	p := newProgress(&buf, clock)
	now = now.Add(2 * time.Second)
	p.update(ingest.Progress{FilesDone: 5, FilesTotal: 10, Events: 1234, Bytes: 4 << 20})
	if got := buf.String(); !strings.Contains(got, "files 5/10") || !strings.Contains(got, "events 1234") ||
		!strings.Contains(got, "2.0 MB/s") || !strings.Contains(got, "[############............]") {
		t.Fatalf("progress line %q", got)
	}
	// Updates within 100 ms are not drawn.
	n := buf.Len()
	now = now.Add(50 * time.Millisecond)
	p.update(ingest.Progress{FilesDone: 6, FilesTotal: 10})
	if buf.Len() != n {
		t.Fatalf("redrew too soon: %q", buf.String()[n:])
	}
	p.done()
	if !strings.HasSuffix(buf.String(), "\r\x1b[K") {
		t.Fatalf("line not cleared: %q", buf.String())
	}
	p.update(ingest.Progress{FilesDone: 10, FilesTotal: 10})
	if !strings.HasSuffix(buf.String(), "\r\x1b[K") {
		t.Fatal("drew after done")
	}
}

// Off a terminal, and with --quiet, nothing but the summary is printed.
func TestNoProgressOffTerminal(t *testing.T) {
	endToEnd(t, "runs orchstat against a real store")
	t.Parallel()
	db := t.TempDir() + "/o.duckdb"
	_, _, stderr := runCLI(t, "", "--db", db, "ingest", "../../testdata/runs")
	if strings.Contains(stderr, "\r") {
		t.Fatalf("progress drawn off a terminal: %q", stderr)
	}
	_, out, _ := runCLI(t, "", "--db", db, "ingest", "-q", "../../testdata/runs")
	if out != "" {
		t.Fatalf("--quiet printed %q", out)
	}
}

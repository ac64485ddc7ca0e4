package ingest_test

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/orchstat/orchstat/ingest"
	"github.com/orchstat/orchstat/query"
)

// agentTables are what an agent's file gives, compared without file ids
// and ingest times, which differ between stores by design.
var agentTables = []string{
	`SELECT * EXCLUDE (file_id) FROM calls`,
	`SELECT * EXCLUDE (file_id) FROM call_attempts`,
	`SELECT * EXCLUDE (file_id) FROM record_runs`,
	`SELECT line, byte_offset, field, reason, raw FROM quarantine`,
	`SELECT quarantined FROM files`,
}

// storeRows is the store's agent rows, one sorted text per table. One
// store is opened for all of them, and each table is read in one query
// as text, so that the comparison costs one open, not one per table.
func storeRows(t *testing.T, db string) []string {
	t.Helper()
	ctx := context.Background()
	st, err := query.Open(ctx, db, query.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	tx, err := st.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	var out []string
	for _, q := range agentTables {
		var rows string
		err := tx.QueryRow(ctx, `SELECT coalesce(string_agg(CAST(r AS VARCHAR), chr(10) ORDER BY CAST(r AS VARCHAR)), '') FROM (`+q+`) r`).Scan(&rows)
		if err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		out = append(out, q+"\n"+rows)
	}
	return out
}

func ingestInto(t *testing.T, db string, paths ...string) *ingest.Result {
	t.Helper()
	ctx := context.Background()
	st, err := query.Open(ctx, db, query.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	res, err := ingest.Run(ctx, st, ingest.Options{Paths: paths})
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// agentSamples are files of each agent format: the package's own, and
// the real ones when ../shared is there.
func agentSamples(t *testing.T) map[string]string {
	out := map[string]string{
		"claude-code":         filepath.Join("claudecode", "testdata", "streaming.jsonl"),
		"claude-code retries": filepath.Join("claudecode", "testdata", "retry529.jsonl"),
		"codex":               filepath.Join("codex", "testdata", "retries.jsonl"),
		"otlp":                filepath.Join("otlp", "testdata", "http_retries.jsonl"),
		"otlp siblings":       filepath.Join("otlp", "testdata", "vercel_siblings.jsonl"),
		"otlp logs":           filepath.Join("otlp", "testdata", "claude_code_events.jsonl"),
	}
	ext := filepath.Join("..", "..", "shared", "testdata-external")
	for _, pat := range []string{"claude-code/*/*.jsonl", "codex/*/*.jsonl", "otel-genai/*/*.jsonl"} {
		m, _ := filepath.Glob(filepath.Join(ext, pat))
		for i, p := range m {
			if i < 2 {
				out["external "+filepath.Base(filepath.Dir(p))+" "+filepath.Base(p)] = p
			}
		}
	}
	return out
}

// An agent's file appended to between ingests, even mid-line, ends with
// the rows one ingest of the whole file gives, and each ingest reads only
// what was appended: nothing read before is lost or counted twice.
func TestAgentFileReadOn(t *testing.T) {
	for name, src := range agentSamples(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel() // each sample has its own folder and stores
			b, err := os.ReadFile(src)
			if err != nil {
				t.Fatal(err)
			}
			dir := t.TempDir()
			path := filepath.Join(dir, "f", filepath.Base(src))
			os.MkdirAll(filepath.Dir(path), 0o755)
			os.WriteFile(path, b, 0o644)
			whole := filepath.Join(dir, "whole.duckdb")
			ingestInto(t, whole, path)
			want := storeRows(t, whole)

			rng := rand.New(rand.NewPCG(uint64(len(b)), 7))
			grown := filepath.Join(dir, "grown.duckdb")
			os.WriteFile(path, nil, 0o644)
			var read int64
			for at := 0; at < len(b); {
				next := min(len(b), at+1+rng.IntN(max(1, len(b)/3)))
				f, _ := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
				f.Write(b[at:next])
				f.Close()
				at = next
				read += ingestInto(t, grown, path).Bytes
			}
			got := storeRows(t, grown)
			for i := range want {
				if got[i] != want[i] {
					t.Errorf("after growing in pieces:\n%s\nwhole:\n%s", got[i], want[i])
				}
			}
			if complete := int64(bytes.LastIndexByte(b, '\n') + 1); read != complete {
				t.Errorf("read %d bytes over the ingests, the file's complete lines are %d", read, complete)
			}
		})
	}
}

// A transcript that grows past 64 MiB keeps what was read and reads on:
// before, the next ingest deleted its calls, and then read nothing of it.
func TestAgentFileGrowsPast64MiB(t *testing.T) {
	skipShort(t, "scale: an agent file grown past 64 MiB")
	dir := t.TempDir()
	path := filepath.Join(dir, ".claude", "projects", "-w", "5b8c0a3e-1111-4222-8333-944455556666.jsonl")
	os.MkdirAll(filepath.Dir(path), 0o755)
	db := filepath.Join(dir, "s.duckdb")
	pad := strings.Repeat("x", 60<<10)
	write := func(from, to int) {
		f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		for i := from; i < to; i++ {
			fmt.Fprintf(f, `{"type":"user","sessionId":"5b8c0a3e-1111-4222-8333-944455556666","uuid":"u%d","timestamp":"2026-11-01T10:%02d:%02dZ","message":{"role":"user","content":"%s"}}`+"\n", i, i/60%60, i%60, pad)
			fmt.Fprintf(f, `{"type":"assistant","sessionId":"5b8c0a3e-1111-4222-8333-944455556666","uuid":"a%d","requestId":"req_%d","timestamp":"2026-11-01T10:%02d:%02dZ","message":{"id":"msg_%d","model":"claude-sonnet-4-5-20250929","role":"assistant","content":[{"type":"text","text":"ok"}],"usage":{"input_tokens":10,"output_tokens":5}}}`+"\n", i, i, i/60%60, i%60, i)
		}
	}
	calls := func() any {
		st, err := query.Open(context.Background(), db, query.Options{})
		if err != nil {
			t.Fatal(err)
		}
		defer st.Close()
		tbl, err := st.ReadOnly(context.Background(), `SELECT count(*) FROM calls`)
		if err != nil {
			t.Fatal(err)
		}
		return tbl.Rows[0][0]
	}
	write(0, 900) // about 54 MiB
	ingestInto(t, db, filepath.Join(dir, ".claude"))
	if n := calls(); n != int64(900) {
		t.Fatalf("%v calls at 54 MiB, want 900", n)
	}
	write(900, 1300) // about 78 MiB
	res := ingestInto(t, db, filepath.Join(dir, ".claude"))
	if n := calls(); n != int64(1300) {
		t.Fatalf("%v calls at 78 MiB, want 1300", n)
	}
	if res.Bytes > 30<<20 {
		t.Errorf("the second ingest read %d bytes: the file was read again rather than on", res.Bytes)
	}
}

// An ingest stopped between the commits of one reading of an agent's file
// leaves a store the next ingest completes exactly: what the first
// committed is neither lost nor stored twice, and the open rows of the
// last commit are replaced.
func TestAgentFileInterrupted(t *testing.T) {
	skipShort(t, "end-to-end: interrupts ingests of agent files at every point")
	dir := t.TempDir()
	path := filepath.Join(dir, "p", "5b8c0a3e-1111-4222-8333-944455556666.jsonl")
	os.MkdirAll(filepath.Dir(path), 0o755)
	var b bytes.Buffer
	for i := range 12000 {
		fmt.Fprintf(&b, `{"type":"system","subtype":"api_error","sessionId":"5b8c0a3e-1111-4222-8333-944455556666","uuid":"e%d","timestamp":"2026-11-01T10:00:00Z","retryAttempt":1,"retryInMs":500,"error":{"status":529}}`+"\n", i)
		fmt.Fprintf(&b, `{"type":"assistant","sessionId":"5b8c0a3e-1111-4222-8333-944455556666","uuid":"a%d","requestId":"req_%d","timestamp":"2026-11-01T10:00:01Z","message":{"id":"msg_%d","model":"claude-sonnet-4-5-20250929","role":"assistant","content":[{"type":"text","text":"ok"}],"usage":{"input_tokens":10,"output_tokens":5}}}`+"\n", i, i, i)
	}
	os.WriteFile(path, b.Bytes(), 0o644)
	whole := filepath.Join(dir, "whole.duckdb")
	ingestInto(t, whole, path)
	want := storeRows(t, whole)

	db := filepath.Join(dir, "cut.duckdb")
	ctx, cancel := context.WithCancel(context.Background())
	st, err := query.Open(ctx, db, query.Options{})
	if err != nil {
		t.Fatal(err)
	}
	commits := 0
	_, err = ingest.Run(ctx, st, ingest.Options{Paths: []string{path}, BatchBytes: 1, TxnBytes: 1, Hook: func(p string) {
		if p == "after-commit" {
			if commits++; commits == 2 {
				cancel()
			}
		}
	}})
	st.Close()
	if err == nil || commits != 2 {
		t.Fatalf("the ingest was not stopped after its second commit (%d commits): %v", commits, err)
	}
	ingestInto(t, db, path)
	got := storeRows(t, db)
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("after an interrupted reading:\n%.2000s\nwhole:\n%.2000s", got[i], want[i])
		}
	}
}

// The same for a trace: a reading of a large trace stopped between its
// commits goes on from where it stopped, though the file did not change
// since. Before, the state committed mid-file recorded the file's whole
// size, so the next ingest took the file as unchanged and its rest was
// never read.
func TestTraceInterrupted(t *testing.T) {
	skipShort(t, "end-to-end: a 40,000-line trace whose ingest is interrupted")
	dir := t.TempDir()
	path := filepath.Join(dir, "runs", "1762161125318", "trace.jsonl")
	os.MkdirAll(filepath.Dir(path), 0o755)
	var b bytes.Buffer
	for i := range 40000 {
		fmt.Fprintf(&b, `{"type":"ProviderSelected","schemaVersion":1,"timestamp":"2025-11-03T09:12:05.356Z","runId":"1762161125318","payload":{"role":"planner","providerId":"anthropic","n":%d}}`+"\n", i)
	}
	os.WriteFile(path, b.Bytes(), 0o644)
	db := filepath.Join(dir, "cut.duckdb")
	ctx, cancel := context.WithCancel(context.Background())
	st, err := query.Open(ctx, db, query.Options{})
	if err != nil {
		t.Fatal(err)
	}
	commits := 0
	_, err = ingest.Run(ctx, st, ingest.Options{Paths: []string{path}, BatchBytes: 1, TxnBytes: 1, Hook: func(p string) {
		if p == "after-commit" {
			if commits++; commits == 2 {
				cancel()
			}
		}
	}})
	st.Close()
	if err == nil || commits != 2 {
		t.Fatalf("the ingest was not stopped after its second commit (%d commits): %v", commits, err)
	}
	ingestInto(t, db, path)
	st, err = query.Open(context.Background(), db, query.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	tbl, err := st.ReadOnly(context.Background(), `SELECT count(*), count(DISTINCT line) FROM events`)
	if err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(tbl.Rows[0]...); got != "40000 40000" {
		t.Errorf("events, distinct lines: %s, want 40000 40000", got)
	}
}

// An agent's file rewritten in place with other content and grown (same
// inode) is read again from its start, not taken as appended to: its
// first bytes changed.
func TestAgentFileRewrittenLarger(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "p", "rollout-2026-02-23T12-41-04-019c8a4d-8f45-7010-8b5d-7fad920aa6f9.jsonl")
	os.MkdirAll(filepath.Dir(path), 0o755)
	a, err := os.ReadFile(filepath.Join("codex", "testdata", "normal.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join("codex", "testdata", "retries.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(path, a, 0o644)
	db := filepath.Join(dir, "s.duckdb")
	ingestInto(t, db, path)
	// Rewritten through the same inode, larger than before.
	f, _ := os.OpenFile(path, os.O_WRONLY|os.O_TRUNC, 0)
	f.Write(b)
	f.Write(a)
	f.Close()
	res := ingestInto(t, db, path)
	if len(res.Replaced) != 1 {
		t.Fatalf("the rewrite was taken as an append: replaced %v", res.Replaced)
	}
	whole := filepath.Join(dir, "whole.duckdb")
	ingestInto(t, whole, path)
	got, want := storeRows(t, db), storeRows(t, whole)
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("after the rewrite:\n%s\nwhole:\n%s", got[i], want[i])
		}
	}
}

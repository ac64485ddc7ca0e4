package query

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/duckdb/duckdb-go/v2"
	"github.com/orchstat/orchstat/model/rows"
)

// TestAppendFeed: what Append stores through the chunk feed is what the
// rows hold, across chunk boundaries and sets, with nil pointers as NULL,
// strings stored as rows.StoreString says but for verbatim tables, and a
// zero time as a time, not NULL.
func TestAppendFeed(t *testing.T) {
	capa := duckdb.GetDataChunkCapacity()
	ts := time.Date(2026, 3, 1, 12, 0, 0, 123456000, time.UTC)
	// events are file's n events; every third has a schema version,
	// its line's remainder by 5.
	events := func(file int32, n int) *rows.Set {
		s := &rows.Set{}
		for i := range n {
			e := rows.Event{EventKey: rows.EventKey{FileID: file, Line: int64(i), RunID: "r", TS: ts}, Type: "T", Payload: "{}"}
			if i%3 == 0 {
				v := int32(i % 5)
				e.SchemaVersion = &v
			}
			s.Events = append(s.Events, e)
		}
		return s
	}
	// perFile is what the perFile query reads back for events(file, n).
	perFile := func(file int32, n int) string {
		var sum int
		for i := 0; i < n; i += 3 {
			sum += i % 5
		}
		return fmt.Sprintf("%d:%d:%d:%d:%d", file, n, (n+2)/3, n*(n-1)/2, sum)
	}
	const perFileQ = `SELECT string_agg(format('{}:{}:{}:{}:{}', file_id, n, v, l, s), ' ' ORDER BY file_id) FROM (
		SELECT file_id, count(*) AS n, count(schema_version) AS v, sum(line) AS l, sum(schema_version) AS s FROM events GROUP BY ALL)`
	field := "f"
	for _, tc := range []struct {
		name string
		sets []*rows.Set
		q    string // one row of one column, as text
		want string
	}{
		{"one row", []*rows.Set{events(1, 1)},
			"SELECT format('{} {} {} {} {} {}', count(*), count(schema_version), max(ts), any_value(run_id), any_value(type), any_value(payload)) FROM events",
			"1 1 2026-03-01 12:00:00.123456 r T {}"},
		{"a chunk exactly", []*rows.Set{events(1, capa)}, perFileQ, perFile(1, capa)},
		{"sets across chunks", []*rows.Set{events(1, capa-7), nil, {}, events(2, capa+9), events(3, 3)}, perFileQ,
			strings.Join([]string{perFile(1, capa-7), perFile(2, capa+9), perFile(3, 3)}, " ")},
		{"nulls, StoreString and a zero time", []*rows.Set{{Quarantine: []rows.Quarantined{
			{FileID: 1, Path: "/a\xffb", Line: 2, Reason: "bad", Raw: "x"},
			{FileID: 1, Path: "/ok", Line: 3, Field: &field, Reason: "bad", Raw: "bytes:y", IngestedAt: ts},
		}}},
			"SELECT string_agg(format('{}|{}|{}|{}', path, coalesce(field, 'NULL'), raw, ingested_at), ' ' ORDER BY line) FROM quarantine",
			rows.StoreString("/a\xffb") + "|NULL|x|0001-01-01 00:00:00 /ok|f|" + rows.StoreString("bytes:y") + "|2026-03-01 12:00:00.123456"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := openTestStore(t)
			ctx := context.Background()
			tx, err := st.Begin(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer tx.Rollback(ctx)
			if err := tx.Append(tc.sets...); err != nil {
				t.Fatal(err)
			}
			if err := tx.Commit(ctx); err != nil {
				t.Fatal(err)
			}
			var got string
			if err := st.conn.QueryRowContext(ctx, tc.q).Scan(&got); err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Errorf("got  %s\nwant %s", got, tc.want)
			}
		})
	}
}

// TestFeedWithoutRows: the feed is no table a user's SQL can read.
func TestFeedWithoutRows(t *testing.T) {
	st := openTestStore(t)
	ctx := context.Background()
	tx, err := st.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	if err := tx.Append(&rows.Set{Events: []rows.Event{{Type: "T"}}}); err != nil { // registers the feed
		t.Fatal(err)
	}
	err = tx.Exec(ctx, "SELECT * FROM "+feedFunc+"()")
	if err == nil || !strings.Contains(err.Error(), "no rows to feed") {
		t.Errorf("got %v, want the feed to refuse", err)
	}
}

// TestAppendPutsThreadsBack: the appends run on one DuckDB thread, and the
// store's count is put back when the transaction ends, committed or
// rolled back after a statement failed (when DuckDB refuses a SET until
// the ROLLBACK).
func TestAppendPutsThreadsBack(t *testing.T) {
	st := openTestStore(t)
	ctx := context.Background()
	threads := func() int64 {
		t.Helper()
		var n int64
		if err := st.conn.QueryRowContext(ctx, `SELECT current_setting('threads')`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	if _, err := st.conn.ExecContext(ctx, `SET threads = 3`); err != nil {
		t.Fatal(err)
	}
	for _, fail := range []bool{false, true} {
		tx, err := st.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if err := tx.Append(&rows.Set{Events: []rows.Event{{Type: "T"}}}); err != nil {
			t.Fatal(err)
		}
		if n := threads(); n != 1 {
			t.Errorf("appending on %d threads, want 1", n)
		}
		if fail {
			if err := tx.Exec(ctx, "SELECT * FROM "+feedFunc+"()"); err == nil {
				t.Fatal("the feed read without rows")
			}
			tx.Rollback(ctx)
		} else if err := tx.Commit(ctx); err != nil {
			t.Fatal(err)
		}
		if n := threads(); n != 3 {
			t.Errorf("failed %v: %d threads after the transaction, want 3", fail, n)
		}
	}
}

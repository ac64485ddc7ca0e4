package ingest

import (
	"context"
	"database/sql"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/apache/arrow/go/v17/arrow/memory/mallocator"
	_ "github.com/marcboeker/go-duckdb"

	"github.com/orchstat/orchstat/query"
)

func bulkStore(t testing.TB) *query.Store {
	t.Helper()
	st, err := query.Open(context.Background(), filepath.Join(t.TempDir(), "x.duckdb"), query.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

func bulkExec(t testing.TB, st *query.Store, q string) {
	t.Helper()
	if _, err := st.Conn.ExecContext(context.Background(), q); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
}

// bulkAppendInTx writes b's events the way writer.commit does: in a transaction.
func bulkAppendInTx(t testing.TB, st *query.Store, bk bulk, b *batch) {
	t.Helper()
	bulkExec(t, st, "BEGIN TRANSACTION")
	if err := bk.appendEvents(context.Background(), b); err != nil {
		bulkExec(t, st, "ROLLBACK")
		t.Fatalf("%T: %v", bk, err)
	}
	bulkExec(t, st, "COMMIT")
}

func newTestArrowBulk(t testing.TB, st *query.Store) *arrowBulk {
	t.Helper()
	ab, err := newArrowBulk(context.Background(), st)
	if err != nil {
		t.Fatal(err)
	}
	return ab
}

// arrowCheckReleased fails if the arrow path kept any Arrow memory.
func arrowCheckReleased(t testing.TB, ab *arrowBulk) {
	t.Helper()
	if n := ab.alloc.(*mallocator.Mallocator).AllocatedBytes(); n != 0 {
		t.Fatalf("%d bytes of Arrow memory still allocated after appendEvents", n)
	}
}

func bulkAddEvent(b *batch, file int32, e eventRow) {
	if n := len(b.parts); n > 0 && b.parts[n-1].file == file {
		b.parts[n-1].rows = append(b.parts[n-1].rows, e)
	} else {
		b.parts = append(b.parts, eventPart{file: file, rows: []eventRow{e}})
	}
	b.nEvents++
}

// bulkEvents flattens a batch's events and their file ids, for checks.
func bulkEvents(b *batch) ([]eventRow, []int32) {
	var rows []eventRow
	var files []int32
	b.eachEvent(func(file int32, e *eventRow) error {
		rows, files = append(rows, *e), append(files, file)
		return nil
	})
	return rows, files
}

var arrowT0 = time.Date(2026, 11, 2, 10, 0, 0, 0, time.UTC)

// bulkTestBatch covers what the two paths could disagree on. lonely adds a
// payload with an unpaired surrogate escape, which trace.Parse accepts.
func bulkTestBatch(rows int, lonely bool) *batch {
	b := &batch{}
	east := time.FixedZone("UTC+5:30", 5*3600+1800)
	huge := `{"blob":"` + strings.Repeat("0123456789abcdef", 1<<16) + `"}` // 1 MiB
	special := []eventRow{
		{line: 1, runID: "run-1", ts: arrowT0, typ: "RunStarted", sv: int32(1), payload: `{"taskId":"run-1","goal":"g"}`},
		{line: 2, runID: "run-1", ts: arrowT0.Add(123456789 * time.Nanosecond), typ: "Tick", sv: nil, payload: `{}`},
		{line: 3, runID: "ラン-1 🚀", ts: arrowT0.In(east).Add(time.Microsecond), typ: "Überprüfung", sv: int32(-1), payload: `{"msg":"héllo wörld ☃ 🚀 \u00e9\ud83d\ude00","ctl":"\n\t\"\\"}`},
		{line: 4, runID: "run-1", ts: time.Date(1969, 12, 31, 23, 59, 59, 999999999, time.UTC), typ: "Old", sv: int32(math.MaxInt32), payload: `{ "spaced" :  [ 1 , 2 ] , "n" : -0.0e0 }`},
		{line: 5, runID: "run-1", ts: time.Date(9999, 12, 31, 23, 59, 59, 999999000, time.UTC), typ: "Late", sv: int32(math.MinInt32), payload: `{"big":123456789012345678901234567890,"inf":1e999,"dup":1,"dup":2}`},
		{line: 6, runID: "", ts: time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC), typ: "", sv: nil, payload: huge},
		{line: 7, runID: "run-\x00-nul", ts: arrowT0, typ: "Nul", sv: int32(0), payload: `{"nul":"a\u0000b"}`},
	}
	if lonely {
		special = append(special, eventRow{line: 8, runID: "run-1", ts: arrowT0, typ: "Lonely", sv: int32(2), payload: `{"s":"\ud800"}`})
	}
	for _, e := range special {
		bulkAddEvent(b, 1, e)
	}
	for i := 0; i < rows; i++ {
		e := eventRow{
			line:    int64(i + 1),
			runID:   fmt.Sprintf("run-%d", i%97),
			ts:      arrowT0.Add(time.Duration(i)*time.Millisecond + time.Duration(i%1000)*time.Microsecond + 7),
			typ:     []string{"StepStarted", "StepFinished", "ProviderRequestFinished"}[i%3],
			payload: fmt.Sprintf(`{"i":%d,"s":"%s"}`, i, strings.Repeat("x", i%50)),
		}
		if i%5 != 0 {
			e.sv = int32(i % 3)
		}
		bulkAddEvent(b, int32(2+i%3), e)
	}
	evs, _ := bulkEvents(b)
	for _, e := range evs {
		b.payloadBytes += len(e.payload)
	}
	return b
}

// bulkEvent is a row of events as read back.
type bulkEvent struct {
	FileID  int32
	Line    int64
	RunID   string
	TS      time.Time
	Type    string
	SV      sql.NullInt32
	Payload string
}

func bulkReadEvents(t testing.TB, st *query.Store) []bulkEvent {
	t.Helper()
	rs, err := st.Conn.QueryContext(context.Background(),
		`SELECT file_id, line, run_id, ts, type, schema_version, payload::VARCHAR FROM events ORDER BY file_id, line`)
	if err != nil {
		t.Fatal(err)
	}
	defer rs.Close()
	var out []bulkEvent
	for rs.Next() {
		var e bulkEvent
		if err := rs.Scan(&e.FileID, &e.Line, &e.RunID, &e.TS, &e.Type, &e.SV, &e.Payload); err != nil {
			t.Fatal(err)
		}
		out = append(out, e)
	}
	if err := rs.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// bulkWant is what either path must store for b: timestamps truncated to
// the microsecond (TIMESTAMP's resolution), in UTC.
func bulkWant(b *batch) []bulkEvent {
	var out []bulkEvent
	rows, files := bulkEvents(b)
	for i, e := range rows {
		w := bulkEvent{FileID: files[i], Line: e.line, RunID: e.runID, TS: time.UnixMicro(e.ts.UnixMicro()).UTC(), Type: e.typ, Payload: e.payload}
		if v, ok := e.sv.(int32); ok {
			w.SV = sql.NullInt32{Int32: v, Valid: true}
		}
		out = append(out, w)
	}
	return out
}

// bulkSort puts es in the order bulkReadEvents returns rows in.
func bulkSort(es []bulkEvent) {
	sort.Slice(es, func(i, j int) bool {
		if es[i].FileID != es[j].FileID {
			return es[i].FileID < es[j].FileID
		}
		return es[i].Line < es[j].Line
	})
}

func bulkDiff(t *testing.T, what string, got, want []bulkEvent) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d rows, want %d", what, len(got), len(want))
	}
	bad := 0
	for i := range got {
		if !reflect.DeepEqual(got[i], want[i]) {
			g, w := got[i], want[i]
			if len(g.Payload) > 200 {
				g.Payload = g.Payload[:200] + "..."
			}
			if len(w.Payload) > 200 {
				w.Payload = w.Payload[:200] + "..."
			}
			t.Errorf("%s: row %d\n got %+v\nwant %+v", what, i, g, w)
			if bad++; bad == 5 {
				t.FailNow()
			}
		}
	}
}

func TestArrowBulkMatchesAppender(t *testing.T) {
	for _, tc := range []struct {
		name  string
		large bool
	}{{"string", false}, {"large-string", true}} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.large {
				defer func(v int) { largeStringAt = v }(largeStringAt)
				largeStringAt = 0
			}
			b := bulkTestBatch(20000, true)
			want := bulkWant(b)
			bulkSort(want)

			app := bulkStore(t)
			bulkAppendInTx(t, app, &appenderBulk{st: app}, b)

			arr := bulkStore(t)
			ab := newTestArrowBulk(t, arr)
			bulkAppendInTx(t, arr, ab, b)
			arrowCheckReleased(t, ab)

			fromApp, fromArrow := bulkReadEvents(t, app), bulkReadEvents(t, arr)
			bulkDiff(t, "appender", fromApp, want)
			bulkDiff(t, "arrow", fromArrow, want)
			if !reflect.DeepEqual(fromApp, fromArrow) {
				t.Fatal("appender and arrow stores differ")
			}
			// Same columns, types and bytes, compared inside DuckDB too.
			bulkExec(t, arr, "ATTACH '"+app.Path+"' AS app (READ_ONLY)")
			var n int64
			if err := arr.Conn.QueryRowContext(context.Background(), `SELECT count(*) FROM (
				(SELECT * FROM events EXCEPT ALL SELECT * FROM app.events)
				UNION ALL (SELECT * FROM app.events EXCEPT ALL SELECT * FROM events))`).Scan(&n); err != nil {
				t.Fatal(err)
			}
			if n != 0 {
				t.Fatalf("%d rows differ between the stores", n)
			}
			if v := bulkScalar(t, arr, `SELECT count(*) FROM duckdb_views() WHERE view_name LIKE 'orchstat_arrow%'`); v != 0 {
				t.Fatalf("%d Arrow views left behind", v)
			}
		})
	}
}

func bulkScalar(t testing.TB, st *query.Store, q string) int64 {
	t.Helper()
	var n int64
	if err := st.Conn.QueryRowContext(context.Background(), q).Scan(&n); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	return n
}

// Several batches in one transaction and across transactions, as the
// writer does with a long ingest, plus an empty batch.
func TestArrowBulkManyBatches(t *testing.T) {
	st := bulkStore(t)
	ab := newTestArrowBulk(t, st)
	var want []bulkEvent
	bulkExec(t, st, "BEGIN TRANSACTION")
	for i := 0; i < 3; i++ {
		b := &batch{}
		for j := 0; j < 5000; j++ {
			bulkAddEvent(b, int32(10+i), eventRow{line: int64(j), runID: "r", ts: arrowT0, typ: "T", sv: int32(j), payload: `{"j":` + fmt.Sprint(j) + `}`})
		}
		if err := ab.appendEvents(context.Background(), b); err != nil {
			t.Fatal(err)
		}
		want = append(want, bulkWant(b)...)
	}
	if err := ab.appendEvents(context.Background(), &batch{}); err != nil {
		t.Fatal(err)
	}
	bulkExec(t, st, "COMMIT")
	b := bulkTestBatch(100, false)
	bulkAppendInTx(t, st, ab, b)
	want = append(want, bulkWant(b)...)
	arrowCheckReleased(t, ab)
	bulkSort(want)
	bulkDiff(t, "arrow", bulkReadEvents(t, st), want)
}

// The implicit VARCHAR -> JSON cast is an alternative to tagging payload as
// JSON: it stores the same text, but parses it, and rejects payloads that
// trace.Parse accepts.
func TestArrowBulkCastPayload(t *testing.T) {
	st := bulkStore(t)
	ab := newTestArrowBulk(t, st)
	ab.castPayload = true
	b := bulkTestBatch(2000, false)
	bulkAppendInTx(t, st, ab, b)
	arrowCheckReleased(t, ab)
	want := bulkWant(b)
	bulkSort(want)
	bulkDiff(t, "arrow-cast", bulkReadEvents(t, st), want)

	// A failed INSERT: the error is returned, the memory released, the
	// transaction rolled back with its view, and the next batch is fine.
	st2 := bulkStore(t)
	ab2 := newTestArrowBulk(t, st2)
	ab2.castPayload = true
	bulkExec(t, st2, "BEGIN TRANSACTION")
	err := ab2.appendEvents(context.Background(), bulkTestBatch(10, true))
	if err == nil || !strings.Contains(err.Error(), "surrogate") {
		t.Fatalf("cast of an unpaired surrogate: err = %v", err)
	}
	arrowCheckReleased(t, ab2)
	bulkExec(t, st2, "ROLLBACK")
	if v := bulkScalar(t, st2, `SELECT count(*) FROM duckdb_views() WHERE view_name LIKE 'orchstat_arrow%'`); v != 0 {
		t.Fatalf("%d Arrow views left behind after ROLLBACK", v)
	}
	ab2.castPayload = false
	b2 := bulkTestBatch(10, true)
	bulkAppendInTx(t, st2, ab2, b2)
	want2 := bulkWant(b2)
	bulkSort(want2)
	bulkDiff(t, "arrow after a failed batch", bulkReadEvents(t, st2), want2)
}

// The view RegisterView creates is a persistent catalog entry in DuckDB
// 1.1.2, so its CREATE and DROP reach the WAL. A database whose last
// commits live only in the WAL (a writer killed before checkpointing) must
// still open and replay them.
func TestArrowBulkWALReplays(t *testing.T) {
	st := bulkStore(t)
	ab := newTestArrowBulk(t, st)
	b := bulkTestBatch(1000, true)
	bulkAppendInTx(t, st, ab, b)
	wal := st.Path + ".wal"
	if _, err := os.Stat(wal); err != nil {
		t.Skipf("no WAL after commit: %v", err)
	}
	// Copy the database as a crash would leave it.
	dir := t.TempDir()
	for _, p := range []string{st.Path, wal} {
		bulkCopyFile(t, p, filepath.Join(dir, filepath.Base(p)))
	}
	db, err := sql.Open("duckdb", filepath.Join(dir, filepath.Base(st.Path)))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var n, views int64
	if err := db.QueryRow(`SELECT count(*) FROM events`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if err := db.QueryRow(`SELECT count(*) FROM duckdb_views() WHERE view_name LIKE 'orchstat_arrow%'`).Scan(&views); err != nil {
		t.Fatal(err)
	}
	if n != int64(b.nEvents) || views != 0 {
		t.Fatalf("after WAL replay: %d events (want %d), %d Arrow views", n, b.nEvents, views)
	}
}

func bulkCopyFile(t *testing.T, from, to string) {
	t.Helper()
	in, err := os.Open(from)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	out, err := os.Create(to)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(out, in); err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
}

// bulkPayload is a ~400-byte payload shaped like a provider request.
func bulkPayload(i int) string {
	return fmt.Sprintf(`{"provider":"%s","model":"%s-large-%d","durationMs":%d.%03d,"success":%t,"retries":%d,`+
		`"usage":{"inputTokens":%d,"outputTokens":%d,"cachedTokens":%d},"request":{"id":"req_%016x","attempt":%d,`+
		`"endpoint":"https://api.example.com/v1/chat/completions"},"error":null,"note":"%s"}`,
		[]string{"anthropic", "openai", "google"}[i%3], []string{"claude", "gpt", "gemini"}[i%3], i%7,
		1000+i%9000, i%1000, i%11 != 0, i%4, 1000+i%50000, 200+i%3000, i%1000, uint64(i)*0x9e3779b97f4a7c15, i%3,
		strings.Repeat("lorem ipsum dolor sit amet ", 4+i%3))
}

// bulkCPUTime is the process's user plus system CPU time, DuckDB's threads
// included.
func bulkCPUTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkBulk compares the two ways of handing events to DuckDB. One
// iteration writes one batch to a fresh store in a transaction of its own:
// BEGIN, appendEvents, COMMIT, CHECKPOINT. The checkpoint counts because
// DuckDB 1.1.2 with more than one thread runs the arrow path's INSERT ...
// SELECT as a BATCH_INSERT, which writes whole row groups (122,880 rows) to
// the database file during the INSERT, leaving the checkpoint less to do.
// rows=100k stays under a row group, rows=200k does not (the writer's
// default batch is 50k rows, several to a transaction). Payloads are about
// 400 bytes. path=arrow-cast is the arrow path with payload sent as VARCHAR
// and cast to JSON by the INSERT. Besides rows/s (wall clock), cpu-ms/op
// counts the CPU time of all threads, which is steadier on a shared
// machine.
//
// To compare runs:
//
//	go test ./ingest -run XXX -bench Bulk -benchtime 3x -count 10 | tee new.txt
//	benchstat old.txt new.txt
func BenchmarkBulk(b *testing.B) {
	for _, rows := range []int{100000, 200000} {
		bt := &batch{}
		for i := 0; i < rows; i++ {
			var sv any = int32(1)
			if i%10 == 0 {
				sv = nil
			}
			payload := bulkPayload(i)
			bulkAddEvent(bt, int32(1+i/500), eventRow{line: int64(1 + i%500), runID: fmt.Sprintf("%013d", 1790812838767+i/500),
				ts: arrowT0.Add(time.Duration(i) * 1234567 * time.Nanosecond), typ: "ProviderRequestFinished", sv: sv, payload: payload})
			bt.payloadBytes += len(payload)
		}
		for _, path := range []string{"appender", "arrow", "arrow-cast"} {
			b.Run(fmt.Sprintf("rows=%dk/path=%s", rows/1000, path), func(b *testing.B) {
				b.ReportAllocs()
				b.SetBytes(int64(bt.payloadBytes))
				var elapsed, cpu time.Duration
				for i := 0; i < b.N; i++ {
					b.StopTimer()
					st := bulkStore(b)
					var bk bulk = &appenderBulk{st: st}
					if path != "appender" {
						ab := newTestArrowBulk(b, st)
						ab.castPayload = path == "arrow-cast"
						bk = ab
					}
					b.StartTimer()
					start, cpu0 := time.Now(), bulkCPUTime()
					bulkAppendInTx(b, st, bk, bt)
					if err := st.Checkpoint(context.Background()); err != nil {
						b.Fatal(err)
					}
					elapsed += time.Since(start)
					cpu += bulkCPUTime() - cpu0
					b.StopTimer()
					if n := bulkScalar(b, st, "SELECT count(*) FROM events"); n != int64(rows) {
						b.Fatalf("%d rows written", n)
					}
					b.StartTimer()
				}
				b.ReportMetric(float64(rows)*float64(b.N)/elapsed.Seconds(), "rows/s")
				b.ReportMetric(float64(cpu.Milliseconds())/float64(b.N), "cpu-ms/op")
			})
		}
	}
}

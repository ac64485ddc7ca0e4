package ingest

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/memory"
	"github.com/apache/arrow/go/v17/arrow/memory/mallocator"
	"github.com/marcboeker/go-duckdb"

	"github.com/orchstat/orchstat/query"
)

// arrowBulk hands a batch's events to DuckDB as one Arrow record: it builds
// the record, registers it as a view with go-duckdb's Arrow API, runs
// INSERT INTO events SELECT * FROM the view, and drops the view, all on the
// store's connection inside the writer's open transaction.
//
// Facts about go-duckdb v1.8.2 / DuckDB 1.1.2 this relies on, found by
// reading their source and by experiment (arrow_test.go checks that no view
// and no Arrow memory outlives appendEvents):
//
//   - RegisterView (duckdb_arrow_scan) creates an ordinary, persistent view
//     (CreateView(name, replace=true, temporary=false)), not a temporary
//     one. It is created and dropped inside the writer's transaction, so it
//     never outlives it: a failed batch is rolled back with it. It must not
//     be used outside a transaction.
//   - Nothing ever calls the exported stream's release callback: DuckDB
//     gives each scan a copy whose release is a no-op, and the release func
//     RegisterView returns only frees the C struct. The stream keeps its
//     reader alive (a cgo.Handle) for good, and an array.NewRecordReader
//     would keep its last record with it, leaking every batch. So the
//     reader here is an eventsReader whose lifetime this code manages: it
//     drops its record when appendEvents returns, and what stays behind is
//     a few hundred bytes per batch (the handle and a small struct, plus the
//     C schema duckdb_arrow_scan asks for and never releases).
//   - The view can be scanned only once: every scan reads the same stream.
//   - The view must be read whole, as SELECT *: the stream ignores the
//     projection and filters DuckDB pushes down, and a query naming a
//     subset of the columns reads the wrong Arrow children (SELECT line
//     returns file_id's bits as BIGINT).
type arrowBulk struct {
	st    *query.Store
	alloc memory.Allocator
	// castPayload sends payload as plain VARCHAR and lets INSERT cast it
	// to JSON, which parses every payload. Only tests and benchmarks set
	// it; see eventsSchema.
	castPayload bool
}

// Arrow buffers are allocated with malloc, not by the Go runtime: the C
// Data Interface stores pointers to them in C memory and DuckDB reads them
// after the callback that handed them over has returned, which cgo's
// pointer rules forbid for Go memory (arrow's cdata docs ask for a C
// allocator). Malloc'd buffers also go back to the system as soon as the
// last reference is released, instead of waiting for a GC.
func newArrowBulk(ctx context.Context, st *query.Store) (*arrowBulk, error) {
	if err := checkEventsSchema(); err != nil {
		return nil, err
	}
	err := st.Conn.Raw(func(dc any) error {
		_, err := duckdb.NewArrowFromConn(dc.(driver.Conn))
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("arrow bulk path: %w", err)
	}
	return &arrowBulk{st: st, alloc: mallocator.NewMallocator()}, nil
}

func (ab *arrowBulk) close() error { return nil }

// largeStringAt is the column size (bytes of string data) from which a
// string column is built as LargeString (64-bit offsets) rather than String
// (32-bit offsets, at most 2 GiB per array). A batch holds at most
// Options.BatchBytes of payload (16 MiB by default) plus one chunk, so in
// practice every column is a String; the switch only guards BatchBytes set
// absurdly high. A variable so tests can exercise the LargeString path.
var largeStringAt = math.MaxInt32

// viewSeq makes each registered view's name unique, so a view left behind
// by a batch that failed is never silently replaced by the next.
var viewSeq atomic.Uint64

// jsonExtension marks a string field as Arrow's canonical JSON extension
// type, which DuckDB 1.1.2 imports as its JSON type without parsing the
// text.
var jsonExtension = arrow.NewMetadata(
	[]string{"ARROW:extension:name", "ARROW:extension:metadata"}, []string{"arrow.json", ""})

// eventsSchema is the Arrow schema of query.Events, column for column.
//
// ts is a microsecond timestamp without a time zone, which DuckDB maps to
// TIMESTAMP (with a zone it would be TIMESTAMPTZ); the value is
// time.Time.UnixMicro, exactly what the appender stores.
//
// payload is tagged as JSON so DuckDB stores it verbatim, like the
// appender, which writes JSON columns as plain strings. Sent as VARCHAR
// (castPayload), INSERT's implicit VARCHAR -> JSON cast parses every
// payload: slower, and it rejects text that trace.Parse accepts, such as an
// unpaired surrogate escape ("\ud800"), failing the whole batch. Payloads
// were already validated by trace.Parse.
func eventsSchema(large [3]bool, castPayload bool) *arrow.Schema {
	str := func(large bool) arrow.DataType {
		if large {
			return arrow.BinaryTypes.LargeString
		}
		return arrow.BinaryTypes.String
	}
	payload := arrow.Field{Name: "payload", Type: str(large[2]), Metadata: jsonExtension}
	if castPayload {
		payload.Metadata = arrow.Metadata{}
	}
	return arrow.NewSchema([]arrow.Field{
		{Name: "file_id", Type: arrow.PrimitiveTypes.Int32},
		{Name: "line", Type: arrow.PrimitiveTypes.Int64},
		{Name: "run_id", Type: str(large[0])},
		{Name: "ts", Type: &arrow.TimestampType{Unit: arrow.Microsecond}},
		{Name: "type", Type: str(large[1])},
		{Name: "schema_version", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
		payload,
	}, nil)
}

// checkEventsSchema fails if query.Events no longer has the columns
// eventsSchema builds.
func checkEventsSchema() error {
	want := eventsSchema([3]bool{}, false).Fields()
	if len(query.Events.Columns) != len(want) {
		return fmt.Errorf("arrow bulk path: %s has %d columns, not %d", query.Events.Name, len(query.Events.Columns), len(want))
	}
	for i, c := range query.Events.Columns {
		if c.Name != want[i].Name {
			return fmt.Errorf("arrow bulk path: column %d of %s is %s, not %s", i+1, query.Events.Name, c.Name, want[i].Name)
		}
	}
	return nil
}

// stringBuilder is what array.StringBuilder and array.LargeStringBuilder
// share.
type stringBuilder interface {
	array.Builder
	Append(string)
	ReserveData(int)
}

// record builds the batch's events as one Arrow record.
func (ab *arrowBulk) record(b *batch) arrow.Record {
	n := b.nEvents
	var size [3]int
	b.eachEvent(func(_ int32, e *eventRow) error {
		size[0] += len(e.runID)
		size[1] += len(e.typ)
		size[2] += len(e.payload)
		return nil
	})
	var large [3]bool
	for i, s := range size {
		large[i] = s >= largeStringAt
	}
	rb := array.NewRecordBuilder(ab.alloc, eventsSchema(large, ab.castPayload))
	defer rb.Release()
	rb.Reserve(n)

	fileID := rb.Field(0).(*array.Int32Builder)
	line := rb.Field(1).(*array.Int64Builder)
	runID := rb.Field(2).(stringBuilder)
	ts := rb.Field(3).(*array.TimestampBuilder)
	typ := rb.Field(4).(stringBuilder)
	sv := rb.Field(5).(*array.Int32Builder)
	payload := rb.Field(6).(stringBuilder)
	runID.ReserveData(size[0])
	typ.ReserveData(size[1])
	payload.ReserveData(size[2])

	b.eachEvent(func(file int32, e *eventRow) error {
		fileID.UnsafeAppend(file)
		line.UnsafeAppend(e.line)
		runID.Append(e.runID)
		ts.UnsafeAppend(arrow.Timestamp(e.ts.UnixMicro()))
		typ.Append(e.typ)
		if v, ok := e.sv.(int32); ok {
			sv.UnsafeAppend(v)
		} else {
			sv.AppendNull()
		}
		payload.Append(e.payload)
		return nil
	})
	return rb.NewRecord()
}

func (ab *arrowBulk) appendEvents(ctx context.Context, b *batch) (err error) {
	if b.nEvents == 0 {
		return nil
	}
	rec := ab.record(b)
	rd := &eventsReader{schema: rec.Schema(), rec: rec}
	// Whatever happens, the reader lets go of the record (which DuckDB may
	// still reference only through arrays it releases itself), and the
	// record's builders' memory goes back to the allocator.
	defer rd.close()

	name := fmt.Sprintf("orchstat_arrow_events_%d", viewSeq.Add(1))
	var release func()
	err = ab.st.Conn.Raw(func(dc any) error {
		ar, err := duckdb.NewArrowFromConn(dc.(driver.Conn))
		if err != nil {
			return err
		}
		release, err = ar.RegisterView(rd, name)
		return err
	})
	if err != nil {
		return fmt.Errorf("registering events as an Arrow view: %w", err)
	}

	cols := make([]string, len(rec.Schema().Fields()))
	for i, f := range rec.Schema().Fields() {
		cols[i] = f.Name
	}
	// SELECT * and nothing else: see arrowBulk on projections. With more
	// than one thread DuckDB plans this as a BATCH_INSERT, which gathers
	// the rows in a collection of its own and merges it into the
	// transaction's storage (writing full row groups of 122,880 rows to
	// the file as it goes); below a row group that costs more CPU than the
	// appender, which appends to the transaction's storage directly (see
	// BenchmarkBulk).
	_, err = ab.st.Conn.ExecContext(ctx, "INSERT INTO "+query.Events.Name+" ("+strings.Join(cols, ", ")+") SELECT * FROM "+name)
	if err != nil {
		err = fmt.Errorf("inserting events from Arrow: %w", err)
	}
	// Drop the view even if the context was cancelled. After a failed
	// INSERT the transaction is aborted and DROP fails too; the writer's
	// ROLLBACK then removes the view.
	_, derr := ab.st.Conn.ExecContext(context.WithoutCancel(ctx), "DROP VIEW "+name)
	if derr == nil {
		release()
	}
	// If the view could not be dropped, its stream struct is leaked rather
	// than freed under it, and once the reader is closed a later scan of
	// the view fails instead of reading released memory.
	if err == nil && derr != nil {
		err = fmt.Errorf("dropping Arrow view %s: %w", name, derr)
	}
	return err
}

// eventsReader is the array.RecordReader behind an Arrow view: it yields its
// one record once. Retain and Release are no-ops because the exported C
// stream retains the reader and is never released (see arrowBulk);
// appendEvents calls close instead. DuckDB calls Next and Record from its
// own threads, hence the mutex.
type eventsReader struct {
	mu     sync.Mutex
	schema *arrow.Schema
	rec    arrow.Record // the reader's reference; nil once closed
	cur    arrow.Record // what Record returns
	done   bool         // rec was handed out
	closed bool
}

var _ array.RecordReader = (*eventsReader)(nil)

func (r *eventsReader) Retain()               {}
func (r *eventsReader) Release()              {}
func (r *eventsReader) Schema() *arrow.Schema { return r.schema }

func (r *eventsReader) Next() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.cur = nil
	if r.done || r.rec == nil {
		return false
	}
	r.done, r.cur = true, r.rec
	return true
}

func (r *eventsReader) Record() arrow.Record {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.cur
}

func (r *eventsReader) Err() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return errClosedReader
	}
	return nil
}

var errClosedReader = errors.New("orchstat: Arrow events view read after its batch was written")

// close releases the record; the reader yields nothing afterwards.
func (r *eventsReader) close() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return
	}
	r.closed = true
	r.rec.Release()
	r.rec, r.cur = nil, nil
}

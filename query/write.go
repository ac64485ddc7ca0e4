package query

import (
	"context"
	"database/sql"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/duckdb/duckdb-go/v2"
	"github.com/orchstat/orchstat/model/rows"
)

// Tx is a write transaction on the store, the way ingest's rows get in
// (it is the store's rows.Appender). DuckDB transactions belong to a
// connection, and the store has one, so a store holds at most one Tx at a
// time.
type Tx struct {
	s    *Store
	done bool
	// threads puts back DuckDB's thread count once the transaction ends,
	// when its appends ran on one thread (see appendTables).
	threads func() error
	// touched are the runs whose rows the transaction changed, whose
	// figures Commit refreshes; allTouched, all runs (see keepFigures).
	touched    map[string]struct{}
	allTouched bool
}

// Begin starts a write transaction.
func (s *Store) Begin(ctx context.Context) (*Tx, error) {
	if _, err := s.conn.ExecContext(ctx, "BEGIN TRANSACTION"); err != nil {
		return nil, err
	}
	return &Tx{s: s}, nil
}

// Appender starts a write transaction for a writer that knows the store
// only as a rows.Appender's source (ingest).
func (s *Store) Appender(ctx context.Context) (rows.Appender, error) {
	tx, err := s.Begin(ctx)
	if err != nil {
		return nil, err
	}
	return tx, nil
}

// Commit ends the transaction, keeping its rows. When it fails, the
// transaction is still the caller's to roll back.
func (t *Tx) Commit(ctx context.Context) error {
	if err := t.keepFigures(ctx); err != nil {
		return err
	}
	if _, err := t.s.conn.ExecContext(ctx, "COMMIT"); err != nil {
		return err
	}
	t.done = true
	// The calls may have models the prices were not looked up for.
	t.s.priceSetup, t.s.pricedOn = nil, false
	return t.end()
}

// end puts back what the transaction's appends changed, once DuckDB
// accepts statements again (it refuses them in a transaction that failed).
func (t *Tx) end() error {
	if t.threads == nil {
		return nil
	}
	restore := t.threads
	t.threads = nil
	return restore()
}

// Rollback ends the transaction, dropping its rows. It is safe to call
// after Commit, and runs even when ctx is cancelled.
func (t *Tx) Rollback(ctx context.Context) {
	if !t.done {
		t.done = true
		t.s.conn.ExecContext(context.WithoutCancel(ctx), "ROLLBACK")
	}
	t.end()
}

// DeleteFiles removes every row the files with these ids contributed to
// the file tables (see FileTables).
func (t *Tx) DeleteFiles(ctx context.Context, ids []int32) error {
	if len(ids) == 0 {
		return nil
	}
	var sb strings.Builder
	for i, id := range ids {
		if i > 0 {
			sb.WriteByte(',')
		}
		sb.WriteString(strconv.Itoa(int(id)))
	}
	if err := t.touchFiles(ctx, sb.String()); err != nil {
		return err
	}
	for _, tb := range FileTables {
		if _, err := t.s.conn.ExecContext(ctx, "DELETE FROM "+tb.Name+" WHERE file_id IN ("+sb.String()+")"); err != nil {
			return err
		}
	}
	return nil
}

// Append adds the rows of sets, table by table in rows.Set's order, one
// INSERT per table for all of them, its rows fed to DuckDB a chunk at a
// time by feedFunc. Strings taken from file names or records may not be
// UTF-8; they are stored as rows.StoreString says, but for a table whose
// declaration keeps them verbatim (events).
//
// The chunk feed took less CPU than DuckDB's Appender, which is given a
// row at a time, each value boxed into a driver.Value; Arrow needs a
// build tag; see benchmarks/RESULTS.md. A setter encodes what it is given
// for a JSON column as JSON, so no column orchstat writes is JSON (see
// rows.Event).
func (t *Tx) Append(sets ...*rows.Set) error {
	vs := make([]reflect.Value, 0, len(sets))
	for _, s := range sets {
		if s != nil {
			vs = append(vs, reflect.ValueOf(s).Elem())
			// A run's figures come from its spans' tables and its
			// summary; every event of a run gives it a span.
			for i := range s.RunSpans {
				t.touch(s.RunSpans[i].RunID)
			}
			for i := range s.Summaries {
				t.touch(s.Summaries[i].RunID)
			}
		}
	}
	return t.appendTables(FileTables, vs)
}

// AppendStates adds file, directory and sealed directory states.
func (t *Tx) AppendStates(s *rows.States) error {
	if err := t.appendTables(stateTables, []reflect.Value{reflect.ValueOf(s).Elem()}); err != nil {
		return err
	}
	if len(s.Sealed) == 0 {
		return nil
	}
	var ids []int32
	var dirs []string
	for _, d := range s.Sealed {
		ids = append(ids, d.FileIDs...)
		dirs = append(dirs, rows.StoreString(d.Path))
	}
	// Every row of a sealed directory and of its files, this
	// transaction's too: see rows.FileStateRow.Sealed.
	ctx := context.Background()
	for part := range slices.Chunk(ids, markChunk) {
		if _, err := t.s.conn.ExecContext(ctx, `UPDATE file_states SET sealed = true WHERE file_id IN (SELECT unnest(?::INTEGER[])) AND NOT sealed`, part); err != nil {
			return fmt.Errorf("marking sealed files: %w", err)
		}
	}
	for part := range slices.Chunk(dirs, markChunk) {
		if _, err := t.s.conn.ExecContext(ctx, `UPDATE dir_states SET sealed = true WHERE path IN (SELECT unnest(?::VARCHAR[])) AND NOT sealed`, part); err != nil {
			return fmt.Errorf("marking sealed directories: %w", err)
		}
	}
	return nil
}

// markChunk is how many files or directories one UPDATE marks sealed, so
// the list handed to DuckDB per statement stays small however many runs a
// first ingest seals (109,416 files at 30,000 runs).
const markChunk = 4096

// appendTables inserts each table's rows from the sets, skipping a table
// none of them has rows for.
//
// The INSERTs run on one DuckDB thread, the caller's: with DuckDB's
// others on, the feed's scan ran on one of them, calling into Go from a
// thread Go did not start while ingest's readers kept Go busy, and a cold
// ingest took more CPU and time than through the Appender; on the
// caller's thread it took less (benchmarks/RESULTS.md). The store's
// thread count is put back when the transaction ends (Commit, Rollback),
// for the checkpoint and the reads: not before, since DuckDB refuses a SET
// in a transaction an INSERT failed.
func (t *Tx) appendTables(tables []Table, sets []reflect.Value) (err error) {
	var feeds []*feed
	for _, tb := range tables {
		f := &feed{conv: rowConvs[tb.Name], table: tb.Name}
		for _, s := range sets {
			rs := f.conv.rowsOf(s)
			if rs.Len() > 0 {
				f.segs = append(f.segs, feedSeg{rs.UnsafePointer(), rs.Len()})
				f.n += rs.Len()
			}
		}
		if f.n > 0 {
			feeds = append(feeds, f)
		}
	}
	if len(feeds) == 0 {
		return nil
	}
	ctx := context.Background()
	if t.s.fed != t.s.conn {
		if err := t.s.registerFeed(); err != nil {
			return err
		}
		t.s.fed = t.s.conn
	}
	if t.threads == nil {
		if t.threads, err = t.s.oneThread(ctx); err != nil {
			return err
		}
	}
	for _, f := range feeds {
		fctx := context.WithValue(ctx, feedKey{}, f)
		if _, err := t.s.conn.ExecContext(fctx, "INSERT INTO "+f.table+" SELECT * FROM "+feedFunc+"()"); err != nil {
			return fmt.Errorf("appending to %s: %w", f.table, err)
		}
	}
	return nil
}

// rowConv is how feedFunc reads rows of one declared type. Where each
// column lies in the row and what Go type it has are found once per
// table, by reflection, when the table is declared; a row is then read at
// those offsets, with no reflection per row or field: this is a cold
// ingest's hot path, and reflect.Value per field cost about as much as
// DuckDB's own append of it.
type rowConv struct {
	set   []int   // the table's field in its set
	size  uintptr // a row's size, the slice's stride
	cols  []colConv
	infos []duckdb.ColumnInfo // feedFunc's columns, the table's
}

type colConv struct {
	off      uintptr // the column's field in the row, through embedded structs
	kind     colKind
	nullable bool // the field is a pointer: nil is NULL
}

type colKind uint8

const (
	colString colKind = iota
	colVerbatim
	colInt32
	colInt64
	colUint64
	colFloat64
	colBool
	colTime
)

var timeType = reflect.TypeFor[time.Time]()

func newRowConv(row reflect.Type, set []int, verbatim bool) *rowConv {
	c := &rowConv{set: set, size: row.Size()}
	for _, f := range columnFields(row) {
		var off uintptr
		t := row
		for _, x := range f.Index {
			sf := t.Field(x)
			off += sf.Offset
			t = sf.Type
		}
		col := colConv{off: off}
		if t.Kind() == reflect.Pointer {
			col.nullable, t = true, t.Elem()
		}
		col.kind = kindOf(t, verbatim)
		c.cols = append(c.cols, col)
		c.infos = append(c.infos, columnInfo(f.Tag.Get("col")))
	}
	return c
}

// kindOf is how a field of type t is read and set.
func kindOf(t reflect.Type, verbatim bool) colKind {
	switch {
	case t == timeType:
		return colTime
	case t.Kind() == reflect.String && verbatim:
		return colVerbatim
	}
	switch t.Kind() {
	case reflect.String:
		return colString
	case reflect.Int32:
		return colInt32
	case reflect.Int64:
		return colInt64
	case reflect.Uint64:
		return colUint64
	case reflect.Float64:
		return colFloat64
	case reflect.Bool:
		return colBool
	}
	panic("query: no store column for a row field of type " + t.String())
}

func (c *rowConv) rowsOf(set reflect.Value) reflect.Value { return set.FieldByIndex(c.set) }

// Exec runs a statement in the transaction: for statements the Tx has no
// method for, such as a test arranging rows a read model then reads.
func (t *Tx) Exec(ctx context.Context, q string, args ...any) error {
	// Which runs the statement changed is not known: all runs' figures
	// are made again at Commit.
	t.allTouched = true
	_, err := t.s.conn.ExecContext(ctx, q, args...)
	return cleanDuckErr(err)
}

// QueryRow runs a query that returns one row, in the transaction, so it
// sees the transaction's own rows.
func (t *Tx) QueryRow(ctx context.Context, q string, args ...any) *sql.Row {
	return t.s.conn.QueryRowContext(ctx, q, args...)
}

// DeleteOpen deletes each file's open rows.
func (t *Tx) DeleteOpen(ctx context.Context, files []rows.OpenRows) error {
	for _, o := range files {
		stmts := []struct {
			sql  string
			keys []string
		}{
			{"DELETE FROM " + CallAttempts.Name + " WHERE file_id = ? AND list_contains(?::VARCHAR[], call_id)", o.CallIDs},
			{"DELETE FROM " + Calls.Name + " WHERE file_id = ? AND list_contains(?::VARCHAR[], call_id || '@' || line)", o.Calls},
			{"DELETE FROM " + RecordRuns.Name + " WHERE file_id = ? AND list_contains(?::VARCHAR[], run_id)", o.Runs},
		}
		for _, st := range stmts {
			if len(st.keys) == 0 {
				continue
			}
			if _, err := t.s.conn.ExecContext(ctx, st.sql, o.File, st.keys); err != nil {
				return err
			}
		}
		if o.TailLine > 0 {
			if _, err := t.s.conn.ExecContext(ctx, "DELETE FROM "+Quarantine.Name+" WHERE file_id = ? AND line = ?", o.File, o.TailLine); err != nil {
				return err
			}
		}
	}
	return nil
}

package query

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"time"
	"unsafe"

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
	if _, err := t.s.conn.ExecContext(ctx, "COMMIT"); err != nil {
		return err
	}
	t.done = true
	// The calls may have models the prices were not looked up for.
	t.s.priceSetup, t.s.pricedOn = nil, false
	return nil
}

// Rollback ends the transaction, dropping its rows. It is safe to call
// after Commit, and runs even when ctx is cancelled.
func (t *Tx) Rollback(ctx context.Context) {
	if !t.done {
		t.done = true
		t.s.conn.ExecContext(context.WithoutCancel(ctx), "ROLLBACK")
	}
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
	for _, tb := range FileTables {
		if _, err := t.s.conn.ExecContext(ctx, "DELETE FROM "+tb.Name+" WHERE file_id IN ("+sb.String()+")"); err != nil {
			return err
		}
	}
	return nil
}

// Append adds the rows of sets, table by table in rows.Set's order, one
// DuckDB Appender per table for all of them. Strings taken from file
// names or records may not be UTF-8; they are stored as rows.StoreString
// says, but for a table whose declaration keeps them verbatim (events).
//
// Rows go through DuckDB's Appender: a table function that DuckDB scans on
// all its threads (duckdb-go's ParallelChunkTableFunction) measured the
// same on the benchmark corpus, and Arrow needs a build tag; see
// benchmarks/RESULTS.md. The Appender encodes what it is given for a JSON
// column as JSON, so no column orchstat writes is JSON (see rows.Event).
func (t *Tx) Append(sets ...*rows.Set) error {
	vs := make([]reflect.Value, 0, len(sets))
	for _, s := range sets {
		if s != nil {
			vs = append(vs, reflect.ValueOf(s).Elem())
		}
	}
	return t.appendTables(FileTables, vs)
}

// AppendStates adds file, directory and sealed directory states.
func (t *Tx) AppendStates(s *rows.States) error {
	return t.appendTables(stateTables, []reflect.Value{reflect.ValueOf(s).Elem()})
}

// appendTables appends each table's rows from the sets, skipping a table
// none of them has rows for.
func (t *Tx) appendTables(tables []Table, sets []reflect.Value) error {
	for _, tb := range tables {
		conv := rowConvs[tb.Name]
		n := 0
		for _, s := range sets {
			n += conv.rowsOf(s).Len()
		}
		if n == 0 {
			continue
		}
		err := t.appendEach(tb.Name, func(add func(...driver.Value) error) error {
			vals := make([]driver.Value, len(conv.cols))
			for _, s := range sets {
				rs := conv.rowsOf(s)
				if rs.Len() == 0 {
					continue
				}
				base := rs.UnsafePointer()
				for i := range rs.Len() {
					conv.values(unsafe.Add(base, uintptr(i)*conv.size), vals)
					if err := add(vals...); err != nil {
						return err
					}
				}
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// appendEach appends the rows each calls add with, as they come.
func (t *Tx) appendEach(table string, each func(add func(...driver.Value) error) error) error {
	return t.s.conn.Raw(func(dc any) error {
		a, err := duckdb.NewAppenderFromConn(dc.(driver.Conn), "", table)
		if err != nil {
			return err
		}
		add := func(row ...driver.Value) error {
			if err := a.AppendRow(row...); err != nil {
				return fmt.Errorf("appending to %s: %w", table, err)
			}
			return nil
		}
		if err := each(add); err != nil {
			a.Close()
			return err
		}
		return a.Close()
	})
}

// rowConv turns rows of one declared type into Appender values. Where
// each column lies in the row and what Go type it has are found once per
// table, by reflection, when the table is declared; a row is then read at
// those offsets, with no reflection per row or field: the Appender is a
// cold ingest's hot path, and reflect.Value per field cost about as much
// as DuckDB's own append of it.
type rowConv struct {
	set  []int   // the table's field in its set
	size uintptr // a row's size, the slice's stride
	cols []colConv
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
	}
	return c
}

// kindOf is how a field of type t becomes an Appender value.
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

// values puts the columns of the row at p in vals. The offsets and types
// are the row type's own (newRowConv), so each read is of the field's
// type.
func (c *rowConv) values(p unsafe.Pointer, vals []driver.Value) {
	for i, col := range c.cols {
		f := unsafe.Add(p, col.off)
		if col.nullable {
			if f = *(*unsafe.Pointer)(f); f == nil {
				vals[i] = nil
				continue
			}
		}
		switch col.kind {
		case colString:
			vals[i] = rows.StoreString(*(*string)(f))
		case colVerbatim:
			vals[i] = *(*string)(f)
		case colInt32:
			vals[i] = *(*int32)(f)
		case colInt64:
			vals[i] = *(*int64)(f)
		case colUint64:
			vals[i] = *(*uint64)(f)
		case colFloat64:
			vals[i] = *(*float64)(f)
		case colBool:
			vals[i] = *(*bool)(f)
		case colTime:
			vals[i] = *(*time.Time)(f)
		}
	}
}

// Exec runs a statement in the transaction: for statements the Tx has no
// method for, such as a test arranging rows a read model then reads.
func (t *Tx) Exec(ctx context.Context, q string, args ...any) error {
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

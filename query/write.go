package query

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"fmt"
	"strconv"
	"strings"

	"github.com/duckdb/duckdb-go/v2"
)

// Tx is a write transaction on the store, the way ingest's rows get in.
// DuckDB transactions belong to a connection, and the store has one, so a
// store holds at most one Tx at a time.
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

// Append adds rows, each in the table's column order, to table. Strings
// taken from file names or records may not be UTF-8; they are stored as
// StoreString says.
//
// Rows go through DuckDB's Appender: a table function that DuckDB scans on
// all its threads (duckdb-go's ParallelChunkTableFunction) measured the
// same on the benchmark corpus, and Arrow needs a build tag; see
// benchmarks/RESULTS.md. The Appender encodes what it is given for a JSON
// column as JSON, so no column orchstat writes is JSON (see Events).
func (t *Tx) Append(table string, rows [][]driver.Value) error {
	return t.AppendEach(table, func(add func(...driver.Value) error) error {
		for _, r := range rows {
			for i, v := range r {
				if s, ok := v.(string); ok {
					r[i] = StoreString(s)
				}
			}
			if err := add(r...); err != nil {
				return err
			}
		}
		return nil
	})
}

// AppendEach appends the rows each calls add with, as they come, so a
// caller with many rows need not gather them first. Values are stored as
// given: StoreString is the caller's to apply.
func (t *Tx) AppendEach(table string, each func(add func(...driver.Value) error) error) error {
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

// OpenRows are the rows an agent file's last reading stored as still
// open (see ingest's readAgent): its calls by id and line (OpenCallKey),
// their attempts by call id, its runs by id, and the quarantine rows of a
// last line that had no newline yet. The next reading deletes them before
// it stores what they became. A call is named by its line too because a
// format's reader keeps ids unique only within a window of recent calls:
// an id repeated from far back must not take the earlier call with it.
type OpenRows struct {
	File     int32
	Calls    []string // OpenCallKey of each call
	CallIDs  []string
	Runs     []string
	TailLine int64
}

// OpenCallKey names a stored call for OpenRows.
func OpenCallKey(callID string, line int64) string {
	return StoreString(callID) + "@" + strconv.FormatInt(line, 10)
}

// DeleteOpen deletes each file's open rows.
func (t *Tx) DeleteOpen(ctx context.Context, files []OpenRows) error {
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

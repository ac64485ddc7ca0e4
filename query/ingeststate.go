package query

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/orchstat/orchstat/model/rows"
)

// latestStates is each file's latest state, found as the files view
// finds it, by a grouped max and a join: half the time of a window over
// every state row (145 ms against 75 ms at 139,000 files).
const latestStates = `(SELECT s.* EXCLUDE (seq) FROM file_states s JOIN (SELECT file_id, max(seq) AS seq FROM file_states GROUP BY file_id) l USING (file_id, seq))`

// FileStates calls each for every known file's latest state. It returns
// first an upper bound of their number, so a caller can size its map once.
func (s *Store) FileStates(ctx context.Context, sized func(n int), each func(*rows.FileState)) error {
	// Rows, not files: an upper bound (CompactStates keeps it under twice
	// the files plus 10,000) that DuckDB counts without reading a column.
	return s.fileStates(ctx, latestStates, `SELECT count(*) FROM file_states`, nil, sized, each)
}

// UnsealedFileStates is FileStates without the files of sealed run
// directories, which a cron ingest does not look at: the rows it reads
// are those not marked sealed (rows.FileStateRow.Sealed), so what it
// costs follows the runs not finished, not the history.
func (s *Store) UnsealedFileStates(ctx context.Context, sized func(n int), each func(*rows.FileState)) error {
	return s.fileStates(ctx, `(SELECT s.* EXCLUDE (seq) FROM file_states s JOIN (SELECT file_id, max(seq) AS seq FROM file_states WHERE NOT sealed GROUP BY file_id) l
		USING (file_id, seq) WHERE NOT s.sealed)`, `SELECT count(*) FROM file_states WHERE NOT sealed`, nil, sized, each)
}

// FileStatesIn calls each for the files of the directories dirs (paths as
// ReadString gives them).
func (s *Store) FileStatesIn(ctx context.Context, dirs []string, each func(*rows.FileState)) error {
	var stored []string
	for _, d := range dirs {
		// A file whose name was escaped has its folder's path escaped
		// too, however the folder itself is stored.
		stored = append(stored, rows.StoreString(d))
		if e := rows.Escaped(d); e != stored[len(stored)-1] {
			stored = append(stored, e)
		}
	}
	// A file's directory is its path up to the last slash.
	return s.fileStates(ctx, `(SELECT * EXCLUDE (parent) FROM (SELECT *, path[:length(path) - strpos(reverse(path), '/')] AS parent FROM `+latestStates+`)
		WHERE parent IN (SELECT unnest(?::VARCHAR[])))`, "", []any{stored}, nil, each)
}

// fileStates calls each for the states from gives; sized, when set, with
// what count counts first.
func (s *Store) fileStates(ctx context.Context, from, count string, args []any, sized func(n int), each func(*rows.FileState)) error {
	q := `SELECT file_id, path, kind, coalesce(run_dir, ''), coalesce(size, 0), coalesce(epoch_us(mtime), 0),
		coalesce(dev, 0), coalesce(inode, 0), coalesce(byte_offset, 0), coalesce(lines, 0), coalesce(head_len, 0),
		coalesce(head_sha256, ''), coalesce(events, 0), coalesce(quarantined, 0), coalesce(pairing, '') FROM ` + from
	if sized != nil {
		var n int
		if err := s.conn.QueryRowContext(ctx, count).Scan(&n); err != nil {
			return err
		}
		sized(n)
	}
	rs, err := s.conn.QueryContext(ctx, q, args...)
	if err != nil {
		return err
	}
	defer rs.Close()
	for rs.Next() {
		var f rows.FileState
		if err := rs.Scan(&f.ID, &f.Path, &f.Kind, &f.RunDir, &f.Size, &f.MTimeMicros, &f.Dev, &f.Inode,
			&f.Offset, &f.Lines, &f.HeadLen, &f.HeadHash, &f.Events, &f.Quarantined, &f.Pairing); err != nil {
			return err
		}
		each(&f)
	}
	return rs.Err()
}

// DirStates calls each with every listed directory's path, as stored
// (see ReadString), and its modification time when ingest last listed it.
func (s *Store) DirStates(ctx context.Context, unsealed bool, each func(path string, mtime time.Time)) error {
	q := `SELECT path, arg_max(mtime, seq) FROM dir_states GROUP BY path`
	if unsealed {
		// A sealed directory is looked at by its sealed mtime alone, and
		// its rows are marked (rows.DirStateRow.Sealed).
		q = `SELECT path, arg_max(mtime, seq) FROM dir_states WHERE NOT sealed GROUP BY path`
	}
	rs, err := s.conn.QueryContext(ctx, q)
	if err != nil {
		return err
	}
	defer rs.Close()
	for rs.Next() {
		var p string
		var m time.Time
		if err := rs.Scan(&p, &m); err != nil {
			return err
		}
		each(p, m.UTC())
	}
	return rs.Err()
}

// LastStateSeq is the sequence number of the latest file or directory
// state; ingest numbers its new states after it.
func (s *Store) LastStateSeq(ctx context.Context) (int64, error) {
	var seq int64
	err := s.conn.QueryRowContext(ctx, `SELECT greatest((SELECT coalesce(max(seq), 0) FROM file_states), (SELECT coalesce(max(seq), 0) FROM dir_states),
		(SELECT coalesce(max(seq), 0) FROM sealed_dirs))`).Scan(&seq)
	return seq, err
}

// SealedDirs calls each with every sealed run directory, as stored (see
// ReadString).
func (s *Store) SealedDirs(ctx context.Context, each func(path string, d rows.Sealed)) error {
	// One row, not one per finished run: a cron pass reads them all, and
	// at 30,000 runs scanning 30,000 rows through database/sql was a fifth
	// of the pass. Fields are separated by NUL, which no path holds.
	var all sql.NullString
	err := s.conn.QueryRowContext(ctx, `SELECT string_agg(path || chr(0) || m || chr(0) || f, chr(0))
		FROM (SELECT path, arg_max(epoch_us(mtime), seq) AS m, arg_max(files, seq) AS f FROM sealed_dirs GROUP BY path) WHERE f >= 0`).Scan(&all)
	if err != nil || !all.Valid {
		return err
	}
	fields := strings.Split(all.String, "\x00")
	if len(fields)%3 != 0 {
		return fmt.Errorf("reading sealed_dirs: %d fields, not 3 per run", len(fields))
	}
	for i := 0; i < len(fields); i += 3 {
		us, err1 := strconv.ParseInt(fields[i+1], 10, 64)
		files, err2 := strconv.Atoi(fields[i+2])
		if err := errors.Join(err1, err2); err != nil {
			return fmt.Errorf("reading sealed_dirs for %s: %w", fields[i], err)
		}
		each(fields[i], rows.Sealed{MTime: time.UnixMicro(us).UTC(), Files: files})
	}
	return nil
}

// MaxFileID is the highest file id given out.
func (s *Store) MaxFileID(ctx context.Context) (int32, error) {
	var id int32
	err := s.conn.QueryRowContext(ctx, `SELECT coalesce(max(file_id), 0) FROM file_states`).Scan(&id)
	return id, err
}

// sealedSet is the paths of the sealed run directories.
const sealedSet = `(SELECT path FROM (SELECT path, arg_max(files, seq) AS f FROM sealed_dirs GROUP BY path) WHERE f >= 0)`

// CompactStates drops superseded file and directory states and seals
// once they outnumber the live ones, so loading states stays proportional to the
// files, not to how often they were ingested. It is its own transaction,
// so a crash during it leaves the states as they were.
func (s *Store) CompactStates(ctx context.Context) error {
	var rows, live int64
	if err := s.conn.QueryRowContext(ctx, `SELECT
		(SELECT count(*) FROM file_states) + (SELECT count(*) FROM dir_states) + (SELECT count(*) FROM sealed_dirs),
		(SELECT count(DISTINCT file_id) FROM file_states) + (SELECT count(DISTINCT path) FROM dir_states) + (SELECT count(DISTINCT path) FROM sealed_dirs)`).Scan(&rows, &live); err != nil {
		return err
	}
	if rows <= 2*live+10000 {
		return nil
	}
	return s.inTransaction(ctx, "compacting ingest state", func() error {
		for _, q := range []string{
			`DELETE FROM file_states WHERE seq NOT IN (SELECT max(seq) FROM file_states GROUP BY file_id)`,
			`DELETE FROM dir_states WHERE seq NOT IN (SELECT max(seq) FROM dir_states GROUP BY path)`,
			`DELETE FROM sealed_dirs WHERE seq NOT IN (SELECT max(seq) FROM sealed_dirs GROUP BY path)`,
		} {
			if _, err := s.conn.ExecContext(ctx, q); err != nil {
				return err
			}
		}
		return nil
	})
}

// MemoryLimit is DuckDB's memory_limit setting as DuckDB prints it.
func (s *Store) MemoryLimit(ctx context.Context) (string, error) {
	var v string
	err := s.conn.QueryRowContext(ctx, "SELECT current_setting('memory_limit')").Scan(&v)
	return v, err
}

// SetMemoryLimit sets DuckDB's buffer pool size ("1073741824B", or a
// value MemoryLimit returned) until it is set again: RESET does not
// restore the previous limit in DuckDB 1.1.2.
func (s *Store) SetMemoryLimit(ctx context.Context, limit string) error {
	_, err := s.conn.ExecContext(ctx, "SET memory_limit = "+quoteSQL(limit))
	return err
}

// Setting reads one of orchstat's own values from the meta table; ok is
// false when it was never set.
func (s *Store) Setting(ctx context.Context, key string) (value string, ok bool, err error) {
	err = s.conn.QueryRowContext(ctx, `SELECT value FROM meta WHERE key = ?`, key).Scan(&value)
	if errors.Is(err, sql.ErrNoRows) {
		return "", false, nil
	}
	return value, err == nil, err
}

// SaveSetting stores one of orchstat's own values in the meta table,
// durably (it checkpoints).
func (s *Store) SaveSetting(ctx context.Context, key, value string) error {
	return s.inTransaction(ctx, "saving "+key, func() error {
		if _, err := s.conn.ExecContext(ctx, `DELETE FROM meta WHERE key = ?`, key); err != nil {
			return err
		}
		_, err := s.conn.ExecContext(ctx, `INSERT INTO meta VALUES (?, ?)`, key, value)
		return err
	})
}

// SetThreads sets how many threads DuckDB runs a query on, for this
// store's connection. A caller running many stores at once (rules test)
// keeps each to one.
func (s *Store) SetThreads(ctx context.Context, n int) error {
	_, err := s.conn.ExecContext(ctx, fmt.Sprintf("SET threads = %d", n))
	return err
}

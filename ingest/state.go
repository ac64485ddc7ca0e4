package ingest

import (
	"context"
	"database/sql/driver"
	"fmt"
	"strings"
	"time"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/marcboeker/go-duckdb"

	"github.com/orchstat/orchstat/query"
)

// loadStates reads where every known file stopped. It goes through Arrow
// rather than database/sql: a store of 20,000 runs holds ~100,000 files,
// and converting each value to an interface was a third of the time of an
// ingest with nothing new.
func loadStates(ctx context.Context, st *query.Store) (map[string]*fileState, int32, error) {
	const q = `SELECT file_id, path, kind, coalesce(run_dir, ''), size, epoch_us(mtime), dev, inode,
		byte_offset, lines, head_len, coalesce(head_sha256, ''), events, quarantined, coalesce(pairing, '') FROM files`
	var n int
	if err := st.Conn.QueryRowContext(ctx, `SELECT count(DISTINCT file_id) FROM file_states`).Scan(&n); err != nil {
		return nil, 0, fmt.Errorf("reading ingest state: %w", err)
	}
	out := make(map[string]*fileState, n) // sized once, no rehashing garbage
	var maxID int32
	err := st.Conn.Raw(func(dc any) error {
		ar, err := duckdb.NewArrowFromConn(dc.(driver.Conn))
		if err != nil {
			return err
		}
		rdr, err := ar.QueryContext(ctx, q)
		if err != nil {
			return err
		}
		defer rdr.Release()
		for rdr.Next() {
			rec := rdr.Record()
			cols, err := stateColumns(rec)
			if err != nil {
				return err
			}
			for i := 0; i < int(rec.NumRows()); i++ {
				// Strings are cloned, as Value aliases DuckDB's buffers, which
				// are freed with the record; the rest are derived or interned
				// to keep allocations per file low.
				path := query.ReadString(strings.Clone(cols.path.Value(i)))
				s := &fileState{
					id: cols.id.Value(i), path: path, kind: internKind(cols.kind.Value(i)),
					runDir: baseOf(path, query.ReadString(cols.runDir.Value(i))),
					size:   cols.size.Value(i), mtime: time.UnixMicro(cols.mtime.Value(i)).UTC(),
					dev: cols.dev.Value(i), ino: cols.ino.Value(i), offset: cols.offset.Value(i), lines: cols.lines.Value(i),
					headLen: int(cols.headLen.Value(i)), events: cols.events.Value(i), quarantined: cols.quarantined.Value(i),
				}
				if h := cols.headHash.Value(i); h != "" {
					s.headHash = strings.Clone(h)
				}
				if p := cols.pairing.Value(i); p != "" {
					s.pairing = strings.Clone(p)
				}
				out[s.path] = s
				maxID = max(maxID, s.id)
			}
		}
		return rdr.Err()
	})
	if err != nil {
		return nil, 0, fmt.Errorf("reading ingest state: %w", err)
	}
	return out, maxID, nil
}

type stateCols struct {
	id, headLen                                     *array.Int32
	path, kind, runDir, headHash, pairing           *array.String
	size, mtime, offset, lines, events, quarantined *array.Int64
	dev, ino                                        *array.Uint64
}

func stateColumns(rec arrow.Record) (c stateCols, err error) {
	defer func() {
		// A type assertion fails only if the schema and this code disagree.
		if r := recover(); r != nil {
			err = fmt.Errorf("unexpected column types in files: %v (%v)", r, rec.Schema())
		}
	}()
	c.id = rec.Column(0).(*array.Int32)
	c.path = rec.Column(1).(*array.String)
	c.kind = rec.Column(2).(*array.String)
	c.runDir = rec.Column(3).(*array.String)
	c.size = rec.Column(4).(*array.Int64)
	c.mtime = rec.Column(5).(*array.Int64)
	c.dev = rec.Column(6).(*array.Uint64)
	c.ino = rec.Column(7).(*array.Uint64)
	c.offset = rec.Column(8).(*array.Int64)
	c.lines = rec.Column(9).(*array.Int64)
	c.headLen = rec.Column(10).(*array.Int32)
	c.headHash = rec.Column(11).(*array.String)
	c.events = rec.Column(12).(*array.Int64)
	c.quarantined = rec.Column(13).(*array.Int64)
	c.pairing = rec.Column(14).(*array.String)
	return c, nil
}

func internKind(k string) string {
	for _, known := range []string{KindTrace, KindSummary, KindVerification, KindStdin} {
		if k == known {
			return known
		}
	}
	return strings.Clone(k)
}

// baseOf returns runDir as a substring of the file's path when it is the
// path's parent directory's name (it always is for files in run
// directories), avoiding a copy.
func baseOf(path, runDir string) string {
	dir := path
	if i := strings.LastIndexByte(dir, '/'); i >= 0 {
		dir = dir[:i]
	}
	if i := strings.LastIndexByte(dir, '/'); i >= 0 && dir[i+1:] == runDir {
		return dir[i+1:]
	}
	return strings.Clone(runDir)
}

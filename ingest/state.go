package ingest

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/orchstat/orchstat/query"
)

// loadStates reads where every known file stopped.
func loadStates(ctx context.Context, st *query.Store) (map[string]*fileState, int32, error) {
	// A file read from standard input has no size, time or identity.
	const q = `SELECT file_id, path, kind, coalesce(run_dir, ''), coalesce(size, 0), coalesce(epoch_us(mtime), 0),
		coalesce(dev, 0), coalesce(inode, 0), coalesce(byte_offset, 0), coalesce(lines, 0), coalesce(head_len, 0),
		coalesce(head_sha256, ''), coalesce(events, 0), coalesce(quarantined, 0), coalesce(pairing, '') FROM files`
	var n int
	// Rows, not files: an upper bound (compaction keeps it under twice the
	// files plus 10,000) that DuckDB counts without reading the column.
	if err := st.Conn.QueryRowContext(ctx, `SELECT count(*) FROM file_states`).Scan(&n); err != nil {
		return nil, 0, fmt.Errorf("reading ingest state: %w", err)
	}
	out := make(map[string]*fileState, n) // sized once, no rehashing garbage
	var maxID int32
	rs, err := st.Conn.QueryContext(ctx, q)
	if err != nil {
		return nil, 0, fmt.Errorf("reading ingest state: %w", err)
	}
	defer rs.Close()
	for rs.Next() {
		var s fileState
		var path, kind, runDir string
		var mtime int64
		var headLen int32
		if err := rs.Scan(&s.id, &path, &kind, &runDir, &s.size, &mtime, &s.dev, &s.ino,
			&s.offset, &s.lines, &headLen, &s.headHash, &s.events, &s.quarantined, &s.pairing); err != nil {
			return nil, 0, fmt.Errorf("reading ingest state: %w", err)
		}
		s.path = query.ReadString(path)
		s.kind = internKind(kind)
		s.runDir = baseOf(s.path, query.ReadString(runDir))
		s.mtime = time.UnixMicro(mtime).UTC()
		s.headLen = int(headLen)
		out[s.path] = &s
		maxID = max(maxID, s.id)
	}
	if err := rs.Err(); err != nil {
		return nil, 0, fmt.Errorf("reading ingest state: %w", err)
	}
	return out, maxID, nil
}

func internKind(k string) string {
	for _, known := range []string{KindTrace, KindSummary, KindVerification, KindStdin} {
		if k == known {
			return known
		}
	}
	return k
}

// baseOf returns runDir as a substring of the file's path when it is the
// path's parent directory's name (it always is for files in run
// directories), so the two share memory.
func baseOf(path, runDir string) string {
	dir := path
	if i := strings.LastIndexByte(dir, '/'); i >= 0 {
		dir = dir[:i]
	}
	if i := strings.LastIndexByte(dir, '/'); i >= 0 && dir[i+1:] == runDir {
		return dir[i+1:]
	}
	return runDir
}

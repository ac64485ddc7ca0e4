package query

import (
	"context"
	"database/sql"
	"fmt"
	"strings"

	"github.com/orchstat/orchstat/query/lake"
)

// A lake can be read without copying its rows: a store in memory whose
// file tables are views over the runners' Parquet files where they lie
// (a directory's own files, or the cache's copies of S3's). The views
// give the rows the replica's first read would hold (lakesync.go), rule
// by rule:
//
//   - the files table's rows are taken at their latest state_seq for each
//     (runner, file_id), as insertFiles does: a file whose day changed
//     may be in two of a runner's partitions while an export is under
//     way;
//   - file ids are renumbered in (runner, file_id) order, and paths
//     (file_states', quarantine's) prefixed with "runner:";
//   - a row whose file the files table does not name is not read (the
//     sync's inner join);
//   - with a time window, the orchestrator's event tables read only the
//     partitions of the runs that start in it (windowPartitions);
//   - without LakeOptions.All, events is empty and the unreported columns
//     NULL;
//   - a column an older orchstat's files lack is NULL.
//
// Only the orchestrator's event tables (prunable, and events), most of a
// lake's rows, are views. The files table (a row per source file, on whose
// ids every view joins) is copied, into lake_ids and file_states, and the
// other tables, small, into tables of the store in memory, for two
// reasons. Each report reads them in many queries: copied once, the first
// read took 3.4 times a report on a store; as views, 5.8 times
// (benchmarks/EARLIER.md, issue 40). And read as views, DuckDB 1.5.6
// returned the factory audit's LEFT JOIN of attempt_runs and attempts with
// attempts missing (77 of 156 on the real samples; the same rows, selected
// with fewer columns, came whole), which TestLakeRealSamples found.

// copied reports whether the read copies t rather than viewing it.
func copied(t Table) bool { return !prunable[t.Name] && t.Name != Events.Name }

// openLakeViews opens a store in memory over the lake's files.
func openLakeViews(ctx context.Context, lk lake.Lake, objs map[string][]lakeObject, o LakeOptions, got *LakeRead) (*Store, error) {
	connector, err := NewConnector("")
	if err != nil {
		return nil, err
	}
	db := sql.OpenDB(connector)
	conn, err := db.Conn(ctx)
	if err != nil {
		db.Close()
		return nil, cleanDuckErr(err)
	}
	st := &Store{Path: lk.Location(), db: db, conn: conn, memory: true}
	l := &lakeSync{st: st, lk: lk, read: got, loaded: map[string]loadedKey{}}
	if err := l.buildViews(ctx, objs, o); err != nil {
		st.Close()
		return nil, err
	}
	return st, nil
}

// buildViews makes the store's schema with the file tables as views over
// the lake. It is the one place the lake's views are made, so a view of
// the store's (schema.go's views) over a new table is added here too.
func (l *lakeSync) buildViews(ctx context.Context, objs map[string][]lakeObject, o LakeOptions) error {
	// Every query reads the views' files again; their footers are read
	// once.
	if err := l.exec(ctx, `SET parquet_metadata_cache = true`); err != nil {
		return err
	}
	for _, q := range lakeStoreTables() {
		if err := l.exec(ctx, q); err != nil {
			return err
		}
	}
	if err := l.viewFiles(ctx, objs[LakeFiles.Name]); err != nil {
		return err
	}
	for _, t := range FileTables {
		if t.Name != Events.Name && !prunable[t.Name] {
			if err := l.viewTable(ctx, t, objs[t.Name], o.All); err != nil {
				return err
			}
		}
	}
	keep, err := l.windowPartitions(ctx, o)
	if err != nil {
		return err
	}
	for _, t := range FileTables {
		if !prunable[t.Name] && t.Name != Events.Name {
			continue
		}
		var in []lakeObject
		if t.Name != Events.Name || o.All {
			for _, ob := range objs[t.Name] {
				if keep == nil || keep[ob.runner+"/"+ob.day] {
					in = append(in, ob)
				} else {
					l.read.FilesPruned++
				}
			}
		}
		if err := l.viewTable(ctx, t, in, o.All); err != nil {
			return err
		}
	}
	for _, q := range views {
		if err := l.exec(ctx, q); err != nil {
			return err
		}
	}
	return l.st.conn.QueryRowContext(ctx, `SELECT count(DISTINCT runner), count(*) FROM lake_ids`).Scan(&l.read.Runners, &l.read.SourceFiles)
}

// lakeStoreTables are the store's tables that are not a lake's (alert
// states, notifications, exec's, exports'), empty, as in a new store.
func lakeStoreTables() []string {
	lakes := map[string]bool{FileStates.ddl(): true}
	for _, t := range FileTables {
		lakes[t.ddl()] = true
	}
	var out []string
	for _, q := range tableStatements() {
		// file_states' migrations of an older store, and the lake's
		// tables, which are made from its files.
		if !lakes[q] && !strings.Contains(q, " file_states ") {
			out = append(out, q)
		}
	}
	return out
}

// viewFiles copies the lake's files tables into lake_ids (each source
// file's new id and day) and file_states.
func (l *lakeSync) viewFiles(ctx context.Context, objs []lakeObject) error {
	for _, q := range []string{FileStates.ddl(), `CREATE TABLE lake_ids (runner VARCHAR, file_id INTEGER, new_id INTEGER, day DATE)`} {
		if err := l.exec(ctx, q); err != nil {
			return err
		}
	}
	if len(objs) == 0 {
		return nil
	}
	paths, err := l.local(ctx, objs)
	if err != nil {
		return err
	}
	if err := l.exec(ctx, `CREATE TEMP TABLE lake_files_in AS SELECT * FROM `+readParquet(paths)+`
		QUALIFY row_number() OVER (PARTITION BY runner, file_id ORDER BY state_seq DESC) = 1`); err != nil {
		return err
	}
	for _, q := range []string{
		`INSERT INTO lake_ids SELECT runner, file_id, row_number() OVER (ORDER BY runner, file_id), day FROM lake_files_in`,
		`INSERT INTO file_states (seq, file_id, path, kind, run_dir, size, mtime, byte_offset, lines, events, quarantined, ingested_at)
		SELECT i.new_id, i.new_id, f.runner || ':' || f.path, f.kind, f.run_dir, f.size, f.mtime, f.byte_offset, f.lines, f.events, f.quarantined, f.ingested_at
		FROM lake_files_in f JOIN lake_ids i USING (runner, file_id)`,
		`DROP TABLE lake_files_in`,
	} {
		if err := l.exec(ctx, q); err != nil {
			return err
		}
	}
	return nil
}

// local is where the objects' files can be read: the lake's own, or the
// cache's copies.
func (l *lakeSync) local(ctx context.Context, objs []lakeObject) ([]string, error) {
	plain := make([]lake.Object, len(objs))
	for i, ob := range objs {
		plain[i] = ob.Object
	}
	l.read.Files += len(objs)
	return l.lk.Local(ctx, plain)
}

// viewTable makes t a view over its files objs (a copy of them when
// copied); with none, an empty table.
func (l *lakeSync) viewTable(ctx context.Context, t Table, objs []lakeObject, all bool) error {
	if len(objs) == 0 {
		return l.exec(ctx, t.ddl())
	}
	paths, err := l.local(ctx, objs)
	if err != nil {
		return err
	}
	src := readParquet(paths)
	var skip map[string]bool
	if !all {
		skip = unreported[t.Name]
	}
	view := func(have map[string]bool) error {
		cs := lakeSelectList(t, have, skip)
		from := src + ` p JOIN lake_ids i ON i.runner = p.runner AND i.file_id = p.file_id`
		kind := "VIEW"
		if copied(t) {
			kind = "TABLE"
		}
		_, err := l.st.conn.ExecContext(ctx, `CREATE `+kind+` `+t.Name+` AS SELECT `+cs+` FROM `+from)
		return cleanDuckErr(err)
	}
	err = view(nil)
	if err != nil && strings.Contains(err.Error(), "Binder Error") {
		// Files of an older orchstat lack a column: only then is it worth
		// reading every footer once more to learn which.
		var have map[string]bool
		if have, err = l.parquetColumns(ctx, paths); err == nil {
			err = view(have)
		}
	}
	if err != nil {
		return fmt.Errorf("reading lake %s's %s table: %w", l.lk.Location(), t.Name, err)
	}
	return nil
}

// parquetColumns are the columns some of the files at paths hold.
func (l *lakeSync) parquetColumns(ctx context.Context, paths []string) (map[string]bool, error) {
	have := map[string]bool{}
	rs, err := l.st.conn.QueryContext(ctx, `SELECT column_name FROM (DESCRIBE SELECT * FROM `+readParquet(paths)+`)`)
	if err != nil {
		return nil, cleanDuckErr(err)
	}
	defer rs.Close()
	for rs.Next() {
		var c string
		if err := rs.Scan(&c); err != nil {
			return nil, err
		}
		have[c] = true
	}
	return have, rs.Err()
}

// lakeSelectList is what a lake table's rows are read as, from its files
// (p) joined to their new ids (i): a column not in have (when set), or in
// skip, is NULL.
func lakeSelectList(t Table, have, skip map[string]bool) string {
	var cs []string
	for _, col := range t.Columns {
		switch {
		case col.Name == "file_id":
			cs = append(cs, "i.new_id AS file_id")
		case t.Name == Quarantine.Name && col.Name == "path":
			cs = append(cs, "p.runner || ':' || p.path AS path")
		case skip[col.Name] || have != nil && !have[col.Name]:
			cs = append(cs, "NULL::"+col.Type+" AS "+col.Name)
		default:
			// As an INSERT into the table would: a file may hold a
			// narrower type than the table's.
			cs = append(cs, "CAST(p."+col.Name+" AS "+col.Type+") AS "+col.Name)
		}
	}
	return strings.Join(cs, ", ")
}

package query

import (
	"context"
	"fmt"
	"strings"

	"github.com/orchstat/orchstat/query/lake"
)

// A lake is read into a store that holds its rows as one store holding
// every runner's files would: a replica, kept in a file between reads so
// that a read loads only the lake files that changed since the last, or
// in memory. The replica remembers which lake files (keys, at which ETag)
// it holds and which of its file ids each one brought (lake_loaded,
// lake_loaded_ids), and keeps every key it holds at its latest version:
// rows of a replaced key are deleted and the new file's inserted, in one
// transaction, so a replica is never half updated.
var replicaTables = []string{
	`CREATE TABLE IF NOT EXISTS lake_ids (runner VARCHAR, file_id INTEGER, new_id INTEGER, day DATE)`,
	`CREATE TABLE IF NOT EXISTS lake_loaded (key VARCHAR, tbl VARCHAR, etag VARCHAR, whole BOOLEAN)`,
	`CREATE TABLE IF NOT EXISTS lake_loaded_ids (key VARCHAR, file_id INTEGER, system VARCHAR)`,
	`CREATE OR REPLACE TEMP TABLE lake_paths (path VARCHAR, key VARCHAR)`,
}

// lakeSync is one read of a lake into a replica, on its way.
type lakeSync struct {
	st     *Store
	lk     lake.Lake
	read   *LakeRead
	loaded map[string]loadedKey
	// changed is set once the sync drops or reads a lake file: the runs'
	// figures are made anew only then.
	changed bool
}

type loadedKey struct {
	etag  string
	whole bool // every column was read (LakeOptions.All)
}

func (l *lakeSync) exec(ctx context.Context, q string, args ...any) error {
	if err := l.st.exec(ctx, q, args...); err != nil {
		return fmt.Errorf("reading lake %s: %w", l.lk.Location(), err)
	}
	return nil
}

// sync brings the replica level with the lake: the files table, then the
// tables that decide the time window, then the window's partitions of the
// rest, and any partition it held before that has changed since.
func (l *lakeSync) sync(ctx context.Context, objs map[string][]lakeObject, o LakeOptions) error {
	for _, q := range replicaTables {
		if err := l.exec(ctx, q); err != nil {
			return err
		}
	}
	if err := l.loadKeys(ctx); err != nil {
		return err
	}
	if err := l.syncTable(ctx, LakeFiles, objs[LakeFiles.Name], o.All); err != nil {
		return err
	}
	for _, t := range FileTables {
		if t.Name != Events.Name && !prunable[t.Name] {
			if err := l.syncTable(ctx, t, objs[t.Name], o.All); err != nil {
				return err
			}
		}
	}
	keep, err := l.windowPartitions(ctx, o)
	if err != nil {
		return err
	}
	for _, t := range FileTables {
		if !prunable[t.Name] && !(t.Name == Events.Name && o.All) {
			continue
		}
		var in []lakeObject
		for _, ob := range objs[t.Name] {
			if _, held := l.loaded[ob.Key]; held || keep == nil || keep[ob.runner+"/"+ob.day] {
				in = append(in, ob)
			} else {
				l.read.FilesPruned++
			}
		}
		if err := l.syncTable(ctx, t, in, o.All); err != nil {
			return err
		}
	}
	// A replica whose lake did not change keeps its figures: making them
	// anew took a later read of a 30,000-run lake from 1× to 2.5× a
	// report on a store.
	if l.changed || !l.st.figures {
		if err := l.st.RebuildFigures(ctx); err != nil {
			return err
		}
	}
	return l.st.conn.QueryRowContext(ctx, `SELECT count(DISTINCT runner), count(*) FROM lake_ids`).Scan(&l.read.Runners, &l.read.SourceFiles)
}

func (l *lakeSync) loadKeys(ctx context.Context) error {
	l.loaded = map[string]loadedKey{}
	rs, err := l.st.conn.QueryContext(ctx, `SELECT key, etag, whole FROM lake_loaded`)
	if err != nil {
		return err
	}
	defer rs.Close()
	for rs.Next() {
		var k string
		var v loadedKey
		if err := rs.Scan(&k, &v.etag, &v.whole); err != nil {
			return err
		}
		l.loaded[k] = v
	}
	return rs.Err()
}

// syncTable makes t hold the rows of want, its lake files: it drops the
// rows of held keys that changed or are no longer listed, and reads the
// files that are new or changed. Files of the table not in want, and
// not held, are left alone (the window pruned them).
func (l *lakeSync) syncTable(ctx context.Context, t Table, want []lakeObject, all bool) error {
	listed, stale := map[string]bool{}, map[string]bool{}
	var fetch []lakeObject
	for _, ob := range want {
		listed[ob.Key] = true
		if k, ok := l.loaded[ob.Key]; !ok || k.etag != ob.ETag || all && !k.whole {
			fetch = append(fetch, ob)
			stale[ob.Key] = true
		}
	}
	var drop []string
	prefix := t.Name + "/"
	for k := range l.loaded {
		if strings.HasPrefix(k, prefix) && (!listed[k] || stale[k]) {
			drop = append(drop, k)
		}
	}
	l.read.Files += len(fetch)
	if len(drop) == 0 && len(fetch) == 0 {
		return nil
	}
	l.changed = true
	if err := l.drop(ctx, t, drop); err != nil {
		return err
	}
	if len(fetch) == 0 {
		return nil
	}
	plain := make([]lake.Object, len(fetch))
	for i, ob := range fetch {
		plain[i] = ob.Object
	}
	paths, err := l.lk.Local(ctx, plain)
	if err != nil {
		return err
	}
	if err := l.exec(ctx, `DELETE FROM lake_paths`); err != nil {
		return err
	}
	pairs := make([]string, len(paths))
	for i, p := range paths {
		pairs[i] = "(" + quoteSQL(p) + ", " + quoteSQL(fetch[i].Key) + ")"
		l.loaded[fetch[i].Key] = loadedKey{fetch[i].ETag, all}
	}
	if err := l.exec(ctx, `INSERT INTO lake_paths VALUES `+strings.Join(pairs, ", ")); err != nil {
		return err
	}
	if t.Name == LakeFiles.Name {
		err = l.insertFiles(ctx, paths)
	} else {
		err = l.insertRows(ctx, t, paths, all)
	}
	if err != nil {
		return err
	}
	return l.exec(ctx, `INSERT INTO lake_loaded SELECT key, ?, etag, ? FROM (VALUES `+keyValues(fetch)+`) v(key, etag)`, t.Name, all)
}

func keyValues(obs []lakeObject) string {
	v := make([]string, len(obs))
	for i, ob := range obs {
		v[i] = "(" + quoteSQL(ob.Key) + ", " + quoteSQL(ob.ETag) + ")"
	}
	return strings.Join(v, ", ")
}

// drop deletes the rows the keys brought, and forgets the keys.
func (l *lakeSync) drop(ctx context.Context, t Table, keys []string) error {
	if len(keys) == 0 {
		return nil
	}
	q := make([]string, len(keys))
	for i, k := range keys {
		q[i] = quoteSQL(k)
		delete(l.loaded, k)
	}
	in := strings.Join(q, ", ")
	target, sys := t.Name, "TRUE"
	if t.Name == LakeFiles.Name {
		target = FileStates.Name
	} else if hasSystem(t) {
		sys = "l.system = " + target + ".system"
	}
	for _, s := range []string{
		fmt.Sprintf(`DELETE FROM %[1]s WHERE EXISTS (SELECT 1 FROM lake_loaded_ids l WHERE l.key IN (%[2]s) AND l.file_id = %[1]s.file_id AND %[3]s)`, target, in, sys),
		`DELETE FROM lake_loaded_ids WHERE key IN (` + in + `)`,
		`DELETE FROM lake_loaded WHERE key IN (` + in + `)`,
	} {
		if err := l.exec(ctx, s); err != nil {
			return err
		}
	}
	return nil
}

// insertFiles reads files tables: every (runner, file_id) not seen before
// gets the next id, in (runner, file_id) order, so a runner's newer files
// keep their higher ids (the views take the newest of a run's files by
// id); each file's day is its latest; and its state is stored.
func (l *lakeSync) insertFiles(ctx context.Context, paths []string) error {
	src := `SELECT p.*, m.key FROM ` + readParquetNamed(paths) + ` p JOIN lake_paths m ON m.path = p.filename`
	for _, q := range []string{
		`CREATE OR REPLACE TEMP TABLE lake_files_in AS ` + src + `
		  QUALIFY row_number() OVER (PARTITION BY runner, file_id ORDER BY state_seq DESC) = 1`,
		`INSERT INTO lake_ids SELECT runner, file_id,
		  (SELECT coalesce(max(new_id), 0) FROM lake_ids) + row_number() OVER (ORDER BY runner, file_id), day
		FROM lake_files_in f WHERE NOT EXISTS (SELECT 1 FROM lake_ids i WHERE i.runner = f.runner AND i.file_id = f.file_id)`,
		`UPDATE lake_ids i SET day = f.day FROM lake_files_in f WHERE i.runner = f.runner AND i.file_id = f.file_id`,
		`INSERT INTO file_states (seq, file_id, path, kind, run_dir, size, mtime, byte_offset, lines, events, quarantined, ingested_at)
		SELECT i.new_id, i.new_id, f.runner || ':' || f.path, f.kind, f.run_dir, f.size, f.mtime, f.byte_offset, f.lines, f.events, f.quarantined, f.ingested_at
		FROM lake_files_in f JOIN lake_ids i USING (runner, file_id)`,
		`INSERT INTO lake_loaded_ids SELECT f.key, i.new_id, NULL FROM lake_files_in f JOIN lake_ids i USING (runner, file_id)`,
		`DROP TABLE lake_files_in`,
	} {
		if err := l.exec(ctx, q); err != nil {
			return err
		}
	}
	return nil
}

// readParquetNamed is readParquet with each row's file in filename.
func readParquetNamed(paths []string) string {
	return strings.Replace(readParquet(paths), "hive_partitioning = true,", "hive_partitioning = true, filename = true,", 1)
}

// insertRows reads t's files, renumbering file ids. A column the files
// lack (written by an older orchstat) is NULL.
func (l *lakeSync) insertRows(ctx context.Context, t Table, paths []string, all bool) error {
	var skip map[string]bool
	if !all {
		skip = unreported[t.Name]
	}
	err := l.insert(ctx, t, paths, nil, skip)
	if err == nil || !strings.Contains(err.Error(), "Binder Error") {
		return err
	}
	// Files of an older orchstat lack a column: only then is it worth
	// reading every footer once more to learn which.
	have := map[string]bool{}
	rs, err := l.st.conn.QueryContext(ctx, `SELECT column_name FROM (DESCRIBE SELECT * FROM `+readParquet(paths)+`)`)
	if err != nil {
		return fmt.Errorf("reading lake %s's %s table: %w", l.lk.Location(), t.Name, cleanDuckErr(err))
	}
	for rs.Next() {
		var c string
		if err := rs.Scan(&c); err != nil {
			rs.Close()
			return err
		}
		have[c] = true
	}
	rs.Close()
	return l.insert(ctx, t, paths, have, skip)
}

// unreported are the columns no report, check or simulation reads, by
// table: long JSON texts, most of what reading them costs.
var unreported = map[string]map[string]bool{
	Summaries.Name:           {"raw": true, "goal": true, "failed_checks": true},
	VerificationReports.Name: {"raw": true, "checks": true, "failed_checks": true, "failure_summary": true},
	RecordStages.Name:        {"feedback": true},
}

// insert copies t's rows from its files at paths, renumbering file ids, and records the
// ids each key brought; a column not in have (when set), or in skip, is
// NULL.
func (l *lakeSync) insert(ctx context.Context, t Table, paths []string, have, skip map[string]bool) error {
	src := readParquet(paths)
	sys := "NULL"
	if hasSystem(t) {
		sys = "p.system"
	}
	// The rows are read once, whole; the ids each file brought, from the
	// file_id column alone (a Parquet reader reads only the columns asked).
	for _, q := range []string{
		fmt.Sprintf(`INSERT INTO %s SELECT %s FROM %s p JOIN lake_ids i ON i.runner = p.runner AND i.file_id = p.file_id`,
			t.Name, lakeSelectList(t, have, skip), src),
		fmt.Sprintf(`INSERT INTO lake_loaded_ids SELECT DISTINCT m.key, i.new_id, %s
			FROM %s p JOIN lake_ids i ON i.runner = p.runner AND i.file_id = p.file_id JOIN lake_paths m ON m.path = p.filename`,
			sys, readParquetNamed(paths)),
	} {
		if _, err := l.st.conn.ExecContext(ctx, q); err != nil {
			return fmt.Errorf("reading lake %s's %s table: %w", l.lk.Location(), t.Name, cleanDuckErr(err))
		}
	}
	return nil
}

// windowPartitions returns the (runner/day) partitions that hold the
// files of runs starting in the window, or nil for all of them. A run
// starts at its earliest event in any file, so run_spans, read whole,
// decides; each of its files' rows are in its file's day.
func (l *lakeSync) windowPartitions(ctx context.Context, o LakeOptions) (map[string]bool, error) {
	if o.Since == nil && o.Until == nil {
		return nil, nil
	}
	var where []string
	var args []any
	if o.Since != nil {
		where = append(where, "start >= ?")
		args = append(args, o.Since.UTC())
	}
	if o.Until != nil {
		where = append(where, "start < ?")
		args = append(args, o.Until.UTC())
	}
	rs, err := l.st.conn.QueryContext(ctx, `SELECT DISTINCT i.runner, strftime(i.day, '%Y-%m-%d')
		FROM run_spans s JOIN lake_ids i ON i.new_id = s.file_id
		WHERE s.run_id IN (SELECT run_id FROM (SELECT run_id, min(first_ts) AS start FROM run_spans GROUP BY run_id) WHERE `+
		strings.Join(where, " AND ")+`)`, args...)
	if err != nil {
		return nil, err
	}
	defer rs.Close()
	keep := map[string]bool{}
	for rs.Next() {
		var r, d string
		if err := rs.Scan(&r, &d); err != nil {
			return nil, err
		}
		keep[r+"/"+d] = true
	}
	return keep, rs.Err()
}

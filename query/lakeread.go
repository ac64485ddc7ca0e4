package query

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"os"
	"runtime"
	"sort"
	"strings"
	"time"

	"github.com/orchstat/orchstat/query/lake"
)

// LakeOptions narrow what OpenLake reads.
type LakeOptions struct {
	// Since and Until, when set, keep the orchestrator's event tables to
	// the partitions that hold runs starting in [Since, Until): the
	// report's time window. Runs outside it may be read too; the report's
	// own filter still applies.
	Since, Until *time.Time
	// All reads every column of every table, for users' SQL (a rule's
	// sql). Otherwise what no report reads is left out: the events table
	// (the trace lines' payloads) and the whole-file copies of summaries
	// and verification reports (raw), which are most of the lake's bytes.
	All bool
}

// LakeRead is what OpenLake read.
type LakeRead struct {
	Runners     []string
	Files       int // lake files read
	FilesPruned int // lake files the time window left unread
	SourceFiles int // source files the runners ingested
}

// lakeObject is one lake file, with its partition.
type lakeObject struct {
	lake.Object
	system, day, runner string
}

// prunable are the tables whose partitions a time window can skip: the
// orchestrator's event tables (and events, when read), each of whose rows
// belongs to a run that run_spans places in its file. The others are read
// whole; they are small.
var prunable = map[string]bool{}

func init() {
	for _, t := range []Table{RunEvents, Escalations, ProviderSelections, ProviderStarts, ProviderFinishes, L2Events,
		PatchEvents, VerificationEvents, Steps, L3Candidates, Diagnoses, JudgeCalls} {
		prunable[t.Name] = true
	}
}

// OpenLake loads a lake into a store in memory, as one store holding every
// runner's rows would hold them, so reports, checks and simulations run on
// it unchanged. Each runner's file ids are renumbered (ordered by runner,
// then id) and its paths prefixed with "runner:". The events table, the
// trace lines' payloads, is read only when asked (LakeOptions.All).
func OpenLake(ctx context.Context, lk lake.Lake, o LakeOptions) (*Store, LakeRead, error) {
	var got LakeRead
	objs, err := listLake(ctx, lk)
	if err != nil {
		return nil, got, err
	}
	st, err := openMemory(ctx, lk.Location())
	if err != nil {
		return nil, got, err
	}
	l := &lakeLoad{st: st, lk: lk, read: &got}
	if err := l.load(ctx, objs, o); err != nil {
		st.Close()
		return nil, got, err
	}
	return st, got, nil
}

// listLake lists every table's files, after checking the lake's version.
func listLake(ctx context.Context, lk lake.Lake) (map[string][]lakeObject, error) {
	meta, err := lk.List(ctx, "_orchstat/lake.json")
	if err != nil {
		return nil, err
	}
	if len(meta) == 0 {
		return nil, fmt.Errorf("lake %s holds no export (no _orchstat/lake.json): run orchstat export --lake %s on a runner first", lk.Location(), lk.Location())
	}
	paths, err := lk.Local(ctx, meta[:1])
	if err != nil {
		return nil, err
	}
	b, err := os.ReadFile(paths[0])
	if err != nil {
		return nil, err
	}
	var v struct {
		Version int `json:"orchstat_lake_version"`
	}
	if err := json.Unmarshal(b, &v); err != nil {
		return nil, fmt.Errorf("lake %s: _orchstat/lake.json: %w", lk.Location(), err)
	}
	if v.Version > LakeVersion {
		return nil, fmt.Errorf("lake %s has version %d, newer than this orchstat reads (%d); upgrade orchstat", lk.Location(), v.Version, LakeVersion)
	}
	out := map[string][]lakeObject{}
	for _, t := range LakeTables() {
		list, err := lk.List(ctx, t.Name+"/")
		if err != nil {
			return nil, err
		}
		for _, ob := range list {
			if p, ok := parseLakeKey(t.Name, ob); ok {
				out[t.Name] = append(out[t.Name], p)
			}
		}
	}
	return out, nil
}

// parseLakeKey reads a lake file's partition from its key; other files
// (a user's notes, a Spark _SUCCESS) are not the lake's and are skipped.
func parseLakeKey(table string, ob lake.Object) (lakeObject, bool) {
	seg := strings.Split(ob.Key, "/")
	if len(seg) != 5 || seg[0] != table || !strings.HasSuffix(seg[4], ".parquet") {
		return lakeObject{}, false
	}
	o := lakeObject{Object: ob}
	for i, dst := range []*string{&o.system, &o.day, &o.runner} {
		k, v, ok := strings.Cut(seg[i+1], "=")
		if !ok || k != [...]string{"system", "day", "runner"}[i] {
			return lakeObject{}, false
		}
		*dst = v
	}
	return o, true
}

// openMemory opens a store in memory, named name in messages.
func openMemory(ctx context.Context, name string) (*Store, error) {
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
	st := &Store{Path: name, db: db, conn: conn, memory: true}
	// A new database needs only the DDL: none of migrate's checks of an
	// older store's tables, and no checkpoint.
	for _, q := range schemaStatements() {
		if err := st.exec(ctx, q); err != nil {
			st.Close()
			return nil, fmt.Errorf("creating the lake's tables in memory: %w", err)
		}
	}
	return st, nil
}

// lakeLoad is one OpenLake on its way.
type lakeLoad struct {
	st   *Store
	lk   lake.Lake
	read *LakeRead
}

// load reads the files table, then the tables that decide the time
// window, then the window's partitions of the rest. Tables load side by
// side, one connection each, as most of the work is opening many small
// files.
func (l *lakeLoad) load(ctx context.Context, objs map[string][]lakeObject, o LakeOptions) error {
	if err := l.loadFiles(ctx, objs[LakeFiles.Name]); err != nil {
		return err
	}
	first := map[string][]lakeObject{}
	for _, t := range FileTables {
		if t.Name != Events.Name && !prunable[t.Name] {
			first[t.Name] = objs[t.Name]
		}
	}
	if err := l.loadTables(ctx, first, o); err != nil {
		return err
	}
	keep, err := l.windowPartitions(ctx, o)
	if err != nil {
		return err
	}
	rest := map[string][]lakeObject{}
	for _, t := range FileTables {
		if !prunable[t.Name] && !(t.Name == Events.Name && o.All) {
			continue
		}
		for _, ob := range objs[t.Name] {
			if keep == nil || keep[ob.runner+"/"+ob.day] {
				rest[t.Name] = append(rest[t.Name], ob)
			} else {
				l.read.FilesPruned++
			}
		}
	}
	return l.loadTables(ctx, rest, o)
}

// loadTables fetches the tables' files (a remote lake downloads them all
// at once), then loads the tables side by side.
func (l *lakeLoad) loadTables(ctx context.Context, objs map[string][]lakeObject, o LakeOptions) error {
	var all []lakeObject
	var names []string
	for _, t := range FileTables {
		if len(objs[t.Name]) > 0 {
			all = append(all, objs[t.Name]...)
			names = append(names, t.Name)
		}
	}
	paths, err := l.local(ctx, all)
	if err != nil {
		return err
	}
	var parts []part
	for _, t := range FileTables {
		n := len(objs[t.Name])
		if n == 0 {
			continue
		}
		t, mine := t, paths[:n]
		paths = paths[n:]
		// runParts hands each part a connection of its own (runOn).
		parts = append(parts, func(ctx context.Context, q querier) error { return l.loadTable(ctx, q.(*sql.Conn), t, mine, o.All) })
	}
	return runParts(ctx, l.st.db, min(runtime.NumCPU(), len(parts)), parts)
}

// readParquet renders DuckDB's reader over local files of the lake.
func readParquet(paths []string) string {
	q := make([]string, len(paths))
	for i, p := range paths {
		q[i] = quoteSQL(p)
	}
	return `read_parquet([` + strings.Join(q, ", ") + `], hive_partitioning = true, union_by_name = true,
		hive_types = {'system': VARCHAR, 'day': DATE, 'runner': VARCHAR})`
}

func (l *lakeLoad) local(ctx context.Context, objs []lakeObject) ([]string, error) {
	plain := make([]lake.Object, len(objs))
	for i, o := range objs {
		plain[i] = o.Object
	}
	l.read.Files += len(objs)
	return l.lk.Local(ctx, plain)
}

// loadFiles reads the runners' files tables, numbers every (runner,
// file_id) anew in lake_ids, and stores them as file states.
func (l *lakeLoad) loadFiles(ctx context.Context, objs []lakeObject) error {
	if err := l.st.exec(ctx, `CREATE TABLE lake_ids (runner VARCHAR, file_id INTEGER, new_id INTEGER, day DATE)`); err != nil {
		return err
	}
	if len(objs) == 0 {
		return nil
	}
	paths, err := l.local(ctx, objs)
	if err != nil {
		return err
	}
	// A file that moved to another day is in two partitions while its
	// runner replaces them; its latest state wins.
	for _, q := range []string{
		`CREATE TEMP TABLE lake_files_in AS SELECT * FROM ` + readParquet(paths) +
			` QUALIFY row_number() OVER (PARTITION BY runner, file_id ORDER BY state_seq DESC) = 1`,
		`INSERT INTO lake_ids SELECT runner, file_id, row_number() OVER (ORDER BY runner, file_id), day FROM lake_files_in`,
		`INSERT INTO file_states (seq, file_id, path, kind, run_dir, size, mtime, byte_offset, lines, events, quarantined, ingested_at)
		SELECT i.new_id, i.new_id, f.runner || ':' || f.path, f.kind, f.run_dir, f.size, f.mtime, f.byte_offset, f.lines, f.events, f.quarantined, f.ingested_at
		FROM lake_files_in f JOIN lake_ids i USING (runner, file_id)`,
		`DROP TABLE lake_files_in`,
	} {
		if err := l.st.exec(ctx, q); err != nil {
			return fmt.Errorf("reading lake %s's files table: %w", l.lk.Location(), err)
		}
	}
	rs, err := l.st.conn.QueryContext(ctx, `SELECT DISTINCT runner FROM lake_ids ORDER BY 1`)
	if err != nil {
		return err
	}
	defer rs.Close()
	for rs.Next() {
		var r string
		if err := rs.Scan(&r); err != nil {
			return err
		}
		l.read.Runners = append(l.read.Runners, r)
	}
	return l.st.conn.QueryRowContext(ctx, `SELECT count(*) FROM lake_ids`).Scan(&l.read.SourceFiles)
}

// loadTable inserts the rows of t's files, with their file ids renumbered.
// A column the files lack (written by an older orchstat) is NULL.
func (l *lakeLoad) loadTable(ctx context.Context, c *sql.Conn, t Table, paths []string, all bool) error {
	src := readParquet(paths)
	var skip map[string]bool
	if !all {
		skip = unreported[t.Name]
	}
	err := l.insert(ctx, c, t, src, nil, skip)
	if err == nil || !strings.Contains(err.Error(), "Binder Error") {
		return err
	}
	// Files of an older orchstat lack a column: only then is it worth
	// reading every footer once more to learn which.
	have := map[string]bool{}
	rs, err := c.QueryContext(ctx, `SELECT column_name FROM (DESCRIBE SELECT * FROM `+src+`)`)
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
	return l.insert(ctx, c, t, src, have, skip)
}

// unreported are the columns no report, check or simulation reads, by
// table: long JSON texts, most of what reading them costs.
var unreported = map[string]map[string]bool{
	Summaries.Name:           {"raw": true, "goal": true, "failed_checks": true},
	VerificationReports.Name: {"raw": true, "checks": true, "failed_checks": true, "failure_summary": true},
	RecordStages.Name:        {"feedback": true},
}

// insert copies t's rows from src, the lake's files, renumbering file ids;
// a column not in have (when set), or in skip, is NULL.
func (l *lakeLoad) insert(ctx context.Context, c *sql.Conn, t Table, src string, have, skip map[string]bool) error {
	var cs []string
	for _, col := range t.Columns {
		switch {
		case col.Name == "file_id":
			cs = append(cs, "i.new_id")
		case t.Name == Quarantine.Name && col.Name == "path":
			cs = append(cs, "p.runner || ':' || p.path")
		case skip[col.Name]:
			cs = append(cs, "NULL::"+col.Type)
		case have == nil || have[col.Name]:
			cs = append(cs, "p."+col.Name)
		default:
			cs = append(cs, "NULL::"+col.Type)
		}
	}
	_, err := c.ExecContext(ctx, fmt.Sprintf(`INSERT INTO %s SELECT %s FROM %s p JOIN lake_ids i ON i.runner = p.runner AND i.file_id = p.file_id`,
		t.Name, strings.Join(cs, ", "), src))
	if err != nil {
		return fmt.Errorf("reading lake %s's %s table: %w", l.lk.Location(), t.Name, cleanDuckErr(err))
	}
	return nil
}

// windowPartitions returns the (runner/day) partitions that hold the
// files of runs starting in the window, or nil for all of them. A run
// starts at its earliest event in any file, so run_spans, read whole,
// decides; each of its files' rows are in its file's day.
func (l *lakeLoad) windowPartitions(ctx context.Context, o LakeOptions) (map[string]bool, error) {
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

func (s *Store) exec(ctx context.Context, q string, args ...any) error {
	_, err := s.conn.ExecContext(ctx, q, args...)
	return cleanDuckErr(err)
}

// sortedKeys is for messages that list a map's keys.
func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

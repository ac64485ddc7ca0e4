package query

import (
	"cmp"
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/orchstat/orchstat/model/disk"
	"github.com/orchstat/orchstat/query/lake"
)

// ExportOptions are what an export takes besides the lake.
type ExportOptions struct {
	Runner string
	// RenameRunner lets a store that exported under another runner id
	// export under Runner: the old id's partitions are emptied (0-row
	// files) and its rows written under the new one, so that the lake
	// never holds them twice.
	RenameRunner bool
	Now          func() time.Time
	// Hook, when set, is called at the named points of an export, for
	// tests that kill it there.
	Hook func(point string)
	// Memory is DuckDB's memory limit during the export's COPYs; empty
	// is exportMemory.
	Memory string
}

// Exported is what an export wrote.
type Exported struct {
	Lake, Runner string
	// Files counts the source files whose rows changed since the last
	// export; Partitions the lake files replaced; Rows and Bytes what
	// those hold.
	Files, Partitions int
	Rows, Bytes       int64
	// Warnings say what the export did other than asked, for the user.
	Warnings []string
}

// partition is one lake file's place.
type partition struct{ table, system, day string }

// ExportLake writes what changed in the store since its last export to lk
// into lk, as this runner's Parquet files, and remembers it.
//
// A lake file holds one partition (table, system, day, runner) and is
// replaced whole, so an export rewrites each partition the changed
// source files' rows are in, or were in: a source file's rows are
// replaced whole in the store too, and a Hive table has no way to delete
// rows. Each file is written aside and published whole (lake.Put), and
// the partitions about to be replaced are recorded first, so a kill at any
// point leaves complete files, and the next export rewrites every
// partition the killed one may have touched.
func (s *Store) ExportLake(ctx context.Context, lk lake.Lake, o ExportOptions) (Exported, error) {
	out := Exported{Lake: lk.Location(), Runner: o.Runner}
	if err := CheckRunner(o.Runner); err != nil {
		return out, err
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	hook := func(p string) {
		if o.Hook != nil {
			o.Hook(p)
		}
	}
	started := o.Now().UTC()
	prev, err := s.otherRunner(ctx, lk, o.Runner, o.RenameRunner)
	if err != nil {
		return out, err
	}
	if prev != "" {
		// Renamed: the old id's files empty first; a kill between the two
		// exports leaves the rows in neither, never in both, and the next
		// export with --rename-runner finishes the move.
		var gone Exported
		if err := s.exportAs(ctx, lk, prev, true, started, o, hook, &gone); err != nil {
			return out, fmt.Errorf("emptying runner %s's files: %w", prev, err)
		}
		if err := s.inTransaction(ctx, "forgetting the old runner id", func() error {
			_, err := s.conn.ExecContext(ctx, `DELETE FROM lake_exports WHERE lake = ? AND runner = ?`, lk.Key(), prev)
			return cleanDuckErr(err)
		}); err != nil {
			return out, err
		}
	}
	if err := s.claimRunner(ctx, lk, o.Runner, started); err != nil {
		return out, err
	}
	return out, s.exportAs(ctx, lk, o.Runner, false, started, o, hook, &out)
}

// exportAs is one export as runner: of the store's files, or, when empty,
// of none, which leaves each partition the runner wrote a 0-row file.
func (s *Store) exportAs(ctx context.Context, lk lake.Lake, runner string, empty bool, started time.Time,
	o ExportOptions, hook func(string), out *Exported) error {
	e := &export{s: s, lk: lk, lake: lk.Key(), runner: runner, empty: empty, memory: cmp.Or(o.Memory, exportMemory)}
	defer e.dropTemps()
	dirty, err := e.plan(ctx, out)
	if err != nil || len(dirty) == 0 {
		return err
	}
	if err := e.journal(ctx, dirty); err != nil {
		return err
	}
	hook("planned")
	staged, err := e.stage(ctx, dirty, out)
	if err != nil {
		return err
	}
	hook("staged")
	for i, p := range staged {
		if err := lk.Put(ctx, p.key, p.path); err != nil {
			return err
		}
		if i == 0 {
			hook("published-one")
		}
	}
	hook("published")
	out.Partitions = len(staged)
	if err := e.mark(ctx, started, o.Now().UTC(), *out); err != nil {
		return err
	}
	// What is left in staging are empty folders. The lake's _staging
	// stays: another runner may be making its own folder in it.
	os.RemoveAll(e.staging)
	return nil
}

// claimRunner makes sure no other store exports as this runner: two stores
// writing one runner's partitions would replace each other's files. The
// claim is a file the first export creates and no one changes.
func (s *Store) claimRunner(ctx context.Context, lk lake.Lake, runner string, now time.Time) error {
	id, err := s.storeID(ctx)
	if err != nil {
		return err
	}
	type claim struct {
		Runner  string    `json:"runner"`
		StoreID string    `json:"store_id"`
		Store   string    `json:"store"`
		Claimed time.Time `json:"claimed_at"`
	}
	b, _ := json.MarshalIndent(claim{runner, id, s.Path, now}, "", "  ")
	got, err := lk.Create(ctx, "_runners/"+runner+".json", append(b, '\n'))
	if err != nil {
		return err
	}
	if got != nil {
		var c claim
		if err := json.Unmarshal(got, &c); err != nil || c.StoreID == "" {
			return fmt.Errorf("lake %s: _runners/%s.json is not a runner claim orchstat wrote: %v", lk.Location(), runner, err)
		}
		if c.StoreID != id {
			return fmt.Errorf("lake %s: runner %q is already exported by another store (%s, claimed %s); pass --runner with an id of this machine's own",
				lk.Location(), runner, c.Store, c.Claimed.Format(time.RFC3339))
		}
	}
	if _, err := lk.Create(ctx, "_orchstat/lake.json", LakeSchemaJSON()); err != nil {
		return err
	}
	return nil
}

// otherRunner is the runner id this store exported to the lake under, if
// not runner. Without rename that is refused: the lake would hold the
// store's rows under both ids, and every reader would count them twice.
// The default runner id is the host name, so a renamed host meets this.
func (s *Store) otherRunner(ctx context.Context, lk lake.Lake, runner string, rename bool) (string, error) {
	var prev string
	var last time.Time
	err := s.conn.QueryRowContext(ctx, `SELECT runner, max(finished_at) FROM lake_exports
		WHERE lake = ? AND runner <> ? GROUP BY runner ORDER BY 2 DESC LIMIT 1`, lk.Key(), runner).Scan(&prev, &last)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return "", nil
	case err != nil:
		return "", fmt.Errorf("reading this store's exports: %w", cleanDuckErr(err))
	case rename:
		return prev, nil
	}
	return "", fmt.Errorf("lake %s: this store already exports to it as runner %q (last on %s); exporting it as %q too "+
		"would put its runs in the lake twice: pass --runner %s (the default runner id is the host name, so a renamed host "+
		"needs it), or --rename-runner to move its files to %q", lk.Location(), prev, last.UTC().Format(time.RFC3339), runner, prev, runner)
}

// storeID names this store for runner claims; it is made on first use.
func (s *Store) storeID(ctx context.Context) (string, error) {
	id, ok, err := s.Setting(ctx, "store_id")
	if err != nil || ok {
		return id, err
	}
	b := make([]byte, 16)
	rand.Read(b)
	id = hex.EncodeToString(b)
	return id, s.SaveSetting(ctx, "store_id", id)
}

// export is one ExportLake on its way.
type export struct {
	s            *Store
	lk           lake.Lake
	lake, runner string
	empty        bool   // export no file: every partition the runner wrote empties
	staging      string // the folder files are written in before Put
	memory       string // DuckDB's memory limit while the COPYs run
}

func (e *export) exec(ctx context.Context, q string, args ...any) error {
	_, err := e.s.conn.ExecContext(ctx, q, args...)
	return cleanDuckErr(err)
}

func (e *export) dropTemps() {
	for _, t := range []string{"lake_place", "lake_changed", "lake_newparts", "lake_dirty"} {
		e.s.conn.ExecContext(context.Background(), "DROP TABLE IF EXISTS temp."+t)
	}
}

// placeSQL places each source file: its version (the seq of its latest
// state), its system (the first its records name, else the orchestrator)
// and its day (its earliest recorded time, else its mtime), in UTC.
const placeSQL = `CREATE OR REPLACE TEMP TABLE lake_place AS
WITH t AS (
  SELECT file_id, min(first_ts) AS ts FROM run_spans GROUP BY ALL
  UNION ALL SELECT file_id, min(started_at) FROM record_runs GROUP BY ALL
  UNION ALL SELECT file_id, min(ts) FROM record_attempts GROUP BY ALL
  UNION ALL SELECT file_id, min(ts) FROM calls GROUP BY ALL
  UNION ALL SELECT file_id, min(started_at) FROM summaries GROUP BY ALL),
sy AS (
  SELECT file_id, min(system) AS system FROM (
    SELECT file_id, system FROM record_runs UNION ALL SELECT file_id, system FROM calls
    UNION ALL SELECT file_id, system FROM record_configs) GROUP BY ALL),
st AS (SELECT file_id, max(seq) AS seq, arg_max(mtime, seq) AS mtime FROM file_states GROUP BY ALL)
SELECT st.file_id, st.seq, coalesce(sy.system, '` + OrchestratorSystem + `') AS system,
  strftime(CAST(coalesce((SELECT min(ts) FROM t WHERE t.file_id = st.file_id), st.mtime, TIMESTAMP '1970-01-01') AS DATE), '%Y-%m-%d') AS day
FROM st LEFT JOIN sy USING (file_id)`

// plan finds the files changed since the last export and the partitions
// to rewrite: where their rows are now, where they were, and where an
// unfinished export may have written.
func (e *export) plan(ctx context.Context, out *Exported) ([]partition, error) {
	if err := e.exec(ctx, placeSQL); err != nil {
		return nil, fmt.Errorf("placing files in the lake: %w", err)
	}
	if e.empty {
		// No file is this runner's any more: each it had is removed.
		if err := e.exec(ctx, `DELETE FROM lake_place`); err != nil {
			return nil, err
		}
	}
	if err := e.exec(ctx, `CREATE OR REPLACE TEMP TABLE lake_changed AS
		SELECT file_id FROM lake_place p
		  LEFT JOIN (SELECT file_id, seq FROM lake_files WHERE lake = ? AND runner = ?) m USING (file_id)
		WHERE m.seq IS DISTINCT FROM p.seq
		UNION SELECT file_id FROM lake_files WHERE lake = ? AND runner = ? AND file_id NOT IN (SELECT file_id FROM lake_place)`,
		e.lake, e.runner, e.lake, e.runner); err != nil {
		return nil, err
	}
	var parts []string
	for _, t := range LakeTables() {
		sys := "p.system"
		if hasSystem(t) {
			sys = "coalesce(t.system, p.system)"
		}
		src := t.Name
		if t.Name == LakeFiles.Name {
			src = "lake_place"
		}
		parts = append(parts, fmt.Sprintf(`SELECT DISTINCT '%s' AS tbl, %s AS system, p.day, t.file_id FROM %s t JOIN lake_place p USING (file_id)
			WHERE t.file_id IN (SELECT file_id FROM lake_changed)`, t.Name, sys, src))
	}
	if err := e.exec(ctx, `CREATE OR REPLACE TEMP TABLE lake_newparts AS `+strings.Join(parts, " UNION ALL ")); err != nil {
		return nil, fmt.Errorf("placing changed files in the lake: %w", err)
	}
	if err := e.exec(ctx, `CREATE OR REPLACE TEMP TABLE lake_dirty AS
		SELECT tbl, system, day FROM lake_newparts
		UNION SELECT tbl, system, strftime(day, '%Y-%m-%d') FROM lake_parts WHERE lake = ? AND runner = ? AND file_id IN (SELECT file_id FROM lake_changed)
		UNION SELECT tbl, system, strftime(day, '%Y-%m-%d') FROM lake_pending WHERE lake = ? AND runner = ?`,
		e.lake, e.runner, e.lake, e.runner); err != nil {
		return nil, err
	}
	if err := e.s.conn.QueryRowContext(ctx, `SELECT count(*) FROM lake_changed`).Scan(&out.Files); err != nil {
		return nil, err
	}
	rs, err := e.s.conn.QueryContext(ctx, `SELECT tbl, system, day FROM lake_dirty`)
	if err != nil {
		return nil, err
	}
	defer rs.Close()
	var dirty []partition
	for rs.Next() {
		var p partition
		if err := rs.Scan(&p.table, &p.system, &p.day); err != nil {
			return nil, err
		}
		dirty = append(dirty, p)
	}
	order := map[string]int{}
	for i, t := range LakeTables() {
		order[t.Name] = i
	}
	sort.Slice(dirty, func(i, j int) bool {
		a, b := dirty[i], dirty[j]
		if a.table != b.table {
			return order[a.table] < order[b.table]
		}
		if a.system != b.system {
			return a.system < b.system
		}
		return a.day < b.day
	})
	return dirty, rs.Err()
}

// journal records the partitions this export is about to replace, before
// it replaces any.
func (e *export) journal(ctx context.Context, dirty []partition) error {
	return e.s.inTransaction(ctx, "recording the export's partitions", func() error {
		if err := e.exec(ctx, `DELETE FROM lake_pending WHERE lake = ? AND runner = ?`, e.lake, e.runner); err != nil {
			return err
		}
		return e.exec(ctx, `INSERT INTO lake_pending SELECT ?, ?, tbl, system, CAST(day AS DATE) FROM lake_dirty`, e.lake, e.runner)
	})
}

// mark records what the lake now holds, and ends the export.
func (e *export) mark(ctx context.Context, started, finished time.Time, out Exported) error {
	l, r := e.lake, e.runner
	return e.s.inTransaction(ctx, "recording the export", func() error {
		for _, q := range []string{
			`DELETE FROM lake_files WHERE lake = ? AND runner = ? AND file_id IN (SELECT file_id FROM lake_changed)`,
			`INSERT INTO lake_files SELECT ?, ?, file_id, seq FROM lake_place WHERE file_id IN (SELECT file_id FROM lake_changed)`,
			`DELETE FROM lake_parts WHERE lake = ? AND runner = ? AND file_id IN (SELECT file_id FROM lake_changed)`,
			`INSERT INTO lake_parts SELECT ?, ?, tbl, system, CAST(day AS DATE), file_id FROM lake_newparts`,
			`DELETE FROM lake_pending WHERE lake = ? AND runner = ?`,
		} {
			if err := e.exec(ctx, q, l, r); err != nil {
				return err
			}
		}
		return e.exec(ctx, `INSERT INTO lake_exports SELECT ?, ?, coalesce((SELECT max(export_seq) FROM lake_exports WHERE lake = ? AND runner = ?), 0) + 1, ?, ?, ?, ?, ?, ?`,
			l, r, l, r, started, finished, out.Files, out.Partitions, out.Rows, out.Bytes)
	})
}

// staged is a finished file waiting to be published at key.
type staged struct{ key, path string }

// stage writes every dirty partition's file in the staging folder: one
// partitioned COPY per table, then an empty file for each dirty partition
// left with no rows, as the lake never deletes (a reader that listed the
// old file must still be able to open one).
func (e *export) stage(ctx context.Context, dirty []partition, out *Exported) ([]staged, error) {
	dir, err := e.lk.Staging(ctx, e.runner)
	if err != nil {
		return nil, err
	}
	e.staging = dir
	// Bounded, a first export of 30,000 runs peaks at 0.3 GB, not 1.4.
	before, restore, err := e.s.boundMemory(ctx, e.memory)
	if err != nil {
		return nil, err
	}
	defer restore()
	byTable := map[string][]partition{}
	for _, p := range dirty {
		byTable[p.table] = append(byTable[p.table], p)
	}
	var files []staged
	for _, t := range LakeTables() {
		ps := byTable[t.Name]
		if len(ps) == 0 {
			continue
		}
		got, rows, err := e.copyTable(ctx, t, filepath.Join(dir, t.Name))
		if disk.IsOutOfMemory(err) {
			// A row too wide for the bound: this table is written with the
			// store's own limit, and the export says so.
			out.Warnings = append(out.Warnings, fmt.Sprintf("table %s did not fit the export's %s of memory; it was written with the store's limit (%s) instead: %v", t.Name, e.memory, before, err))
			if err := os.RemoveAll(filepath.Join(dir, t.Name)); err != nil {
				return nil, err
			}
			if err := e.s.SetMemoryLimit(ctx, before); err != nil {
				return nil, err
			}
			got, rows, err = e.copyTable(ctx, t, filepath.Join(dir, t.Name))
			if err == nil {
				err = e.exec(ctx, `SET memory_limit = `+quoteSQL(e.memory))
			}
		}
		if err != nil {
			return nil, err
		}
		out.Rows += rows
		for _, p := range ps {
			f, ok := got[p]
			if !ok {
				if f, err = e.emptyFile(ctx, t, filepath.Join(dir, t.Name), p); err != nil {
					return nil, err
				}
			}
			fi, err := os.Stat(f)
			if err != nil {
				return nil, err
			}
			out.Bytes += fi.Size()
			files = append(files, staged{lakeKey(p.table, p.system, p.day, e.runner), f})
		}
	}
	return files, nil
}

const rowGroupBytes = "16MB"

// lakeSelect renders the rows of t as the lake holds them, with their
// partition's system and day, for the partitions dirty holds.
func lakeSelect(t Table) string {
	var cs []string
	for _, c := range lakeColumns(t) {
		cs = append(cs, "t."+c.Name)
	}
	sys := "p.system"
	if hasSystem(t) {
		sys = "coalesce(t.system, p.system)"
	}
	src := t.Name
	if t.Name == LakeFiles.Name {
		cs[len(cs)-1] = "p.seq AS state_seq"
		src = "files"
	}
	return fmt.Sprintf(`SELECT %s, %s AS system, p.day FROM %s t JOIN lake_place p USING (file_id)
		JOIN lake_dirty d ON d.tbl = '%s' AND d.system = %s AND d.day = p.day`, strings.Join(cs, ", "), sys, src, t.Name, sys)
}

// parquetOptions are every lake file's: zstd, row groups of DuckDB's
// default size (scan engines split work by row group), and the lake's
// version and the file's table and runner in the footer.
func (e *export) parquetOptions(t Table) string {
	return fmt.Sprintf(`FORMAT parquet, COMPRESSION zstd, ROW_GROUP_SIZE 122880, ROW_GROUP_SIZE_BYTES '%s', KV_METADATA {orchstat_lake_version: '%d', orchstat_table: %s, orchstat_runner: %s}`,
		rowGroupBytes, LakeVersion, quoteSQL(t.Name), quoteSQL(e.runner))
}

// copyTable writes t's dirty partitions under dir with one COPY, and
// returns the file written for each, and the rows in all.
func (e *export) copyTable(ctx context.Context, t Table, dir string) (map[partition]string, int64, error) {
	res, err := e.s.conn.ExecContext(ctx, fmt.Sprintf(`COPY (%s) TO %s (%s, PARTITION_BY (system, day), FILENAME_PATTERN 'data_{i}')`,
		lakeSelect(t), quoteSQL(dir), e.parquetOptions(t)))
	if err != nil {
		return nil, 0, fmt.Errorf("writing table %s for the lake: %w", t.Name, cleanDuckErr(err))
	}
	rows, _ := res.RowsAffected()
	got := map[partition]string{}
	err = filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			if os.IsNotExist(err) && p == dir {
				return filepath.SkipDir
			}
			return err
		}
		if d.IsDir() {
			return nil
		}
		rel, _ := filepath.Rel(dir, p)
		seg := strings.Split(filepath.ToSlash(rel), "/")
		if len(seg) != 3 || !strings.HasPrefix(seg[0], "system=") || !strings.HasPrefix(seg[1], "day=") {
			return fmt.Errorf("writing table %s for the lake: DuckDB wrote %s, not a system=/day= partition", t.Name, p)
		}
		sys, err := url.PathUnescape(strings.TrimPrefix(seg[0], "system="))
		if err != nil {
			return fmt.Errorf("writing table %s for the lake: partition %s: %w", t.Name, seg[0], err)
		}
		part := partition{t.Name, sys, strings.TrimPrefix(seg[1], "day=")}
		if prev, ok := got[part]; ok {
			return fmt.Errorf("writing table %s for the lake: DuckDB split partition %s/%s into %s and %s", t.Name, seg[0], seg[1], prev, p)
		}
		got[part] = p
		return nil
	})
	return got, rows, err
}

// emptyFile writes a file of t's columns and no rows, for partition p.
func (e *export) emptyFile(ctx context.Context, t Table, dir string, p partition) (string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	f := filepath.Join(dir, fmt.Sprintf("empty-%s-%s.parquet", hiveValue(p.system), p.day))
	q := fmt.Sprintf(`COPY (SELECT * EXCLUDE (system, day) FROM (%s) WHERE false) TO %s (%s)`, lakeSelect(t), quoteSQL(f), e.parquetOptions(t))
	if err := e.exec(ctx, q); err != nil {
		return "", fmt.Errorf("writing an empty partition of %s for the lake: %w", t.Name, err)
	}
	return f, nil
}

package query

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"

	"github.com/orchstat/orchstat/model/reports"
)

// The per-run figures: what the report folds over every event of a run,
// kept per run so that a report reads one small table rather than every
// event table. run_figures holds a row per orchestrator run (a run with
// events, as run_spans has it): the runs view's columns the overview and
// the worst-run lists show, and the counts reports.RunCounts declares;
// run_provider_figures the provider requests' counts per run and provider,
// which a provider filter reads, as it counts only that provider's
// requests. Both are derived from the event tables by one SQL definition
// (RunFiguresSQL, RunProviderFiguresSQL), refreshed for the runs a write
// transaction touched inside that transaction (Tx.Commit), so a crash
// leaves the events and their figures both or neither.

// figuresVersion names the definition the stored figures were made by:
// meta's run_figures key. A store whose figures were made by another (or
// none: an older orchstat's) gets them rebuilt whole when opened for
// writing; until then a read computes them from the events.
var figuresVersion = func() string {
	h := sha256.Sum256([]byte(RunFiguresSQL("") + "\x00" + RunProviderFiguresSQL("")))
	return hex.EncodeToString(h[:8])
}()

// The figures' tables, declared by their columns for the schema and its
// documentation.
var (
	RunFigures = Table{"run_figures", "what each orchestrator run contributes to the report, kept at ingest (see docs/ingest.md)",
		append(cols(`run_id VARCHAR, start TIMESTAMP, last_event_at TIMESTAMP, events BIGINT, started_at TIMESTAMP, status VARCHAR, stop_reason VARCHAR, escalated BOOLEAN`),
			runCountColumns(false)...)}
	RunProviderFigures = Table{"run_provider_figures", "each run's provider requests' counts per provider, kept at ingest",
		append(cols(`run_id VARCHAR, provider VARCHAR`), runCountColumns(true)...)}
)

// runCountColumns are the columns of reports.RunCounts (the ByProvider
// ones when byProvider).
func runCountColumns(byProvider bool) []Column {
	var out []Column
	for _, c := range reports.RunCounts {
		if byProvider && !c.ByProvider {
			continue
		}
		typ := "BIGINT"
		if c.Agg == reports.SumOf || c.Agg == reports.MaxOf {
			typ = "DOUBLE"
		}
		out = append(out, Column{c.Name, typ})
	}
	return out
}

// RunFiguresSQL is a query of run_figures' rows from the event tables,
// for the runs where (a condition on run_id) holds, or every run when
// where is empty: what a refresh inserts, what a read of a store without
// figures computes, and a view's definition over a store made of views.
// The run columns follow the runs view's definitions.
func RunFiguresSQL(where string) string {
	cond := ""
	if where != "" {
		cond = " WHERE " + where
	}
	return `SELECT ev.run_id, ev.start, ev.last_event_at, ev.events,
	  coalesce(re.started_at, ev.start) AS started_at,
	  coalesce(re.finished_status, sm.status, 'unfinished') AS status,
	  coalesce(re.stopped_reason, sm.stop_reason) AS stop_reason,
	  coalesce(es.escalations > 0, sm.escalated, false) AS escalated,
	  n.* EXCLUDE (run_id)
	FROM (SELECT run_id, min(first_ts) AS start, max(last_ts) AS last_event_at, sum(events)::BIGINT AS events
	      FROM run_spans` + cond + ` GROUP BY run_id) ev
	LEFT JOIN (SELECT run_id,
	    min(ts) FILTER (WHERE type = 'RunStarted') AS started_at,
	    arg_max(status, ts) FILTER (WHERE type = 'RunFinished') AS finished_status,
	    arg_max(reason, ts) FILTER (WHERE type = 'RunStopped') AS stopped_reason
	  FROM run_events` + cond + ` GROUP BY run_id) re USING (run_id)
	LEFT JOIN (SELECT run_id, count(*) AS escalations FROM escalations` + cond + ` GROUP BY run_id) es USING (run_id)
	LEFT JOIN (SELECT run_id, arg_max(status, file_id) AS status, arg_max(stop_reason, file_id) AS stop_reason,
	    arg_max(escalated, file_id) AS escalated
	  FROM summaries` + cond + ` GROUP BY run_id) sm USING (run_id)
	JOIN (` + reports.DuckDBRunCounts("run_spans", where, false) + `) n USING (run_id)`
}

// RunProviderFiguresSQL is RunFiguresSQL's for run_provider_figures.
func RunProviderFiguresSQL(where string) string {
	return reports.DuckDBRunCounts("", where, true)
}

// figuresViews are the figures as views over the event tables, for a
// store whose tables are views (see RunFiguresSQL).
func figuresViews() []string {
	return []string{
		`CREATE OR REPLACE VIEW run_figures AS ` + RunFiguresSQL(""),
		`CREATE OR REPLACE VIEW run_provider_figures AS ` + RunProviderFiguresSQL(""),
	}
}

// refreshFigures replaces the figures of the runs in the temporary table
// touched_runs (run_id), in the caller's transaction.
func (s *Store) refreshFigures(ctx context.Context) error {
	in := "run_id IN (SELECT run_id FROM touched_runs)"
	// Every row of a run lies in a file its spans or its summary name.
	// The files' ids, as constants, let each table's scan skip the row
	// groups of other files by their zone maps: a condition on run_id
	// alone read every table's run ids at every commit, which took a
	// cold ingest from 44 to 99 s of CPU.
	files, err := ints(ctx, s.conn, `SELECT DISTINCT file_id FROM (
		SELECT file_id FROM run_spans WHERE `+in+` UNION ALL SELECT file_id FROM summaries WHERE `+in+`) ORDER BY 1`)
	if err != nil {
		return fmt.Errorf("keeping the runs' figures: %w", cleanDuckErr(err))
	}
	rows := in
	if len(files) > 0 {
		list := make([]string, len(files))
		for i, f := range files {
			list[i] = strconv.FormatInt(f, 10)
		}
		rows = fmt.Sprintf("file_id BETWEEN %d AND %d AND file_id IN (%s) AND %s", files[0], files[len(files)-1], strings.Join(list, ","), in)
	}
	for _, q := range []string{
		`DELETE FROM run_figures WHERE ` + in,
		`DELETE FROM run_provider_figures WHERE ` + in,
		`INSERT INTO run_figures BY NAME ` + RunFiguresSQL(rows),
		`INSERT INTO run_provider_figures BY NAME ` + RunProviderFiguresSQL(rows),
		`DROP TABLE touched_runs`,
	} {
		if _, err := s.conn.ExecContext(ctx, q); err != nil {
			return fmt.Errorf("keeping the runs' figures: %w", cleanDuckErr(err))
		}
	}
	return nil
}

// RebuildFigures makes every run's figures anew from the events, in the
// caller's transaction or its own: what an older store gets once, and a
// lake's replica after it is synced.
func (s *Store) RebuildFigures(ctx context.Context) error {
	for _, q := range []string{
		`DELETE FROM run_figures`,
		`DELETE FROM run_provider_figures`,
		`INSERT INTO run_figures BY NAME ` + RunFiguresSQL(""),
		`INSERT INTO run_provider_figures BY NAME ` + RunProviderFiguresSQL(""),
		`DELETE FROM meta WHERE key = 'run_figures'`,
		`INSERT INTO meta VALUES ('run_figures', '` + figuresVersion + `')`,
	} {
		if _, err := s.conn.ExecContext(ctx, q); err != nil {
			return fmt.Errorf("making the runs' figures: %w", cleanDuckErr(err))
		}
	}
	s.figures = true
	return nil
}

// figuresCurrent reports whether the store's figures were made by this
// orchstat's definition: false for a store an older orchstat made.
func (s *Store) figuresCurrent(ctx context.Context) (bool, error) {
	var v string
	err := s.conn.QueryRowContext(ctx, `SELECT coalesce(max(value), '') FROM meta WHERE key = 'run_figures'`).Scan(&v)
	return v == figuresVersion, err
}

// touch records runs a transaction changed, whose figures Commit
// refreshes.
func (t *Tx) touch(runs ...string) {
	if t.touched == nil {
		t.touched = map[string]struct{}{}
	}
	for _, r := range runs {
		t.touched[r] = struct{}{}
	}
}

// touchFiles records the runs whose rows the files with these ids hold
// (ids, a list of integers in SQL), before they are deleted.
func (t *Tx) touchFiles(ctx context.Context, ids string) error {
	runs, err := strings1(ctx, t.s.conn, "finding the runs of replaced files",
		`SELECT DISTINCT run_id FROM (SELECT run_id FROM run_spans WHERE file_id IN (`+ids+`)
		 UNION ALL SELECT run_id FROM summaries WHERE file_id IN (`+ids+`)) WHERE run_id IS NOT NULL`)
	t.touch(runs...)
	return err
}

// keepFigures refreshes the figures of the runs the transaction touched,
// before it commits; all of them when a statement the Tx cannot follow
// (Exec) ran.
func (t *Tx) keepFigures(ctx context.Context) error {
	restore, err := t.s.figuresMemory(ctx)
	if err != nil {
		return fmt.Errorf("keeping the runs' figures: %w", err)
	}
	defer restore()
	if t.allTouched {
		return t.s.RebuildFigures(ctx)
	}
	if len(t.touched) > 0 {
		// Rebuilt whole when most runs were touched (a first ingest): the
		// restriction to the touched runs then costs more than it saves.
		var have int64
		if err := t.s.conn.QueryRowContext(ctx, `SELECT count(*) FROM run_figures`).Scan(&have); err != nil {
			return fmt.Errorf("keeping the runs' figures: %w", err)
		}
		if int64(len(t.touched)) >= have/2 {
			if t.s.hook != nil {
				t.s.hook("before-figures")
			}
			return t.s.RebuildFigures(ctx)
		}
	}
	if len(t.touched) == 0 {
		return nil
	}
	runs := make([]string, 0, len(t.touched))
	for r := range t.touched {
		runs = append(runs, r)
	}
	if _, err := t.s.conn.ExecContext(ctx, `CREATE OR REPLACE TEMP TABLE touched_runs AS SELECT unnest(?::VARCHAR[]) AS run_id`, runs); err != nil {
		return fmt.Errorf("keeping the runs' figures: %w", err)
	}
	if t.s.hook != nil {
		// Between the events and their figures: the kill test's point.
		t.s.hook("before-figures")
	}
	return t.s.refreshFigures(ctx)
}

// SetHook sets a function called at named points of a write: tests use it
// to kill orchstat there ("before-figures": a transaction's events are
// written and their runs' figures not yet).
func (s *Store) SetHook(hook func(string)) { s.hook = hook }

// ints reads a query's one integer column.
func ints(ctx context.Context, q querier, query string) ([]int64, error) {
	var out []int64
	err := eachRow(ctx, q, "finding the touched runs' files", query, nil, func(rs *sql.Rows) error {
		var n int64
		if err := rs.Scan(&n); err != nil {
			return err
		}
		out = append(out, n)
		return nil
	})
	return out, err
}

// figuresMinMemory is the buffer pool the figures' refresh is given at
// least. Ingest's default (64 MiB) is mostly held by the transaction's own
// rows by then, and the refresh's grouped counts (count DISTINCT above
// all) cannot spill: at 5,000 runs it ran out, and ingest's retry read
// every file again at twice the limit, doubling a first ingest's time.
const figuresMinMemory = 256 << 20

// figuresMemory raises DuckDB's memory limit to figuresMinMemory when it
// is lower, and returns what puts it back.
func (s *Store) figuresMemory(ctx context.Context) (restore func(), err error) {
	var old string
	if err := s.conn.QueryRowContext(ctx, `SELECT current_setting('memory_limit')`).Scan(&old); err != nil {
		return nil, err
	}
	if n, ok := settingBytes(old); !ok || n >= figuresMinMemory {
		return func() {}, nil
	}
	if _, err := s.conn.ExecContext(ctx, fmt.Sprintf(`SET memory_limit = '%dB'`, figuresMinMemory)); err != nil {
		return nil, err
	}
	return func() { s.conn.ExecContext(context.WithoutCancel(ctx), `SET memory_limit = `+quoteSQL(old)) }, nil
}

// settingBytes reads a size DuckDB shows a setting in ("61.0 MiB").
func settingBytes(v string) (float64, bool) {
	var n float64
	var unit string
	if _, err := fmt.Sscanf(v, "%g %s", &n, &unit); err != nil {
		return 0, false
	}
	mult := map[string]float64{"bytes": 1, "KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30, "TiB": 1 << 40,
		"KB": 1e3, "MB": 1e6, "GB": 1e9, "TB": 1e12}[unit]
	return n * mult, mult != 0
}

// FiguresDrift counts the rows of run_figures and run_provider_figures
// that differ from what the events give now, in either direction: 0 for a
// store whose figures are consistent with its events. Tests check a store
// killed mid-ingest with it.
func (s *Store) FiguresDrift(ctx context.Context) (int64, error) {
	var n int64
	err := s.conn.QueryRowContext(ctx, `SELECT
		(SELECT count(*) FROM (SELECT * FROM run_figures EXCEPT ALL SELECT * FROM (`+RunFiguresSQL("")+`))) +
		(SELECT count(*) FROM (SELECT * FROM (`+RunFiguresSQL("")+`) EXCEPT ALL SELECT * FROM run_figures)) +
		(SELECT count(*) FROM (SELECT * FROM run_provider_figures EXCEPT ALL SELECT * FROM (`+RunProviderFiguresSQL("")+`))) +
		(SELECT count(*) FROM (SELECT * FROM (`+RunProviderFiguresSQL("")+`) EXCEPT ALL SELECT * FROM run_provider_figures))`).Scan(&n)
	return n, err
}

package query

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"reflect"
	"strings"

	"github.com/orchstat/orchstat/model/rows"
)

// SchemaVersion is bumped whenever a table changes shape. A database written
// by a newer orchstat is refused rather than misread.
const SchemaVersion = 2

// Column is one column of a table orchstat writes.
type Column struct{ Name, Type string }

// Table is a table orchstat writes. Those ingest fills are declared in
// package model/rows, a Go struct per table; the others here, by their
// columns' SQL.
type Table struct {
	Name    string
	Comment string
	Columns []Column
}

// rowConvs say how feedFunc reads a row of each declared table, by table
// name.
var rowConvs = map[string]*rowConv{}

// declaredNotes are the declared columns' doc tags, by table.column (see
// columnNotes).
var declaredNotes = map[string]string{}

// declaredTables are the tables of a rows.Set-like struct, one per field:
// a slice of row structs whose tags name the table and its columns.
func declaredTables(set reflect.Type) []Table {
	var out []Table
	for i := range set.NumField() {
		f := set.Field(i)
		t := Table{Name: f.Tag.Get("table"), Comment: f.Tag.Get("holds")}
		row := f.Type.Elem()
		rowConvs[t.Name] = newRowConv(row, f.Index, f.Tag.Get("strings") == "verbatim")
		for _, c := range columnFields(row) {
			name, typ, _ := strings.Cut(c.Tag.Get("col"), " ")
			t.Columns = append(t.Columns, Column{name, typ})
			if doc := c.Tag.Get("doc"); doc != "" {
				declaredNotes[t.Name+"."+name] = doc
			}
		}
		out = append(out, t)
	}
	return out
}

// columnFields are a row struct's column fields in column order, the
// fields of embedded structs (rows.EventKey, rows.Tokens) in their place.
func columnFields(row reflect.Type) []reflect.StructField {
	var out []reflect.StructField
	for _, f := range reflect.VisibleFields(row) {
		if c := f.Tag.Get("col"); c != "" && c != "-" {
			out = append(out, f)
		}
	}
	return out
}

// fileTable is the file table named name.
func fileTable(name string) Table {
	for _, t := range FileTables {
		if t.Name == name {
			return t
		}
	}
	panic("query: rows.Set declares no table " + name)
}

func cols(spec string) []Column {
	var out []Column
	for _, f := range strings.Split(spec, ",") {
		parts := strings.Fields(f)
		out = append(out, Column{parts[0], strings.Join(parts[1:], " ")})
	}
	return out
}

// The file tables hold the rows ingest derives from each source file,
// declared by rows.Set; the typed ones hold the fields of metric-bearing
// events, extracted at ingest so reports never re-parse payload JSON.
var (
	Events              = fileTable("events")
	RunEvents           = fileTable("run_events")
	Escalations         = fileTable("escalations")
	ProviderSelections  = fileTable("provider_selections")
	ProviderStarts      = fileTable("provider_request_starts")
	ProviderFinishes    = fileTable("provider_request_finishes")
	L2Events            = fileTable("l2_events")
	PatchEvents         = fileTable("patch_events")
	VerificationEvents  = fileTable("verification_events")
	Steps               = fileTable("steps")
	L3Candidates        = fileTable("l3_candidates")
	Diagnoses           = fileTable("diagnoses")
	JudgeCalls          = fileTable("judge_calls")
	RunSpans            = fileTable("run_spans")
	Quarantine          = fileTable("quarantine")
	Summaries           = fileTable("summaries")
	SummaryCosts        = fileTable("summary_costs")
	VerificationReports = fileTable("verification_reports")
	RecordRuns          = fileTable("record_runs")
	RecordAttempts      = fileTable("record_attempts")
	RecordStages        = fileTable("record_stages")
	Calls               = fileTable("calls")
	CallAttempts        = fileTable("call_attempts")
	RecordConfigs       = fileTable("record_configs")
	// FileStates, DirStates and SealedDirs are declared by rows.States.
	FileStates = stateTables[0]
)

var (
	DirStates  = stateTables[1]
	SealedDirs = stateTables[2]
)

// FileTables lists every table whose rows come from one file, in the order
// they are replaced: rows.Set's.
var FileTables = declaredTables(reflect.TypeFor[rows.Set]())

// stateTables are rows.States' tables: file_states, dir_states and
// sealed_dirs.
var stateTables = declaredTables(reflect.TypeFor[rows.States]())

// ExecInvocations is what `orchstat exec` remembers between invocations,
// for the retry handler's cascade detection. It is not derived from a file.
var ExecInvocations = Table{"exec_invocations", "each orchstat exec invocation's outcome", cols(
	"started_at TIMESTAMP, finished_at TIMESTAMP, run_id VARCHAR, op VARCHAR, command VARCHAR, success BOOLEAN, attempts INTEGER, reason VARCHAR, dir VARCHAR")}

func (t Table) ddl() string {
	var b strings.Builder
	fmt.Fprintf(&b, "CREATE TABLE IF NOT EXISTS %s (", t.Name)
	for i, c := range t.Columns {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%s %s", c.Name, c.Type)
	}
	b.WriteString(")")
	return b.String()
}

// Views derive the documented per-run and per-iteration shapes. They are
// recreated on every read-write open, so changing one needs no migration.
var views = []string{
	// A grouped max and a join: a third of the time of a window over
	// every state (12 ms against 30 at 109,000 files). sealed is ingest's
	// own (rows.FileStateRow.Sealed).
	`CREATE OR REPLACE VIEW files AS
	SELECT s.* EXCLUDE (seq, sealed) FROM file_states s
	JOIN (SELECT file_id, max(seq) AS seq FROM file_states GROUP BY file_id) l USING (file_id, seq)`,

	// Kept for users' SQL; the model is paired at ingest.
	`CREATE OR REPLACE VIEW provider_requests AS
	SELECT run_id, file_id, line, ts, provider, model, duration_ms, success, retries, error
	FROM provider_request_finishes`,

	`CREATE OR REPLACE VIEW l2_iterations AS
	SELECT run_id, iteration,
	  min(ts) FILTER (WHERE type = 'IterationStarted') AS started_at,
	  max(ts) FILTER (WHERE type = 'IterationFinished') AS finished_at,
	  bool_or(type = 'RepairAttempted') AS repair_attempted,
	  arg_max(patch_path, line) FILTER (WHERE type = 'RepairAttempted') AS patch_path,
	  arg_max(result, line) FILTER (WHERE type = 'IterationFinished') AS result
	FROM l2_events GROUP BY run_id, iteration`,

	`CREATE OR REPLACE VIEW runs AS
	WITH ev AS (
	  SELECT run_id, min(first_ts) AS first_event_at, max(last_ts) AS last_event_at, sum(events)::BIGINT AS events
	  FROM run_spans GROUP BY run_id),
	re AS (
	  SELECT run_id,
	    min(ts) FILTER (WHERE type = 'RunStarted') AS started_at,
	    max(ts) FILTER (WHERE type = 'RunFinished') AS finished_at,
	    arg_max(status, ts) FILTER (WHERE type = 'RunFinished') AS finished_status,
	    arg_max(reason, ts) FILTER (WHERE type = 'RunStopped') AS stopped_reason
	  FROM run_events GROUP BY run_id),
	es AS (SELECT run_id, count(*) AS escalations, arg_max(to_level, ts) AS escalated_to FROM escalations GROUP BY run_id),
	pr AS (SELECT run_id, count(*) AS provider_requests, coalesce(sum(retries), 0) AS provider_retries FROM provider_request_finishes GROUP BY run_id),
	l2 AS (SELECT run_id, max(iteration) FILTER (WHERE type = 'RepairAttempted') AS repair_iterations, bool_or(type = 'IterationStarted') AS entered_l2 FROM l2_events GROUP BY run_id),
	l3 AS (SELECT run_id, count(DISTINCT coalesce(iteration::VARCHAR, 'null')) AS l3_steps FROM l3_candidates GROUP BY run_id),
	dg AS (SELECT run_id, count(*) FILTER (WHERE type = 'DiagnosisStarted') AS diagnoses FROM diagnoses GROUP BY run_id),
	sm AS (SELECT run_id, arg_max(status, file_id) AS status, arg_max(stop_reason, file_id) AS stop_reason,
	         arg_max(think_level, file_id) AS think_level, arg_max(escalated, file_id) AS escalated,
	         arg_max(duration_ms, file_id) AS duration_ms, arg_max(cost_usd, file_id) AS cost_usd, arg_max(total_tokens, file_id) AS total_tokens
	       FROM summaries GROUP BY run_id)
	SELECT ev.run_id,
	  coalesce(re.started_at, ev.first_event_at) AS started_at,
	  re.finished_at,
	  ev.first_event_at, ev.last_event_at, ev.events,
	  coalesce(re.finished_status, sm.status, 'unfinished') AS status,
	  coalesce(re.stopped_reason, sm.stop_reason) AS stop_reason,
	  sm.think_level,
	  CASE WHEN l3.l3_steps > 0 OR es.escalated_to = 'L3' THEN 'L3'
	       WHEN l2.entered_l2 THEN 'L2' ELSE coalesce(sm.think_level, 'L1') END AS max_level,
	  coalesce(es.escalations > 0, sm.escalated, false) AS escalated,
	  coalesce(pr.provider_requests, 0) AS provider_requests,
	  coalesce(pr.provider_retries, 0) AS provider_retries,
	  l2.repair_iterations,
	  coalesce(l3.l3_steps, 0) AS l3_steps,
	  coalesce(dg.diagnoses, 0) AS diagnoses,
	  sm.duration_ms, sm.total_tokens, sm.cost_usd
	FROM ev
	LEFT JOIN re USING (run_id) LEFT JOIN es USING (run_id) LEFT JOIN pr USING (run_id)
	LEFT JOIN l2 USING (run_id) LEFT JOIN l3 USING (run_id) LEFT JOIN dg USING (run_id) LEFT JOIN sm USING (run_id)`,

	// A run directory's run is the one whose events its trace holds most
	// of; reports name no run, and directories need not be named after one.
	`CREATE OR REPLACE VIEW run_dirs AS
	SELECT dir, arg_max(run_id, events) AS run_id FROM (
	  SELECT regexp_replace(f.path, '/[^/]*$', '') AS dir, s.run_id, sum(s.events) AS events
	  FROM run_spans s JOIN files f USING (file_id) WHERE f.kind = 'trace' GROUP BY ALL)
	GROUP BY dir`,

	// One row per record run. Several files may describe one run: the
	// factory's run_summary.json and its attempts' failure briefs, or the
	// same run copied to two directories. The run's rows come from one
	// source, the most complete (anything but briefs), then the newest file.
	`CREATE OR REPLACE VIEW attempt_runs AS
	SELECT * FROM record_runs
	QUALIFY row_number() OVER (PARTITION BY system, run_id
	  ORDER BY CASE source WHEN 'brief' THEN 1 ELSE 0 END, file_id DESC) = 1`,

	// Attempts and stages of the source attempt_runs chose; an attempt
	// recorded in two files of that source counts once, from the newest.
	`CREATE OR REPLACE VIEW attempts AS
	SELECT a.* FROM record_attempts a JOIN attempt_runs r USING (system, run_id, source)
	QUALIFY row_number() OVER (PARTITION BY a.system, a.run_id, a.attempt ORDER BY a.file_id DESC) = 1`,

	`CREATE OR REPLACE VIEW attempt_stages AS
	SELECT st.* FROM record_stages st JOIN attempt_runs r USING (system, run_id, source)
	QUALIFY dense_rank() OVER (PARTITION BY st.system, st.run_id, st.attempt ORDER BY st.file_id DESC) = 1`,

	`CREATE OR REPLACE VIEW verifications AS
	SELECT v.* REPLACE (coalesce(d.run_id, v.run_id) AS run_id)
	FROM verification_reports v
	JOIN files f USING (file_id)
	LEFT JOIN run_dirs d ON d.dir = regexp_replace(f.path, '/[^/]*$', '')`,
}

// What export remembers of each lake it wrote to (see lakeexport.go): a
// lake is named by its location, and a store may export to several.
var (
	LakeExports = Table{"lake_exports", "each export that wrote to a lake", cols(
		"lake VARCHAR, runner VARCHAR, export_seq BIGINT, started_at TIMESTAMP, finished_at TIMESTAMP, files BIGINT, partitions BIGINT, rows BIGINT, bytes BIGINT")}
	LakeFileMarks = Table{"lake_files", "the version (file_states seq) of each source file a lake holds", cols(
		"lake VARCHAR, runner VARCHAR, file_id INTEGER, seq BIGINT")}
	LakeParts = Table{"lake_parts", "the lake partitions each exported source file's rows are in", cols(
		"lake VARCHAR, runner VARCHAR, tbl VARCHAR, system VARCHAR, day DATE, file_id INTEGER")}
	LakePending = Table{"lake_pending", "the partitions an unfinished export may have replaced", cols(
		"lake VARCHAR, runner VARCHAR, tbl VARCHAR, system VARCHAR, day DATE")}
)

func tableStatements() []string {
	stmts := []string{`CREATE TABLE IF NOT EXISTS meta (key VARCHAR, value VARCHAR)`, FileStates.ddl(), DirStates.ddl(), SealedDirs.ddl(), AlertState.ddl(),
		Notifications.ddl(), NotifyGroups.ddl(), ExecInvocations.ddl(),
		LakeExports.ddl(), LakeFileMarks.ddl(), LakeParts.ddl(), LakePending.ddl(),
		// A store made before exec_invocations had its dir column: CREATE
		// TABLE IF NOT EXISTS leaves the table as it was. Its rows have no
		// directory, so they count for no command's cascade.
		`ALTER TABLE exec_invocations ADD COLUMN IF NOT EXISTS dir VARCHAR`,
		// A store made before file_states and dir_states had their
		// sealed columns: the rows of sealed directories and their files
		// are marked once, here, as sealing marks them from then on.
		`ALTER TABLE file_states ADD COLUMN IF NOT EXISTS sealed BOOLEAN`,
		`UPDATE file_states SET sealed = path[:length(path) - strpos(reverse(path), '/')] IN ` + sealedSet + ` WHERE sealed IS NULL`,
		`ALTER TABLE dir_states ADD COLUMN IF NOT EXISTS sealed BOOLEAN`,
		`UPDATE dir_states SET sealed = path IN ` + sealedSet + ` WHERE sealed IS NULL`,
		// Before, each daily full pass sealed every finished run again, and
		// compaction did not count seals: such a store kept a row per run
		// per day, which every cron pass read.
		`DELETE FROM sealed_dirs WHERE seq NOT IN (SELECT max(seq) FROM sealed_dirs GROUP BY path)`}
	for _, t := range FileTables {
		stmts = append(stmts, t.ddl())
	}
	return append(stmts, RunFigures.ddl(), RunProviderFigures.ddl())
}

func schemaStatements() []string { return append(tableStatements(), views...) }

// schemaHash identifies the DDL, so an open can tell whether it must run it.
func schemaHash() string {
	h := sha256.New()
	// The figures' definition too: a store whose figures another made
	// gets them made anew (see figuresVersion).
	for _, s := range append(schemaStatements(), figuresVersion) {
		h.Write([]byte(s))
		h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil)[:8])
}

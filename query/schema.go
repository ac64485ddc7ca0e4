package query

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
)

// SchemaVersion is bumped whenever a table changes shape. A database written
// by a newer orchstat is refused rather than misread.
const SchemaVersion = 1

// Column is one column of a table orchstat writes.
type Column struct{ Name, Type string }

// Table is a table that holds rows derived from one source file. Every such
// table starts with file_id so a file's rows can be replaced as a unit.
type Table struct {
	Name    string
	Comment string
	Columns []Column
}

func cols(spec string) []Column {
	var out []Column
	for _, f := range strings.Split(spec, ",") {
		parts := strings.Fields(f)
		out = append(out, Column{parts[0], strings.Join(parts[1:], " ")})
	}
	return out
}

const eventKey = "file_id INTEGER, line BIGINT, run_id VARCHAR, ts TIMESTAMP, "

// tokenColumns are a model call's or attempt's tokens and cost, as
// records.Call means them: input is the uncached input, the cache's reads
// and writes apart; reasoning is part of output.
const tokenColumns = "input_tokens DOUBLE, cache_read_tokens DOUBLE, cache_write_tokens DOUBLE, output_tokens DOUBLE, " +
	"reasoning_tokens DOUBLE, cost_usd DOUBLE"

// The typed tables hold the fields of metric-bearing events, extracted at
// ingest so reports never re-parse payload JSON. Their column order is the
// order ingest appends values in.
var (
	Events = Table{"events", "every accepted trace line", cols(
		"file_id INTEGER, line BIGINT, run_id VARCHAR, ts TIMESTAMP, type VARCHAR, schema_version INTEGER, payload VARCHAR")}
	RunEvents = Table{"run_events", "RunStarted, RunFinished and RunStopped", cols(eventKey +
		"type VARCHAR, task_id VARCHAR, status VARCHAR, reason VARCHAR")}
	Escalations = Table{"escalations", "RunEscalated", cols(eventKey +
		"from_level VARCHAR, to_level VARCHAR, reason VARCHAR")}
	ProviderSelections = Table{"provider_selections", "ProviderSelected", cols(eventKey +
		"role VARCHAR, provider_id VARCHAR")}
	ProviderStarts = Table{"provider_request_starts", "ProviderRequestStarted", cols(eventKey +
		"provider VARCHAR, model VARCHAR")}
	// model is paired at ingest: the model of the nearest earlier
	// ProviderRequestStarted of the same run and provider in the same file.
	ProviderFinishes = Table{"provider_request_finishes", "ProviderRequestFinished", cols(eventKey +
		"provider VARCHAR, model VARCHAR, duration_ms DOUBLE, success BOOLEAN, retries DOUBLE, error VARCHAR")}
	L2Events = Table{"l2_events", "IterationStarted, RepairAttempted and IterationFinished", cols(eventKey +
		"type VARCHAR, iteration DOUBLE, result VARCHAR, patch_path VARCHAR")}
	PatchEvents = Table{"patch_events", "PatchApplied and PatchApplyFailed", cols(eventKey +
		"type VARCHAR, success BOOLEAN, error VARCHAR, error_type VARCHAR, error_kind VARCHAR")}
	VerificationEvents = Table{"verification_events", "VerificationFinished", cols(eventKey +
		"passed BOOLEAN, failed_checks VARCHAR")}
	Steps = Table{"steps", "StepStarted and StepFinished", cols(eventKey +
		"type VARCHAR, step_index DOUBLE, total DOUBLE, success BOOLEAN, error VARCHAR, judge_invoked BOOLEAN, judge_reason VARCHAR")}
	L3Candidates = Table{"l3_candidates", "CandidateGenerated", cols(eventKey +
		"iteration DOUBLE, candidate_index DOUBLE, valid BOOLEAN, provider_id VARCHAR, duration_ms DOUBLE, files_changed DOUBLE, lines_added DOUBLE, lines_deleted DOUBLE")}
	Diagnoses = Table{"diagnoses", "DiagnosisStarted and DiagnosisCompleted", cols(eventKey +
		"type VARCHAR, iteration DOUBLE, reason VARCHAR, selected_hypothesis VARCHAR")}
	JudgeCalls = Table{"judge_calls", "JudgeInvoked, JudgeDecided and JudgeFailed", cols(eventKey +
		"type VARCHAR, iteration DOUBLE, reason VARCHAR, candidate_count DOUBLE, winner_candidate_id VARCHAR, confidence DOUBLE, duration_ms DOUBLE, error VARCHAR, fallback_candidate_id VARCHAR")}
	// RunSpans summarises each chunk of a file's events per run, so reports
	// find runs and their time spans without scanning events.
	RunSpans = Table{"run_spans", "the span and count of each run's events, per file and ingest chunk", cols(
		"file_id INTEGER, run_id VARCHAR, first_ts TIMESTAMP, last_ts TIMESTAMP, events BIGINT")}
	Quarantine = Table{"quarantine", "lines and files that could not be ingested", cols(
		"file_id INTEGER, path VARCHAR, line BIGINT, byte_offset BIGINT, field VARCHAR, reason VARCHAR, raw VARCHAR, raw_bytes BIGINT, ingested_at TIMESTAMP")}
	Summaries = Table{"summaries", "one row per summary.json", cols(
		"file_id INTEGER, run_id VARCHAR, schema_version DOUBLE, status VARCHAR, stop_reason VARCHAR, think_level VARCHAR, escalated BOOLEAN, " +
			"started_at TIMESTAMP, finished_at TIMESTAMP, duration_ms DOUBLE, goal VARCHAR, verification_passed BOOLEAN, failed_checks VARCHAR, failed_check_count DOUBLE, " +
			"input_tokens DOUBLE, output_tokens DOUBLE, total_tokens DOUBLE, cost_usd DOUBLE, " +
			"l3_best_of_n DOUBLE, l3_candidates_generated DOUBLE, l3_candidates_evaluated DOUBLE, l3_passing_candidate_selected BOOLEAN, " +
			"l3_reviewer_invoked BOOLEAN, l3_judge_invoked BOOLEAN, l3_judge_invocation_reason VARCHAR, raw VARCHAR")}
	SummaryCosts = Table{"summary_costs", "costs.perProvider of each summary.json", cols(
		"file_id INTEGER, run_id VARCHAR, provider VARCHAR, input_tokens DOUBLE, output_tokens DOUBLE, total_tokens DOUBLE, cost_usd DOUBLE")}
	// VerificationReports' run_id is the run directory's name, as reports
	// do not name their run; the verifications view resolves it.
	VerificationReports = Table{"verification_reports", "one row per verification report", cols(
		"file_id INTEGER, run_id VARCHAR, report VARCHAR, phase VARCHAR, iteration BIGINT, passed BOOLEAN, failure_signature VARCHAR, " +
			"failure_summary VARCHAR, failed_checks VARCHAR, checks VARCHAR, raw VARCHAR")}
	// The record tables hold the other systems' records (package
	// model/records): factory, claudestrator, orchestr8 and exec.
	RecordRuns = Table{"record_runs", "one row per run in a factory, claudestrator, orchestr8 or exec record", cols(
		"file_id INTEGER, system VARCHAR, run_id VARCHAR, item VARCHAR, source VARCHAR, batch VARCHAR, started_at TIMESTAMP, finished_at TIMESTAMP, " +
			"status VARCHAR, verdict VARCHAR, attempts INTEGER, max_attempts INTEGER, ended_stage VARCHAR, duration_ms DOUBLE, tokens DOUBLE, cost_usd DOUBLE, detail VARCHAR")}
	RecordAttempts = Table{"record_attempts", "one row per attempt at a record run's item", cols(
		"file_id INTEGER, system VARCHAR, run_id VARCHAR, item VARCHAR, source VARCHAR, attempt INTEGER, ts TIMESTAMP, passed BOOLEAN, stage VARCHAR, " +
			"class VARCHAR, exit_code INTEGER, command VARCHAR, error VARCHAR, signature VARCHAR, duration_ms DOUBLE, tokens DOUBLE, cost_usd DOUBLE")}
	RecordStages = Table{"record_stages", "one row per stage a record attempt ran", cols(
		"file_id INTEGER, system VARCHAR, run_id VARCHAR, item VARCHAR, source VARCHAR, attempt INTEGER, seq INTEGER, stage VARCHAR, passed BOOLEAN, " +
			"exit_code INTEGER, command VARCHAR, duration_ms DOUBLE, tokens DOUBLE, cost_usd DOUBLE, feedback VARCHAR")}
	// Calls and CallAttempts hold agents' model calls (records.Call):
	// OpenTelemetry GenAI spans and logs, Claude Code transcripts, Codex
	// rollouts.
	Calls = Table{"calls", "one row per logical model call an agent made", cols(
		"file_id INTEGER, system VARCHAR, run_id VARCHAR, session VARCHAR, call_id VARCHAR, source VARCHAR, line BIGINT, ts TIMESTAMP, " +
			"duration_ms DOUBLE, provider VARCHAR, model VARCHAR, operation VARCHAR, success BOOLEAN, error VARCHAR, error_type VARCHAR, " +
			"status_code INTEGER, attempts INTEGER, evidence VARCHAR, backoff_ms DOUBLE, " + tokenColumns +
			", failed_input_tokens DOUBLE, failed_output_tokens DOUBLE, failed_cost_usd DOUBLE, cache_write_1h_tokens DOUBLE")}
	CallAttempts = Table{"call_attempts", "one row per attempt of a call, where the record shows attempts one by one", cols(
		"file_id INTEGER, system VARCHAR, run_id VARCHAR, call_id VARCHAR, source VARCHAR, attempt INTEGER, ts TIMESTAMP, duration_ms DOUBLE, " +
			"success BOOLEAN, status_code INTEGER, error VARCHAR, backoff_ms DOUBLE, " + tokenColumns)}
	RecordConfigs = Table{"record_configs", "retry configuration files, such as orchestr8's retry-config.json", cols(
		"file_id INTEGER, system VARCHAR, config VARCHAR")}
	// FileStates is append-only: each commit adds a row per file it touched
	// and the files view shows the latest, so the common path never deletes.
	FileStates = Table{"file_states", "where ingest stopped in each source file, one row per commit that moved it", cols(
		"seq BIGINT, file_id INTEGER, path VARCHAR, kind VARCHAR, run_dir VARCHAR, size BIGINT, mtime TIMESTAMP, dev UBIGINT, inode UBIGINT, " +
			"byte_offset BIGINT, lines BIGINT, head_len INTEGER, head_sha256 VARCHAR, events BIGINT, quarantined BIGINT, ingested_at TIMESTAMP, " +
			"pairing VARCHAR")}
)

// DirStates records run directories' mtimes when they were listed, so an
// ingest can skip listing those that have not changed. Append-only too.
var DirStates = Table{"dir_states", "run directories as last listed", cols("seq BIGINT, path VARCHAR, mtime TIMESTAMP")}

// SealedDirs records run directories whose run had ended when an ingest
// read them whole: a cron ingest looks at such a directory's mtime only,
// not at its files, until it changes or a full pass (docs/ingest.md).
// Append-only too: a row with files < 0 unseals.
var SealedDirs = Table{"sealed_dirs", "run directories whose run had ended, looked at by their mtime alone", cols("seq BIGINT, path VARCHAR, mtime TIMESTAMP, files INTEGER")}

// FileTables lists every table whose rows come from one file, in the order
// they are replaced.
var FileTables = []Table{Events, RunSpans, RunEvents, Escalations, ProviderSelections, ProviderStarts, ProviderFinishes,
	L2Events, PatchEvents, VerificationEvents, Steps, L3Candidates, Diagnoses, JudgeCalls, Quarantine, Summaries,
	SummaryCosts, VerificationReports, RecordRuns, RecordAttempts, RecordStages, RecordConfigs, Calls, CallAttempts}

// ExecInvocations is what `orchstat exec` remembers between invocations,
// for seed 001's cascade detection. It is not derived from a file.
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
	`CREATE OR REPLACE VIEW files AS
	SELECT * EXCLUDE (seq) FROM file_states
	QUALIFY row_number() OVER (PARTITION BY file_id ORDER BY seq DESC) = 1`,

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
		`ALTER TABLE exec_invocations ADD COLUMN IF NOT EXISTS dir VARCHAR`}
	for _, t := range FileTables {
		stmts = append(stmts, t.ddl())
	}
	return stmts
}

func schemaStatements() []string { return append(tableStatements(), views...) }

// schemaHash identifies the DDL, so an open can tell whether it must run it.
func schemaHash() string {
	h := sha256.New()
	for _, s := range schemaStatements() {
		h.Write([]byte(s))
		h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil)[:8])
}

-- orchstat sql-views --dialect spark: the report's metrics as views over the lake at s3://ci-traces/orchstat.
-- Generated from orchstat's metric catalog; orchstat_metrics has one row per metric, as `report --lake` computes it over every run.
-- Checked: nothing yet: no Spark engine or parser was available where it was written.
-- Left out: failed_attempt_cost_usd: a failed attempt's cost, as a call's, is priced by orchstat's price table where none is recorded, and the lake holds only recorded costs.
-- Left out: call_cost_usd: a call's cost is its recorded cost, else its tokens priced by orchstat's price table (LiteLLM's, matched to the model's name in Go); the lake holds only recorded costs, so a sum over it would leave the priced calls out.

-- The lake's tables.
CREATE TABLE IF NOT EXISTS orchstat_run_spans (
  `file_id` INT,
  `run_id` STRING,
  `ts` TIMESTAMP_NTZ,
  `system` STRING,
  `day` DATE,
  `runner` STRING)
USING parquet
PARTITIONED BY (system, day, runner)
LOCATION 's3a://ci-traces/orchstat/run_spans';
MSCK REPAIR TABLE orchstat_run_spans;

CREATE TABLE IF NOT EXISTS orchstat_run_events (
  `file_id` INT,
  `run_id` STRING,
  `ts` TIMESTAMP_NTZ,
  `system` STRING,
  `day` DATE,
  `runner` STRING)
USING parquet
PARTITIONED BY (system, day, runner)
LOCATION 's3a://ci-traces/orchstat/run_events';
MSCK REPAIR TABLE orchstat_run_events;

CREATE TABLE IF NOT EXISTS orchstat_escalations (
  `file_id` INT,
  `run_id` STRING,
  `ts` TIMESTAMP_NTZ,
  `system` STRING,
  `day` DATE,
  `runner` STRING)
USING parquet
PARTITIONED BY (system, day, runner)
LOCATION 's3a://ci-traces/orchstat/escalations';
MSCK REPAIR TABLE orchstat_escalations;

CREATE TABLE IF NOT EXISTS orchstat_provider_request_finishes (
  `file_id` INT,
  `run_id` STRING,
  `ts` TIMESTAMP_NTZ,
  `system` STRING,
  `day` DATE,
  `runner` STRING)
USING parquet
PARTITIONED BY (system, day, runner)
LOCATION 's3a://ci-traces/orchstat/provider_request_finishes';
MSCK REPAIR TABLE orchstat_provider_request_finishes;

CREATE TABLE IF NOT EXISTS orchstat_l2_events (
  `file_id` INT,
  `run_id` STRING,
  `ts` TIMESTAMP_NTZ,
  `system` STRING,
  `day` DATE,
  `runner` STRING)
USING parquet
PARTITIONED BY (system, day, runner)
LOCATION 's3a://ci-traces/orchstat/l2_events';
MSCK REPAIR TABLE orchstat_l2_events;

CREATE TABLE IF NOT EXISTS orchstat_l3_candidates (
  `file_id` INT,
  `run_id` STRING,
  `ts` TIMESTAMP_NTZ,
  `system` STRING,
  `day` DATE,
  `runner` STRING)
USING parquet
PARTITIONED BY (system, day, runner)
LOCATION 's3a://ci-traces/orchstat/l3_candidates';
MSCK REPAIR TABLE orchstat_l3_candidates;

CREATE TABLE IF NOT EXISTS orchstat_diagnoses (
  `file_id` INT,
  `run_id` STRING,
  `ts` TIMESTAMP_NTZ,
  `system` STRING,
  `day` DATE,
  `runner` STRING)
USING parquet
PARTITIONED BY (system, day, runner)
LOCATION 's3a://ci-traces/orchstat/diagnoses';
MSCK REPAIR TABLE orchstat_diagnoses;

CREATE TABLE IF NOT EXISTS orchstat_judge_calls (
  `file_id` INT,
  `run_id` STRING,
  `ts` TIMESTAMP_NTZ,
  `system` STRING,
  `day` DATE,
  `runner` STRING)
USING parquet
PARTITIONED BY (system, day, runner)
LOCATION 's3a://ci-traces/orchstat/judge_calls';
MSCK REPAIR TABLE orchstat_judge_calls;

CREATE TABLE IF NOT EXISTS orchstat_record_runs (
  `file_id` INT,
  `run_id` STRING,
  `ts` TIMESTAMP_NTZ,
  `system` STRING,
  `day` DATE,
  `runner` STRING)
USING parquet
PARTITIONED BY (system, day, runner)
LOCATION 's3a://ci-traces/orchstat/record_runs';
MSCK REPAIR TABLE orchstat_record_runs;

CREATE TABLE IF NOT EXISTS orchstat_record_attempts (
  `file_id` INT,
  `run_id` STRING,
  `ts` TIMESTAMP_NTZ,
  `system` STRING,
  `day` DATE,
  `runner` STRING)
USING parquet
PARTITIONED BY (system, day, runner)
LOCATION 's3a://ci-traces/orchstat/record_attempts';
MSCK REPAIR TABLE orchstat_record_attempts;

CREATE TABLE IF NOT EXISTS orchstat_calls (
  `file_id` INT,
  `run_id` STRING,
  `ts` TIMESTAMP_NTZ,
  `system` STRING,
  `day` DATE,
  `runner` STRING)
USING parquet
PARTITIONED BY (system, day, runner)
LOCATION 's3a://ci-traces/orchstat/calls';
MSCK REPAIR TABLE orchstat_calls;

-- What the report's counts are made of.
-- every run: a run id with at least one event, on any runner
CREATE OR REPLACE VIEW orchstat_trace_runs AS
SELECT run_id, min(first_ts) AS start FROM orchstat_run_spans GROUP BY run_id;

-- per run, from provider_request_finishes: requests, requests_retried, requests_failed, request_retries
CREATE OR REPLACE VIEW orchstat_trace_run_provider_request_finishes AS
SELECT run_id,
  count(*) AS requests,
  coalesce(sum(CASE WHEN `retries` > 0 THEN 1 ELSE 0 END), 0) AS requests_retried,
  coalesce(sum(CASE WHEN `success` = false THEN 1 ELSE 0 END), 0) AS requests_failed,
  coalesce(sum(`retries`), 0) AS request_retries
FROM orchstat_provider_request_finishes
WHERE run_id IN (SELECT run_id FROM orchstat_trace_runs) GROUP BY run_id;

-- per run, from l2_events: l2_iterations, repair_max_iteration
CREATE OR REPLACE VIEW orchstat_trace_run_l2_events AS
SELECT run_id,
  coalesce(sum(CASE WHEN `type` = 'IterationStarted' THEN 1 ELSE 0 END), 0) AS l2_iterations,
  max(CASE WHEN `type` = 'RepairAttempted' AND `iteration` IS NOT NULL THEN `iteration` END) AS repair_max_iteration
FROM orchstat_l2_events
WHERE run_id IN (SELECT run_id FROM orchstat_trace_runs) GROUP BY run_id;

-- per run, from escalations: l2_escalations
CREATE OR REPLACE VIEW orchstat_trace_run_escalations AS
SELECT run_id,
  coalesce(sum(CASE WHEN `from_level` = 'L2' THEN 1 ELSE 0 END), 0) AS l2_escalations
FROM orchstat_escalations
WHERE run_id IN (SELECT run_id FROM orchstat_trace_runs) GROUP BY run_id;

-- per run, from l3_candidates: l3_steps, candidates, valid_candidates
CREATE OR REPLACE VIEW orchstat_trace_run_l3_candidates AS
SELECT run_id,
  count(DISTINCT `iteration` + 0.0) + coalesce(max(CASE WHEN `iteration` IS NULL THEN 1 ELSE 0 END), 0) AS l3_steps,
  count(*) AS candidates,
  coalesce(sum(CASE WHEN `valid` = true THEN 1 ELSE 0 END), 0) AS valid_candidates
FROM orchstat_l3_candidates
WHERE run_id IN (SELECT run_id FROM orchstat_trace_runs) GROUP BY run_id;

-- per run, from diagnoses: diagnosed_steps, diagnoses
CREATE OR REPLACE VIEW orchstat_trace_run_diagnoses AS
SELECT run_id,
  count(DISTINCT CASE WHEN `type` = 'DiagnosisStarted' THEN `iteration` + 0.0 END) + coalesce(max(CASE WHEN `type` = 'DiagnosisStarted' AND `iteration` IS NULL THEN 1 ELSE 0 END), 0) AS diagnosed_steps,
  coalesce(sum(CASE WHEN `type` = 'DiagnosisStarted' THEN 1 ELSE 0 END), 0) AS diagnoses
FROM orchstat_diagnoses
WHERE run_id IN (SELECT run_id FROM orchstat_trace_runs) GROUP BY run_id;

-- per run, from judge_calls: judge_invocations
CREATE OR REPLACE VIEW orchstat_trace_run_judge_calls AS
SELECT run_id,
  coalesce(sum(CASE WHEN `type` = 'JudgeInvoked' THEN 1 ELSE 0 END), 0) AS judge_invocations
FROM orchstat_judge_calls
WHERE run_id IN (SELECT run_id FROM orchstat_trace_runs) GROUP BY run_id;

-- per run, from run_events: failures_finished
CREATE OR REPLACE VIEW orchstat_trace_run_run_events AS
SELECT run_id,
  coalesce(sum(CASE WHEN `type` = 'RunFinished' AND `status` = 'failure' THEN 1 ELSE 0 END), 0) AS failures_finished
FROM orchstat_run_events
WHERE run_id IN (SELECT run_id FROM orchstat_trace_runs) GROUP BY run_id;

-- each run's counts; a run with no row of a table has 0 of its counts
CREATE OR REPLACE VIEW orchstat_trace_run_counts AS
SELECT r.run_id, coalesce(requests, 0) AS requests, coalesce(requests_retried, 0) AS requests_retried, coalesce(requests_failed, 0) AS requests_failed, coalesce(request_retries, 0) AS request_retries, coalesce(l2_iterations, 0) AS l2_iterations, repair_max_iteration, coalesce(l2_escalations, 0) AS l2_escalations, coalesce(l3_steps, 0) AS l3_steps, coalesce(candidates, 0) AS candidates, coalesce(valid_candidates, 0) AS valid_candidates, coalesce(diagnosed_steps, 0) AS diagnosed_steps, coalesce(diagnoses, 0) AS diagnoses, coalesce(judge_invocations, 0) AS judge_invocations, coalesce(failures_finished, 0) AS failures_finished
FROM orchstat_trace_runs r
LEFT JOIN orchstat_trace_run_provider_request_finishes USING (run_id)
LEFT JOIN orchstat_trace_run_l2_events USING (run_id)
LEFT JOIN orchstat_trace_run_escalations USING (run_id)
LEFT JOIN orchstat_trace_run_l3_candidates USING (run_id)
LEFT JOIN orchstat_trace_run_diagnoses USING (run_id)
LEFT JOIN orchstat_trace_run_judge_calls USING (run_id)
LEFT JOIN orchstat_trace_run_run_events USING (run_id);

-- the provider requests of the runs
CREATE OR REPLACE VIEW orchstat_trace_requests AS
SELECT * FROM orchstat_provider_request_finishes WHERE run_id IN (SELECT run_id FROM orchstat_trace_runs);

-- The trace family's counts: one row.
CREATE OR REPLACE VIEW orchstat_trace_counts AS
SELECT runs, requests, requests_retried, requests_failed, request_retries, l2_runs, l2_escalated, l2_or_escalated, repair_runs, repair_iterations, l3_steps, diagnosed_steps, diagnoses, judge_invocations, l3_runs, candidates, valid_candidates, failed_runs
FROM (SELECT count(*) AS runs,
     coalesce(sum(requests), 0) AS requests,
     coalesce(sum(requests_retried), 0) AS requests_retried,
     coalesce(sum(requests_failed), 0) AS requests_failed,
     coalesce(sum(request_retries), 0) AS request_retries,
     coalesce(sum(CASE WHEN l2_iterations > 0 THEN 1 ELSE 0 END), 0) AS l2_runs,
     coalesce(sum(CASE WHEN l2_escalations > 0 THEN 1 ELSE 0 END), 0) AS l2_escalated,
     coalesce(sum(CASE WHEN l2_iterations > 0 OR l2_escalations > 0 THEN 1 ELSE 0 END), 0) AS l2_or_escalated,
     coalesce(sum(CASE WHEN repair_max_iteration IS NOT NULL THEN 1 ELSE 0 END), 0) AS repair_runs,
     coalesce(sum(repair_max_iteration), 0) AS repair_iterations,
     coalesce(sum(l3_steps), 0) AS l3_steps,
     coalesce(sum(diagnosed_steps), 0) AS diagnosed_steps,
     coalesce(sum(diagnoses), 0) AS diagnoses,
     coalesce(sum(judge_invocations), 0) AS judge_invocations,
     coalesce(sum(CASE WHEN candidates > 0 THEN 1 ELSE 0 END), 0) AS l3_runs,
     coalesce(sum(candidates), 0) AS candidates,
     coalesce(sum(valid_candidates), 0) AS valid_candidates,
     coalesce(sum(CASE WHEN failures_finished > 0 THEN 1 ELSE 0 END), 0) AS failed_runs
   FROM orchstat_trace_run_counts) trace_run_counts;

-- The trace family's counts by provider, model.
CREATE OR REPLACE VIEW orchstat_trace_counts_by_provider_model AS
SELECT trace_requests.`provider`, trace_requests.`model`, trace_requests.requests, trace_requests.requests_retried, trace_requests.requests_failed, trace_requests.request_retries
FROM (SELECT coalesce(`provider`, '') AS `provider`, coalesce(`model`, '') AS `model`,
     count(*) AS requests,
     coalesce(sum(CASE WHEN `retries` > 0 THEN 1 ELSE 0 END), 0) AS requests_retried,
     coalesce(sum(CASE WHEN `success` = false THEN 1 ELSE 0 END), 0) AS requests_failed,
     coalesce(sum(`retries`), 0) AS request_retries
   FROM orchstat_trace_requests GROUP BY coalesce(`provider`, ''), coalesce(`model`, '')) trace_requests;

-- The trace family's metrics by provider, model, as the report splits them.
CREATE OR REPLACE VIEW orchstat_trace_metrics_by_provider_model AS
SELECT `provider`, `model`, 'provider_requests' AS metric, 'trace' AS family, 'count' AS kind, CAST(requests AS DOUBLE) AS value, CAST(NULL AS DOUBLE) AS numerator, CAST(NULL AS DOUBLE) AS denominator FROM orchstat_trace_counts_by_provider_model
UNION ALL
SELECT `provider`, `model`, 'provider_retry_rate' AS metric, 'trace' AS family, 'share' AS kind, CASE WHEN requests = 0 THEN CAST(NULL AS DOUBLE) ELSE CAST(requests_retried AS DOUBLE) / CAST(requests AS DOUBLE) END AS value, CAST(requests_retried AS DOUBLE) AS numerator, CAST(requests AS DOUBLE) AS denominator FROM orchstat_trace_counts_by_provider_model
UNION ALL
SELECT `provider`, `model`, 'provider_failure_rate' AS metric, 'trace' AS family, 'share' AS kind, CASE WHEN requests = 0 THEN CAST(NULL AS DOUBLE) ELSE CAST(requests_failed AS DOUBLE) / CAST(requests AS DOUBLE) END AS value, CAST(requests_failed AS DOUBLE) AS numerator, CAST(requests AS DOUBLE) AS denominator FROM orchstat_trace_counts_by_provider_model
UNION ALL
SELECT `provider`, `model`, 'provider_retries_total' AS metric, 'trace' AS family, 'count' AS kind, CAST(request_retries AS DOUBLE) AS value, CAST(NULL AS DOUBLE) AS numerator, CAST(NULL AS DOUBLE) AS denominator FROM orchstat_trace_counts_by_provider_model;

-- one row per record run: the most complete source (anything but failure briefs), then the newest file
CREATE OR REPLACE VIEW orchstat_record_runs_once AS
SELECT * FROM (
  SELECT r.*, row_number() OVER (PARTITION BY `system`, run_id
    ORDER BY CASE source WHEN 'brief' THEN 1 ELSE 0 END, runner DESC, file_id DESC) AS rank_
  FROM orchstat_record_runs r) x
WHERE rank_ = 1;

-- record runs that ran: queued work never did
CREATE OR REPLACE VIEW orchstat_record_runs_ran AS
SELECT * FROM orchstat_record_runs_once WHERE status IS NULL OR status <> 'queued';

-- the attempts of the source each run was taken from; one recorded in two files counts once, from the newest
CREATE OR REPLACE VIEW orchstat_record_attempts_once AS
SELECT * FROM (
  SELECT a.*, row_number() OVER (PARTITION BY a.`system`, a.run_id, a.attempt ORDER BY a.runner DESC, a.file_id DESC) AS rank_
  FROM orchstat_record_attempts a
  JOIN orchstat_record_runs_ran r ON a.`system` = r.`system` AND a.run_id = r.run_id AND a.source = r.source) x
WHERE rank_ = 1;

-- each attempt with the signature before it and whether an earlier attempt failed in a way no retry changes
CREATE OR REPLACE VIEW orchstat_record_attempts_scored AS
SELECT `system`, attempt, passed, signature,
  lag(signature) OVER (PARTITION BY `system`, run_id ORDER BY attempt) AS prev_signature,
  coalesce(max(CASE WHEN passed = false AND (class IN ('preflight', 'write_failed') OR (stage = 'acceptance_failed' AND substr(trim(coalesce(error, '')), 1, 34) = 'Failed to parse acceptance command')) THEN 1 ELSE 0 END)
    OVER (PARTITION BY `system`, run_id ORDER BY attempt ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING), 0) = 1 AS after_deterministic
FROM orchstat_record_attempts_once;

-- The record family's counts: one row.
CREATE OR REPLACE VIEW orchstat_record_counts AS
SELECT runs, retried, with_attempts, failed, finished, attempts_known, attempts_failed, retries, wasted, repeats
FROM (SELECT count(*) AS runs,
     coalesce(sum(CASE WHEN attempts > 1 THEN 1 ELSE 0 END), 0) AS retried,
     coalesce(sum(CASE WHEN attempts IS NOT NULL THEN 1 ELSE 0 END), 0) AS with_attempts,
     coalesce(sum(CASE WHEN status = 'failure' THEN 1 ELSE 0 END), 0) AS failed,
     coalesce(sum(CASE WHEN status IN ('success', 'failure') THEN 1 ELSE 0 END), 0) AS finished
   FROM orchstat_record_runs_ran) record_runs_ran
CROSS JOIN (SELECT coalesce(sum(CASE WHEN passed IS NOT NULL THEN 1 ELSE 0 END), 0) AS attempts_known,
     coalesce(sum(CASE WHEN passed = false THEN 1 ELSE 0 END), 0) AS attempts_failed,
     coalesce(sum(CASE WHEN attempt > 1 THEN 1 ELSE 0 END), 0) AS retries,
     coalesce(sum(CASE WHEN attempt > 1 AND after_deterministic THEN 1 ELSE 0 END), 0) AS wasted,
     coalesce(sum(CASE WHEN attempt > 1 AND passed = false AND signature IS NOT NULL AND signature = prev_signature THEN 1 ELSE 0 END), 0) AS repeats
   FROM orchstat_record_attempts_scored) record_attempts_scored;

-- The record family's counts by system.
CREATE OR REPLACE VIEW orchstat_record_counts_by_system AS
SELECT record_runs_ran.`system`, record_runs_ran.runs, record_runs_ran.retried, record_runs_ran.with_attempts, record_runs_ran.failed, record_runs_ran.finished, coalesce(record_attempts_scored.attempts_known, 0) AS attempts_known, coalesce(record_attempts_scored.attempts_failed, 0) AS attempts_failed, coalesce(record_attempts_scored.retries, 0) AS retries, coalesce(record_attempts_scored.wasted, 0) AS wasted, coalesce(record_attempts_scored.repeats, 0) AS repeats
FROM (SELECT coalesce(`system`, '') AS `system`,
     count(*) AS runs,
     coalesce(sum(CASE WHEN attempts > 1 THEN 1 ELSE 0 END), 0) AS retried,
     coalesce(sum(CASE WHEN attempts IS NOT NULL THEN 1 ELSE 0 END), 0) AS with_attempts,
     coalesce(sum(CASE WHEN status = 'failure' THEN 1 ELSE 0 END), 0) AS failed,
     coalesce(sum(CASE WHEN status IN ('success', 'failure') THEN 1 ELSE 0 END), 0) AS finished
   FROM orchstat_record_runs_ran GROUP BY coalesce(`system`, '')) record_runs_ran
LEFT JOIN (SELECT coalesce(`system`, '') AS `system`,
     coalesce(sum(CASE WHEN passed IS NOT NULL THEN 1 ELSE 0 END), 0) AS attempts_known,
     coalesce(sum(CASE WHEN passed = false THEN 1 ELSE 0 END), 0) AS attempts_failed,
     coalesce(sum(CASE WHEN attempt > 1 THEN 1 ELSE 0 END), 0) AS retries,
     coalesce(sum(CASE WHEN attempt > 1 AND after_deterministic THEN 1 ELSE 0 END), 0) AS wasted,
     coalesce(sum(CASE WHEN attempt > 1 AND passed = false AND signature IS NOT NULL AND signature = prev_signature THEN 1 ELSE 0 END), 0) AS repeats
   FROM orchstat_record_attempts_scored GROUP BY coalesce(`system`, '')) record_attempts_scored ON record_runs_ran.`system` = record_attempts_scored.`system`;

-- The record family's metrics by system, as the report splits them.
CREATE OR REPLACE VIEW orchstat_record_metrics_by_system AS
SELECT `system`, 'record_runs' AS metric, 'record' AS family, 'count' AS kind, CAST(runs AS DOUBLE) AS value, CAST(NULL AS DOUBLE) AS numerator, CAST(NULL AS DOUBLE) AS denominator FROM orchstat_record_counts_by_system
UNION ALL
SELECT `system`, 'record_retry_rate' AS metric, 'record' AS family, 'share' AS kind, CASE WHEN with_attempts = 0 THEN CAST(NULL AS DOUBLE) ELSE CAST(retried AS DOUBLE) / CAST(with_attempts AS DOUBLE) END AS value, CAST(retried AS DOUBLE) AS numerator, CAST(with_attempts AS DOUBLE) AS denominator FROM orchstat_record_counts_by_system
UNION ALL
SELECT `system`, 'record_failure_rate' AS metric, 'record' AS family, 'share' AS kind, CASE WHEN finished = 0 THEN CAST(NULL AS DOUBLE) ELSE CAST(failed AS DOUBLE) / CAST(finished AS DOUBLE) END AS value, CAST(failed AS DOUBLE) AS numerator, CAST(finished AS DOUBLE) AS denominator FROM orchstat_record_counts_by_system
UNION ALL
SELECT `system`, 'attempt_failure_rate' AS metric, 'record' AS family, 'share' AS kind, CASE WHEN attempts_known = 0 THEN CAST(NULL AS DOUBLE) ELSE CAST(attempts_failed AS DOUBLE) / CAST(attempts_known AS DOUBLE) END AS value, CAST(attempts_failed AS DOUBLE) AS numerator, CAST(attempts_known AS DOUBLE) AS denominator FROM orchstat_record_counts_by_system
UNION ALL
SELECT `system`, 'wasted_attempt_rate' AS metric, 'record' AS family, 'share' AS kind, CASE WHEN retries = 0 THEN CAST(NULL AS DOUBLE) ELSE CAST(wasted AS DOUBLE) / CAST(retries AS DOUBLE) END AS value, CAST(wasted AS DOUBLE) AS numerator, CAST(retries AS DOUBLE) AS denominator FROM orchstat_record_counts_by_system
UNION ALL
SELECT `system`, 'signature_repeat_rate' AS metric, 'record' AS family, 'share' AS kind, CASE WHEN retries = 0 THEN CAST(NULL AS DOUBLE) ELSE CAST(repeats AS DOUBLE) / CAST(retries AS DOUBLE) END AS value, CAST(repeats AS DOUBLE) AS numerator, CAST(retries AS DOUBLE) AS denominator FROM orchstat_record_counts_by_system;

-- each call once, by system, session and call id; calls without an id each count
CREATE OR REPLACE VIEW orchstat_calls_once AS
SELECT * FROM (
  SELECT c.*, row_number() OVER (PARTITION BY `system`, session, call_id
    ORDER BY CASE WHEN run_id = session OR (run_id IS NULL AND session IS NULL) THEN 0 ELSE 1 END, runner, file_id, line) AS rank_
  FROM orchstat_calls c) x
WHERE call_id IS NULL OR rank_ = 1;

-- the calls whose record run ran
CREATE OR REPLACE VIEW orchstat_calls_in_scope AS
SELECT c.* FROM orchstat_calls_once c
JOIN (SELECT DISTINCT `system`, run_id FROM orchstat_record_runs_ran) r ON c.`system` = r.`system` AND c.run_id = r.run_id;

-- The call family's counts: one row.
CREATE OR REPLACE VIEW orchstat_call_counts AS
SELECT calls, failed, known, with_attempts, attempts, retried, backoff_ms, tokens, input_tokens, cache_read_tokens, cache_write_tokens, output_tokens, reasoning_tokens, failed_tokens, attempts - with_attempts AS retries, calls - with_attempts AS attempts_unknown, backoff_ms / 1000.0 AS backoff_seconds
FROM (SELECT count(*) AS calls,
     coalesce(sum(CASE WHEN success = false THEN 1 ELSE 0 END), 0) AS failed,
     coalesce(sum(CASE WHEN success IS NOT NULL THEN 1 ELSE 0 END), 0) AS known,
     coalesce(sum(CASE WHEN attempts IS NOT NULL THEN 1 ELSE 0 END), 0) AS with_attempts,
     coalesce(sum(attempts), 0) AS attempts,
     coalesce(sum(CASE WHEN attempts > 1 THEN 1 ELSE 0 END), 0) AS retried,
     sum(backoff_ms) AS backoff_ms,
     sum(CASE WHEN input_tokens IS NOT NULL OR cache_read_tokens IS NOT NULL OR cache_write_tokens IS NOT NULL OR output_tokens IS NOT NULL THEN coalesce(input_tokens, 0) + coalesce(cache_read_tokens, 0) + coalesce(cache_write_tokens, 0) + coalesce(output_tokens, 0) END) AS tokens,
     sum(input_tokens) AS input_tokens,
     sum(cache_read_tokens) AS cache_read_tokens,
     sum(cache_write_tokens) AS cache_write_tokens,
     sum(output_tokens) AS output_tokens,
     sum(reasoning_tokens) AS reasoning_tokens,
     sum(CASE WHEN failed_input_tokens IS NOT NULL OR failed_output_tokens IS NOT NULL THEN coalesce(failed_input_tokens, 0) + coalesce(failed_output_tokens, 0) END) AS failed_tokens
   FROM orchstat_calls_in_scope) calls_in_scope;

-- The call family's counts by system.
CREATE OR REPLACE VIEW orchstat_call_counts_by_system AS
SELECT calls_in_scope.`system`, calls_in_scope.calls, calls_in_scope.failed, calls_in_scope.known, calls_in_scope.with_attempts, calls_in_scope.attempts, calls_in_scope.retried, calls_in_scope.backoff_ms, calls_in_scope.tokens, calls_in_scope.input_tokens, calls_in_scope.cache_read_tokens, calls_in_scope.cache_write_tokens, calls_in_scope.output_tokens, calls_in_scope.reasoning_tokens, calls_in_scope.failed_tokens, attempts - with_attempts AS retries, calls - with_attempts AS attempts_unknown, backoff_ms / 1000.0 AS backoff_seconds
FROM (SELECT coalesce(`system`, '') AS `system`,
     count(*) AS calls,
     coalesce(sum(CASE WHEN success = false THEN 1 ELSE 0 END), 0) AS failed,
     coalesce(sum(CASE WHEN success IS NOT NULL THEN 1 ELSE 0 END), 0) AS known,
     coalesce(sum(CASE WHEN attempts IS NOT NULL THEN 1 ELSE 0 END), 0) AS with_attempts,
     coalesce(sum(attempts), 0) AS attempts,
     coalesce(sum(CASE WHEN attempts > 1 THEN 1 ELSE 0 END), 0) AS retried,
     sum(backoff_ms) AS backoff_ms,
     sum(CASE WHEN input_tokens IS NOT NULL OR cache_read_tokens IS NOT NULL OR cache_write_tokens IS NOT NULL OR output_tokens IS NOT NULL THEN coalesce(input_tokens, 0) + coalesce(cache_read_tokens, 0) + coalesce(cache_write_tokens, 0) + coalesce(output_tokens, 0) END) AS tokens,
     sum(input_tokens) AS input_tokens,
     sum(cache_read_tokens) AS cache_read_tokens,
     sum(cache_write_tokens) AS cache_write_tokens,
     sum(output_tokens) AS output_tokens,
     sum(reasoning_tokens) AS reasoning_tokens,
     sum(CASE WHEN failed_input_tokens IS NOT NULL OR failed_output_tokens IS NOT NULL THEN coalesce(failed_input_tokens, 0) + coalesce(failed_output_tokens, 0) END) AS failed_tokens
   FROM orchstat_calls_in_scope GROUP BY coalesce(`system`, '')) calls_in_scope;

-- The call family's metrics by system, as the report splits them.
CREATE OR REPLACE VIEW orchstat_call_metrics_by_system AS
SELECT `system`, 'calls' AS metric, 'call' AS family, 'count' AS kind, CAST(calls AS DOUBLE) AS value, CAST(NULL AS DOUBLE) AS numerator, CAST(NULL AS DOUBLE) AS denominator FROM orchstat_call_counts_by_system
UNION ALL
SELECT `system`, 'call_retry_rate' AS metric, 'call' AS family, 'share' AS kind, CASE WHEN with_attempts = 0 THEN CAST(NULL AS DOUBLE) ELSE CAST(retried AS DOUBLE) / CAST(with_attempts AS DOUBLE) END AS value, CAST(retried AS DOUBLE) AS numerator, CAST(with_attempts AS DOUBLE) AS denominator FROM orchstat_call_counts_by_system
UNION ALL
SELECT `system`, 'call_failure_rate' AS metric, 'call' AS family, 'share' AS kind, CASE WHEN known = 0 THEN CAST(NULL AS DOUBLE) ELSE CAST(failed AS DOUBLE) / CAST(known AS DOUBLE) END AS value, CAST(failed AS DOUBLE) AS numerator, CAST(known AS DOUBLE) AS denominator FROM orchstat_call_counts_by_system
UNION ALL
SELECT `system`, 'call_retries_total' AS metric, 'call' AS family, 'count' AS kind, CAST(retries AS DOUBLE) AS value, CAST(NULL AS DOUBLE) AS numerator, CAST(NULL AS DOUBLE) AS denominator FROM orchstat_call_counts_by_system
UNION ALL
SELECT `system`, 'attempts_per_call' AS metric, 'call' AS family, 'average' AS kind, CASE WHEN with_attempts = 0 THEN CAST(NULL AS DOUBLE) ELSE CAST(attempts AS DOUBLE) / CAST(with_attempts AS DOUBLE) END AS value, CAST(attempts AS DOUBLE) AS numerator, CAST(with_attempts AS DOUBLE) AS denominator FROM orchstat_call_counts_by_system
UNION ALL
SELECT `system`, 'calls_attempts_unknown' AS metric, 'call' AS family, 'count' AS kind, CAST(attempts_unknown AS DOUBLE) AS value, CAST(NULL AS DOUBLE) AS numerator, CAST(NULL AS DOUBLE) AS denominator FROM orchstat_call_counts_by_system
UNION ALL
SELECT `system`, 'call_backoff_seconds' AS metric, 'call' AS family, 'sum' AS kind, CAST(backoff_seconds AS DOUBLE) AS value, CAST(NULL AS DOUBLE) AS numerator, CAST(NULL AS DOUBLE) AS denominator FROM orchstat_call_counts_by_system
UNION ALL
SELECT `system`, 'failed_attempt_tokens' AS metric, 'call' AS family, 'sum' AS kind, CAST(failed_tokens AS DOUBLE) AS value, CAST(NULL AS DOUBLE) AS numerator, CAST(NULL AS DOUBLE) AS denominator FROM orchstat_call_counts_by_system
UNION ALL
SELECT `system`, 'call_input_tokens' AS metric, 'call' AS family, 'sum' AS kind, CAST(input_tokens AS DOUBLE) AS value, CAST(NULL AS DOUBLE) AS numerator, CAST(NULL AS DOUBLE) AS denominator FROM orchstat_call_counts_by_system
UNION ALL
SELECT `system`, 'call_cache_read_tokens' AS metric, 'call' AS family, 'sum' AS kind, CAST(cache_read_tokens AS DOUBLE) AS value, CAST(NULL AS DOUBLE) AS numerator, CAST(NULL AS DOUBLE) AS denominator FROM orchstat_call_counts_by_system
UNION ALL
SELECT `system`, 'call_cache_write_tokens' AS metric, 'call' AS family, 'sum' AS kind, CAST(cache_write_tokens AS DOUBLE) AS value, CAST(NULL AS DOUBLE) AS numerator, CAST(NULL AS DOUBLE) AS denominator FROM orchstat_call_counts_by_system
UNION ALL
SELECT `system`, 'call_output_tokens' AS metric, 'call' AS family, 'sum' AS kind, CAST(output_tokens AS DOUBLE) AS value, CAST(NULL AS DOUBLE) AS numerator, CAST(NULL AS DOUBLE) AS denominator FROM orchstat_call_counts_by_system;

-- The call family's counts by system, provider, model.
CREATE OR REPLACE VIEW orchstat_call_counts_by_system_provider_model AS
SELECT calls_in_scope.`system`, calls_in_scope.`provider`, calls_in_scope.`model`, calls_in_scope.calls, calls_in_scope.failed, calls_in_scope.known, calls_in_scope.with_attempts, calls_in_scope.attempts, calls_in_scope.retried, calls_in_scope.backoff_ms, calls_in_scope.tokens, calls_in_scope.input_tokens, calls_in_scope.cache_read_tokens, calls_in_scope.cache_write_tokens, calls_in_scope.output_tokens, calls_in_scope.reasoning_tokens, calls_in_scope.failed_tokens, attempts - with_attempts AS retries, calls - with_attempts AS attempts_unknown, backoff_ms / 1000.0 AS backoff_seconds
FROM (SELECT coalesce(`system`, '') AS `system`, coalesce(`provider`, '') AS `provider`, coalesce(`model`, '') AS `model`,
     count(*) AS calls,
     coalesce(sum(CASE WHEN success = false THEN 1 ELSE 0 END), 0) AS failed,
     coalesce(sum(CASE WHEN success IS NOT NULL THEN 1 ELSE 0 END), 0) AS known,
     coalesce(sum(CASE WHEN attempts IS NOT NULL THEN 1 ELSE 0 END), 0) AS with_attempts,
     coalesce(sum(attempts), 0) AS attempts,
     coalesce(sum(CASE WHEN attempts > 1 THEN 1 ELSE 0 END), 0) AS retried,
     sum(backoff_ms) AS backoff_ms,
     sum(CASE WHEN input_tokens IS NOT NULL OR cache_read_tokens IS NOT NULL OR cache_write_tokens IS NOT NULL OR output_tokens IS NOT NULL THEN coalesce(input_tokens, 0) + coalesce(cache_read_tokens, 0) + coalesce(cache_write_tokens, 0) + coalesce(output_tokens, 0) END) AS tokens,
     sum(input_tokens) AS input_tokens,
     sum(cache_read_tokens) AS cache_read_tokens,
     sum(cache_write_tokens) AS cache_write_tokens,
     sum(output_tokens) AS output_tokens,
     sum(reasoning_tokens) AS reasoning_tokens,
     sum(CASE WHEN failed_input_tokens IS NOT NULL OR failed_output_tokens IS NOT NULL THEN coalesce(failed_input_tokens, 0) + coalesce(failed_output_tokens, 0) END) AS failed_tokens
   FROM orchstat_calls_in_scope GROUP BY coalesce(`system`, ''), coalesce(`provider`, ''), coalesce(`model`, '')) calls_in_scope;

-- The call family's metrics by system, provider, model, as the report splits them.
CREATE OR REPLACE VIEW orchstat_call_metrics_by_system_provider_model AS
SELECT `system`, `provider`, `model`, 'calls' AS metric, 'call' AS family, 'count' AS kind, CAST(calls AS DOUBLE) AS value, CAST(NULL AS DOUBLE) AS numerator, CAST(NULL AS DOUBLE) AS denominator FROM orchstat_call_counts_by_system_provider_model
UNION ALL
SELECT `system`, `provider`, `model`, 'call_retry_rate' AS metric, 'call' AS family, 'share' AS kind, CASE WHEN with_attempts = 0 THEN CAST(NULL AS DOUBLE) ELSE CAST(retried AS DOUBLE) / CAST(with_attempts AS DOUBLE) END AS value, CAST(retried AS DOUBLE) AS numerator, CAST(with_attempts AS DOUBLE) AS denominator FROM orchstat_call_counts_by_system_provider_model
UNION ALL
SELECT `system`, `provider`, `model`, 'call_failure_rate' AS metric, 'call' AS family, 'share' AS kind, CASE WHEN known = 0 THEN CAST(NULL AS DOUBLE) ELSE CAST(failed AS DOUBLE) / CAST(known AS DOUBLE) END AS value, CAST(failed AS DOUBLE) AS numerator, CAST(known AS DOUBLE) AS denominator FROM orchstat_call_counts_by_system_provider_model
UNION ALL
SELECT `system`, `provider`, `model`, 'call_retries_total' AS metric, 'call' AS family, 'count' AS kind, CAST(retries AS DOUBLE) AS value, CAST(NULL AS DOUBLE) AS numerator, CAST(NULL AS DOUBLE) AS denominator FROM orchstat_call_counts_by_system_provider_model
UNION ALL
SELECT `system`, `provider`, `model`, 'attempts_per_call' AS metric, 'call' AS family, 'average' AS kind, CASE WHEN with_attempts = 0 THEN CAST(NULL AS DOUBLE) ELSE CAST(attempts AS DOUBLE) / CAST(with_attempts AS DOUBLE) END AS value, CAST(attempts AS DOUBLE) AS numerator, CAST(with_attempts AS DOUBLE) AS denominator FROM orchstat_call_counts_by_system_provider_model
UNION ALL
SELECT `system`, `provider`, `model`, 'calls_attempts_unknown' AS metric, 'call' AS family, 'count' AS kind, CAST(attempts_unknown AS DOUBLE) AS value, CAST(NULL AS DOUBLE) AS numerator, CAST(NULL AS DOUBLE) AS denominator FROM orchstat_call_counts_by_system_provider_model
UNION ALL
SELECT `system`, `provider`, `model`, 'call_backoff_seconds' AS metric, 'call' AS family, 'sum' AS kind, CAST(backoff_seconds AS DOUBLE) AS value, CAST(NULL AS DOUBLE) AS numerator, CAST(NULL AS DOUBLE) AS denominator FROM orchstat_call_counts_by_system_provider_model
UNION ALL
SELECT `system`, `provider`, `model`, 'failed_attempt_tokens' AS metric, 'call' AS family, 'sum' AS kind, CAST(failed_tokens AS DOUBLE) AS value, CAST(NULL AS DOUBLE) AS numerator, CAST(NULL AS DOUBLE) AS denominator FROM orchstat_call_counts_by_system_provider_model
UNION ALL
SELECT `system`, `provider`, `model`, 'call_input_tokens' AS metric, 'call' AS family, 'sum' AS kind, CAST(input_tokens AS DOUBLE) AS value, CAST(NULL AS DOUBLE) AS numerator, CAST(NULL AS DOUBLE) AS denominator FROM orchstat_call_counts_by_system_provider_model
UNION ALL
SELECT `system`, `provider`, `model`, 'call_cache_read_tokens' AS metric, 'call' AS family, 'sum' AS kind, CAST(cache_read_tokens AS DOUBLE) AS value, CAST(NULL AS DOUBLE) AS numerator, CAST(NULL AS DOUBLE) AS denominator FROM orchstat_call_counts_by_system_provider_model
UNION ALL
SELECT `system`, `provider`, `model`, 'call_cache_write_tokens' AS metric, 'call' AS family, 'sum' AS kind, CAST(cache_write_tokens AS DOUBLE) AS value, CAST(NULL AS DOUBLE) AS numerator, CAST(NULL AS DOUBLE) AS denominator FROM orchstat_call_counts_by_system_provider_model
UNION ALL
SELECT `system`, `provider`, `model`, 'call_output_tokens' AS metric, 'call' AS family, 'sum' AS kind, CAST(output_tokens AS DOUBLE) AS value, CAST(NULL AS DOUBLE) AS numerator, CAST(NULL AS DOUBLE) AS denominator FROM orchstat_call_counts_by_system_provider_model;

-- One row per metric: value, and for a ratio its numerator and denominator (no value when the denominator is 0).
CREATE OR REPLACE VIEW orchstat_metrics AS
SELECT 'runs' AS metric, 'trace' AS family, 'count' AS kind, CAST(runs AS DOUBLE) AS value, CAST(NULL AS DOUBLE) AS numerator, CAST(NULL AS DOUBLE) AS denominator FROM orchstat_trace_counts
UNION ALL
SELECT 'provider_requests' AS metric, 'trace' AS family, 'count' AS kind, CAST(requests AS DOUBLE) AS value, CAST(NULL AS DOUBLE) AS numerator, CAST(NULL AS DOUBLE) AS denominator FROM orchstat_trace_counts
UNION ALL
SELECT 'provider_retry_rate' AS metric, 'trace' AS family, 'share' AS kind, CASE WHEN requests = 0 THEN CAST(NULL AS DOUBLE) ELSE CAST(requests_retried AS DOUBLE) / CAST(requests AS DOUBLE) END AS value, CAST(requests_retried AS DOUBLE) AS numerator, CAST(requests AS DOUBLE) AS denominator FROM orchstat_trace_counts
UNION ALL
SELECT 'provider_failure_rate' AS metric, 'trace' AS family, 'share' AS kind, CASE WHEN requests = 0 THEN CAST(NULL AS DOUBLE) ELSE CAST(requests_failed AS DOUBLE) / CAST(requests AS DOUBLE) END AS value, CAST(requests_failed AS DOUBLE) AS numerator, CAST(requests AS DOUBLE) AS denominator FROM orchstat_trace_counts
UNION ALL
SELECT 'provider_retries_total' AS metric, 'trace' AS family, 'count' AS kind, CAST(request_retries AS DOUBLE) AS value, CAST(NULL AS DOUBLE) AS numerator, CAST(NULL AS DOUBLE) AS denominator FROM orchstat_trace_counts
UNION ALL
SELECT 'l2_runs' AS metric, 'trace' AS family, 'count' AS kind, CAST(l2_runs AS DOUBLE) AS value, CAST(NULL AS DOUBLE) AS numerator, CAST(NULL AS DOUBLE) AS denominator FROM orchstat_trace_counts
UNION ALL
SELECT 'l2_escalation_rate' AS metric, 'trace' AS family, 'share' AS kind, CASE WHEN l2_or_escalated = 0 THEN CAST(NULL AS DOUBLE) ELSE CAST(l2_escalated AS DOUBLE) / CAST(l2_or_escalated AS DOUBLE) END AS value, CAST(l2_escalated AS DOUBLE) AS numerator, CAST(l2_or_escalated AS DOUBLE) AS denominator FROM orchstat_trace_counts
UNION ALL
SELECT 'avg_repair_iterations' AS metric, 'trace' AS family, 'average' AS kind, CASE WHEN repair_runs = 0 THEN CAST(NULL AS DOUBLE) ELSE CAST(repair_iterations AS DOUBLE) / CAST(repair_runs AS DOUBLE) END AS value, CAST(repair_iterations AS DOUBLE) AS numerator, CAST(repair_runs AS DOUBLE) AS denominator FROM orchstat_trace_counts
UNION ALL
SELECT 'l3_steps' AS metric, 'trace' AS family, 'count' AS kind, CAST(l3_steps AS DOUBLE) AS value, CAST(NULL AS DOUBLE) AS numerator, CAST(NULL AS DOUBLE) AS denominator FROM orchstat_trace_counts
UNION ALL
SELECT 'l3_diagnosis_rate' AS metric, 'trace' AS family, 'share' AS kind, CASE WHEN l3_steps = 0 THEN CAST(NULL AS DOUBLE) ELSE CAST(diagnosed_steps AS DOUBLE) / CAST(l3_steps AS DOUBLE) END AS value, CAST(diagnosed_steps AS DOUBLE) AS numerator, CAST(l3_steps AS DOUBLE) AS denominator FROM orchstat_trace_counts
UNION ALL
SELECT 'diagnoses_per_l3_run' AS metric, 'trace' AS family, 'average' AS kind, CASE WHEN l3_runs = 0 THEN CAST(NULL AS DOUBLE) ELSE CAST(diagnoses AS DOUBLE) / CAST(l3_runs AS DOUBLE) END AS value, CAST(diagnoses AS DOUBLE) AS numerator, CAST(l3_runs AS DOUBLE) AS denominator FROM orchstat_trace_counts
UNION ALL
SELECT 'judge_invocations_per_l3_run' AS metric, 'trace' AS family, 'average' AS kind, CASE WHEN l3_runs = 0 THEN CAST(NULL AS DOUBLE) ELSE CAST(judge_invocations AS DOUBLE) / CAST(l3_runs AS DOUBLE) END AS value, CAST(judge_invocations AS DOUBLE) AS numerator, CAST(l3_runs AS DOUBLE) AS denominator FROM orchstat_trace_counts
UNION ALL
SELECT 'candidate_validity_rate' AS metric, 'trace' AS family, 'share' AS kind, CASE WHEN candidates = 0 THEN CAST(NULL AS DOUBLE) ELSE CAST(valid_candidates AS DOUBLE) / CAST(candidates AS DOUBLE) END AS value, CAST(valid_candidates AS DOUBLE) AS numerator, CAST(candidates AS DOUBLE) AS denominator FROM orchstat_trace_counts
UNION ALL
SELECT 'failed_runs' AS metric, 'trace' AS family, 'count' AS kind, CAST(failed_runs AS DOUBLE) AS value, CAST(NULL AS DOUBLE) AS numerator, CAST(NULL AS DOUBLE) AS denominator FROM orchstat_trace_counts
UNION ALL
SELECT 'record_runs' AS metric, 'record' AS family, 'count' AS kind, CAST(runs AS DOUBLE) AS value, CAST(NULL AS DOUBLE) AS numerator, CAST(NULL AS DOUBLE) AS denominator FROM orchstat_record_counts
UNION ALL
SELECT 'record_retry_rate' AS metric, 'record' AS family, 'share' AS kind, CASE WHEN with_attempts = 0 THEN CAST(NULL AS DOUBLE) ELSE CAST(retried AS DOUBLE) / CAST(with_attempts AS DOUBLE) END AS value, CAST(retried AS DOUBLE) AS numerator, CAST(with_attempts AS DOUBLE) AS denominator FROM orchstat_record_counts
UNION ALL
SELECT 'record_failure_rate' AS metric, 'record' AS family, 'share' AS kind, CASE WHEN finished = 0 THEN CAST(NULL AS DOUBLE) ELSE CAST(failed AS DOUBLE) / CAST(finished AS DOUBLE) END AS value, CAST(failed AS DOUBLE) AS numerator, CAST(finished AS DOUBLE) AS denominator FROM orchstat_record_counts
UNION ALL
SELECT 'attempt_failure_rate' AS metric, 'record' AS family, 'share' AS kind, CASE WHEN attempts_known = 0 THEN CAST(NULL AS DOUBLE) ELSE CAST(attempts_failed AS DOUBLE) / CAST(attempts_known AS DOUBLE) END AS value, CAST(attempts_failed AS DOUBLE) AS numerator, CAST(attempts_known AS DOUBLE) AS denominator FROM orchstat_record_counts
UNION ALL
SELECT 'wasted_attempt_rate' AS metric, 'record' AS family, 'share' AS kind, CASE WHEN retries = 0 THEN CAST(NULL AS DOUBLE) ELSE CAST(wasted AS DOUBLE) / CAST(retries AS DOUBLE) END AS value, CAST(wasted AS DOUBLE) AS numerator, CAST(retries AS DOUBLE) AS denominator FROM orchstat_record_counts
UNION ALL
SELECT 'signature_repeat_rate' AS metric, 'record' AS family, 'share' AS kind, CASE WHEN retries = 0 THEN CAST(NULL AS DOUBLE) ELSE CAST(repeats AS DOUBLE) / CAST(retries AS DOUBLE) END AS value, CAST(repeats AS DOUBLE) AS numerator, CAST(retries AS DOUBLE) AS denominator FROM orchstat_record_counts
UNION ALL
SELECT 'calls' AS metric, 'call' AS family, 'count' AS kind, CAST(calls AS DOUBLE) AS value, CAST(NULL AS DOUBLE) AS numerator, CAST(NULL AS DOUBLE) AS denominator FROM orchstat_call_counts
UNION ALL
SELECT 'call_retry_rate' AS metric, 'call' AS family, 'share' AS kind, CASE WHEN with_attempts = 0 THEN CAST(NULL AS DOUBLE) ELSE CAST(retried AS DOUBLE) / CAST(with_attempts AS DOUBLE) END AS value, CAST(retried AS DOUBLE) AS numerator, CAST(with_attempts AS DOUBLE) AS denominator FROM orchstat_call_counts
UNION ALL
SELECT 'call_failure_rate' AS metric, 'call' AS family, 'share' AS kind, CASE WHEN known = 0 THEN CAST(NULL AS DOUBLE) ELSE CAST(failed AS DOUBLE) / CAST(known AS DOUBLE) END AS value, CAST(failed AS DOUBLE) AS numerator, CAST(known AS DOUBLE) AS denominator FROM orchstat_call_counts
UNION ALL
SELECT 'call_retries_total' AS metric, 'call' AS family, 'count' AS kind, CAST(retries AS DOUBLE) AS value, CAST(NULL AS DOUBLE) AS numerator, CAST(NULL AS DOUBLE) AS denominator FROM orchstat_call_counts
UNION ALL
SELECT 'attempts_per_call' AS metric, 'call' AS family, 'average' AS kind, CASE WHEN with_attempts = 0 THEN CAST(NULL AS DOUBLE) ELSE CAST(attempts AS DOUBLE) / CAST(with_attempts AS DOUBLE) END AS value, CAST(attempts AS DOUBLE) AS numerator, CAST(with_attempts AS DOUBLE) AS denominator FROM orchstat_call_counts
UNION ALL
SELECT 'calls_attempts_unknown' AS metric, 'call' AS family, 'count' AS kind, CAST(attempts_unknown AS DOUBLE) AS value, CAST(NULL AS DOUBLE) AS numerator, CAST(NULL AS DOUBLE) AS denominator FROM orchstat_call_counts
UNION ALL
SELECT 'call_backoff_seconds' AS metric, 'call' AS family, 'sum' AS kind, CAST(backoff_seconds AS DOUBLE) AS value, CAST(NULL AS DOUBLE) AS numerator, CAST(NULL AS DOUBLE) AS denominator FROM orchstat_call_counts
UNION ALL
SELECT 'failed_attempt_tokens' AS metric, 'call' AS family, 'sum' AS kind, CAST(failed_tokens AS DOUBLE) AS value, CAST(NULL AS DOUBLE) AS numerator, CAST(NULL AS DOUBLE) AS denominator FROM orchstat_call_counts
UNION ALL
SELECT 'call_input_tokens' AS metric, 'call' AS family, 'sum' AS kind, CAST(input_tokens AS DOUBLE) AS value, CAST(NULL AS DOUBLE) AS numerator, CAST(NULL AS DOUBLE) AS denominator FROM orchstat_call_counts
UNION ALL
SELECT 'call_cache_read_tokens' AS metric, 'call' AS family, 'sum' AS kind, CAST(cache_read_tokens AS DOUBLE) AS value, CAST(NULL AS DOUBLE) AS numerator, CAST(NULL AS DOUBLE) AS denominator FROM orchstat_call_counts
UNION ALL
SELECT 'call_cache_write_tokens' AS metric, 'call' AS family, 'sum' AS kind, CAST(cache_write_tokens AS DOUBLE) AS value, CAST(NULL AS DOUBLE) AS numerator, CAST(NULL AS DOUBLE) AS denominator FROM orchstat_call_counts
UNION ALL
SELECT 'call_output_tokens' AS metric, 'call' AS family, 'sum' AS kind, CAST(output_tokens AS DOUBLE) AS value, CAST(NULL AS DOUBLE) AS numerator, CAST(NULL AS DOUBLE) AS denominator FROM orchstat_call_counts;

-- The catalog's metrics these views leave out, and why.
CREATE OR REPLACE VIEW orchstat_metrics_left_out AS
SELECT 'failed_attempt_cost_usd' AS metric, 'a failed attempt''s cost, as a call''s, is priced by orchstat''s price table where none is recorded, and the lake holds only recorded costs' AS why
UNION ALL
SELECT 'call_cost_usd' AS metric, 'a call''s cost is its recorded cost, else its tokens priced by orchstat''s price table (LiteLLM''s, matched to the model''s name in Go); the lake holds only recorded costs, so a sum over it would leave the priced calls out' AS why;

// Package rows declares the store's tables that ingest fills, one Go
// struct per table: a field's `col` tag is its column and SQL type, in
// column order, and its `doc` tag what docs/schema.md says of it beyond
// that. The store derives its DDL, its schema doc and how a row's values
// reach DuckDB (query's chunk feed) from these declarations alone, so a
// column is declared once (see Set for how a table is named).
//
// A pointer field is a nullable column: nil is NULL.
package rows

import "time"

// Set holds rows of the file tables, the tables whose rows come from one
// source file, one slice per table, in the order a file's rows are
// replaced. A field's `table` tag names the table and `holds` says what
// it holds. Every such table starts with file_id, so a file's rows can be
// replaced as a unit.
type Set struct {
	// Events' strings are stored as read: the trace parser gave valid
	// UTF-8, and checking every payload again would cost a cold ingest.
	Events []Event `table:"events" holds:"every accepted trace line" strings:"verbatim"`
	// RunSpans summarises each chunk of a file's events per run, so
	// reports find runs and their time spans without scanning events.
	RunSpans           []RunSpan           `table:"run_spans" holds:"the span and count of each run's events, per file and ingest chunk"`
	RunEvents          []RunEvent          `table:"run_events" holds:"RunStarted, RunFinished and RunStopped"`
	Escalations        []Escalation        `table:"escalations" holds:"RunEscalated"`
	ProviderSelections []ProviderSelection `table:"provider_selections" holds:"ProviderSelected"`
	ProviderStarts     []ProviderStart     `table:"provider_request_starts" holds:"ProviderRequestStarted"`
	ProviderFinishes   []ProviderFinish    `table:"provider_request_finishes" holds:"ProviderRequestFinished"`
	L2Events           []L2Event           `table:"l2_events" holds:"IterationStarted, RepairAttempted and IterationFinished"`
	PatchEvents        []PatchEvent        `table:"patch_events" holds:"PatchApplied and PatchApplyFailed"`
	VerificationEvents []VerificationEvent `table:"verification_events" holds:"VerificationFinished"`
	Steps              []Step              `table:"steps" holds:"StepStarted and StepFinished"`
	L3Candidates       []L3Candidate       `table:"l3_candidates" holds:"CandidateGenerated"`
	Diagnoses          []Diagnosis         `table:"diagnoses" holds:"DiagnosisStarted and DiagnosisCompleted"`
	JudgeCalls         []JudgeCall         `table:"judge_calls" holds:"JudgeInvoked, JudgeDecided and JudgeFailed"`
	Quarantine         []Quarantined       `table:"quarantine" holds:"lines and files that could not be ingested"`
	Summaries          []Summary           `table:"summaries" holds:"one row per summary.json"`
	SummaryCosts       []SummaryCost       `table:"summary_costs" holds:"costs.perProvider of each summary.json"`
	// VerificationReports' run_id is the run directory's name, as reports
	// do not name their run; the verifications view resolves it.
	VerificationReports []VerificationReport `table:"verification_reports" holds:"one row per verification report"`
	// The record tables hold the other systems' records (package
	// model/records): factory, claudestrator, orchestr8 and exec.
	RecordRuns     []RecordRun     `table:"record_runs" holds:"one row per run in a factory, claudestrator, orchestr8 or exec record"`
	RecordAttempts []RecordAttempt `table:"record_attempts" holds:"one row per attempt at a record run's item"`
	RecordStages   []RecordStage   `table:"record_stages" holds:"one row per stage a record attempt ran"`
	RecordConfigs  []RecordConfig  `table:"record_configs" holds:"retry configuration files, such as orchestr8's retry-config.json"`
	// Calls and CallAttempts hold agents' model calls (records.Call):
	// OpenTelemetry GenAI spans and logs, Claude Code transcripts, Codex
	// rollouts.
	Calls        []Call        `table:"calls" holds:"one row per logical model call an agent made"`
	CallAttempts []CallAttempt `table:"call_attempts" holds:"one row per attempt of a call, where the record shows attempts one by one"`
}

// States holds rows of the tables that say where ingest stopped. They are
// append-only: each commit adds a row per file or directory it touched,
// numbered by seq, and the latest row of each is its state, so the common
// path never deletes.
type States struct {
	Files []FileStateRow `table:"file_states" holds:"where ingest stopped in each source file, one row per commit that moved it"`
	// Dirs records run directories' mtimes when they were listed, so an
	// ingest can skip listing those that have not changed.
	Dirs []DirStateRow `table:"dir_states" holds:"run directories as last listed"`
	// Sealed records run directories whose run had ended when an ingest
	// read them whole: a cron ingest looks at such a directory's mtime
	// only, not at its files, until it changes or a full pass
	// (docs/ingest.md). A row with files < 0 unseals.
	Sealed []SealedDirRow `table:"sealed_dirs" holds:"run directories whose run had ended, looked at by their mtime alone"`
}

// EventKey begins every row of a trace event: its file, line, run and time,
// so any typed row leads back to its line.
type EventKey struct {
	FileID int32     `col:"file_id INTEGER"`
	Line   int64     `col:"line BIGINT"`
	RunID  string    `col:"run_id VARCHAR"`
	TS     time.Time `col:"ts TIMESTAMP"`
}

// Event is an accepted trace line. The typed tables after it hold the
// fields of metric-bearing events, extracted at ingest so reports never
// re-parse payload JSON; numeric payload fields are DOUBLE, NULL unless
// the JSON held a number.
type Event struct {
	EventKey
	Type          string `col:"type VARCHAR"`
	SchemaVersion *int32 "col:\"schema_version INTEGER\" doc:\"the line's `schemaVersion`\""
	// Payload is JSON text, not a JSON column: duckdb-go encodes what it
	// is given for a JSON column as JSON.
	Payload string `col:"payload VARCHAR" doc:"the payload's JSON text, byte for byte as the trace holds it"`
}

type RunSpan struct {
	FileID  int32     `col:"file_id INTEGER"`
	RunID   string    `col:"run_id VARCHAR"`
	FirstTS time.Time `col:"first_ts TIMESTAMP"`
	LastTS  time.Time `col:"last_ts TIMESTAMP"`
	Events  int64     `col:"events BIGINT"`
}

type RunEvent struct {
	EventKey
	Type   string  `col:"type VARCHAR"`
	TaskID *string `col:"task_id VARCHAR"`
	Status *string `col:"status VARCHAR"`
	Reason *string `col:"reason VARCHAR"`
}

type Escalation struct {
	EventKey
	FromLevel *string `col:"from_level VARCHAR"`
	ToLevel   *string `col:"to_level VARCHAR"`
	Reason    *string `col:"reason VARCHAR"`
}

type ProviderSelection struct {
	EventKey
	Role       *string `col:"role VARCHAR"`
	ProviderID *string `col:"provider_id VARCHAR"`
}

type ProviderStart struct {
	EventKey
	Provider *string `col:"provider VARCHAR"`
	Model    *string `col:"model VARCHAR"`
}

type ProviderFinish struct {
	EventKey
	Provider *string `col:"provider VARCHAR"`
	// Model is paired at ingest: the event does not carry it.
	Model      *string  "col:\"model VARCHAR\" doc:\"paired at ingest: the model of the nearest earlier `ProviderRequestStarted` of the same run and provider in the same file\""
	DurationMS *float64 `col:"duration_ms DOUBLE"`
	Success    *bool    `col:"success BOOLEAN"`
	Retries    *float64 `col:"retries DOUBLE"`
	Error      *string  `col:"error VARCHAR"`
}

type L2Event struct {
	EventKey
	Type      string   `col:"type VARCHAR"`
	Iteration *float64 `col:"iteration DOUBLE"`
	Result    *string  `col:"result VARCHAR"`
	PatchPath *string  `col:"patch_path VARCHAR"`
}

type PatchEvent struct {
	EventKey
	Type      string  `col:"type VARCHAR"`
	Success   *bool   `col:"success BOOLEAN"`
	Error     *string `col:"error VARCHAR"`
	ErrorType *string `col:"error_type VARCHAR"`
	ErrorKind *string `col:"error_kind VARCHAR"`
}

type VerificationEvent struct {
	EventKey
	Passed       *bool   `col:"passed BOOLEAN"`
	FailedChecks *string `col:"failed_checks VARCHAR" doc:"JSON"`
}

type Step struct {
	EventKey
	Type         string   `col:"type VARCHAR"`
	StepIndex    *float64 `col:"step_index DOUBLE"`
	Total        *float64 `col:"total DOUBLE"`
	Success      *bool    `col:"success BOOLEAN"`
	Error        *string  `col:"error VARCHAR"`
	JudgeInvoked *bool    `col:"judge_invoked BOOLEAN"`
	JudgeReason  *string  `col:"judge_reason VARCHAR"`
}

type L3Candidate struct {
	EventKey
	Iteration      *float64 `col:"iteration DOUBLE"`
	CandidateIndex *float64 `col:"candidate_index DOUBLE"`
	Valid          *bool    `col:"valid BOOLEAN"`
	ProviderID     *string  `col:"provider_id VARCHAR"`
	DurationMS     *float64 `col:"duration_ms DOUBLE"`
	FilesChanged   *float64 `col:"files_changed DOUBLE"`
	LinesAdded     *float64 `col:"lines_added DOUBLE"`
	LinesDeleted   *float64 `col:"lines_deleted DOUBLE"`
}

type Diagnosis struct {
	EventKey
	Type               string   `col:"type VARCHAR"`
	Iteration          *float64 `col:"iteration DOUBLE"`
	Reason             *string  `col:"reason VARCHAR"`
	SelectedHypothesis *string  `col:"selected_hypothesis VARCHAR"`
}

type JudgeCall struct {
	EventKey
	Type                string   `col:"type VARCHAR"`
	Iteration           *float64 `col:"iteration DOUBLE"`
	Reason              *string  `col:"reason VARCHAR"`
	CandidateCount      *float64 `col:"candidate_count DOUBLE"`
	WinnerCandidateID   *string  `col:"winner_candidate_id VARCHAR"`
	Confidence          *float64 `col:"confidence DOUBLE"`
	DurationMS          *float64 `col:"duration_ms DOUBLE"`
	Error               *string  `col:"error VARCHAR"`
	FallbackCandidateID *string  `col:"fallback_candidate_id VARCHAR"`
}

type Quarantined struct {
	FileID     int32   `col:"file_id INTEGER"`
	Path       string  `col:"path VARCHAR"`
	Line       int64   `col:"line BIGINT"`
	ByteOffset int64   `col:"byte_offset BIGINT"`
	Field      *string `col:"field VARCHAR"`
	Reason     string  `col:"reason VARCHAR"`
	Raw        string  `col:"raw VARCHAR" doc:"the line's text, cut at 64 KiB"`
	RawBytes   int64   `col:"raw_bytes BIGINT" doc:"the line's full length"`
	// IngestedAt is set when the row is written.
	IngestedAt time.Time `col:"ingested_at TIMESTAMP"`
}

type Summary struct {
	FileID                     int32      `col:"file_id INTEGER"`
	RunID                      string     `col:"run_id VARCHAR"`
	SchemaVersion              *float64   `col:"schema_version DOUBLE"`
	Status                     *string    `col:"status VARCHAR"`
	StopReason                 *string    `col:"stop_reason VARCHAR"`
	ThinkLevel                 *string    "col:\"think_level VARCHAR\" doc:\"a numeric `thinkLevel` is stored as `L<n>`\""
	Escalated                  *bool      `col:"escalated BOOLEAN"`
	StartedAt                  *time.Time `col:"started_at TIMESTAMP"`
	FinishedAt                 *time.Time `col:"finished_at TIMESTAMP"`
	DurationMS                 *float64   `col:"duration_ms DOUBLE"`
	Goal                       *string    `col:"goal VARCHAR"`
	VerificationPassed         *bool      `col:"verification_passed BOOLEAN"`
	FailedChecks               *string    `col:"failed_checks VARCHAR" doc:"JSON"`
	FailedCheckCount           *float64   `col:"failed_check_count DOUBLE"`
	InputTokens                *float64   `col:"input_tokens DOUBLE"`
	OutputTokens               *float64   `col:"output_tokens DOUBLE"`
	TotalTokens                *float64   `col:"total_tokens DOUBLE"`
	CostUSD                    *float64   `col:"cost_usd DOUBLE"`
	L3BestOfN                  *float64   `col:"l3_best_of_n DOUBLE"`
	L3CandidatesGenerated      *float64   `col:"l3_candidates_generated DOUBLE"`
	L3CandidatesEvaluated      *float64   `col:"l3_candidates_evaluated DOUBLE"`
	L3PassingCandidateSelected *bool      `col:"l3_passing_candidate_selected BOOLEAN"`
	L3ReviewerInvoked          *bool      `col:"l3_reviewer_invoked BOOLEAN"`
	L3JudgeInvoked             *bool      `col:"l3_judge_invoked BOOLEAN"`
	L3JudgeInvocationReason    *string    `col:"l3_judge_invocation_reason VARCHAR"`
	Raw                        string     `col:"raw VARCHAR" doc:"the whole file, JSON"`
}

type SummaryCost struct {
	FileID       int32    `col:"file_id INTEGER"`
	RunID        string   `col:"run_id VARCHAR"`
	Provider     string   `col:"provider VARCHAR"`
	InputTokens  *float64 `col:"input_tokens DOUBLE"`
	OutputTokens *float64 `col:"output_tokens DOUBLE"`
	TotalTokens  *float64 `col:"total_tokens DOUBLE"`
	CostUSD      *float64 `col:"cost_usd DOUBLE"`
}

type VerificationReport struct {
	FileID           int32   `col:"file_id INTEGER"`
	RunID            string  "col:\"run_id VARCHAR\" doc:\"the run directory's name, as reports do not name their run; `verifications` resolves it\""
	Report           string  `col:"report VARCHAR"`
	Phase            string  "col:\"phase VARCHAR\" doc:\"`initial`, `l2`, `l3_final` or `other`\""
	Iteration        *int64  `col:"iteration BIGINT"`
	Passed           *bool   `col:"passed BOOLEAN"`
	FailureSignature *string `col:"failure_signature VARCHAR"`
	FailureSummary   *string `col:"failure_summary VARCHAR"`
	FailedChecks     *string `col:"failed_checks VARCHAR" doc:"JSON"`
	Checks           *string `col:"checks VARCHAR" doc:"JSON"`
	Raw              string  `col:"raw VARCHAR" doc:"the whole file, JSON"`
}

type RecordRun struct {
	FileID      int32      `col:"file_id INTEGER"`
	System      string     `col:"system VARCHAR"`
	RunID       string     `col:"run_id VARCHAR"`
	Item        *string    `col:"item VARCHAR"`
	Source      *string    `col:"source VARCHAR" doc:"the kind of file it came from"`
	Batch       *string    `col:"batch VARCHAR"`
	StartedAt   *time.Time `col:"started_at TIMESTAMP"`
	FinishedAt  *time.Time `col:"finished_at TIMESTAMP"`
	Status      *string    `col:"status VARCHAR"`
	Verdict     *string    `col:"verdict VARCHAR"`
	Attempts    *int32     `col:"attempts INTEGER"`
	MaxAttempts *int32     `col:"max_attempts INTEGER"`
	EndedStage  *string    `col:"ended_stage VARCHAR"`
	DurationMS  *float64   `col:"duration_ms DOUBLE"`
	Tokens      *float64   `col:"tokens DOUBLE"`
	CostUSD     *float64   `col:"cost_usd DOUBLE"`
	Detail      *string    `col:"detail VARCHAR" doc:"JSON"`
}

type RecordAttempt struct {
	FileID     int32      `col:"file_id INTEGER"`
	System     string     `col:"system VARCHAR"`
	RunID      string     `col:"run_id VARCHAR"`
	Item       *string    `col:"item VARCHAR"`
	Source     *string    `col:"source VARCHAR"`
	Attempt    *int32     `col:"attempt INTEGER"`
	TS         *time.Time `col:"ts TIMESTAMP"`
	Passed     *bool      `col:"passed BOOLEAN"`
	Stage      *string    `col:"stage VARCHAR" doc:"where it failed"`
	Class      *string    `col:"class VARCHAR" doc:"the retry core's failure class"`
	ExitCode   *int32     `col:"exit_code INTEGER"`
	Command    *string    `col:"command VARCHAR"`
	Error      *string    `col:"error VARCHAR"`
	Signature  *string    `col:"signature VARCHAR"`
	DurationMS *float64   `col:"duration_ms DOUBLE"`
	Tokens     *float64   `col:"tokens DOUBLE"`
	CostUSD    *float64   `col:"cost_usd DOUBLE"`
}

type RecordStage struct {
	FileID     int32    `col:"file_id INTEGER"`
	System     string   `col:"system VARCHAR"`
	RunID      string   `col:"run_id VARCHAR"`
	Item       *string  `col:"item VARCHAR"`
	Source     *string  `col:"source VARCHAR"`
	Attempt    int32    `col:"attempt INTEGER"`
	Seq        int32    `col:"seq INTEGER"`
	Stage      string   `col:"stage VARCHAR"`
	Passed     *bool    `col:"passed BOOLEAN" doc:"NULL: not applicable"`
	ExitCode   *int32   `col:"exit_code INTEGER"`
	Command    *string  `col:"command VARCHAR"`
	DurationMS *float64 `col:"duration_ms DOUBLE"`
	Tokens     *float64 `col:"tokens DOUBLE"`
	CostUSD    *float64 `col:"cost_usd DOUBLE"`
	Feedback   *string  `col:"feedback VARCHAR"`
}

type RecordConfig struct {
	FileID int32   `col:"file_id INTEGER"`
	System string  `col:"system VARCHAR"`
	Config *string `col:"config VARCHAR" doc:"JSON"`
}

// Tokens are a model call's or attempt's tokens and cost, as records.Call
// means them: input is the uncached input, the cache's reads and writes
// apart; reasoning is part of output.
type Tokens struct {
	InputTokens      *float64 `col:"input_tokens DOUBLE"`
	CacheReadTokens  *float64 `col:"cache_read_tokens DOUBLE"`
	CacheWriteTokens *float64 `col:"cache_write_tokens DOUBLE"`
	OutputTokens     *float64 `col:"output_tokens DOUBLE"`
	ReasoningTokens  *float64 `col:"reasoning_tokens DOUBLE"`
	CostUSD          *float64 `col:"cost_usd DOUBLE"`
}

type Call struct {
	FileID     int32      `col:"file_id INTEGER"`
	System     string     `col:"system VARCHAR"`
	RunID      *string    `col:"run_id VARCHAR"`
	Session    *string    `col:"session VARCHAR" doc:"the conversation or session the run belongs to"`
	CallID     *string    `col:"call_id VARCHAR"`
	Source     *string    `col:"source VARCHAR"`
	Line       int64      `col:"line BIGINT" doc:"the file line the call was read from (its last)"`
	TS         *time.Time `col:"ts TIMESTAMP"`
	DurationMS *float64   `col:"duration_ms DOUBLE"`
	Provider   *string    `col:"provider VARCHAR"`
	Model      *string    `col:"model VARCHAR"`
	Operation  *string    `col:"operation VARCHAR"`
	Success    *bool      `col:"success BOOLEAN"`
	Error      *string    `col:"error VARCHAR"`
	ErrorType  *string    `col:"error_type VARCHAR"`
	StatusCode *int32     `col:"status_code INTEGER"`
	Attempts   *int32     `col:"attempts INTEGER" doc:"first attempt included; NULL: unknown"`
	Evidence   *string    "col:\"evidence VARCHAR\" doc:\"where `attempts` comes from: `http_spans`, `span_events`, `siblings`, `attribute`, `transcript` or `none`\""
	BackoffMS  *float64   `col:"backoff_ms DOUBLE" doc:"time waiting between attempts, recorded or derived from the attempts' times; NULL: unknown"`
	Tokens
	FailedInputTokens  *float64 `col:"failed_input_tokens DOUBLE" doc:"tokens of the call's failed attempts, apart from its successful one"`
	FailedOutputTokens *float64 `col:"failed_output_tokens DOUBLE"`
	FailedCostUSD      *float64 `col:"failed_cost_usd DOUBLE"`
	// CacheWrite1hTokens came last, added to stores that had the others
	// (query/migrate_calls.go).
	CacheWrite1hTokens *float64 `col:"cache_write_1h_tokens DOUBLE" doc:"the part of cache_write_tokens written with a 1-hour lifetime (Claude Code transcripts split it), which Anthropic bills higher; NULL when the record does not split it"`
	// Cwd came with report --by project; stores without it read their
	// agents' files again (query/migrate_calls.go), which also gives
	// OpenTelemetry calls their time-based ids.
	Cwd *string `col:"cwd VARCHAR" doc:"the working folder the call ran in, as the record states it (Claude Code's cwd, Codex's turn or session cwd); NULL when it does not (OpenTelemetry)"`
}

type CallAttempt struct {
	FileID     int32      `col:"file_id INTEGER"`
	System     string     `col:"system VARCHAR"`
	RunID      *string    `col:"run_id VARCHAR"`
	CallID     *string    `col:"call_id VARCHAR"`
	Source     *string    `col:"source VARCHAR"`
	Attempt    int32      `col:"attempt INTEGER"`
	TS         *time.Time `col:"ts TIMESTAMP"`
	DurationMS *float64   `col:"duration_ms DOUBLE"`
	Success    *bool      `col:"success BOOLEAN"`
	StatusCode *int32     `col:"status_code INTEGER"`
	Error      *string    `col:"error VARCHAR"`
	BackoffMS  *float64   `col:"backoff_ms DOUBLE" doc:"the wait after this attempt, before the next"`
	Tokens
}

type FileStateRow struct {
	Seq         int64     `col:"seq BIGINT"`
	FileID      int32     `col:"file_id INTEGER"`
	Path        string    `col:"path VARCHAR"`
	Kind        string    `col:"kind VARCHAR"`
	RunDir      string    `col:"run_dir VARCHAR"`
	Size        int64     `col:"size BIGINT"`
	MTime       time.Time `col:"mtime TIMESTAMP"`
	Dev         uint64    `col:"dev UBIGINT"`
	Inode       uint64    `col:"inode UBIGINT"`
	ByteOffset  int64     `col:"byte_offset BIGINT"`
	Lines       int64     `col:"lines BIGINT"`
	HeadLen     int32     `col:"head_len INTEGER"`
	HeadSHA256  string    "col:\"head_sha256 VARCHAR\" doc:\"SHA-256 of the first `head_len` bytes (up to 4 KiB), to see a rewritten file\""
	Events      int64     `col:"events BIGINT"`
	Quarantined int64     `col:"quarantined BIGINT"`
	IngestedAt  time.Time `col:"ingested_at TIMESTAMP"`
	Pairing     string    "col:\"pairing VARCHAR\" doc:\"the model pairing state at `byte_offset`, so a resumed read pairs the same way\""
	// Sealed is false when written; sealing the file's directory sets it
	// on every row of the file, in the transaction that adds the
	// sealed_dirs row. It is an index of sealed_dirs, so a cron ingest
	// loads the states of the files it looks at without reading the
	// others'.
	Sealed bool `col:"sealed BOOLEAN" doc:"set on every row of a file once its run directory is sealed (sealed_dirs): a cron ingest does not load these"`
}

type DirStateRow struct {
	Seq   int64     `col:"seq BIGINT"`
	Path  string    `col:"path VARCHAR"`
	MTime time.Time `col:"mtime TIMESTAMP"`
	// Sealed is as FileStateRow's: set on the directory's rows when it is
	// sealed.
	Sealed bool `col:"sealed BOOLEAN" doc:"set on every row of a directory once it is sealed (sealed_dirs): a cron ingest does not load these"`
}

type SealedDirRow struct {
	Seq   int64     `col:"seq BIGINT"`
	Path  string    `col:"path VARCHAR"`
	MTime time.Time `col:"mtime TIMESTAMP"`
	Files int32     `col:"files INTEGER"`
	// FileIDs are the files the seal covers, whose file_states rows it
	// marks sealed.
	FileIDs []int32 `col:"-"`
}

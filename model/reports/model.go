// Package reports is the model of what orchstat reports: the metric
// catalog, the report, the factory audit and generic tables. It imports
// nothing but the standard library, so the store, the rules and the
// commands all share it without linking a renderer; reports/render draws it.
// One struct feeds every renderer so the formats cannot drift apart.
package reports

import (
	"time"
)

// Metric is one METRICS.md value. Counts carry only Value; ratios also carry
// Numerator and Denominator, and have a nil Value when the denominator is 0.
type Metric struct {
	Value       *float64 `json:"value"`
	Numerator   *float64 `json:"numerator,omitempty"`
	Denominator *float64 `json:"denominator,omitempty"`
	// NoPrice is how many calls a cost sum leaves out because their model
	// has no price and their record no cost; set on cost metrics only,
	// so that a sum over some calls never reads as the sum over all.
	NoPrice *float64 `json:"no_price_calls,omitempty"`
}

// IsRatio reports whether m is a ratio.
func (m Metric) IsRatio() bool { return m.Denominator != nil }

// Metrics maps a metric name to its value.
type Metrics map[string]Metric

// Report is everything `orchstat report` shows.
type Report struct {
	GeneratedAt time.Time `json:"generated_at"`
	Database    string    `json:"database"`
	// Scope says which of the store's runs the report covers.
	Scope      Scope       `json:"scope"`
	Filters    Filters     `json:"filters"`
	Overview   Overview    `json:"overview"`
	Metrics    Metrics     `json:"metrics"`
	Thresholds []Threshold `json:"thresholds"`
	Breakdowns Breakdowns  `json:"breakdowns"`
	// Systems is the other systems' runs (factory, claudestrator,
	// orchestr8, exec), from their records, in scope.
	Systems Systems `json:"systems"`
	// Calls is agents' model calls in scope.
	Calls Calls `json:"calls"`
	// FactoryAudit is the factory retry audit of the factory's runs in
	// scope, nil when there are none.
	FactoryAudit *FactoryAudit `json:"factory_audit"`
	// Summary is the first screen (summary.go); nil when not asked for,
	// as by check and the lake's consumers.
	Summary *Summary `json:"summary,omitempty"`
}

// Systems summarises the runs of systems other than the orchestrator.
type Systems struct {
	BySystem      []SystemRow       `json:"by_system"`
	StageFailures []StageFailureRow `json:"failures_by_stage"`
	Stages        []StageRow        `json:"stages"`
}

// SystemRow is one system's runs and attempts.
type SystemRow struct {
	System  string `json:"system"`
	Runs    int64  `json:"runs"`
	Success int64  `json:"success"`
	Failure int64  `json:"failure"`
	// Cancelled, Unfinished and OtherStatus split the rest as the
	// overview does (SystemRuns): a Codex rollout, which records no
	// outcome, is unfinished in both.
	Cancelled      int64      `json:"cancelled"`
	Unfinished     int64      `json:"unfinished"`
	OtherStatus    int64      `json:"other_status"`
	Attempts       int64      `json:"attempts"`
	FailedAttempts int64      `json:"failed_attempts"`
	RetriedRuns    int64      `json:"retried_runs"` // runs with more than one attempt
	FirstRun       *time.Time `json:"first_run"`
	LastRun        *time.Time `json:"last_run"`
	Metrics        Metrics    `json:"metrics"`
}

// Calls summarises agents' model calls: by system, and by system,
// provider and model.
type Calls struct {
	BySystem []CallRow `json:"by_system"`
	ByModel  []CallRow `json:"by_provider_model"`
}

// CallRow is the calls of one system, or of one provider and model of a
// system. Attempts, Retried and RetriesTotal count only the calls whose
// attempts the record shows (WithAttempts); Evidence says how many calls
// each kind of evidence covers ("http_spans 3, none 2"). Sums are nil
// when no call of the row records them.
type CallRow struct {
	System       string   `json:"system"`
	Provider     *string  `json:"provider,omitempty"`
	Model        *string  `json:"model,omitempty"`
	Calls        int64    `json:"calls"`
	Failed       int64    `json:"failed"`
	WithAttempts int64    `json:"with_attempts"`
	Attempts     int64    `json:"attempts"`
	Retried      int64    `json:"retried"`
	Evidence     string   `json:"evidence"`
	BackoffMS    *float64 `json:"backoff_ms"`
	// Tokens is the sum of the four kinds of tokens below, each as
	// records.Call means it: input is the uncached input, cache reads and
	// writes apart; reasoning tokens are part of the output tokens.
	Tokens           *float64 `json:"tokens"`
	InputTokens      *float64 `json:"input_tokens"`
	CacheReadTokens  *float64 `json:"cache_read_tokens"`
	CacheWriteTokens *float64 `json:"cache_write_tokens"`
	OutputTokens     *float64 `json:"output_tokens"`
	ReasoningTokens  *float64 `json:"reasoning_tokens"`
	FailedTokens     *float64 `json:"failed_attempt_tokens"`
	// CostUSD and FailedCostUSD are recorded or priced (see
	// docs/prices.md); NoPriceCalls counts the calls left out of them,
	// whose model has no price.
	CostUSD       *float64 `json:"cost_usd"`
	FailedCostUSD *float64 `json:"failed_attempt_cost_usd"`
	NoPriceCalls  int64    `json:"no_price_calls"`
	// CountedOnce counts the calls the store holds in more than one file
	// (a synced folder read beside the local one, a session two runners
	// exported, a sub-agent's replay), each counted once: report --by
	// device says where the copies are.
	CountedOnce int64   `json:"counted_once"`
	Metrics     Metrics `json:"metrics"`
}

// StageFailureRow counts failed attempts by the stage they failed at.
type StageFailureRow struct {
	System   string `json:"system"`
	Stage    string `json:"stage"` // "(none)" when the record names none
	Failures int64  `json:"failures"`
	Runs     int64  `json:"runs"`
}

// StageRow is the stages attempts ran: claudestrator's build, lint and
// tests, orchestr8's agents, the factory's write, verify and acceptance
// commands.
type StageRow struct {
	System        string   `json:"system"`
	Stage         string   `json:"stage"`
	Runs          int64    `json:"runs"` // executions
	Failed        int64    `json:"failed"`
	NotApplicable int64    `json:"not_applicable"`
	FailureRate   Metric   `json:"failure_rate"` // failed / executions that passed or failed
	AvgDurationMS *float64 `json:"avg_duration_ms"`
	Tokens        *float64 `json:"tokens"`
	CostUSD       *float64 `json:"cost_usd"`
}

// Filters echoes the scope the report was computed over.
type Filters struct {
	Since    *time.Time `json:"since"`
	Until    *time.Time `json:"until"`
	Runs     []string   `json:"runs"`
	Provider *string    `json:"provider"`
}

// Scope is what part of the store a report covers: the runs found under
// the paths named, or the whole store when none (or --all) was named.
type Scope struct {
	// Paths are the named paths, absolute; empty means the whole store.
	Paths []string `json:"paths"`
	// RunsInStore counts every run the store holds, orchestrator runs and
	// other systems' record runs alike.
	RunsInStore int64 `json:"runs_in_store"`
	// RunsLeftOut counts the store's runs that are not under Paths.
	RunsLeftOut int64 `json:"runs_left_out"`
	// Lake is the lake's location when the runs are a lake's (read with
	// --lake) rather than a store's; the JSON names it in "database".
	Lake string `json:"-"`
}

// Overview counts the runs in scope, of every system, by outcome. Runs
// is the sum of RunsBySystem, and with no filter but paths it is the
// scope line's count of runs in scope (Scope). FirstEvent, LastEvent and
// Events are the trace events' alone.
type Overview struct {
	Runs int64 `json:"runs"`
	// RunsBySystem splits Runs by the system that recorded them, in
	// SystemOrder; a system with no run in scope has no entry.
	RunsBySystem []SystemRuns `json:"runs_by_system"`
	FirstEvent   *time.Time   `json:"first_event"`
	LastEvent    *time.Time   `json:"last_event"`
	Success      int64        `json:"success"`
	Failure      int64        `json:"failure"`
	Cancelled    int64        `json:"cancelled"`
	Unfinished   int64        `json:"unfinished"` // no RunFinished and no summary status
	OtherStatus  int64        `json:"other_status"`
	Events       int64        `json:"events"`
	// Quarantined counts the lines quarantined from the files in scope:
	// those under the paths named, or the whole store's.
	Quarantined int64 `json:"quarantined"`
	// Undated counts runs in scope with no recorded time (factory run
	// summaries, for one): no time filter or window selects them.
	Undated int64 `json:"undated"`
	// QueuedTasks counts queued work that never ran (claudestrator tasks
	// still pending), which is not counted as runs.
	QueuedTasks int64 `json:"queued_tasks"`
}

// SystemRuns counts one system's runs in scope by outcome.
type SystemRuns struct {
	System      string `json:"system"`
	Runs        int64  `json:"runs"`
	Success     int64  `json:"success"`
	Failure     int64  `json:"failure"`
	Cancelled   int64  `json:"cancelled"`
	Unfinished  int64  `json:"unfinished"`
	OtherStatus int64  `json:"other_status"`
}

// Threshold is an alert rule's threshold checked against the report's
// overall value of its metric.
type Threshold struct {
	Metric    string   `json:"metric"`
	Rule      string   `json:"rule"`
	Severity  string   `json:"severity"`
	Threshold float64  `json:"threshold"`
	Condition string   `json:"condition"`
	Value     *float64 `json:"value"`
	// Crossed is true when the rule's condition holds on this report's
	// numbers (including its minimum-sample guard).
	Crossed bool `json:"crossed"`
}

// Breakdowns slice the metrics.
type Breakdowns struct {
	ByProvider        []ProviderRow `json:"by_provider"`
	ByDay             []DayRow      `json:"by_day"`
	WorstByRetries    []RunRow      `json:"worst_runs_by_retries"`
	WorstByIterations []RunRow      `json:"worst_runs_by_iterations"`
	// RepairIterations counts the runs of each number of L2 repair
	// iterations (Key "1", "2", ...), in that order.
	RepairIterations  []CountRow    `json:"repair_iterations"`
	StopReasons       []CountRow    `json:"stop_reasons"`
	EscalationReasons []CountRow    `json:"escalation_reasons"`
	JudgeReasons      []CountRow    `json:"judge_reasons"`
	CandidateValidity []ValidityRow `json:"candidate_validity"`
}

// ProviderRow is provider-request metrics for one provider and model.
type ProviderRow struct {
	Provider     string   `json:"provider"`
	Model        *string  `json:"model"`
	Requests     int64    `json:"requests"`
	Retried      int64    `json:"retried"`
	Failed       int64    `json:"failed"`
	RetriesTotal float64  `json:"retries_total"`
	RetryRate    Metric   `json:"retry_rate"`
	FailureRate  Metric   `json:"failure_rate"`
	AvgDuration  *float64 `json:"avg_duration_ms"`
}

// DayRow is every metric over the runs that started on one UTC day.
type DayRow struct {
	Day     string  `json:"day"` // 2006-01-02
	Metrics Metrics `json:"metrics"`
}

// RunRow is one run in a worst-runs list.
type RunRow struct {
	RunID            string    `json:"run_id"`
	StartedAt        time.Time `json:"started_at"`
	Status           string    `json:"status"`
	ProviderRequests int64     `json:"provider_requests"`
	ProviderRetries  float64   `json:"provider_retries"`
	RepairIterations *float64  `json:"repair_iterations"`
	Escalated        bool      `json:"escalated"`
	StopReason       *string   `json:"stop_reason"`
	// Trace is the path of the run's trace file as the store names it, ""
	// when it has none; pages link to it. It is not in the JSON, whose
	// numbers must not depend on where the files were read.
	Trace string `json:"-"`
}

// CountRow counts events by a reason.
type CountRow struct {
	Key   string `json:"key"` // "(none)" when the field was absent
	Count int64  `json:"count"`
	Runs  int64  `json:"runs"`
}

// ValidityRow is candidate validity for one provider.
type ValidityRow struct {
	ProviderID string `json:"provider_id"`
	Candidates int64  `json:"candidates"`
	Valid      int64  `json:"valid"`
	Rate       Metric `json:"rate"`
}

// Table is generic tabular output, for commands whose rows are not a Report
// (`orchstat sql`, `orchstat quarantine`).
//
// A cell may be nil, string, bool, any integer or float, time.Time, []byte,
// *big.Int, a slice, array or map of cells (go-duckdb's LIST, STRUCT and
// MAP), a pointer to one of these (nil pointers are nil), go-duckdb's
// Decimal, Interval or UUID, or anything fmt can print. Every row must have
// one cell per column.
type Table struct {
	Title   string
	Columns []string
	Rows    [][]any
	// Null is what a nil cell shows as in table and markdown output; empty
	// means "-". `orchstat sql` sets "NULL", so that a NULL cannot be told
	// apart from the string '-'.
	Null string
	// Width is the terminal's width in columns: table and markdown output
	// are fitted to it (see reports/render/fit.go). 0 (not a terminal, or --wide) draws
	// every cell in full.
	Width int
	// Peers says the columns after the first two come in pairs that are
	// peers (simulate's policies, each with its difference from the
	// record): a table too wide is split into a part per pair, each
	// repeating the first two columns, rather than leaving columns out.
	Peers bool
}

package reports

// FactoryAudit is the factory retry audit, computed from the
// factory's records (query.FactoryAudit): where attempts fail, which
// failures a retry cannot change yet were retried, which failures repeat
// word for word, and the two failure kinds the factory lumps together
// (exceptions, T1/F2; command timeouts, T2).
type FactoryAudit struct {
	Runs           int64 `json:"runs"`
	Attempts       int64 `json:"attempts"`
	FailedAttempts int64 `json:"failed_attempts"`
	// RetriedRuns ran more than one attempt.
	RetriedRuns int64 `json:"retried_runs"`
	// UndatedRuns have neither a start time nor a timed attempt (the
	// factory's current run summaries record no time at all). They are in the audit when
	// it has no time window, and left out of one that has; either way
	// this counts them, under the filter's other conditions.
	UndatedRuns int64 `json:"undated_runs"`

	Stages               []AuditStage              `json:"failures_by_stage"`
	RetriedDeterministic AuditRetriedDeterministic `json:"retried_deterministic"`
	RepeatedSignatures   AuditRepeats              `json:"repeated_signatures"`
	Exceptions           AuditExceptions           `json:"exceptions"`
	CommandTimeouts      AuditTimeouts             `json:"command_timeouts"`
}

// Whether a retry can change an outcome, by the factory audit's classification.
const (
	RetryNo      = "no"               // deterministic: every retry fails the same way
	RetryYes     = "yes"              // the retry loop's intended case
	RetryMaybe   = "maybe"            // the LLM is stochastic, its corrective signal weak
	RetryDepends = "depends_on_error" // F2: transient or permanent by the error's text
	RetryUnknown = "unknown"          // a stage the audit does not describe
)

// AuditStage is the failed attempts of one stage of the taxonomy.
type AuditStage struct {
	// Class is the factory audit's id (F1..F8, F8a); "" for a stage outside its
	// taxonomy.
	Class          string `json:"class"`
	Stage          string `json:"stage"`
	FailedAttempts int64  `json:"failed_attempts"`
	Runs           int64  `json:"runs"`
	RetryHelps     string `json:"retry_helps"`
	Classification string `json:"classification"`
}

// AuditRetriedDeterministic counts failures a retry cannot change that
// were retried anyway (the factory audit, section 3). See query.FactoryAudit for
// the definitions.
type AuditRetriedDeterministic struct {
	Failures       int64                   `json:"failures"`
	Runs           int64                   `json:"runs"`
	WastedAttempts int64                   `json:"wasted_attempts"`
	ByStage        []AuditDeterministicRow `json:"by_stage"`
}

// AuditDeterministicRow is AuditRetriedDeterministic for one stage. A
// run's wasted attempts count under the stage of its first retried
// deterministic failure.
type AuditDeterministicRow struct {
	Class          string `json:"class"`
	Stage          string `json:"stage"`
	Failures       int64  `json:"failures"`
	Runs           int64  `json:"runs"`
	WastedAttempts int64  `json:"wasted_attempts"`
}

// AuditRepeats counts attempts that failed exactly as the attempt before
// them did: the retry learned nothing.
type AuditRepeats struct {
	Runs             int64            `json:"runs"`
	RepeatedAttempts int64            `json:"repeated_attempts"`
	Worst            []AuditRepeatRun `json:"worst_runs"` // most repeats first, at most 20
}

// AuditRepeatRun is one run whose failure repeated.
type AuditRepeatRun struct {
	RunID string `json:"run_id"`
	Item  string `json:"item"`
	// Stage is where its first repeated failure failed.
	Stage            string `json:"stage"`
	Attempts         int64  `json:"attempts"`
	RepeatedAttempts int64  `json:"repeated_attempts"`
}

// AuditExceptions splits the factory's grab-bag "exception" stage (F2) by
// the error's text: transient errors a retry can outlast, and permanent
// ones it cannot.
type AuditExceptions struct {
	Transient AuditCount            `json:"transient"`
	Permanent AuditCount            `json:"permanent"`
	ByClass   []AuditExceptionClass `json:"by_class"`
}

// AuditCount counts failed attempts, the runs they are in, and how many
// of them another attempt followed.
type AuditCount struct {
	Attempts int64 `json:"attempts"`
	Runs     int64 `json:"runs"`
	Retried  int64 `json:"retried"`
}

// AuditExceptionClass is the exceptions of one provider error class.
type AuditExceptionClass struct {
	Class     string `json:"class"`
	Transient bool   `json:"transient"`
	Attempts  int64  `json:"attempts"`
	Runs      int64  `json:"runs"`
}

// AuditTimeouts counts verify and acceptance failures that were command
// timeouts (T2), which the factory reports as logic errors.
type AuditTimeouts struct {
	Total   AuditCount        `json:"total"`
	ByStage []AuditTimeoutRow `json:"by_stage"`
}

// AuditTimeoutRow is the timeouts of one stage.
type AuditTimeoutRow struct {
	Stage string     `json:"stage"`
	Count AuditCount `json:"count"`
}

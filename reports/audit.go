package reports

import (
	"bytes"
	"errors"
	"io"
	"strconv"
)

// FactoryAudit is seed 003's factory retry audit, computed from the
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

// Whether a retry can change an outcome, by seed 003's classification.
const (
	RetryNo      = "no"               // deterministic: every retry fails the same way
	RetryYes     = "yes"              // the retry loop's intended case
	RetryMaybe   = "maybe"            // the LLM is stochastic, its corrective signal weak
	RetryDepends = "depends_on_error" // F2: transient or permanent by the error's text
	RetryUnknown = "unknown"          // a stage the audit does not describe
)

// AuditStage is the failed attempts of one stage of the taxonomy.
type AuditStage struct {
	// Class is the seed's id (F1..F8, F8a); "" for a stage outside its
	// taxonomy.
	Class          string `json:"class"`
	Stage          string `json:"stage"`
	FailedAttempts int64  `json:"failed_attempts"`
	Runs           int64  `json:"runs"`
	RetryHelps     string `json:"retry_helps"`
	Classification string `json:"classification"`
}

// AuditRetriedDeterministic counts failures a retry cannot change that
// were retried anyway (seed 003, section 3). See query.FactoryAudit for
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

// auditFields are the audit's totals, for the overview table and the CSV.
func auditFields(a *FactoryAudit) []overviewField {
	d, r, e, t := a.RetriedDeterministic, a.RepeatedSignatures, a.Exceptions, a.CommandTimeouts
	return []overviewField{
		{"runs", a.Runs},
		{"attempts", a.Attempts},
		{"failed_attempts", a.FailedAttempts},
		{"retried_runs", a.RetriedRuns},
		{"undated_runs", a.UndatedRuns},
		{"retried_deterministic_failures", d.Failures},
		{"retried_deterministic_runs", d.Runs},
		{"wasted_attempts", d.WastedAttempts},
		{"repeated_signature_runs", r.Runs},
		{"repeated_signature_attempts", r.RepeatedAttempts},
		{"transient_exceptions", e.Transient.Attempts},
		{"transient_exceptions_retried", e.Transient.Retried},
		{"permanent_exceptions", e.Permanent.Attempts},
		{"permanent_exceptions_retried", e.Permanent.Retried},
		{"command_timeouts", t.Total.Attempts},
		{"command_timeouts_retried", t.Total.Retried},
	}
}

func auditGrids(a *FactoryAudit) []grid {
	overview := grid{title: "Factory retry audit", columns: []string{"field", "value"}, numeric: []bool{false, true}}
	for _, f := range auditFields(a) {
		overview.rows = append(overview.rows, []string{f.name, displayCell(plainCell(f.value), "-")})
	}
	n := func(v int64) string { return strconv.FormatInt(v, 10) }

	stages := grid{
		title:   "Failures by stage",
		columns: []string{"class", "stage", "failed_attempts", "runs", "retry_helps", "classification"},
		numeric: []bool{false, false, true, true, false, false},
	}
	for _, s := range a.Stages {
		stages.rows = append(stages.rows, []string{dash(s.Class), s.Stage, n(s.FailedAttempts), n(s.Runs), s.RetryHelps, s.Classification})
	}
	det := grid{
		title:   "Retried deterministic failures",
		columns: []string{"class", "stage", "failures", "runs", "wasted_attempts"},
		numeric: []bool{false, false, true, true, true},
	}
	for _, s := range a.RetriedDeterministic.ByStage {
		det.rows = append(det.rows, []string{dash(s.Class), s.Stage, n(s.Failures), n(s.Runs), n(s.WastedAttempts)})
	}
	rep := grid{
		title:   "Repeated failure signatures",
		columns: []string{"run_id", "item", "stage", "attempts", "repeated_attempts"},
		numeric: []bool{false, false, false, true, true},
	}
	for _, r := range a.RepeatedSignatures.Worst {
		rep.rows = append(rep.rows, []string{r.RunID, dash(r.Item), r.Stage, n(r.Attempts), n(r.RepeatedAttempts)})
	}
	exc := grid{
		title:   "Model API errors (the exception stage) by error class",
		columns: []string{"class", "kind", "attempts", "runs"},
		numeric: []bool{false, false, true, true},
	}
	for _, e := range a.Exceptions.ByClass {
		exc.rows = append(exc.rows, []string{e.Class, exceptionKind(e.Transient), n(e.Attempts), n(e.Runs)})
	}
	to := grid{
		title:   "Command timeouts",
		columns: []string{"stage", "attempts", "runs", "retried"},
		numeric: []bool{false, true, true, true},
	}
	for _, t := range a.CommandTimeouts.ByStage {
		to.rows = append(to.rows, []string{t.Stage, n(t.Count.Attempts), n(t.Count.Runs), n(t.Count.Retried)})
	}
	return []grid{overview, stages, det, rep, exc, to}
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func exceptionKind(transient bool) string {
	if transient {
		return "transient"
	}
	return "permanent"
}

// RenderAuditText writes the audit as the report's tables do: ASCII
// tables, or GitHub Markdown when markdown is set. Nothing is written if
// rendering fails.
func RenderAuditText(w io.Writer, a *FactoryAudit, markdown bool) error {
	if a == nil {
		return errors.New("reports: nil factory audit")
	}
	f := FormatTable
	if markdown {
		f = FormatMarkdown
	}
	var buf bytes.Buffer
	if err := writeGrids(&buf, auditGrids(a), f, 0); err != nil {
		return err
	}
	_, err := buf.WriteTo(w)
	return err
}

// AuditCSV is the audit as rows of the report's long CSV (see
// writeReportCSV): section, key, metric, value, numerator, denominator,
// without the header, so they can follow a report's rows. Sections:
//
//   - factory_audit: key empty; metric is each total of the overview
//     table (runs, attempts, ..., command_timeouts_retried).
//   - factory_audit_stages: key the seed id, or the stage for a stage
//     outside the taxonomy; metric is stage, failed_attempts, runs,
//     retry_helps and classification.
//   - factory_audit_deterministic: key the seed id; metric is stage,
//     failures, runs and wasted_attempts.
//   - factory_audit_repeats: key the run id; metric is item, stage,
//     attempts and repeated_attempts.
//   - factory_audit_exceptions: key the class and kind
//     ("rate_limit/transient"); metric is attempts and runs.
//   - factory_audit_timeouts: key the stage; metric is attempts, runs and
//     retried.
func AuditCSV(a *FactoryAudit) [][]string {
	if a == nil {
		return nil
	}
	var out [][]string
	value := func(section, key, metric string, v any) {
		out = append(out, []string{section, key, metric, csvCell(plainCell(v)), "", ""})
	}
	for _, f := range auditFields(a) {
		value("factory_audit", "", f.name, f.value)
	}
	for _, s := range a.Stages {
		k := s.Class
		if k == "" {
			k = s.Stage
		}
		value("factory_audit_stages", k, "stage", s.Stage)
		value("factory_audit_stages", k, "failed_attempts", s.FailedAttempts)
		value("factory_audit_stages", k, "runs", s.Runs)
		value("factory_audit_stages", k, "retry_helps", s.RetryHelps)
		value("factory_audit_stages", k, "classification", s.Classification)
	}
	for _, s := range a.RetriedDeterministic.ByStage {
		value("factory_audit_deterministic", s.Class, "stage", s.Stage)
		value("factory_audit_deterministic", s.Class, "failures", s.Failures)
		value("factory_audit_deterministic", s.Class, "runs", s.Runs)
		value("factory_audit_deterministic", s.Class, "wasted_attempts", s.WastedAttempts)
	}
	for _, r := range a.RepeatedSignatures.Worst {
		value("factory_audit_repeats", r.RunID, "item", r.Item)
		value("factory_audit_repeats", r.RunID, "stage", r.Stage)
		value("factory_audit_repeats", r.RunID, "attempts", r.Attempts)
		value("factory_audit_repeats", r.RunID, "repeated_attempts", r.RepeatedAttempts)
	}
	for _, e := range a.Exceptions.ByClass {
		k := e.Class + "/" + exceptionKind(e.Transient)
		value("factory_audit_exceptions", k, "attempts", e.Attempts)
		value("factory_audit_exceptions", k, "runs", e.Runs)
	}
	for _, t := range a.CommandTimeouts.ByStage {
		value("factory_audit_timeouts", t.Stage, "attempts", t.Count.Attempts)
		value("factory_audit_timeouts", t.Stage, "runs", t.Count.Runs)
		value("factory_audit_timeouts", t.Stage, "retried", t.Count.Retried)
	}
	return out
}

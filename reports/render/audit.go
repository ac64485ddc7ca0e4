package render

import (
	"bytes"
	"errors"
	"github.com/orchstat/orchstat/reports"
	"io"
	"strconv"
)

// auditFields are the audit's totals, for the overview table and the CSV.
func auditFields(a *reports.FactoryAudit) []overviewField {
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

func auditGrids(a *reports.FactoryAudit) []grid {
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
func RenderAuditText(w io.Writer, a *reports.FactoryAudit, markdown bool) error {
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
func AuditCSV(a *reports.FactoryAudit) [][]string {
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

package render

import (
	"github.com/orchstat/orchstat/model/reports"
)

// auditFields are the audit's totals, for the overview table and the CSV.
func auditFields(a *reports.FactoryAudit) []field {
	d, r, e, t := a.RetriedDeterministic, a.RepeatedSignatures, a.Exceptions, a.CommandTimeouts
	return []field{
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

// auditSections are the audit's sections of a flat report; none when a
// is nil.
func auditSections(a *reports.FactoryAudit) []section {
	if a == nil {
		return nil
	}
	return []section{
		fieldsSection("factory_audit", "Factory retry audit", auditFields(a), true),
		auditStageTable.section(a.Stages),
		auditDeterministicTable.section(a.RetriedDeterministic.ByStage),
		auditRepeatTable.section(a.RepeatedSignatures.Worst),
		auditExceptionTable.section(a.Exceptions.ByClass),
		auditTimeoutTable.section(a.CommandTimeouts.ByStage),
	}
}

// auditStageTable's key is the audit's id, or the stage for a stage outside
// the taxonomy.
var auditStageTable = rowTable[reports.AuditStage]{
	name: "factory_audit_stages", title: "Failures by stage",
	key: func(s reports.AuditStage) string {
		if s.Class == "" {
			return s.Stage
		}
		return s.Class
	},
	columns: []column[reports.AuditStage]{
		keyCol("class", func(s reports.AuditStage) string { return dash(s.Class) }),
		textCol("stage", func(s reports.AuditStage) string { return s.Stage }),
		intCol("failed_attempts", func(s reports.AuditStage) int64 { return s.FailedAttempts }),
		intCol("runs", func(s reports.AuditStage) int64 { return s.Runs }),
		textCol("retry_helps", func(s reports.AuditStage) string { return s.RetryHelps }),
		textCol("classification", func(s reports.AuditStage) string { return s.Classification }),
	},
}

var auditDeterministicTable = rowTable[reports.AuditDeterministicRow]{
	name: "factory_audit_deterministic", title: "Retried deterministic failures",
	key: func(s reports.AuditDeterministicRow) string { return s.Class },
	columns: []column[reports.AuditDeterministicRow]{
		keyCol("class", func(s reports.AuditDeterministicRow) string { return dash(s.Class) }),
		textCol("stage", func(s reports.AuditDeterministicRow) string { return s.Stage }),
		intCol("failures", func(s reports.AuditDeterministicRow) int64 { return s.Failures }),
		intCol("runs", func(s reports.AuditDeterministicRow) int64 { return s.Runs }),
		intCol("wasted_attempts", func(s reports.AuditDeterministicRow) int64 { return s.WastedAttempts }),
	},
}

var auditRepeatTable = rowTable[reports.AuditRepeatRun]{
	name: "factory_audit_repeats", title: "Repeated failure signatures",
	key: func(r reports.AuditRepeatRun) string { return r.RunID },
	columns: []column[reports.AuditRepeatRun]{
		keyCol("run_id", func(r reports.AuditRepeatRun) string { return r.RunID }),
		{name: "item", text: func(r reports.AuditRepeatRun) string { return dash(r.Item) },
			value: func(r reports.AuditRepeatRun) any { return r.Item }},
		textCol("stage", func(r reports.AuditRepeatRun) string { return r.Stage }),
		intCol("attempts", func(r reports.AuditRepeatRun) int64 { return r.Attempts }),
		intCol("repeated_attempts", func(r reports.AuditRepeatRun) int64 { return r.RepeatedAttempts }),
	},
}

var auditExceptionTable = rowTable[reports.AuditExceptionClass]{
	name: "factory_audit_exceptions", title: "Model API errors (the exception stage) by error class",
	key: func(e reports.AuditExceptionClass) string { return joinKey(e.Class, exceptionKind(e.Transient)) },
	columns: []column[reports.AuditExceptionClass]{
		keyCol("class", func(e reports.AuditExceptionClass) string { return e.Class }),
		keyCol("kind", func(e reports.AuditExceptionClass) string { return exceptionKind(e.Transient) }),
		intCol("attempts", func(e reports.AuditExceptionClass) int64 { return e.Attempts }),
		intCol("runs", func(e reports.AuditExceptionClass) int64 { return e.Runs }),
	},
}

var auditTimeoutTable = rowTable[reports.AuditTimeoutRow]{
	name: "factory_audit_timeouts", title: "Command timeouts",
	key: func(t reports.AuditTimeoutRow) string { return t.Stage },
	columns: []column[reports.AuditTimeoutRow]{
		keyCol("stage", func(t reports.AuditTimeoutRow) string { return t.Stage }),
		intCol("attempts", func(t reports.AuditTimeoutRow) int64 { return t.Count.Attempts }),
		intCol("runs", func(t reports.AuditTimeoutRow) int64 { return t.Count.Runs }),
		intCol("retried", func(t reports.AuditTimeoutRow) int64 { return t.Count.Retried }),
	},
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

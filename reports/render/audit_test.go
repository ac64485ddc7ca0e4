package render

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"errors"
	"io"
	"slices"
	"strings"
	"testing"

	"github.com/orchstat/orchstat/model/reports"
)

func sampleAudit() *reports.FactoryAudit {
	return &reports.FactoryAudit{
		Runs: 10, Attempts: 22, FailedAttempts: 17, RetriedRuns: 9, UndatedRuns: 4,
		Stages: []reports.AuditStage{
			{Class: "F1", Stage: "preflight", FailedAttempts: 3, Runs: 1, RetryHelps: reports.RetryNo, Classification: "deterministic failure retried"},
			{Class: "F8a", Stage: "acceptance_failed", FailedAttempts: 2, Runs: 1, RetryHelps: reports.RetryNo, Classification: "deterministic | shlex"},
			{Stage: "patch_apply_failed", FailedAttempts: 2, Runs: 1, RetryHelps: reports.RetryMaybe, Classification: "not in seed 003's taxonomy (older factory)"},
		},
		RetriedDeterministic: reports.AuditRetriedDeterministic{Failures: 3, Runs: 2, WastedAttempts: 3, ByStage: []reports.AuditDeterministicRow{
			{Class: "F1", Stage: "preflight", Failures: 2, Runs: 1, WastedAttempts: 2},
			{Class: "F8a", Stage: "acceptance_failed", Failures: 1, Runs: 1, WastedAttempts: 1},
		}},
		RepeatedSignatures: reports.AuditRepeats{Runs: 2, RepeatedAttempts: 3, Worst: []reports.AuditRepeatRun{
			{RunID: "f1-preflight", Item: "WO-01", Stage: "preflight", Attempts: 3, RepeatedAttempts: 2},
			{RunID: "brief-only", Stage: "llm_output_invalid", Attempts: 2, RepeatedAttempts: 1},
		}},
		Exceptions: reports.AuditExceptions{
			Transient: reports.AuditCount{Attempts: 1, Runs: 1, Retried: 1},
			Permanent: reports.AuditCount{Attempts: 2, Runs: 1},
			ByClass:   []reports.AuditExceptionClass{{Class: "unknown", Attempts: 2, Runs: 1}, {Class: "rate_limit", Transient: true, Attempts: 1, Runs: 1}},
		},
		CommandTimeouts: reports.AuditTimeouts{Total: reports.AuditCount{Attempts: 1, Runs: 1, Retried: 1},
			ByStage: []reports.AuditTimeoutRow{{Stage: "verify_failed", Count: reports.AuditCount{Attempts: 1, Runs: 1, Retried: 1}}}},
	}
}

const auditTable = `Factory retry audit
+--------------------------------+-------+
| field                          | value |
+--------------------------------+-------+
| runs                           |    10 |
| attempts                       |    22 |
| failed_attempts                |    17 |
| retried_runs                   |     9 |
| undated_runs                   |     4 |
| retried_deterministic_failures |     3 |
| retried_deterministic_runs     |     2 |
| wasted_attempts                |     3 |
| repeated_signature_runs        |     2 |
| repeated_signature_attempts    |     3 |
| transient_exceptions           |     1 |
| transient_exceptions_retried   |     1 |
| permanent_exceptions           |     2 |
| permanent_exceptions_retried   |     0 |
| command_timeouts               |     1 |
| command_timeouts_retried       |     1 |
+--------------------------------+-------+

Failures by stage
+-------+--------------------+-----------------+------+-------------+--------------------------------------------+
| class | stage              | failed_attempts | runs | retry_helps | classification                             |
+-------+--------------------+-----------------+------+-------------+--------------------------------------------+
| F1    | preflight          |               3 |    1 | no          | deterministic failure retried              |
| F8a   | acceptance_failed  |               2 |    1 | no          | deterministic | shlex                      |
| -     | patch_apply_failed |               2 |    1 | maybe       | not in seed 003's taxonomy (older factory) |
+-------+--------------------+-----------------+------+-------------+--------------------------------------------+

Retried deterministic failures
+-------+-------------------+----------+------+-----------------+
| class | stage             | failures | runs | wasted_attempts |
+-------+-------------------+----------+------+-----------------+
| F1    | preflight         |        2 |    1 |               2 |
| F8a   | acceptance_failed |        1 |    1 |               1 |
+-------+-------------------+----------+------+-----------------+

Repeated failure signatures
+--------------+-------+--------------------+----------+-------------------+
| run_id       | item  | stage              | attempts | repeated_attempts |
+--------------+-------+--------------------+----------+-------------------+
| f1-preflight | WO-01 | preflight          |        3 |                 2 |
| brief-only   | -     | llm_output_invalid |        2 |                 1 |
+--------------+-------+--------------------+----------+-------------------+

Model API errors (the exception stage) by error class
+------------+-----------+----------+------+
| class      | kind      | attempts | runs |
+------------+-----------+----------+------+
| unknown    | permanent |        2 |    1 |
| rate_limit | transient |        1 |    1 |
+------------+-----------+----------+------+

Command timeouts
+---------------+----------+------+---------+
| stage         | attempts | runs | retried |
+---------------+----------+------+---------+
| verify_failed |        1 |    1 |       1 |
+---------------+----------+------+---------+
`

func TestRenderAuditText(t *testing.T) {
	var b bytes.Buffer
	if err := RenderAuditText(&b, sampleAudit(), false); err != nil {
		t.Fatal(err)
	}
	if b.String() != auditTable {
		t.Errorf("table output:\n%s\nwant:\n%s", b.String(), auditTable)
	}
}

func TestRenderAuditMarkdown(t *testing.T) {
	var b bytes.Buffer
	if err := RenderAuditText(&b, sampleAudit(), true); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{
		"## Factory retry audit\n\n| field ",
		"## Failures by stage\n",
		"| F8a   | acceptance_failed  |               2 |    1 | no          | deterministic \\| shlex                     |\n",
		"|:------|:-------------------|----------------:|",
		"## Command timeouts\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("markdown lacks %q:\n%s", want, out)
		}
	}
}

// An audit of no runs still shows every section, each "(none)" but the
// totals; text from the records cannot drive the terminal.
func TestRenderAuditEmptyAndHostile(t *testing.T) {
	a := &reports.FactoryAudit{RepeatedSignatures: reports.AuditRepeats{Runs: 1, RepeatedAttempts: 1,
		Worst: []reports.AuditRepeatRun{{RunID: "run\x1b[2J", Stage: "verify_failed\nx", Attempts: 2, RepeatedAttempts: 1}}}}
	var b bytes.Buffer
	if err := RenderAuditText(&b, a, false); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	if strings.Count(out, "(none)") != 4 {
		t.Errorf("want 4 empty sections:\n%s", out)
	}
	if strings.ContainsAny(out, "\x1b") || !strings.Contains(out, `run\x1b[2J`) || !strings.Contains(out, `verify_failed\nx`) {
		t.Errorf("control characters not escaped:\n%s", out)
	}
	if err := RenderAuditText(&b, nil, false); err == nil {
		t.Error("nil audit rendered")
	}
}

func TestAuditCSV(t *testing.T) {
	rows := AuditCSV(sampleAudit())
	for _, r := range rows {
		if len(r) != 6 {
			t.Fatalf("row %v has %d fields, want the report CSV's 6", r, len(r))
		}
	}
	var b bytes.Buffer
	cw := csv.NewWriter(&b)
	if err := cw.WriteAll(rows); err != nil {
		t.Fatal(err)
	}
	back, err := csv.NewReader(&b).ReadAll()
	if err != nil || !slices.EqualFunc(back, rows, slices.Equal[[]string]) {
		t.Fatalf("rows do not survive CSV: %v", err)
	}
	has := func(want ...string) {
		t.Helper()
		want = append(want, "", "")
		if !slices.ContainsFunc(rows, func(r []string) bool { return slices.Equal(r, want) }) {
			t.Errorf("no row %q", want)
		}
	}
	has("factory_audit", "", "runs", "10")
	has("factory_audit", "", "wasted_attempts", "3")
	has("factory_audit", "", "permanent_exceptions_retried", "0")
	has("factory_audit_stages", "F8a", "stage", "acceptance_failed")
	has("factory_audit_stages", "F8a", "classification", "deterministic | shlex")
	has("factory_audit_stages", "patch_apply_failed", "retry_helps", "maybe")
	has("factory_audit_deterministic", "F1", "wasted_attempts", "2")
	has("factory_audit_repeats", "brief-only", "item", "")
	has("factory_audit_exceptions", "rate_limit/transient", "attempts", "1")
	has("factory_audit_timeouts", "verify_failed", "retried", "1")
	if AuditCSV(nil) != nil {
		t.Error("rows for a nil audit")
	}
}

// The JSON names are snake_case, as the report's are.
func TestAuditJSONNames(t *testing.T) {
	b, err := json.Marshal(sampleAudit())
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	json.Unmarshal(b, &m)
	var keys []string
	var walk func(v any)
	walk = func(v any) {
		switch x := v.(type) {
		case map[string]any:
			for k, e := range x {
				keys = append(keys, k)
				walk(e)
			}
		case []any:
			for _, e := range x {
				walk(e)
			}
		}
	}
	walk(m)
	for _, k := range keys {
		if k != strings.ToLower(k) || strings.ContainsAny(k, " -") {
			t.Errorf("key %q is not snake_case", k)
		}
	}
	for _, want := range []string{"failures_by_stage", "retried_deterministic", "wasted_attempts", "repeated_signatures",
		"worst_runs", "exceptions", "transient", "permanent", "by_class", "command_timeouts", "class", "retry_helps"} {
		if !slices.Contains(keys, want) {
			t.Errorf("no key %q in %s", want, b)
		}
	}
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
	if err := writeGrids(&buf, grids(auditSections(a)), f, 0); err != nil {
		return err
	}
	_, err := buf.WriteTo(w)
	return err
}

// AuditCSV is the audit's rows of the report's long CSV (see
// writeReportCSV), without the header.
func AuditCSV(a *reports.FactoryAudit) [][]string {
	return csvRecords(auditSections(a))
}

// Package audit computes the factory retry audit from the factory's
// recorded runs: the audit's failure taxonomy (which stages a retry can
// change) and its definitions, a pure function from runs to the
// report model's FactoryAudit. The store reads the runs (query's
// FactoryAudit); what they add up to is decided here.
package audit

import (
	"cmp"
	"maps"
	"slices"
	"strings"

	"github.com/orchstat/orchstat/model/failure"
	"github.com/orchstat/orchstat/model/reports"
)

// auditStage is one row of the factory audit's failure taxonomy: a stage of the
// factory's FailureBrief, the audit's id for it, and whether a retry from
// SE can change the outcome.
type auditStage struct {
	id, stage string
	// text is the error text that tells a sub-case of its stage apart
	// (F8a), or "".
	text string
	// retry is the audit's verdict on a failure a retry may change. The
	// "no" rows leave it empty: which failures are deterministic is
	// model/failure's to say (verdict).
	retry          string
	classification string
}

// verdict is the row's "retry helps": reports.RetryNo for a failure a
// retry cannot change (failure.FactoryDeterministic), else the audit's.
func (s *auditStage) verdict() string {
	if failure.FactoryDeterministic(s.stage, s.text) {
		return reports.RetryNo
	}
	return s.retry
}

// factoryTaxonomy is the audit's per-stage classification, the one table
// of it: the factory audit (shared/seeds/003_*.txt), section 2 and the table of
// section 3.
var factoryTaxonomy = []auditStage{
	// Lines 49-77, 286: the filesystem is identical after rollback.
	{"precondition failure", "preflight", "", "", "deterministic failure retried"},
	// Lines 79-111: transient errors can pass on retry, permanent ones
	// (bad key, missing model or package) cannot; see the exceptions.
	{"model API error", "exception", "", reports.RetryDepends, "mixed: transient and permanent failures conflated"},
	// Lines 113-140: the LLM is stochastic; the corrective signal is weak.
	{"unparseable model output", "llm_output_invalid", "", reports.RetryMaybe, "partially justified"},
	// Lines 142-168.
	{"write outside allowed files", "write_scope_violation", "", reports.RetryMaybe, "partially justified, but fragile"},
	// Lines 170-200: only if the LLM hallucinated the hash once.
	{"stale file hash", "stale_context", "", reports.RetryMaybe, "partially justified"},
	// Lines 202-228, 287: the OS-level condition persists.
	{"file-write failure", "write_failed", "", "", "deterministic failure retried (nearly always)"},
	// Lines 230-248: the intended retry case.
	{"verification failure", "verify_failed", "", reports.RetryYes, "correctly retried"},
	// Lines 250-280: postcondition and command failures.
	{"acceptance failure", "acceptance_failed", "", reports.RetryYes, "correctly retried (mostly)"},
	// Lines 260-266, 288: the command string comes from the immutable
	// work order; see failure.ShlexFailure.
	{"acceptance command does not parse", "acceptance_failed", failure.ShlexFailurePrefix, "", "deterministic failure retried (acceptance command does not parse)"},
	// The older factory asked the LLM for a unified diff and failed when
	// `git apply` refused it: the LLM's output was unusable, as in F3, and
	// a new call writes a new diff.
	{"", "patch_apply_failed", "", reports.RetryMaybe, "older factory versions; not among the audit's classes"},
}

// taxonomyRow is the taxonomy row of a failure, or nil for a stage the
// seed does not describe: a row whose text tells its sub-case when the
// failure is that sub-case, else the stage's row.
func taxonomyRow(stage, errText string) *auditStage {
	sub := failure.ShlexFailure(stage, errText)
	for i := range factoryTaxonomy {
		if s := &factoryTaxonomy[i]; s.stage == stage && (s.text != "") == sub {
			return s
		}
	}
	return nil
}

// exceptionStage is F2's stage, whose text the audit splits.
const exceptionStage = "exception"

// Attempt is what the audit reads of one attempt.
type Attempt struct {
	N         int
	Passed    *bool // nil when the outcome is unknown
	Stage     string
	Class     string
	Signature string
	Err       string // only for exceptions and acceptance failures
}

func (a Attempt) failed() bool { return a.Passed != nil && !*a.Passed }

// Run is one factory run, with its attempts by attempt number.
type Run struct {
	ID, Item string
	Attempts []Attempt
}

// tally counts failed attempts and the distinct runs they are in.
type tally struct {
	attempts, retried int64
	runs              map[string]bool
}

func (t *tally) add(run string, retried bool) {
	if t.runs == nil {
		t.runs = map[string]bool{}
	}
	t.attempts++
	t.runs[run] = true
	if retried {
		t.retried++
	}
}

func (t *tally) count() reports.AuditCount {
	return reports.AuditCount{Attempts: t.attempts, Runs: int64(len(t.runs)), Retried: t.retried}
}

// Summarise applies FactoryAudit's definitions to runs; UndatedRuns is
// the caller's to set.
//
// Definitions, over each run's attempts in attempt order (an attempt the
// records lost, such as a broken one, is skipped, so "the attempt before"
// is the one recorded before):
//   - A failed attempt has passed = false; one whose outcome is unknown
//     counts as neither failed nor passed.
//   - A retried deterministic failure is a failed attempt at a stage a
//     retry cannot change (retry "no" in the taxonomy: F1, F6, F8a) that
//     another attempt of its run follows. A run's wasted attempts are the
//     attempts after its first retried deterministic failure: those a
//     factory that stops at such a failure (the factory audit, section 3) would
//     not have run. They count even when one of them passed, as an F6
//     run can after a passing filesystem fault ("nearly always").
//   - A repeated attempt failed with the same signature (failure.Signature
//     of its stage and error text) as the attempt before it. A run
//     repeats when it has one.
//   - An exception is a failed attempt at stage exception; it is
//     transient or permanent by failure.ExceptionTransient of its text, and
//     its class is failure.DefaultProvider's.
//   - A command timeout is a failed attempt whose class is
//     command_timeout (failure.ClassifyFactory: exit code -1 and
//     "[TIMEOUT]"), whatever stage the factory reported.
//   - "Retried" counts failures another attempt of the run follows.
func Summarise(runs []Run) *reports.FactoryAudit {
	s := auditSums{
		out: &reports.FactoryAudit{}, stages: map[string]*tally{}, determ: map[string]*tally{},
		wasted: map[string]int64{}, excClass: map[[2]string]*tally{}, timeouts: map[string]*tally{},
	}
	for _, r := range runs {
		s.run(r)
	}
	return s.finish()
}

// auditSums is the audit as it is summed up, run by run.
type auditSums struct {
	out                           *reports.FactoryAudit
	stages                        map[string]*tally    // by taxonomy id, or stage outside it
	determ                        map[string]*tally    // by taxonomy id
	wasted                        map[string]int64     // by taxonomy id
	excClass                      map[[2]string]*tally // by class and kind
	timeouts                      map[string]*tally    // by stage
	transient, permanent, timeout tally
}

// tallyOf is m[k], made when missing.
func tallyOf(m map[string]*tally, k string) *tally {
	if m[k] == nil {
		m[k] = &tally{}
	}
	return m[k]
}

// run counts one run's attempts.
func (s *auditSums) run(r Run) {
	out := s.out
	out.Runs++
	out.Attempts += int64(len(r.Attempts))
	if len(r.Attempts) > 1 {
		out.RetriedRuns++
	}
	wastedFrom := -1
	repeats := int64(0)
	repeatStage := ""
	for i, a := range r.Attempts {
		if !a.failed() {
			continue
		}
		out.FailedAttempts++
		followed := i < len(r.Attempts)-1
		row := taxonomyRow(a.Stage, a.Err)
		tallyOf(s.stages, stageKey(row, a.Stage)).add(r.ID, followed)
		if row != nil && row.verdict() == reports.RetryNo && followed {
			tallyOf(s.determ, row.id).add(r.ID, true)
			if wastedFrom < 0 {
				wastedFrom = i
				s.wasted[row.id] += int64(len(r.Attempts) - 1 - i)
			}
		}
		if i > 0 && a.Signature != "" && a.Signature == r.Attempts[i-1].Signature {
			if repeats == 0 {
				repeatStage = a.Stage
			}
			repeats++
		}
		s.failure(r.ID, a, followed)
	}
	if wastedFrom >= 0 {
		out.RetriedDeterministic.Runs++
		out.RetriedDeterministic.WastedAttempts += int64(len(r.Attempts) - 1 - wastedFrom)
	}
	if repeats > 0 {
		rep := &out.RepeatedSignatures
		rep.Runs++
		rep.RepeatedAttempts += repeats
		rep.Worst = append(rep.Worst, reports.AuditRepeatRun{RunID: r.ID, Item: r.Item, Stage: repeatStage,
			Attempts: int64(len(r.Attempts)), RepeatedAttempts: repeats})
	}
}

// failure counts a failed attempt's exception and command timeout.
func (s *auditSums) failure(run string, a Attempt, followed bool) {
	if a.Stage == exceptionStage {
		kind := "permanent"
		t := &s.permanent
		if failure.ExceptionTransient(a.Err) {
			kind, t = "transient", &s.transient
		}
		t.add(run, followed)
		k := [2]string{string(failure.DefaultProvider.Classify(a.Err)), kind}
		if s.excClass[k] == nil {
			s.excClass[k] = &tally{}
		}
		s.excClass[k].add(run, followed)
	}
	if a.Class == string(failure.ClassCommandTimeout) {
		s.timeout.add(run, followed)
		tallyOf(s.timeouts, a.Stage).add(run, followed)
	}
}

// finish turns the sums into the audit's tables.
func (s *auditSums) finish() *reports.FactoryAudit {
	out := s.out
	out.Stages = stageRows(s.stages)
	for _, row := range factoryTaxonomy {
		if row.verdict() != reports.RetryNo {
			continue
		}
		t := tallyOf(s.determ, row.id)
		out.RetriedDeterministic.Failures += t.attempts
		out.RetriedDeterministic.ByStage = append(out.RetriedDeterministic.ByStage, reports.AuditDeterministicRow{
			Class: row.id, Stage: row.stage, Failures: t.attempts, Runs: int64(len(t.runs)), WastedAttempts: s.wasted[row.id]})
	}
	slices.SortStableFunc(out.RepeatedSignatures.Worst, func(a, b reports.AuditRepeatRun) int {
		return cmp.Or(cmp.Compare(b.RepeatedAttempts, a.RepeatedAttempts), cmp.Compare(a.RunID, b.RunID))
	})
	if len(out.RepeatedSignatures.Worst) > maxRepeatRuns {
		out.RepeatedSignatures.Worst = out.RepeatedSignatures.Worst[:maxRepeatRuns]
	}
	out.Exceptions.Transient, out.Exceptions.Permanent = s.transient.count(), s.permanent.count()
	for k, t := range s.excClass {
		out.Exceptions.ByClass = append(out.Exceptions.ByClass, reports.AuditExceptionClass{
			Class: k[0], Transient: k[1] == "transient", Attempts: t.attempts, Runs: int64(len(t.runs))})
	}
	slices.SortFunc(out.Exceptions.ByClass, func(a, b reports.AuditExceptionClass) int {
		return cmp.Or(cmp.Compare(b.Attempts, a.Attempts), cmp.Compare(a.Class, b.Class), cmp.Compare(exKind(a), exKind(b)))
	})
	out.CommandTimeouts.Total = s.timeout.count()
	for _, st := range slices.Sorted(maps.Keys(s.timeouts)) {
		out.CommandTimeouts.ByStage = append(out.CommandTimeouts.ByStage, reports.AuditTimeoutRow{Stage: st, Count: s.timeouts[st].count()})
	}
	nonNilAudit(out)
	return out
}

// maxRepeatRuns bounds the runs the repeats list names; the totals count
// every run.
const maxRepeatRuns = 20

// stageKey keys a failure's row: its taxonomy row, or "?" and its stage
// when the taxonomy has none for it.
func stageKey(row *auditStage, stage string) string {
	if row != nil {
		return row.id + "|" + row.stage
	}
	return "?|" + stage
}

// stageRows lists every taxonomy row, failed or not, so the audit shows
// the whole taxonomy; then stages outside it, most failures first. A
// failure that names no stage is "(none)".
func stageRows(m map[string]*tally) []reports.AuditStage {
	var out []reports.AuditStage
	row := func(id, stage, retry, class string, t *tally) reports.AuditStage {
		s := reports.AuditStage{Class: id, Stage: stage, RetryHelps: retry, Classification: class}
		if t != nil {
			s.FailedAttempts, s.Runs = t.attempts, int64(len(t.runs))
		}
		return s
	}
	for _, s := range factoryTaxonomy {
		out = append(out, row(s.id, s.stage, s.verdict(), s.classification, m[stageKey(&s, s.stage)]))
	}
	var extra []reports.AuditStage
	for k, t := range m {
		stage, ok := strings.CutPrefix(k, "?|")
		if !ok {
			continue
		}
		class := "not a known factory stage"
		if stage == "" {
			stage, class = "(none)", "the record does not say where the attempt failed"
		}
		extra = append(extra, row("", stage, reports.RetryUnknown, class, t))
	}
	slices.SortFunc(extra, func(a, b reports.AuditStage) int {
		return cmp.Or(cmp.Compare(b.FailedAttempts, a.FailedAttempts), cmp.Compare(a.Stage, b.Stage))
	})
	return append(out, extra...)
}

func exKind(e reports.AuditExceptionClass) int {
	if e.Transient {
		return 0
	}
	return 1
}

// nonNilAudit makes the audit's lists [] rather than null in JSON.
func nonNilAudit(a *reports.FactoryAudit) {
	if a.RepeatedSignatures.Worst == nil {
		a.RepeatedSignatures.Worst = []reports.AuditRepeatRun{}
	}
	if a.Exceptions.ByClass == nil {
		a.Exceptions.ByClass = []reports.AuditExceptionClass{}
	}
	if a.CommandTimeouts.ByStage == nil {
		a.CommandTimeouts.ByStage = []reports.AuditTimeoutRow{}
	}
}

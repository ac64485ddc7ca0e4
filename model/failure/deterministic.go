package failure

import (
	"slices"
	"strings"
)

// deterministicClasses are the failures a retry cannot change, by the
// factory audit ("Deterministic Failures That Are Retried", lines 282-288):
//   - preflight (F1, lines 49-77): the filesystem is identical after the
//     rollback, so the precondition fails again;
//   - write_failed (F6, lines 202-228): the OS-level condition persists.
//
// With F8a (ShlexFailure), which has no class of its own, this is the one
// statement of which failures are deterministic: the audit's "retry: no"
// rows, the factory-audited preset and the wasted_attempt_rate metric all
// read it.
var deterministicClasses = []Class{ClassPreflight, ClassWriteFailed}

// DeterministicClasses lists the classes a retry cannot change, in
// AllClasses order.
func DeterministicClasses() []Class { return slices.Clone(deterministicClasses) }

// Deterministic reports whether a retry cannot change a failure of class c.
func (c Class) Deterministic() bool { return slices.Contains(deterministicClasses, c) }

// F8a, an acceptance command that does not parse (the factory audit, lines 260-266
// and 288): the factory writes this text, with exit code null as no
// command ran, when shlex cannot split the work order's acceptance
// command. The command comes from the immutable work order, so every retry
// fails the same way; but the stage is the retriable acceptance_failed,
// so only the text tells it.
const (
	ShlexFailureStage  = "acceptance_failed"
	ShlexFailurePrefix = "Failed to parse acceptance command"
)

// ShlexFailure tells F8a from the rest of acceptance_failed by the
// factory's stage and error text.
func ShlexFailure(stage, text string) bool {
	return stage == ShlexFailureStage && strings.HasPrefix(strings.TrimSpace(text), ShlexFailurePrefix)
}

// FactoryDeterministic reports whether a retry cannot change a factory
// failure at stage (its failure_brief stage) with this error text: a
// deterministic class, or F8a.
func FactoryDeterministic(stage, text string) bool {
	return DefaultFactory.Classify(stage).Deterministic() || ShlexFailure(stage, text)
}

// Package failure names what went wrong in an attempt, for the three systems
// orchstat reads: the classes of provider errors (the orchestrator), of the
// factory's failure stages (the factory audit) and of commands (the retry
// handler and the factory audit), the classifiers that tell them from a
// failure's text, failure signatures, and which failures a retry cannot
// change (Deterministic). It is plain Go and imports nothing from the module,
// so the JSON parsers and the retry engine can share it.
package failure

import "slices"

// Class is a failure's class. A policy decides, class by class, whether a
// failure is worth retrying.
type Class string

// Classes of provider errors (the orchestrator), told from the error text.
const (
	ClassRateLimit Class = "rate_limit" // 429
	ClassTimeout   Class = "timeout"
	ClassServer    Class = "server"  // 5xx
	ClassNetwork   Class = "network" // ECONNRESET, ETIMEDOUT, ECONNREFUSED
	ClassAuth      Class = "auth"    // 401, 403
	ClassClient    Class = "client"  // other 4xx
	ClassAbort     Class = "abort"   // cancelled by the user
	ClassUnknown   Class = "unknown" // text that matches nothing
)

// Classes of the factory's failure stages (the factory audit).
const (
	ClassPreflight           Class = "preflight"
	ClassException           Class = "exception"
	ClassLLMOutputInvalid    Class = "llm_output_invalid"
	ClassWriteScopeViolation Class = "write_scope_violation"
	ClassStaleContext        Class = "stale_context"
	ClassWriteFailed         Class = "write_failed"
	ClassVerifyFailed        Class = "verify_failed"
	ClassAcceptanceFailed    Class = "acceptance_failed"
	ClassPatchApplyFailed    Class = "patch_apply_failed"
)

// Classes of a command's failure (the retry handler and the factory audit's
// T2): a timeout is told apart from a logic error.
const (
	ClassCommandTimeout Class = "command_timeout"
	ClassLogicError     Class = "logic_error"
	ClassSignal         Class = "signal"
)

// AllClasses lists every class, provider classes first, then the
// factory's, then commands', then unknown.
func AllClasses() []Class { return slices.Clone(allClasses) }

var allClasses = []Class{
	ClassRateLimit, ClassTimeout, ClassServer, ClassNetwork, ClassAuth, ClassClient, ClassAbort,
	ClassPreflight, ClassException, ClassLLMOutputInvalid, ClassWriteScopeViolation, ClassStaleContext,
	ClassWriteFailed, ClassVerifyFailed, ClassAcceptanceFailed, ClassPatchApplyFailed,
	ClassCommandTimeout, ClassLogicError, ClassSignal,
	ClassUnknown,
}

// Known reports whether c is one of the classes this package defines.
func (c Class) Known() bool { return slices.Contains(allClasses, c) }

// ClassNames is AllClasses as strings, for messages that list them.
func ClassNames() []string {
	out := make([]string, len(allClasses))
	for i, c := range allClasses {
		out[i] = string(c)
	}
	return out
}

package retry

// Class is a failure's class. A policy decides, class by class, whether a
// failure is worth retrying.
type Class string

// Classes of provider errors (seed 000), told from the error text.
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

// Classes of the factory's failure stages (seed 003).
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

// Classes of a command's failure (seed 001 and seed 003's T2): a timeout
// is told apart from a logic error.
const (
	ClassCommandTimeout Class = "command_timeout"
	ClassLogicError     Class = "logic_error"
	ClassSignal         Class = "signal"
)

package events

// The event types orchstat reads from a trace or writes to one (exec's
// traces), spelled as the orchestrator spells them. This is their one
// home: Go code that compares or switches on an event's Type uses these,
// and SQL that names one in a literal is checked against these constants by
// TestEventNamesKnown. Other types are kept whole in the events table.
const (
	RunStarted   = "RunStarted"
	RunFinished  = "RunFinished"
	RunStopped   = "RunStopped"
	RunEscalated = "RunEscalated"

	ProviderSelected        = "ProviderSelected"
	ProviderRequestStarted  = "ProviderRequestStarted"
	ProviderRequestFinished = "ProviderRequestFinished"

	// L2, the repair loop.
	IterationStarted     = "IterationStarted"
	RepairAttempted      = "RepairAttempted"
	IterationFinished    = "IterationFinished"
	PatchApplied         = "PatchApplied"
	PatchApplyFailed     = "PatchApplyFailed"
	VerificationFinished = "VerificationFinished"

	// L3, the planned steps with candidates, diagnosis and a judge.
	StepStarted        = "StepStarted"
	StepFinished       = "StepFinished"
	CandidateGenerated = "CandidateGenerated"
	DiagnosisStarted   = "DiagnosisStarted"
	DiagnosisCompleted = "DiagnosisCompleted"
	JudgeInvoked       = "JudgeInvoked"
	JudgeDecided       = "JudgeDecided"
	JudgeFailed        = "JudgeFailed"

	// orchstat exec's commands and their attempts.
	CommandAttemptStarted  = "CommandAttemptStarted"
	CommandAttemptFinished = "CommandAttemptFinished"
	CommandRetryScheduled  = "CommandRetryScheduled"
	CommandHalted          = "CommandHalted"
	CommandFinished        = "CommandFinished"
)

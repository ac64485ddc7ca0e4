// Package records is the shape every non-trace record format maps into: the
// factory's run summaries and failure briefs, claudestrator's history and
// queues (its auto-retry), orchestr8's pipeline history, and the command
// attempts `orchstat exec` writes (claudestrator's retry handler, run for
// real). One shape lets one set of metrics, report sections, alert rules and
// replays serve every system.
//
// It is pure Go, so format parsers and their fuzzers link no DuckDB.
package records

import (
	"fmt"
	"time"
)

// Systems, as stored in the system columns.
const (
	Factory       = "factory"
	Claudestrator = "claudestrator"
	Orchestr8     = "orchestr8"
	Exec          = "exec"
)

// StatusQueued is the Status of work a record lists but that never ran: a
// claudestrator task still pending in its queue. It is not a run, so the
// metrics leave it out and the report counts it apart.
const StatusQueued = "queued"

// Run is one run of a system: a factory run, a claudestrator task within
// one orchestrator run, an orchestr8 pipeline entry.
type Run struct {
	System string
	RunID  string
	// Item is what the run works on, when the record names it: the work
	// order, the task or issue, the feature.
	Item string
	// Source names what the row was read from ("run_summary", "brief",
	// "events", "history", ...). When several files describe one run, the
	// store prefers the most complete source; see the attempt_runs view.
	Source string
	// Batch groups runs started together: the orchestrator run of a
	// claudestrator task, the web pipeline of a factory work order, the
	// murmuration batch of an orchestr8 feature.
	Batch                 string
	StartedAt, FinishedAt *time.Time
	// Status is "success", "failure", "cancelled", "unfinished",
	// StatusQueued, or the record's own word when it has another.
	Status string
	// Verdict is the record's own outcome field, verbatim.
	Verdict     string
	Attempts    *int
	MaxAttempts *int
	// EndedStage is the stage of the run's last failure, if it failed.
	EndedStage string
	DurationMS *float64
	Tokens     *float64
	CostUSD    *float64
	// Detail is the record as read, as JSON, for `orchstat sql`.
	Detail []byte
}

// Attempt is one attempt at a run's item: a factory attempt_N, a
// claudestrator loop of a task, one pass of an orchestr8 pipeline, one
// invocation of an exec'd command.
type Attempt struct {
	System, RunID, Item, Source string
	Attempt                     int // 1-based
	TS                          *time.Time
	// Passed is nil when the record does not say.
	Passed *bool
	// Stage is where the attempt failed ("" when it passed).
	Stage string
	// Class is the failure's class (model/failure).
	Class    string
	ExitCode *int
	Command  string
	// Error is the failure's text as recorded (an excerpt).
	Error string
	// Signature is failure.Signature over the stage and the error text: the
	// same failure repeated has the same signature.
	Signature  string
	DurationMS *float64
	Tokens     *float64
	CostUSD    *float64
}

// Stage is one stage an attempt ran: a verify or acceptance command, a
// build, lint or tests result, an orchestr8 agent.
type Stage struct {
	System, RunID, Item, Source string
	Attempt                     int
	Seq                         int // order within the attempt, from 1
	Name                        string
	// Passed is nil when the stage did not apply (claudestrator's N/A).
	Passed     *bool
	ExitCode   *int
	Command    string
	DurationMS *float64
	Tokens     *float64
	CostUSD    *float64
	Feedback   string
}

// Config is a system's retry configuration file, kept whole.
type Config struct {
	System string
	JSON   []byte
}

// Set is what one file holds.
type Set struct {
	Runs     []Run
	Attempts []Attempt
	Stages   []Stage
	Configs  []Config
	// Calls and CallAttempts are agents' model calls (see Call).
	Calls        []Call
	CallAttempts []CallAttempt
	// Problems are records skipped or read only in part. Ingest
	// quarantines each with its line and field and stores the rest.
	Problems []Error
	// Ignored counts the records that were read whole but give no row,
	// by the reason (OpenTelemetry spans that are no model call, say).
	Ignored map[string]int
}

// Ignore counts a record read but not used, for reason.
func (s *Set) Ignore(reason string) {
	if s.Ignored == nil {
		s.Ignored = map[string]int{}
	}
	s.Ignored[reason]++
}

// Error is a record that cannot be read, located as precisely as the
// format allows: a line (1-based; 0 when unknown) and a field path such as
// "attempts[1].failure_brief.stage".
type Error struct {
	Line   int
	Offset int64
	Field  string
	Msg    string
}

func (e *Error) Error() string {
	switch {
	case e.Line > 0 && e.Field != "":
		return fmt.Sprintf("line %d: %s: %s", e.Line, e.Field, e.Msg)
	case e.Line > 0:
		return fmt.Sprintf("line %d: %s", e.Line, e.Msg)
	case e.Field != "":
		return fmt.Sprintf("%s: %s", e.Field, e.Msg)
	}
	return e.Msg
}

// Parser reads one whole file of a format. path is for messages and for
// names the record does not carry (a run directory's name); b is the
// file's content. A file that is not the format at all, or whose every
// record is unusable, is an *Error; records that are partial but usable
// are kept with their missing fields nil.
type Parser func(path string, b []byte) (*Set, error)

// Bool and Int make pointers for optional fields.
func Bool(b bool) *bool { return &b }

// Int returns a pointer to i.
func Int(i int) *int { return &i }

// Float returns a pointer to f.
func Float(f float64) *float64 { return &f }

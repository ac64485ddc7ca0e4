package runner

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/orchstat/orchstat/model/events"
)

// MaxString bounds each string a Recorder writes in a trace, as the
// orchestrator's writer truncates strings over 4096 characters
// (spec/EVENTS.md).
const MaxString = 4096

// AppendLine renders one trace event as a line: the trace envelope's
// writer (ingest/trace's), handed in by the command, since the retry
// rules' floor may not import the readers'.
type AppendLine func(dst []byte, runID, typ string, at time.Time, payload any) ([]byte, error)

// RecordSpec says which invocation a Recorder writes, and where.
type RecordSpec struct {
	Op      string
	Argv    []string
	Command string // Argv as a shell would need it typed
	RunsDir string
	RunID   string // the run to join; empty starts one
	Started time.Time
	PID     int // this process's, which names an invocation joining a run
	Append  AppendLine
	// Warn is told, once, why the invocation is not recorded.
	Warn func(error)
}

// A Recorder writes one exec invocation into a run's trace, as the
// orchestrator's runs are written, so ingest reads exec's attempts like
// any other run's. A trace that cannot be written costs the record, never
// the command: the Recorder warns once and writes nothing more.
type Recorder struct {
	spec  RecordSpec
	runID string
	// invocation names this invocation's record run: the run id, or, when
	// appending to a run exec did not start, one of its own under it.
	invocation string
	ownRun     bool
	trace      *os.File
	err        error
}

// Record starts a run, or joins the one spec names, and writes RunStarted
// when the run is its own.
func Record(spec RecordSpec) *Recorder {
	r := &Recorder{spec: spec, runID: spec.RunID}
	var dir string
	err := os.MkdirAll(spec.RunsDir, 0o755)
	if err == nil && r.runID == "" {
		// The orchestrator's run id is Date.now(); two runs starting in
		// the same millisecond take the next free one.
		ms := spec.Started.UnixMilli()
		for i := int64(0); ; i++ {
			r.runID = strconv.FormatInt(ms+i, 10)
			dir = filepath.Join(spec.RunsDir, r.runID)
			if err = os.Mkdir(dir, 0o755); !errors.Is(err, fs.ErrExist) || i == 1000 {
				break
			}
		}
		r.ownRun = err == nil
	} else if err == nil {
		dir = filepath.Join(spec.RunsDir, r.runID)
		if err = os.MkdirAll(dir, 0o755); err == nil {
			fi, serr := os.Stat(filepath.Join(dir, "trace.jsonl"))
			r.ownRun = serr != nil || fi.Size() == 0
		}
	}
	if r.runID == "" {
		r.runID = strconv.FormatInt(spec.Started.UnixMilli(), 10)
	}
	r.invocation = r.runID
	if !r.ownRun && err == nil {
		r.invocation = fmt.Sprintf("%s/exec-%d-%d", r.runID, spec.Started.UnixMilli(), spec.PID)
	}
	if err == nil {
		r.trace, err = os.OpenFile(filepath.Join(dir, "trace.jsonl"), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	}
	if err != nil {
		r.fail(err)
		return r
	}
	if r.ownRun {
		r.event(spec.Started, events.RunStarted, map[string]any{"taskId": "exec:" + spec.Op, "goal": Clip(spec.Command)})
	}
	return r
}

// RunID is the run the invocation is recorded in.
func (r *Recorder) RunID() string { return r.runID }

// Invocation names this invocation among the run's.
func (r *Recorder) Invocation() string { return r.invocation }

func (r *Recorder) fail(err error) {
	if r.err == nil {
		r.err = err
		if r.spec.Warn != nil {
			r.spec.Warn(err)
		}
	}
}

// event appends one line to the trace, in one write: with the file opened
// O_APPEND, concurrent writers to one trace never interleave within a line.
func (r *Recorder) event(at time.Time, typ string, payload map[string]any) {
	if r.trace == nil || r.err != nil {
		return
	}
	line, err := r.spec.Append(nil, r.runID, typ, at, payload)
	if err == nil {
		_, err = r.trace.Write(line)
	}
	if err != nil {
		r.fail(err)
	}
}

func (r *Recorder) base(attempt int) map[string]any {
	m := map[string]any{"invocationId": r.invocation, "op": r.spec.Op}
	if attempt > 0 {
		m["attempt"] = attempt
	}
	return m
}

func (r *Recorder) argv() []string {
	out := make([]string, len(r.spec.Argv))
	for i, a := range r.spec.Argv {
		out[i] = Clip(a)
	}
	return out
}

// AttemptStarted, AttemptFinished, RetryScheduled and Halted record what
// an Observer is told.
func (r *Recorder) AttemptStarted(n, pid int, at time.Time) {
	m := r.base(n)
	m["argv"], m["pid"] = r.argv(), pid
	r.event(at, events.CommandAttemptStarted, m)
}

func (r *Recorder) AttemptFinished(a Attempt) {
	m := r.base(a.N)
	m["argv"], m["command"] = r.argv(), Clip(r.spec.Command)
	m["passed"], m["timedOut"], m["durationMs"] = a.Passed(), a.TimedOut, a.Duration.Milliseconds()
	m["exitCode"], m["signal"] = nil, nil
	if a.Signal != "" {
		m["signal"] = a.Signal
	} else {
		m["exitCode"] = a.ExitCode
	}
	m["class"], m["signature"], m["stderrTail"] = nil, nil, nil
	if !a.Passed() {
		m["class"], m["signature"], m["stderrTail"] = string(a.Class), a.Signature, Clip(a.StderrTail)
	}
	r.event(a.Started.Add(a.Duration), events.CommandAttemptFinished, m)
}

func (r *Recorder) RetryScheduled(a Attempt, wait time.Duration, at time.Time) {
	m := r.base(a.N)
	m["nextAttempt"], m["waitMs"], m["class"], m["signature"] = a.N+1, wait.Milliseconds(), string(a.Class), a.Signature
	r.event(at, events.CommandRetryScheduled, m)
}

func (r *Recorder) Halted(a Attempt, reason string, at time.Time) {
	m := r.base(a.N)
	m["reason"], m["class"], m["signature"] = reason, string(a.Class), a.Signature
	r.event(at, events.CommandHalted, m)
}

// Finished is what the invocation came to, as CommandFinished records it.
type Finished struct {
	Result             Result
	MaxAttempts        int
	ExitStatus         int
	FinalError         string
	EscalationRequired bool
	CascadeDetected    bool
	Policy             string
	At                 time.Time
}

// Finish writes the invocation's last events (and RunFinished when the run
// is its own) and makes the trace durable.
func (r *Recorder) Finish(f Finished) {
	res := f.Result
	status := "failure"
	switch {
	case res.Success:
		status = "success"
	case res.Reason == ReasonInterrupted:
		status = "cancelled"
	}
	m := r.base(0)
	m["argv"], m["command"] = r.argv(), Clip(r.spec.Command)
	m["status"], m["success"], m["attempts"], m["maxAttempts"] = status, res.Success, len(res.Attempts), f.MaxAttempts
	m["reason"], m["exitStatus"], m["finalError"] = res.Reason, f.ExitStatus, Clip(f.FinalError)
	m["escalationRequired"], m["cascadeDetected"], m["policy"] = f.EscalationRequired, f.CascadeDetected, f.Policy
	m["startedAt"] = r.spec.Started.UTC().Format("2006-01-02T15:04:05.000Z")
	m["durationMs"] = f.At.Sub(r.spec.Started).Milliseconds()
	r.event(f.At, events.CommandFinished, m)
	if r.ownRun {
		summary := fmt.Sprintf("%s %s after %s: %s", r.spec.Op, status, Attempts(len(res.Attempts)), res.Reason)
		r.event(f.At, events.RunFinished, map[string]any{"status": status, "summary": summary})
	}
	if r.trace == nil {
		return
	}
	if err := r.trace.Sync(); err != nil {
		r.fail(err)
	}
	if err := r.trace.Close(); err != nil {
		r.fail(err)
	}
}

// Attempts is n attempts in words: "1 attempt", "3 attempts".
func Attempts(n int) string {
	if n == 1 {
		return "1 attempt"
	}
	return strconv.Itoa(n) + " attempts"
}

// Clip truncates a string for the trace at a character boundary.
func Clip(s string) string {
	if len(s) <= MaxString {
		return s
	}
	n := 0
	for i := range s {
		if n == MaxString {
			return s[:i]
		}
		n++
	}
	return s
}

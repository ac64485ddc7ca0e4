package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/orchstat/orchstat/model/events"

	"github.com/spf13/cobra"

	"github.com/orchstat/orchstat/ingest/trace"
	"github.com/orchstat/orchstat/query"
	"github.com/orchstat/orchstat/rules/retry"
	"github.com/orchstat/orchstat/rules/retry/runner"
)

// execOps are seed 001's operations (line 20).
var execOps = []string{"test", "build", "review", "custom"}

// execMaxString bounds each string exec writes in a trace, as the
// orchestrator's writer truncates strings over 4096 characters
// (spec/EVENTS.md).
const execMaxString = 4096

type execOptions struct {
	g          *globals
	Op         string
	MaxRetries int // -1: the policy's limit for Op
	Timeout    time.Duration
	KillAfter  time.Duration
	Policy     string
	Result     string
	RunsDir    string
	RunID      string
	Quiet      bool
	Argv       []string
	// ResetCascade forgets the recorded invocations instead of running:
	// Argv's in this directory, or every command's when Argv is empty.
	ResetCascade bool
	// Dir is the working directory, which with Argv keys the cascade.
	Dir string

	// Sleep and Rand are the backoff's waits and jitter; nil is real time
	// and a clock-seeded source. Tests inject them.
	Sleep func(context.Context, time.Duration) error
	Rand  retry.Rand
}

func newExecCmd(g *globals, runF func(context.Context, *execOptions) error) *cobra.Command {
	o := &execOptions{g: g}
	cmd := &cobra.Command{
		Use:   "exec [flags] -- COMMAND [ARG...]\n  orchstat exec --reset-cascade [-- COMMAND [ARG...]]",
		Short: "Run a command with retries (the retry-handler policy), recording its attempts",
		Long: `Run COMMAND (no shell) and retry it as the retry-handler policy does, deciding
each retry with the same retry core that orchstat simulate replays with. The
policy defaults to the retry-handler preset: test 3 attempts, review 2, build 1,
custom 3; --max-retries overrides the operation's retries.

The command's stdout and stderr pass through unchanged as they are written;
its stdin is /dev/null, so every attempt sees the same input. Each failure is
classified (logic_error by exit code, command_timeout, signal) and signed
over the op, the class and the last 4 KiB of stderr. --timeout bounds each
attempt: the command's process group gets SIGTERM, then SIGKILL --kill-after
later.

The attempts are appended to <runs-dir>/<run id>/trace.jsonl, which ingest,
report, check and simulate read. Each invocation is also recorded in the
store, where cascade detection (3 failures within the last 5
invocations, by default) looks across invocations of the same command (the
same argv) in the same working directory: failures of other commands, or of
this one in another directory, do not count. A cascade is reported on stderr
and in the JSON result (cascade_detected, cascade); it does not change the
exit status. --reset-cascade forgets the command's recorded invocations in
this directory, or every command's when no command follows, and runs
nothing. A store locked longer than --lock-timeout never fails the command:
exec warns and reports cascade_detected false with a note.

The JSON result ({success, attempts, final_error, escalation_required,
cascade_detected, ...}) goes to stderr after the command's output, so stdout
stays the command's own; --result FILE writes it to FILE instead, --result -
to stdout.

Exit status: the command's own. 0 when an attempt passed; else the last
attempt's status as a shell reports it: its exit code, 124 when it timed
out, 128+N when killed by signal N, 126 when it cannot run, 127 when it is
not found. Why the retries stopped (a halt on a repeated failure signature,
a cascade) is in the JSON result, not the status. 2 for a usage error,
before anything runs; 130 when interrupted.`,
		Example: `  orchstat exec --op test -- go test ./...
  orchstat exec --op build --timeout 10m -- make
  orchstat exec --op test --max-retries 4 --policy my-policy.yaml -- pytest -x
  orchstat exec --result result.json --run-id 1765432100123 -- ./check.sh
  orchstat exec --reset-cascade -- go test ./...`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := o.parse(cmd, args); err != nil {
				return err
			}
			if runF != nil {
				return runF(cmd.Context(), o)
			}
			if o.ResetCascade {
				return execResetCascade(cmd.Context(), o)
			}
			return execRun(cmd.Context(), o)
		},
	}
	// Every flag problem is a usage error even where no root says so: the
	// fuzz target runs this command alone.
	cmd.SetFlagErrorFunc(flagError)
	f := cmd.Flags()
	f.StringVar(&o.Op, "op", "custom", "operation: test, build, review or custom (sets the retry limit; part of each failure's signature)")
	f.IntVar(&o.MaxRetries, "max-retries", 0, "retries after the first attempt (default: the policy's for --op)")
	f.DurationVar(&o.Timeout, "timeout", 0, "time limit of each attempt, such as 10m (0: none)")
	f.DurationVar(&o.KillAfter, "kill-after", runner.KillAfter, "after a timeout's SIGTERM, SIGKILL what is left of the command this much later")
	f.StringVar(&o.Policy, "policy", "retry-handler", "retry policy: a preset or a policy file, as simulate's --policy")
	f.StringVar(&o.Result, "result", "", "write the JSON result to this file instead of stderr (- for stdout)")
	f.StringVar(&o.RunsDir, "runs-dir", defaultRunsDir, "the runs directory whose <run id>/trace.jsonl records the attempts")
	f.StringVar(&o.RunID, "run-id", "", "append to this run's trace instead of starting a run (created if missing)")
	f.BoolVarP(&o.Quiet, "quiet", "q", false, "print no progress lines (warnings and the result still print)")
	f.BoolVar(&o.ResetCascade, "reset-cascade", false, "run nothing; forget the recorded invocations of the command after -- in this directory (of every command, with none)")
	return cmd
}

// parse checks the arguments: anything wrong is a usage error, found
// before anything runs.
func (o *execOptions) parse(cmd *cobra.Command, args []string) error {
	usage := func(format string, a ...any) error { return usageError{fmt.Errorf(format, a...)} }
	dir, err := os.Getwd()
	if err != nil {
		return fmt.Errorf("the working directory: %w", err)
	}
	o.Dir = dir
	// --reset-cascade alone names every command; otherwise the command
	// follows -- as for a run. The flags are checked either way.
	if !o.ResetCascade || len(args) > 0 || cmd.ArgsLenAtDash() >= 0 {
		switch dash := cmd.ArgsLenAtDash(); {
		case dash < 0:
			return usage("put the command after --: orchstat exec [flags] -- COMMAND [ARG...]")
		case dash > 0:
			return usage("unexpected %q before --: flags go before --, the command after it", args[0])
		}
		if len(args) == 0 || args[0] == "" {
			return usage("no command after --")
		}
		for _, a := range args {
			if strings.IndexByte(a, 0) >= 0 {
				return usage("an argument holds a NUL byte, which no command can receive")
			}
		}
		o.Argv = args
	}
	valid := false
	for _, op := range execOps {
		valid = valid || o.Op == op
	}
	if !valid {
		return usage("--op %q: use one of %s", o.Op, strings.Join(execOps, ", "))
	}
	if !cmd.Flags().Changed("max-retries") {
		o.MaxRetries = -1
	} else if o.MaxRetries < 0 {
		return usage("--max-retries %d: a count of retries, 0 or more", o.MaxRetries)
	}
	if o.Timeout < 0 {
		return usage("--timeout %s: a duration of 0 (none) or more", o.Timeout)
	}
	if o.KillAfter <= 0 {
		return usage("--kill-after %s: a positive duration", o.KillAfter)
	}
	if o.Policy == "" {
		return usage("--policy: name a preset or a policy file")
	}
	if o.RunsDir == "" {
		return usage("--runs-dir: name a directory")
	}
	if cmd.Flags().Changed("result") && o.Result == "" {
		return usage("--result: name a file, or - for stdout")
	}
	if cmd.Flags().Changed("run-id") {
		if r := o.RunID; r == "" || r == "." || r == ".." || strings.ContainsAny(r, `/\`) || len(r) > 255 || !utf8.ValidString(r) {
			return usage("--run-id %q: a run directory's name, without slashes", r)
		}
	}
	return nil
}

func execRun(ctx context.Context, o *execOptions) error {
	io := o.g.io
	p, err := loadPolicy(o.Policy)
	if err != nil {
		var ue usageError
		if errors.As(err, &ue) {
			return err
		}
		return usageError{err}
	}
	// The policy decides as loaded, with no signature halt added: seed
	// 001's loop retries whatever failed while attempts remain (line 84)
	// and never compares failures, so its preset has none, and a live run
	// must decide as simulate's replay of it does. Halting is a policy's
	// choice (signature_halt).
	if o.MaxRetries >= 0 {
		p = p.WithRetries(o.Op, o.MaxRetries)
	}
	path, err := exec.LookPath(o.Argv[0])
	if err != nil {
		fmt.Fprintf(io.Err, "orchstat: exec: %v\n", err)
		return silentError{runner.StartError(err)}
	}

	e := &execution{o: o, policy: p, command: shellQuote(o.Argv), started: io.Now()}
	e.maxAttempts = runner.MaxAttempts(p, o.Op)
	e.openTrace()
	res := runner.Run(ctx, runner.Spec{
		Op: o.Op, Argv: o.Argv, Path: path, Policy: p, Rand: o.Rand,
		Timeout: o.Timeout, KillAfter: o.KillAfter,
		Stdout: io.Out, Stderr: io.Err,
		Now: io.Now, Sleep: o.Sleep,
		Observer: runner.Observer{
			AttemptStarted:  e.attemptStarted,
			AttemptFinished: e.attemptFinished,
			RetryScheduled:  e.retryScheduled,
			Halted:          e.halted,
		},
	})
	if res.StartErr != nil {
		fmt.Fprintf(io.Err, "orchstat: exec: attempt %d could not start: %v\n", len(res.Attempts)+1, res.StartErr)
	}
	e.finished = io.Now()
	out := e.result(res)
	if res.Reason != runner.ReasonInterrupted {
		e.cascade(ctx, res, &out)
	}
	e.finish(res, out)
	e.writeResult(out)

	// The command's own status, whatever the policy decided: a caller
	// (make, CI, a shell's &&) reads it as the command's, and a cascade
	// of other commands must not change it.
	switch {
	case res.Success:
		return nil
	case res.Reason == runner.ReasonInterrupted:
		return silentError{runner.StatusInterrupted}
	}
	return silentError{res.Status}
}

// execResetCascade forgets the recorded invocations that cascade detection
// counts: the command's in this directory, or every one.
func execResetCascade(ctx context.Context, o *execOptions) error {
	g := o.g
	st, err := g.open(ctx, g.dbPath([]string{o.RunsDir}), false)
	if err != nil {
		return err
	}
	defer st.Close()
	command := ""
	if len(o.Argv) > 0 {
		command = shellQuote(o.Argv)
	}
	n, err := query.ResetExecCascade(ctx, st, command, o.Dir)
	if err != nil {
		return err
	}
	what := "every command"
	if command != "" {
		what = fmt.Sprintf("%s in %s", command, o.Dir)
	}
	fmt.Fprintf(g.io.Out, "orchstat: cascade reset for %s: %d recorded invocations forgotten\n", what, n)
	return nil
}

// execResult is seed 001's result (lines 31-48) with what exec adds. The
// seed's learning_record_id has no counterpart: the record is the trace,
// named by run_id. Its "result" (line 36) is the command's output, which
// streams through instead.
type execResult struct {
	Success            bool   `json:"success"`
	Attempts           int    `json:"attempts"`
	FinalError         string `json:"final_error,omitempty"`
	EscalationRequired bool   `json:"escalation_required"`
	CascadeDetected    bool   `json:"cascade_detected"`
	// Cascade is seed 001's cascade response (lines 143-152), when one is
	// detected.
	Cascade *execCascade `json:"cascade,omitempty"`
	Op      string       `json:"op"`
	// Reason is "passed" or why the retries stopped: the retry core's
	// reason (max_retries, signature_halt, class, max_attempts, ...),
	// "interrupted" or "start_failed".
	Reason string `json:"reason"`
	// ExitCode is the last attempt's status as a shell reports it.
	ExitCode  int    `json:"exit_code"`
	Class     string `json:"class,omitempty"`
	Signature string `json:"signature,omitempty"`
	RunID     string `json:"run_id"`
	Policy    string `json:"policy"`
	// Note says why cascade state is unknown, when it is.
	Note string `json:"note,omitempty"`
}

type execCascade struct {
	FailuresInWindow int    `json:"failures_in_window"`
	Threshold        int    `json:"threshold"`
	WindowSize       int    `json:"window_size"`
	Action           string `json:"action"`
}

// execution is one exec invocation's bookkeeping: its trace, its notices
// and its result.
type execution struct {
	o           *execOptions
	policy      *retry.Policy
	command     string
	maxAttempts int
	started     time.Time
	finished    time.Time

	runID string
	// invocation names this invocation's record run: the run id, or, when
	// appending to a run exec did not start, one of its own under it.
	invocation string
	ownRun     bool
	trace      *os.File
	traceErr   error
}

// openTrace starts a run, or joins the one --run-id names. A trace that
// cannot be written costs the record, never the command: exec warns and
// runs anyway.
func (e *execution) openTrace() {
	o := e.o
	e.runID = o.RunID
	var dir string
	err := os.MkdirAll(o.RunsDir, 0o755)
	if err == nil && e.runID == "" {
		// The orchestrator's run id is Date.now(); two runs starting in
		// the same millisecond take the next free one.
		ms := e.started.UnixMilli()
		for i := int64(0); ; i++ {
			e.runID = strconv.FormatInt(ms+i, 10)
			dir = filepath.Join(o.RunsDir, e.runID)
			if err = os.Mkdir(dir, 0o755); !errors.Is(err, fs.ErrExist) || i == 1000 {
				break
			}
		}
		e.ownRun = err == nil
	} else if err == nil {
		dir = filepath.Join(o.RunsDir, e.runID)
		if err = os.MkdirAll(dir, 0o755); err == nil {
			fi, serr := os.Stat(filepath.Join(dir, "trace.jsonl"))
			e.ownRun = serr != nil || fi.Size() == 0
		}
	}
	if e.runID == "" {
		e.runID = strconv.FormatInt(e.started.UnixMilli(), 10)
	}
	e.invocation = e.runID
	if !e.ownRun && err == nil {
		e.invocation = fmt.Sprintf("%s/exec-%d-%d", e.runID, e.started.UnixMilli(), os.Getpid())
	}
	if err == nil {
		e.trace, err = os.OpenFile(filepath.Join(dir, "trace.jsonl"), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	}
	if err != nil {
		e.warnTrace(err)
		return
	}
	if e.ownRun {
		e.event(e.started, events.RunStarted, map[string]any{"taskId": "exec:" + o.Op, "goal": clip(e.command)})
	}
}

func (e *execution) warnTrace(err error) {
	if e.traceErr == nil {
		e.traceErr = err
		fmt.Fprintf(e.o.g.io.Err, "orchstat: warning: the attempts are not recorded in a trace: %v\n", err)
	}
}

// event appends one line to the trace (in one write: see trace.Writer).
func (e *execution) event(at time.Time, typ string, payload map[string]any) {
	if e.trace == nil || e.traceErr != nil {
		return
	}
	if err := trace.NewWriter(e.trace, e.runID).Write(at, typ, payload); err != nil {
		e.warnTrace(err)
	}
}

func (e *execution) base(attempt int) map[string]any {
	m := map[string]any{"invocationId": e.invocation, "op": e.o.Op}
	if attempt > 0 {
		m["attempt"] = attempt
	}
	return m
}

func (e *execution) argv() []string {
	out := make([]string, len(e.o.Argv))
	for i, a := range e.o.Argv {
		out[i] = clip(a)
	}
	return out
}

func (e *execution) attemptStarted(n, pid int, at time.Time) {
	m := e.base(n)
	m["argv"], m["pid"] = e.argv(), pid
	e.event(at, events.CommandAttemptStarted, m)
}

func (e *execution) attemptFinished(a runner.Attempt) {
	m := e.base(a.N)
	m["argv"], m["command"] = e.argv(), clip(e.command)
	m["passed"], m["timedOut"], m["durationMs"] = a.Passed(), a.TimedOut, a.Duration.Milliseconds()
	m["exitCode"], m["signal"] = nil, nil
	if a.Signal != "" {
		m["signal"] = a.Signal
	} else {
		m["exitCode"] = a.ExitCode
	}
	m["class"], m["signature"], m["stderrTail"] = nil, nil, nil
	if !a.Passed() {
		m["class"], m["signature"], m["stderrTail"] = string(a.Class), a.Signature, clip(a.StderrTail)
	}
	e.event(a.Started.Add(a.Duration), events.CommandAttemptFinished, m)
}

func (e *execution) retryScheduled(a runner.Attempt, wait time.Duration) {
	m := e.base(a.N)
	m["nextAttempt"], m["waitMs"], m["class"], m["signature"] = a.N+1, wait.Milliseconds(), string(a.Class), a.Signature
	e.event(e.o.g.io.Now(), events.CommandRetryScheduled, m)
	e.notice("%s failed (attempt %d/%d): %s; retrying%s", e.o.Op, a.N, e.maxAttempts, a.Error(), waitText(wait))
}

func (e *execution) halted(a runner.Attempt, reason string) {
	m := e.base(a.N)
	m["reason"], m["class"], m["signature"] = reason, string(a.Class), a.Signature
	e.event(e.o.g.io.Now(), events.CommandHalted, m)
}

func attempts(n int) string {
	if n == 1 {
		return "1 attempt"
	}
	return strconv.Itoa(n) + " attempts"
}

func waitText(d time.Duration) string {
	if d <= 0 {
		return ""
	}
	return " in " + d.Round(time.Millisecond).String()
}

func (e *execution) notice(format string, a ...any) {
	if !e.o.Quiet {
		fmt.Fprintf(e.o.g.io.Err, "orchstat: "+format+"\n", a...)
	}
}

func (e *execution) result(res runner.Result) execResult {
	last := res.Last()
	out := execResult{
		Success:  res.Success,
		Attempts: len(res.Attempts),
		Op:       e.o.Op,
		Reason:   res.Reason,
		ExitCode: res.Status,
		RunID:    e.runID,
		Policy:   e.policy.Name,
	}
	if res.Success {
		if out.Attempts > 1 {
			e.notice("%s passed on attempt %d", e.o.Op, out.Attempts)
		}
		return out
	}
	out.FinalError, out.Class, out.Signature = last.Error(), string(last.Class), last.Signature
	if res.StartErr != nil {
		out.FinalError = res.StartErr.Error()
	}
	switch res.Reason {
	case runner.ReasonInterrupted:
		out.ExitCode = last.Status()
		e.notice("%s interrupted during attempt %d", e.o.Op, out.Attempts)
	case "signature_halt":
		out.EscalationRequired = true
		e.notice("%s failed after %s: halted, the same failure %d times in a row (signature_halt)", e.o.Op, attempts(out.Attempts), e.policy.SignatureHalt)
	case "class":
		out.EscalationRequired = true
		e.notice("%s failed after %s: policy %s does not retry %s", e.o.Op, attempts(out.Attempts), e.policy.Name, out.Class)
	default:
		out.EscalationRequired = true
		e.notice("%s failed after %s (%s)", e.o.Op, attempts(out.Attempts), res.Reason)
	}
	return out
}

// cascade records the invocation in the store and applies seed 001's
// cascade detection over the latest invocations. The store is only
// bookkeeping: when it cannot be had, exec says so and goes on.
func (e *execution) cascade(ctx context.Context, res runner.Result, out *execResult) {
	g := e.o.g
	c := e.policy.Cascade
	window := 1
	if c != nil && c.Threshold > 0 {
		window = c.Window
	}
	unavailable := func(err error) {
		fmt.Fprintf(g.io.Err, "orchstat: warning: this invocation is not counted for cascade detection: %v\n", err)
		out.Note = "cascade state unavailable: " + err.Error()
	}
	st, err := g.open(ctx, g.dbPath([]string{e.o.RunsDir}), false)
	if err != nil {
		unavailable(err)
		return
	}
	defer st.Close()
	failed, err := query.RecordExecInvocation(ctx, st, query.ExecInvocation{
		StartedAt: e.started, FinishedAt: e.finished, RunID: e.invocation, Op: e.o.Op,
		Command: e.command, Dir: e.o.Dir, Success: res.Success, Attempts: len(res.Attempts), Reason: res.Reason,
	}, window)
	if err != nil {
		unavailable(err)
		return
	}
	// Seed 001 checks cascade_detected only on a failure (lines 220-227):
	// a pass is not paused.
	if res.Success || c == nil || !c.Detect(failed) {
		return
	}
	n := 0
	for _, f := range failed {
		if f {
			n++
		}
	}
	out.CascadeDetected = true
	out.Cascade = &execCascade{FailuresInWindow: n, Threshold: c.Threshold, WindowSize: c.Window, Action: "pause_and_alert"}
	fmt.Fprintf(g.io.Err, "orchstat: cascade: %d of the last %d invocations of %s in %s failed (threshold %d); pause and review before continuing (orchstat exec --reset-cascade -- %s clears it)\n",
		n, len(failed), e.command, e.o.Dir, c.Threshold, e.command)
}

// finish writes the invocation's last events and makes the trace durable.
func (e *execution) finish(res runner.Result, out execResult) {
	status := "failure"
	switch {
	case res.Success:
		status = "success"
	case res.Reason == runner.ReasonInterrupted:
		status = "cancelled"
	}
	m := e.base(0)
	m["argv"], m["command"] = e.argv(), clip(e.command)
	m["status"], m["success"], m["attempts"], m["maxAttempts"] = status, res.Success, len(res.Attempts), e.maxAttempts
	m["reason"], m["exitStatus"], m["finalError"] = res.Reason, out.ExitCode, clip(out.FinalError)
	m["escalationRequired"], m["cascadeDetected"], m["policy"] = out.EscalationRequired, out.CascadeDetected, e.policy.Name
	m["startedAt"] = e.started.UTC().Format("2006-01-02T15:04:05.000Z")
	m["durationMs"] = e.finished.Sub(e.started).Milliseconds()
	e.event(e.finished, events.CommandFinished, m)
	if e.ownRun {
		summary := fmt.Sprintf("%s %s after %s: %s", e.o.Op, status, attempts(len(res.Attempts)), res.Reason)
		e.event(e.finished, events.RunFinished, map[string]any{"status": status, "summary": summary})
	}
	if e.trace == nil {
		return
	}
	if err := e.trace.Sync(); err != nil {
		e.warnTrace(err)
	}
	if err := e.trace.Close(); err != nil {
		e.warnTrace(err)
	}
}

// writeResult prints the JSON result where it does not mix with the
// command's stdout, unless asked to.
func (e *execution) writeResult(out execResult) {
	io := e.o.g.io
	b, _ := json.Marshal(out)
	b = append(b, '\n')
	switch e.o.Result {
	case "":
		io.Err.Write(b)
	case "-":
		io.Out.Write(b)
	default:
		if err := os.WriteFile(e.o.Result, b, 0o644); err != nil {
			fmt.Fprintf(io.Err, "orchstat: warning: writing the result: %v\n", err)
			io.Err.Write(b)
		}
	}
}

// clip truncates a string for the trace at a character boundary.
func clip(s string) string {
	if len(s) <= execMaxString {
		return s
	}
	n := 0
	for i := range s {
		if n == execMaxString {
			return s[:i]
		}
		n++
	}
	return s
}

// shellQuote renders argv as a shell would need it typed, for display.
func shellQuote(argv []string) string {
	q := make([]string, len(argv))
	for i, a := range argv {
		safe := a != ""
		for _, r := range a {
			if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("@%+=:,./_-", r)) {
				safe = false
				break
			}
		}
		if safe {
			q[i] = a
		} else {
			q[i] = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
		}
	}
	return strings.Join(q, " ")
}

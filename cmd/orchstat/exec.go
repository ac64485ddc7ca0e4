package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/spf13/cobra"

	"github.com/orchstat/orchstat/ingest/trace"
	"github.com/orchstat/orchstat/query"
	"github.com/orchstat/orchstat/rules/retry"
	"github.com/orchstat/orchstat/rules/retry/runner"
)

// execOps are the retry handler's operations (line 20).
var execOps = []string{"test", "build", "review", "custom"}

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
	// The policy decides as loaded, with no signature halt added: the
	// retry handler's loop retries whatever failed while attempts remain (line 84)
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
	e.record()
	res := runner.Run(ctx, runner.Spec{
		Op: o.Op, Argv: o.Argv, Path: path, Policy: p, Rand: o.Rand,
		Timeout: o.Timeout, KillAfter: o.KillAfter,
		Stdout: io.Out, Stderr: io.Err,
		Now: io.Now, Sleep: o.Sleep,
		Observer: runner.Observer{
			AttemptStarted:  e.rec.AttemptStarted,
			AttemptFinished: e.rec.AttemptFinished,
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
	n, err := st.ResetExecCascade(ctx, command, o.Dir)
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

// execResult is the retry handler's result (lines 31-48) with what exec adds. The
// retry handler's learning_record_id has no counterpart: the record is the trace,
// named by run_id. Its "result" (line 36) is the command's output, which
// streams through instead.
type execResult struct {
	Success            bool   `json:"success"`
	Attempts           int    `json:"attempts"`
	FinalError         string `json:"final_error,omitempty"`
	EscalationRequired bool   `json:"escalation_required"`
	CascadeDetected    bool   `json:"cascade_detected"`
	// Cascade is the retry handler's cascade response (lines 143-152),
	// when one is detected.
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

// execution is one exec invocation's bookkeeping: its notices and its
// result; runner.Recorder writes its trace.
type execution struct {
	o           *execOptions
	policy      *retry.Policy
	command     string
	maxAttempts int
	started     time.Time
	finished    time.Time
	rec         *runner.Recorder
}

// record starts the invocation's trace: its own run, or the one --run-id
// names.
func (e *execution) record() {
	e.rec = runner.Record(runner.RecordSpec{
		Op: e.o.Op, Argv: e.o.Argv, Command: e.command, RunsDir: e.o.RunsDir, RunID: e.o.RunID,
		Started: e.started, PID: os.Getpid(), Append: trace.AppendLine,
		Warn: func(err error) {
			fmt.Fprintf(e.o.g.io.Err, "orchstat: warning: the attempts are not recorded in a trace: %v\n", err)
		},
	})
}

func (e *execution) retryScheduled(a runner.Attempt, wait time.Duration) {
	e.rec.RetryScheduled(a, wait, e.o.g.io.Now())
	e.notice("%s failed (attempt %d/%d): %s; retrying%s", e.o.Op, a.N, e.maxAttempts, a.Error(), waitText(wait))
}

func (e *execution) halted(a runner.Attempt, reason string) {
	e.rec.Halted(a, reason, e.o.g.io.Now())
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
		RunID:    e.rec.RunID(),
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
		e.notice("%s failed after %s: halted, the same failure %d times in a row (signature_halt)", e.o.Op, runner.Attempts(out.Attempts), e.policy.SignatureHalt)
	case "class":
		out.EscalationRequired = true
		e.notice("%s failed after %s: policy %s does not retry %s", e.o.Op, runner.Attempts(out.Attempts), e.policy.Name, out.Class)
	default:
		out.EscalationRequired = true
		e.notice("%s failed after %s (%s)", e.o.Op, runner.Attempts(out.Attempts), res.Reason)
	}
	return out
}

// cascade records the invocation in the store and applies the retry handler's
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
	failed, err := st.RecordExecInvocation(ctx, query.ExecInvocation{
		StartedAt: e.started, FinishedAt: e.finished, RunID: e.rec.Invocation(), Op: e.o.Op,
		Command: e.command, Dir: e.o.Dir, Success: res.Success, Attempts: len(res.Attempts), Reason: res.Reason,
	}, window)
	if err != nil {
		unavailable(err)
		return
	}
	// The retry handler checks cascade_detected only on a failure (lines 220-227):
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

// finish writes the invocation's last events.
func (e *execution) finish(res runner.Result, out execResult) {
	e.rec.Finish(runner.Finished{Result: res, MaxAttempts: e.maxAttempts, ExitStatus: out.ExitCode, FinalError: out.FinalError,
		EscalationRequired: out.EscalationRequired, CascadeDetected: out.CascadeDetected, Policy: e.policy.Name, At: e.finished})
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

// Package runner runs a command under a retry policy: the retry handler's retry
// handler, live. Each attempt is a real process; whether to try again is
// the retry core's decision (rules/retry Tracker), the same one `orchstat
// simulate` replays with, so a live run and its replay cannot disagree.
//
// It is pure Go (no DuckDB): the store and the trace are the caller's,
// reached through an Observer.
package runner

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/orchstat/orchstat/model/failure"
	"github.com/orchstat/orchstat/rules/retry"
	"github.com/orchstat/orchstat/rules/retry/runner/guard"
)

// Defaults.
const (
	// TailBytes is how much of an attempt's stderr is kept for its
	// signature and its record.
	TailBytes = 4096
	// KillAfter is the grace between SIGTERM and SIGKILL.
	KillAfter = 5 * time.Second
	// ioDelay bounds how long an attempt waits for its stderr to close
	// once the command has exited: a background process the command left
	// behind may hold it open indefinitely.
	ioDelay = time.Second
)

// Shell-style exit statuses.
const (
	StatusTimeout     = 124 // timeout(1)'s
	StatusCannotRun   = 126
	StatusNotFound    = 127
	StatusInterrupted = 130 // 128 + SIGINT
)

// Reasons a run stops besides the retry core's Decision reasons
// ("max_retries", "signature_halt", "class", ...).
const (
	ReasonPassed      = "passed"
	ReasonInterrupted = "interrupted"
	ReasonStartFailed = "start_failed"
)

// Spec is what to run and how to decide.
type Spec struct {
	// Op is the retry handler's operation (test, build, review, custom): the
	// policy's per-operation limit and part of each failure's signature.
	Op   string
	Argv []string
	// Path is the executable; empty looks Argv[0] up in PATH.
	Path string
	Dir  string
	Env  []string // nil: this process's environment

	Policy *retry.Policy
	Rand   retry.Rand // nil: seeded from the clock

	// Timeout bounds each attempt (0: none). On timeout, and on ctx's
	// cancellation, the command's process group gets SIGTERM, then SIGKILL
	// KillAfter later if any of it is still there.
	Timeout   time.Duration
	KillAfter time.Duration // 0: the KillAfter default

	// Stdout and Stderr receive the command's output as it is written.
	// An *os.File Stdout is handed to the command itself; nil is
	// /dev/null.
	Stdout, Stderr io.Writer
	TailBytes      int // 0: the TailBytes default

	Now   func() time.Time                           // nil: time.Now
	Sleep func(context.Context, time.Duration) error // the backoff's waits; nil: a timer
	Observer
}

// Observer hears a run's events in order, on the goroutine that called
// Run. Any method may be left nil.
type Observer struct {
	AttemptStarted  func(n, pid int, at time.Time)
	AttemptFinished func(a Attempt)
	RetryScheduled  func(a Attempt, wait time.Duration)
	// Halted is the retry core's decision not to retry a's failure.
	Halted func(a Attempt, reason string)
}

// Attempt is one run of the command.
type Attempt struct {
	N        int
	PID      int
	Started  time.Time
	Duration time.Duration
	// ExitCode is the command's exit status, -1 when a signal ended it.
	ExitCode int
	Signal   string // "SIGKILL"; "" when it exited
	TimedOut bool
	// Class is the failure's class (failure.ClassifyCommand); ""
	// when the attempt passed.
	Class failure.Class
	// Signature is failure.Signature over the op, the class and the stderr
	// tail: a failure repeated has the same one.
	Signature  string
	StderrTail string
}

// Passed reports whether the attempt succeeded.
func (a Attempt) Passed() bool { return a.Class == "" }

// Status is the attempt's status as a shell reports it: the exit code,
// 128+N for signal N, and 124 for a timeout as timeout(1) does.
func (a Attempt) Status() int {
	switch {
	case a.TimedOut:
		return StatusTimeout
	case a.Signal != "":
		if n, ok := signalNumber(a.Signal); ok {
			return 128 + n
		}
		return 128
	}
	return a.ExitCode
}

// Error is a one-line account of a failed attempt: what ended it and the
// last line of its stderr.
func (a Attempt) Error() string {
	var what string
	switch {
	case a.Passed():
		return ""
	case a.TimedOut:
		what = "timed out"
	case a.Signal != "":
		what = "killed by " + a.Signal
	default:
		what = fmt.Sprintf("exit status %d", a.ExitCode)
	}
	if l := LastLine(a.StderrTail); l != "" {
		return what + ": " + l
	}
	return what
}

// LastLine is s's last non-blank line, trimmed.
func LastLine(s string) string {
	s = strings.TrimRight(s, " \t\r\n")
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		s = s[i+1:]
	}
	return strings.TrimSpace(s)
}

// Result is how a run ended.
type Result struct {
	Attempts []Attempt
	Success  bool
	// Reason is "passed", the retry core's reason for not retrying the
	// last failure, "interrupted", or "start_failed".
	Reason string
	// Status is the shell-style status of the last attempt (Attempt.Status),
	// 130 when interrupted, 126 or 127 when the command could not start.
	Status int
	// StartErr is why the command could not start.
	StartErr error
}

// Last is the last attempt, or the zero Attempt when none ran.
func (r Result) Last() Attempt {
	if len(r.Attempts) == 0 {
		return Attempt{}
	}
	return r.Attempts[len(r.Attempts)-1]
}

// MaxAttempts is how many attempts p allows op, counting the first: the
// operation's retries plus one, within the policy's MaxAttempts.
func MaxAttempts(p *retry.Policy, op string) int {
	n := p.MaxRetries
	if v, ok := p.PerOperation[op]; ok {
		n = v
	}
	n++
	if p.MaxAttempts > 0 && p.MaxAttempts < n {
		n = p.MaxAttempts
	}
	return n
}

// StartError reports why a command cannot start, with its shell status:
// 127 when it is not found, 126 when it is found but cannot be run.
func StartError(err error) int {
	if errors.Is(err, exec.ErrNotFound) || errors.Is(err, os.ErrNotExist) {
		return StatusNotFound
	}
	return StatusCannotRun
}

// Run runs spec's command until it passes or the policy stops retrying.
// A cancelled ctx ends the current attempt (SIGTERM, then SIGKILL) and the
// run, without a retry.
func Run(ctx context.Context, spec Spec) Result {
	spec.defaults()
	path := spec.Path
	if path == "" {
		p, err := exec.LookPath(spec.Argv[0])
		if err != nil {
			return Result{Reason: ReasonStartFailed, Status: StartError(err), StartErr: err}
		}
		path = p
	}
	adoptOrphans()
	tr := retry.NewTracker(spec.Policy, spec.Rand)
	tr.StartItem()
	var res Result
	for n := 1; ; n++ {
		a, err := spec.attempt(ctx, path, n)
		if err != nil {
			res.Reason, res.Status, res.StartErr = ReasonStartFailed, StartError(err), err
			return res
		}
		res.Attempts = append(res.Attempts, a)
		res.Status = a.Status()
		if f := spec.AttemptFinished; f != nil {
			f(a)
		}
		if ctx.Err() != nil {
			res.Reason, res.Status = ReasonInterrupted, StatusInterrupted
			return res
		}
		if a.Passed() {
			tr.Success()
			res.Success, res.Reason = true, ReasonPassed
			return res
		}
		d := tr.Failed(retry.Failure{Class: a.Class, Signature: a.Signature, Operation: spec.Op, Attempt: n, Message: a.StderrTail})
		if !d.Retry {
			if f := spec.Halted; f != nil {
				f(a, d.Reason)
			}
			res.Reason = d.Reason
			return res
		}
		if f := spec.RetryScheduled; f != nil {
			f(a, d.Wait)
		}
		if d.Wait > 0 {
			if err := spec.Sleep(ctx, d.Wait); err != nil {
				res.Reason, res.Status = ReasonInterrupted, StatusInterrupted
				return res
			}
		}
		if ctx.Err() != nil {
			res.Reason, res.Status = ReasonInterrupted, StatusInterrupted
			return res
		}
	}
}

func (s *Spec) defaults() {
	if s.Now == nil {
		s.Now = time.Now
	}
	if s.Sleep == nil {
		s.Sleep = retry.Sleep
	}
	if s.Rand == nil {
		s.Rand = rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), uint64(os.Getpid())))
	}
	if s.KillAfter <= 0 {
		s.KillAfter = KillAfter
	}
	if s.TailBytes <= 0 {
		s.TailBytes = TailBytes
	}
	if s.Stderr == nil {
		s.Stderr = io.Discard
	}
}

// attempt runs the command once. Only a failure to start is an error.
func (s *Spec) attempt(ctx context.Context, path string, n int) (Attempt, error) {
	tail := &Tail{Max: s.TailBytes}
	cmd := s.command(path, tail)
	a := Attempt{N: n, Started: s.Now()}
	// See procAttr: the command's parent-death signal is tied to this
	// thread, which must outlive it.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	g, err := guard.Start(cmd)
	if err != nil {
		return a, err
	}
	a.PID = cmd.Process.Pid
	if f := s.AttemptStarted; f != nil {
		f(n, a.PID, a.Started)
	}
	done := make(chan struct{})
	go func() {
		cmd.Wait()
		close(done)
	}()
	a.TimedOut = s.supervise(ctx, a.PID, done)
	a.Duration = s.Now().Sub(a.Started)
	if code, sig, signaled := g.ExitStatus(); signaled {
		a.ExitCode, a.Signal = -1, SignalName(sig)
	} else {
		a.ExitCode = code
	}
	a.Class = failure.ClassifyCommand(a.ExitCode, a.TimedOut, a.Signal)
	if !a.Passed() {
		a.StderrTail = tail.String()
		a.Signature = failure.Signature(s.Op, string(a.Class), a.StderrTail)
	}
	return a, nil
}

// command is one attempt's process, its stderr's tail kept in tail.
func (s *Spec) command(path string, tail *Tail) *exec.Cmd {
	return &exec.Cmd{
		Path: path,
		Args: s.Argv,
		Dir:  s.Dir,
		Env:  s.Env,
		// Stdin stays nil (/dev/null): every attempt must see the same
		// input, and a command in its own process group that read the
		// terminal would be stopped by SIGTTIN.
		Stdout:      s.Stdout,
		Stderr:      tee{tail, s.Stderr},
		SysProcAttr: procAttr(),
		WaitDelay:   ioDelay,
	}
}

// supervise waits until the command is done, ending its process group
// pgid when the timeout passes or ctx is done: SIGTERM, then SIGKILL
// KillAfter later. It reports whether the timeout ended it.
func (s *Spec) supervise(ctx context.Context, pgid int, done <-chan struct{}) (timedOut bool) {
	var timeout, kill <-chan time.Time
	if s.Timeout > 0 {
		t := time.NewTimer(s.Timeout)
		defer t.Stop()
		timeout = t.C
	}
	cancelled := ctx.Done()
	terminating := false
	terminate := func() {
		if terminating {
			return
		}
		terminating = true
		syscall.Kill(-pgid, syscall.SIGTERM)
		t := time.NewTimer(s.KillAfter)
		kill = t.C
	}
wait:
	for {
		select {
		case <-done:
			break wait
		case <-timeout:
			timedOut, timeout = true, nil
			terminate()
		case <-cancelled:
			cancelled = nil
			terminate()
		case <-kill:
			syscall.Kill(-pgid, syscall.SIGKILL)
			kill = nil
		}
	}
	if terminating && kill != nil {
		// The command is gone, but what it started may not be: wait out
		// the rest of the grace for its group to empty.
		reapGroup(pgid, kill)
	}
	return timedOut
}

// reapGroup waits until no process is left in group pgid, or kill fires,
// when it SIGKILLs what is left.
func reapGroup(pgid int, kill <-chan time.Time) {
	poll := 5 * time.Millisecond
	for reap(pgid); syscall.Kill(-pgid, 0) == nil; reap(pgid) {
		t := time.NewTimer(poll)
		select {
		case <-kill:
			t.Stop()
			syscall.Kill(-pgid, syscall.SIGKILL)
			return
		case <-t.C:
		}
		poll = min(2*poll, 100*time.Millisecond)
	}
}

// tee writes to the tail first, so the tail is complete even when the
// output fails.
type tee struct {
	tail *Tail
	out  io.Writer
}

func (t tee) Write(p []byte) (int, error) {
	t.tail.Write(p)
	return t.out.Write(p)
}

// Tail keeps the last Max bytes written to it.
type Tail struct {
	Max   int
	buf   []byte
	total int64
}

func (t *Tail) Write(p []byte) (int, error) {
	t.total += int64(len(p))
	if len(p) >= t.Max {
		t.buf = append(t.buf[:0], p[len(p)-t.Max:]...)
		return len(p), nil
	}
	if over := len(t.buf) + len(p) - t.Max; over > 0 {
		t.buf = append(t.buf[:0], t.buf[over:]...)
	}
	t.buf = append(t.buf, p...)
	return len(p), nil
}

// String is the tail as valid UTF-8. When output was cut, the partial
// first line goes too: where the cut falls depends on the output's length,
// and a signature must not.
func (t *Tail) String() string {
	b := t.buf
	if t.total > int64(len(b)) {
		if i := bytes.IndexByte(b, '\n'); i >= 0 && i+1 < len(b) {
			b = b[i+1:]
		}
		for len(b) > 0 && !utf8.RuneStart(b[0]) {
			b = b[1:]
		}
	}
	return strings.ToValidUTF8(string(b), "\uFFFD")
}

var signalNames = map[syscall.Signal]string{
	syscall.SIGHUP: "SIGHUP", syscall.SIGINT: "SIGINT", syscall.SIGQUIT: "SIGQUIT", syscall.SIGILL: "SIGILL",
	syscall.SIGTRAP: "SIGTRAP", syscall.SIGABRT: "SIGABRT", syscall.SIGBUS: "SIGBUS", syscall.SIGFPE: "SIGFPE",
	syscall.SIGKILL: "SIGKILL", syscall.SIGUSR1: "SIGUSR1", syscall.SIGSEGV: "SIGSEGV", syscall.SIGUSR2: "SIGUSR2",
	syscall.SIGPIPE: "SIGPIPE", syscall.SIGALRM: "SIGALRM", syscall.SIGTERM: "SIGTERM", syscall.SIGXCPU: "SIGXCPU",
	syscall.SIGXFSZ: "SIGXFSZ", syscall.SIGSYS: "SIGSYS",
}

// SignalName is a signal's name as a shell's kill -l gives it, "SIG"
// first; a signal without one is "SIG" and its number.
func SignalName(s syscall.Signal) string {
	if n, ok := signalNames[s]; ok {
		return n
	}
	return fmt.Sprintf("SIG%d", int(s))
}

func signalNumber(name string) (int, bool) {
	for s, n := range signalNames {
		if n == name {
			return int(s), true
		}
	}
	var n int
	if _, err := fmt.Sscanf(name, "SIG%d", &n); err == nil && n > 0 {
		return n, true
	}
	return 0, false
}

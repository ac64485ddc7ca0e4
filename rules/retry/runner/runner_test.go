package runner

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/orchstat/orchstat/model/failure"
	"github.com/orchstat/orchstat/rules/retry"
)

// fixed is a Rand that always draws the same value.
type fixed float64

func (f fixed) Float64() float64 { return float64(f) }

// recorder collects a run's events as text, in order.
type recorder struct{ events []string }

func (r *recorder) observer() Observer {
	return Observer{
		AttemptStarted:  func(n, pid int, at time.Time) { r.add("started", n) },
		AttemptFinished: func(a Attempt) { r.add("finished "+string(a.Class), a.N) },
		RetryScheduled:  func(a Attempt, wait time.Duration) { r.add("retry "+wait.String(), a.N) },
		Halted:          func(a Attempt, reason string) { r.add("halted "+reason, a.N) },
	}
}

func (r *recorder) add(s string, n int) { r.events = append(r.events, strconv.Itoa(n)+" "+s) }

func preset(t *testing.T, name string) *retry.Policy {
	t.Helper()
	p, err := retry.Preset(name)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func spec(t *testing.T, op string, p *retry.Policy, script string) (Spec, *bytes.Buffer, *bytes.Buffer, *recorder) {
	var out, errb bytes.Buffer
	rec := &recorder{}
	return Spec{Op: op, Argv: []string{"sh", "-c", script}, Dir: t.TempDir(), Policy: p, Rand: fixed(0.5),
		Stdout: &out, Stderr: &errb, Observer: rec.observer()}, &out, &errb, rec
}

func TestFlakyPassesOnTheThirdAttempt(t *testing.T) {
	s, out, errb, rec := spec(t, "test", preset(t, "retry-handler"),
		`n=$(cat count 2>/dev/null || echo 0); n=$((n+1)); echo $n > count
		 echo "attempt $n"; if [ $n -lt 3 ]; then echo "flaky failure $n" >&2; exit 1; fi`)
	res := Run(context.Background(), s)
	if !res.Success || res.Reason != ReasonPassed || res.Status != 0 || len(res.Attempts) != 3 {
		t.Fatalf("result %+v", res)
	}
	if got := out.String(); got != "attempt 1\nattempt 2\nattempt 3\n" {
		t.Errorf("stdout %q", got)
	}
	if got := errb.String(); got != "flaky failure 1\nflaky failure 2\n" {
		t.Errorf("stderr %q", got)
	}
	want := []string{"1 started", "1 finished logic_error", "1 retry 0s", "2 started", "2 finished logic_error", "2 retry 0s", "3 started", "3 finished "}
	if strings.Join(rec.events, ",") != strings.Join(want, ",") {
		t.Errorf("events %q", rec.events)
	}
	a := res.Attempts[0]
	if a.ExitCode != 1 || a.StderrTail != "flaky failure 1\n" || a.Signature != res.Attempts[1].Signature || a.Error() != "exit status 1: flaky failure 1" {
		t.Errorf("attempt 1: %+v", a)
	}
}

// the retry handler retries test twice (3 attempts) whatever the failure; a policy
// with signature_halt 2 stops at the second identical one.
func TestDeterministicFailure(t *testing.T) {
	script := `echo "FAIL: TestLogin (0.01s) at 2026-11-01T10:00:00Z" >&2; exit 3`
	s, _, _, rec := spec(t, "test", preset(t, "retry-handler"), script)
	res := Run(context.Background(), s)
	if res.Success || res.Reason != "max_retries" || res.Status != 3 || len(res.Attempts) != 3 {
		t.Fatalf("retry-handler: %+v", res)
	}
	if rec.events[len(rec.events)-1] != "3 halted max_retries" {
		t.Errorf("events %q", rec.events)
	}

	p := preset(t, "retry-handler")
	p.SignatureHalt = 2
	s, _, _, rec = spec(t, "test", p, script)
	res = Run(context.Background(), s)
	if res.Success || res.Reason != "signature_halt" || res.Status != 3 || len(res.Attempts) != 2 {
		t.Fatalf("signature_halt 2: %+v", res)
	}
	if rec.events[len(rec.events)-1] != "2 halted signature_halt" {
		t.Errorf("events %q", rec.events)
	}

	// build gets no retry under the retry handler's loop; --max-retries is an
	// override of PerOperation.
	s, _, _, _ = spec(t, "build", preset(t, "retry-handler"), script)
	if res := Run(context.Background(), s); len(res.Attempts) != 1 || res.Reason != "max_retries" {
		t.Fatalf("build: %+v", res)
	}
	// A policy that does not retry logic errors stops on the class.
	s, _, _, _ = spec(t, "test", preset(t, "orchestrator"), script)
	if res := Run(context.Background(), s); len(res.Attempts) != 1 || res.Reason != "class" {
		t.Fatalf("orchestrator: %+v", res)
	}
}

func TestBackoffWaitsAreThePolicys(t *testing.T) {
	p := preset(t, "retry-handler")
	p.Backoff = retry.Backoff{Initial: time.Second, Factor: 2, Max: 10 * time.Second, Jitter: retry.JitterProportional, Spread: 0.1}
	p.PerOperation["custom"] = 3
	s, _, _, rec := spec(t, "custom", p, `exit 1`)
	var waits []time.Duration
	s.Sleep = func(ctx context.Context, d time.Duration) error { waits = append(waits, d); return nil }
	start := time.Now()
	res := Run(context.Background(), s)
	if len(res.Attempts) != 4 || res.Reason != "max_retries" {
		t.Fatalf("%+v", res)
	}
	// fixed(0.5) draws no jitter offset: exactly the base schedule.
	want := []time.Duration{time.Second, 2 * time.Second, 4 * time.Second}
	if len(waits) != 3 || waits[0] != want[0] || waits[1] != want[1] || waits[2] != want[2] {
		t.Errorf("waits %v, want %v", waits, want)
	}
	if rec.events[2] != "1 retry 1s" {
		t.Errorf("events %q", rec.events)
	}
	if el := time.Since(start); el > 5*time.Second {
		t.Errorf("the injected sleeper was not used: %v", el)
	}
}

func TestSlowCommandWithinTheTimeout(t *testing.T) {
	s, out, _, _ := spec(t, "build", preset(t, "retry-handler"), `sleep 0.3; echo done`)
	s.Timeout = 20 * time.Second
	res := Run(context.Background(), s)
	if !res.Success || out.String() != "done\n" || res.Attempts[0].Duration < 300*time.Millisecond {
		t.Fatalf("%+v %q", res, out.String())
	}
}

// alive reports whether pid is a live process; a zombie is dead.
func alive(pid int) bool {
	if syscall.Kill(pid, 0) != nil {
		return false
	}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	i := bytes.LastIndexByte(b, ')')
	return i < 0 || i+2 >= len(b) || b[i+2] != 'Z'
}

func waitDead(t *testing.T, pid int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for alive(pid) {
		if time.Now().After(deadline) {
			syscall.Kill(pid, syscall.SIGKILL)
			t.Fatalf("process %d survived", pid)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// readPID reads the pid a script wrote to path. The scripts write it to
// a temporary name and rename it (see writePID), so a file that exists is
// whole: a plain `echo $$ > pid` creates the file before it writes, and a
// reader polling for it could read it empty.
func readPID(t *testing.T, path string) int {
	t.Helper()
	pid, ok := pidIn(path)
	if !ok {
		t.Fatalf("%s holds no whole pid", path)
	}
	return pid
}

// pidIn is the pid in path, and whether path holds one whole line.
func pidIn(path string) (int, bool) {
	b, err := os.ReadFile(path)
	if err != nil || !strings.HasSuffix(string(b), "\n") {
		return 0, false
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	return pid, err == nil
}

// writePID is the shell that writes pid (a shell expression such as $$ or
// $!) to the file name, whole or not at all.
func writePID(pid, name string) string {
	return fmt.Sprintf("echo %s > %s.tmp && mv %s.tmp %s", pid, name, name, name)
}

// A hanging command and the process it started both die at the timeout,
// even when they ignore SIGTERM.
func TestTimeoutKillsTheProcessGroup(t *testing.T) {
	for _, tc := range []struct {
		name, script string
		kill         bool
	}{
		{"terminated", `sleep 1000 & ` + writePID("$!", "child") + `; wait`, false},
		{"ignoring SIGTERM", `trap '' TERM; sleep 1000 & ` + writePID("$!", "child") + `; wait; wait`, true},
		// The command dies at once; what it started lasts until SIGKILL.
		{"leaving a child that ignores SIGTERM", `(trap '' TERM; exec sleep 1000) & ` + writePID("$!", "child") + `; wait`, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var (
				s     Spec
				rec   *recorder
				res   Result
				el    time.Duration
				child int
			)
			// On a loaded machine the timeout can fall before the shell has
			// written its child's pid; then the test cannot tell which
			// process to look for, and runs the command again.
			for attempt := 1; ; attempt++ {
				s, _, _, rec = spec(t, "build", preset(t, "retry-handler"), tc.script)
				s.Timeout, s.KillAfter = 200*time.Millisecond, 300*time.Millisecond
				start := time.Now()
				res = Run(context.Background(), s)
				el = time.Since(start)
				var ok bool
				if child, ok = pidIn(filepath.Join(s.Dir, "child")); ok {
					break
				}
				if attempt == 5 {
					t.Fatalf("the shell never wrote its child's pid before the timeout in %d tries", attempt)
				}
				t.Logf("attempt %d: the timeout came before the shell wrote its child's pid", attempt)
			}
			a := res.Last()
			if res.Success || !a.TimedOut || a.Class != failure.ClassCommandTimeout || res.Status != StatusTimeout || res.Reason != "max_retries" {
				t.Fatalf("%+v", res)
			}
			if tc.kill && a.Signal != "SIGKILL" || !tc.kill && a.Signal != "SIGTERM" {
				t.Errorf("signal %q", a.Signal)
			}
			waitDead(t, child)
			if el > 8*time.Second {
				t.Errorf("took %v", el)
			}
			if strings.Join(rec.events, ",") != "1 started,1 finished command_timeout,1 halted max_retries" {
				t.Errorf("events %q", rec.events)
			}
		})
	}
}

// What a command leaves running is left alone, and does not hold the
// attempt open for long by keeping its stderr.
func TestBackgroundChildOutlivesTheCommand(t *testing.T) {
	s, out, _, _ := spec(t, "build", preset(t, "retry-handler"), `sleep 1000 & `+writePID("$!", "child")+`; echo done`)
	start := time.Now()
	res := Run(context.Background(), s)
	el := time.Since(start)
	pid := readPID(t, filepath.Join(s.Dir, "child"))
	defer syscall.Kill(pid, syscall.SIGKILL)
	if !res.Success || out.String() != "done\n" || !alive(pid) {
		t.Fatalf("%+v %q alive %v", res, out.String(), alive(pid))
	}
	if el > 8*time.Second {
		t.Errorf("took %v", el)
	}
}

func TestKilledBySignal(t *testing.T) {
	s, _, _, _ := spec(t, "build", preset(t, "retry-handler"), `echo dying >&2; kill -KILL $$`)
	res := Run(context.Background(), s)
	a := res.Last()
	if a.Class != failure.ClassSignal || a.Signal != "SIGKILL" || a.ExitCode != -1 || res.Status != 137 || a.Error() != "killed by SIGKILL: dying" {
		t.Fatalf("%+v", a)
	}
}

func TestInterrupted(t *testing.T) {
	s, _, _, _ := spec(t, "test", preset(t, "retry-handler"), writePID("$$", "pid")+`; sleep 1000`)
	s.KillAfter = time.Second
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		for {
			if _, err := os.Stat(filepath.Join(s.Dir, "pid")); err == nil {
				cancel()
				return
			}
			time.Sleep(5 * time.Millisecond)
		}
	}()
	res := Run(ctx, s)
	if res.Reason != ReasonInterrupted || res.Status != StatusInterrupted || len(res.Attempts) != 1 {
		t.Fatalf("%+v", res)
	}
	waitDead(t, readPID(t, filepath.Join(s.Dir, "pid")))
}

func TestStartFailures(t *testing.T) {
	res := Run(context.Background(), Spec{Op: "test", Argv: []string{"orchstat-no-such-command"}, Policy: preset(t, "retry-handler")})
	if res.Reason != ReasonStartFailed || res.Status != StatusNotFound || len(res.Attempts) != 0 {
		t.Fatalf("%+v", res)
	}
	dir := t.TempDir()
	script := filepath.Join(dir, "noexec")
	os.WriteFile(script, []byte("#!/bin/sh\n"), 0o644)
	res = Run(context.Background(), Spec{Op: "test", Argv: []string{script}, Path: script, Policy: preset(t, "retry-handler")})
	if res.Reason != ReasonStartFailed || res.Status != StatusCannotRun {
		t.Fatalf("%+v", res)
	}
}

func TestTail(t *testing.T) {
	tl := &Tail{Max: 10}
	tl.Write([]byte("abc\n"))
	if tl.String() != "abc\n" {
		t.Errorf("%q", tl.String())
	}
	tl.Write([]byte("defgh\nij"))
	// 12 bytes written, the last 10 kept: "c\ndefgh\nij"; the cut line goes.
	if got := tl.String(); got != "defgh\nij" {
		t.Errorf("%q", got)
	}
	tl.Write([]byte(strings.Repeat("x", 30)))
	if got := tl.String(); got != strings.Repeat("x", 10) {
		t.Errorf("%q", got)
	}
	// A cut through a character drops its remains.
	tl = &Tail{Max: 5}
	tl.Write([]byte("ééé"))
	if got := tl.String(); got != "éé" {
		t.Errorf("%q", got)
	}
	// The same last lines give the same tail, however long the output, and
	// the tail starts with a whole line.
	a, b := &Tail{Max: 64}, &Tail{Max: 64}
	a.Write([]byte(strings.Repeat("noise line\n", 50) + "error: boom\n"))
	b.Write([]byte("a first line of another length\n" + strings.Repeat("noise line\n", 50) + "error: boom\n"))
	if a.String() != b.String() || !strings.HasPrefix(a.String(), "noise line\n") {
		t.Errorf("%q != %q", a.String(), b.String())
	}
}

func TestStatusAndMaxAttempts(t *testing.T) {
	for _, tc := range []struct {
		a    Attempt
		want int
	}{
		{Attempt{ExitCode: 0}, 0}, {Attempt{ExitCode: 3, Class: failure.ClassLogicError}, 3},
		{Attempt{ExitCode: -1, Signal: "SIGTERM", TimedOut: true}, 124},
		{Attempt{ExitCode: -1, Signal: "SIGSEGV"}, 139}, {Attempt{ExitCode: -1, Signal: "SIG40"}, 168},
	} {
		if got := tc.a.Status(); got != tc.want {
			t.Errorf("%+v: %d, want %d", tc.a, got, tc.want)
		}
	}
	p := preset(t, "retry-handler")
	for op, want := range map[string]int{"test": 3, "review": 2, "build": 1, "custom": 3} {
		if got := MaxAttempts(p, op); got != want {
			t.Errorf("%s: %d attempts, want %d", op, got, want)
		}
	}
	if got := MaxAttempts(preset(t, "factory"), "test"); got != 5 {
		t.Errorf("factory: %d", got)
	}
}

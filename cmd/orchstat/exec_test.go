package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/spf13/cobra"
)

// The test binary doubles as a command for exec to run, writing exact
// bytes: init runs before TestMain, so the helper never builds orchstat.
const execHelperEnv = "ORCHSTAT_EXEC_HELPER"

var (
	helperStdout = []byte("line 1\n\x00\xff\xfe binary\r\n\ttabs  and spaces \nno newline at the end")
	helperStderr = []byte("warning: caf\xc3\xa9\n\x1b[31mred\x1b[0m\r\npartial")
)

func init() {
	if os.Getenv(execHelperEnv) != "bytes" {
		return
	}
	// Several small writes, interleaved, as a real command makes them.
	for i := 0; i < len(helperStdout) || i < len(helperStderr); i += 7 {
		if i < len(helperStdout) {
			os.Stdout.Write(helperStdout[i:min(i+7, len(helperStdout))])
		}
		if i < len(helperStderr) {
			os.Stderr.Write(helperStderr[i:min(i+7, len(helperStderr))])
		}
	}
	code, _ := strconv.Atoi(os.Getenv(execHelperEnv + "_EXIT"))
	os.Exit(code)
}

// execEnv is a scratch directory with its runs directory and store.
type execEnv struct {
	dir, runs, db string
}

func newExecEnv(t *testing.T) execEnv {
	dir := t.TempDir()
	return execEnv{dir: dir, runs: filepath.Join(dir, "runs"), db: filepath.Join(dir, "orchstat.duckdb")}
}

// args puts the scratch store and runs directory before exec's own flags.
func (e execEnv) args(args ...string) []string {
	return append([]string{"--db", e.db, "exec", "--runs-dir", e.runs}, args...)
}

type execOutcome struct {
	code           int
	stdout, stderr []byte
	result         execResult
}

// orchstatExec runs the real binary in the scratch directory.
func (e execEnv) run(t *testing.T, env []string, args ...string) execOutcome {
	t.Helper()
	cmd := runOrchstat(e.args(args...)...)
	cmd.Dir = e.dir
	cmd.Env = append(cmd.Env, env...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		t.Fatal(err)
	}
	o := execOutcome{code: cmd.ProcessState.ExitCode(), stdout: out.Bytes(), stderr: errb.Bytes()}
	o.result = lastResult(t, errb.Bytes())
	return o
}

// lastResult parses the JSON result exec prints as stderr's last line, if
// there is one.
func lastResult(t *testing.T, stderr []byte) execResult {
	t.Helper()
	var r execResult
	lines := bytes.Split(bytes.TrimRight(stderr, "\n"), []byte("\n"))
	if last := lines[len(lines)-1]; bytes.HasPrefix(last, []byte(`{"success"`)) {
		if err := json.Unmarshal(last, &r); err != nil {
			t.Fatalf("result %q: %v", last, err)
		}
	}
	return r
}

// traceEvents reads the events of every run under the runs directory.
func (e execEnv) traceEvents(t *testing.T) map[string][]map[string]any {
	t.Helper()
	out := map[string][]map[string]any{}
	files, _ := filepath.Glob(filepath.Join(e.runs, "*", "trace.jsonl"))
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range bytes.Split(bytes.TrimSuffix(b, []byte("\n")), []byte("\n")) {
			var ev map[string]any
			if err := json.Unmarshal(l, &ev); err != nil {
				t.Fatalf("%s: %q: %v", f, l, err)
			}
			out[filepath.Base(filepath.Dir(f))] = append(out[filepath.Base(filepath.Dir(f))], ev)
		}
	}
	return out
}

func types(evs []map[string]any) []string {
	var out []string
	for _, ev := range evs {
		out = append(out, ev["type"].(string))
	}
	return out
}

func payload(ev map[string]any) map[string]any { return ev["payload"].(map[string]any) }

func requireProcesses(t *testing.T) {
	if testing.Short() {
		t.Skip("runs real processes; go test ./... runs it (skipped under -short)")
	}
}

// The command's output reaches orchstat's stdout and stderr byte for
// byte; with -q and --result, orchstat adds nothing to either.
func TestExecStreamsByteExact(t *testing.T) {
	t.Parallel()
	requireProcesses(t)
	for _, code := range []int{0, 7} {
		t.Run(fmt.Sprint("exit ", code), func(t *testing.T) {
			e := newExecEnv(t)
			res := filepath.Join(e.dir, "result.json")
			env := []string{execHelperEnv + "=bytes", execHelperEnv + "_EXIT=" + strconv.Itoa(code)}
			o := e.run(t, env, "-q", "--op", "build", "--result", res, "--", os.Args[0])
			if o.code != code {
				t.Errorf("exit %d, want %d\n%s", o.code, code, o.stderr)
			}
			if !bytes.Equal(o.stdout, helperStdout) {
				t.Errorf("stdout\n%q\nwant\n%q", o.stdout, helperStdout)
			}
			if !bytes.Equal(o.stderr, helperStderr) {
				t.Errorf("stderr\n%q\nwant\n%q", o.stderr, helperStderr)
			}
			b, err := os.ReadFile(res)
			if err != nil {
				t.Fatal(err)
			}
			var r execResult
			if err := json.Unmarshal(b, &r); err != nil || r.Success != (code == 0) || r.Attempts != 1 || r.ExitCode != code {
				t.Errorf("result %s: %v", b, err)
			}
		})
	}
}

// Output passes through while the command runs, not when it ends: the
// command waits for the test to see its first line.
func TestExecStreamsWhileRunning(t *testing.T) {
	t.Parallel()
	requireProcesses(t)
	for _, stream := range []string{"stdout", "stderr"} {
		t.Run(stream, func(t *testing.T) {
			e := newExecEnv(t)
			redirect := ""
			if stream == "stderr" {
				redirect = " >&2"
			}
			cmd := runOrchstat(e.args("-q", "--result", "r.json", "--", "sh", "-c",
				"echo ready"+redirect+"; while [ ! -e go ]; do sleep 0.01; done; echo done"+redirect)...)
			cmd.Dir = e.dir
			var pipe io.ReadCloser
			var err error
			if stream == "stdout" {
				pipe, err = cmd.StdoutPipe()
			} else {
				pipe, err = cmd.StderrPipe()
			}
			if err != nil {
				t.Fatal(err)
			}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			defer cmd.Process.Kill()
			r := bufio.NewReader(pipe)
			first := make(chan string, 1)
			go func() { l, _ := r.ReadString('\n'); first <- l }()
			select {
			case l := <-first:
				if l != "ready\n" {
					t.Fatalf("first line %q", l)
				}
			case <-time.After(30 * time.Second):
				t.Fatal("no output while the command runs")
			}
			os.WriteFile(filepath.Join(e.dir, "go"), nil, 0o644)
			rest, _ := io.ReadAll(r)
			if err := cmd.Wait(); err != nil || string(rest) != "done\n" {
				t.Fatalf("%v, rest %q", err, rest)
			}
		})
	}
}

// A flaky command passes on its third attempt; its attempts land in the
// trace and, ingested, in report and in the attempts view.
func TestExecFlakyThenIngested(t *testing.T) {
	t.Parallel()
	requireProcesses(t)
	e := newExecEnv(t)
	o := e.run(t, nil, "--op", "test", "--", "sh", "-c",
		`n=$(cat count 2>/dev/null || echo 0); n=$((n+1)); echo $n > count; echo "try $n"
		 if [ $n -lt 3 ]; then echo "flaky: connection reset on try $n" >&2; exit 1; fi`)
	if o.code != 0 || string(o.stdout) != "try 1\ntry 2\ntry 3\n" {
		t.Fatalf("exit %d, stdout %q\n%s", o.code, o.stdout, o.stderr)
	}
	r := o.result
	if !r.Success || r.Attempts != 3 || r.EscalationRequired || r.CascadeDetected || r.Reason != "passed" || r.Op != "test" || r.Policy != "retry-handler" {
		t.Errorf("result %+v", r)
	}
	for _, want := range []string{"flaky: connection reset on try 1\norchstat: test failed (attempt 1/3): exit status 1: flaky: connection reset on try 1; retrying\n",
		"orchstat: test passed on attempt 3\n"} {
		if !bytes.Contains(o.stderr, []byte(want)) {
			t.Errorf("stderr lacks %q:\n%s", want, o.stderr)
		}
	}
	runs := e.traceEvents(t)
	evs := runs[r.RunID]
	if len(runs) != 1 || evs == nil {
		t.Fatalf("runs %v, want %s", runs, r.RunID)
	}
	want := []string{"RunStarted", "CommandAttemptStarted", "CommandAttemptFinished", "CommandRetryScheduled",
		"CommandAttemptStarted", "CommandAttemptFinished", "CommandRetryScheduled", "CommandAttemptStarted", "CommandAttemptFinished",
		"CommandFinished", "RunFinished"}
	if got := types(evs); !slices.Equal(got, want) {
		t.Fatalf("events %v", got)
	}
	for _, ev := range evs {
		if ev["schemaVersion"] != 1.0 || ev["runId"] != r.RunID {
			t.Errorf("envelope %v", ev)
		}
	}
	f1 := payload(evs[2])
	if f1["attempt"] != 1.0 || f1["passed"] != false || f1["exitCode"] != 1.0 || f1["class"] != "logic_error" ||
		f1["stderrTail"] != "flaky: connection reset on try 1\n" || f1["timedOut"] != false || f1["signal"] != nil || len(f1["signature"].(string)) != 64 {
		t.Errorf("first attempt %v", f1)
	}
	if f3 := payload(evs[8]); f3["passed"] != true || f3["class"] != nil || f3["exitCode"] != 0.0 {
		t.Errorf("third attempt %v", f3)
	}
	if fin := payload(evs[10]); fin["status"] != "success" {
		t.Errorf("RunFinished %v", fin)
	}

	rep := runOrchstat("--db", e.db, "report", "--format", "json", e.runs)
	out, err := rep.Output()
	if err != nil {
		t.Fatalf("report: %v", err)
	}
	var report struct {
		Metrics map[string]struct{ Value *float64 } `json:"metrics"`
	}
	if err := json.Unmarshal(out, &report); err != nil {
		t.Fatal(err)
	}
	if v := report.Metrics["runs"].Value; v == nil || *v != 1 {
		t.Errorf("report runs %v\n%s", v, out)
	}
	if v := report.Metrics["failed_runs"].Value; v == nil || *v != 0 {
		t.Errorf("report failed_runs %v", v)
	}
	sql := runOrchstat("--db", e.db, "sql", "--format", "json",
		"select system, run_id, item, attempt, passed, stage, class, exit_code, error from attempts order by attempt")
	out, err = sql.Output()
	if err != nil {
		t.Fatalf("sql: %v", err)
	}
	var rows []map[string]any
	if err := json.Unmarshal(out, &rows); err != nil {
		t.Fatalf("%s: %v", out, err)
	}
	if len(rows) != 3 || rows[0]["system"] != "exec" || rows[0]["run_id"] != r.RunID || rows[0]["item"] != "test" ||
		rows[0]["passed"] != false || rows[0]["stage"] != "test" || rows[0]["class"] != "logic_error" ||
		rows[0]["error"] != "flaky: connection reset on try 1\n" || rows[2]["passed"] != true || rows[2]["stage"] != nil {
		t.Errorf("attempts %s", out)
	}
}

// The retry handler retries a test twice whatever failed (line 84); with a policy
// that halts on the second identical signature, exec stops there.
func TestExecDeterministicFailure(t *testing.T) {
	t.Parallel()
	requireProcesses(t)
	e := newExecEnv(t)
	script := `echo "FAIL: TestLogin at 2026-11-01T10:00:00.123Z (pid $$)" >&2; exit 3`
	o := e.run(t, nil, "-q", "--op", "test", "--", "sh", "-c", script)
	if o.code != 3 || o.result.Attempts != 3 || o.result.Reason != "max_retries" || !o.result.EscalationRequired ||
		o.result.FinalError == "" || o.result.Class != "logic_error" {
		t.Fatalf("retry-handler: exit %d, %+v", o.code, o.result)
	}
	policy := filepath.Join(e.dir, "halt.yaml")
	os.WriteFile(policy, []byte("extends: retry-handler\nsignature_halt: 2\n"), 0o644)
	o = e.run(t, nil, "--op", "test", "--policy", policy, "--", "sh", "-c", script)
	if o.code != 3 || o.result.Attempts != 2 || o.result.Reason != "signature_halt" || o.result.Policy != "halt" {
		t.Fatalf("signature halt: exit %d, %+v\n%s", o.code, o.result, o.stderr)
	}
	if !bytes.Contains(o.stderr, []byte("orchstat: test failed after 2 attempts: halted, the same failure 2 times in a row (signature_halt)\n")) {
		t.Errorf("stderr %s", o.stderr)
	}
	var halted map[string]any
	for _, evs := range e.traceEvents(t) {
		for _, ev := range evs {
			if ev["type"] == "CommandHalted" && payload(ev)["reason"] == "signature_halt" {
				halted = payload(ev)
			}
		}
	}
	if halted == nil || halted["attempt"] != 2.0 {
		t.Errorf("CommandHalted %v", halted)
	}
	// --max-retries overrides the op's limit. (A third failure in this store
	// would be a cascade.)
	o = newExecEnv(t).run(t, nil, "-q", "--op", "test", "--max-retries", "0", "--", "sh", "-c", script)
	if o.code != 3 || o.result.Attempts != 1 {
		t.Errorf("--max-retries 0: exit %d, %+v", o.code, o.result)
	}
}

func TestExecSlowWithinTimeout(t *testing.T) {
	t.Parallel()
	requireProcesses(t)
	e := newExecEnv(t)
	o := e.run(t, nil, "-q", "--op", "build", "--timeout", "30s", "--", "sh", "-c", "sleep 0.3; echo slow")
	if o.code != 0 || string(o.stdout) != "slow\n" || !o.result.Success {
		t.Fatalf("exit %d, %q, %+v", o.code, o.stdout, o.result)
	}
}

// A hanging command is killed at its timeout, with what it started, and
// exec exits 124 as timeout(1) does.
func TestExecHangingKilled(t *testing.T) {
	t.Parallel()
	requireProcesses(t)
	e := newExecEnv(t)
	start := time.Now()
	o := e.run(t, nil, "-q", "--op", "build", "--timeout", "1500ms", "--kill-after", "2s", "--",
		"sh", "-c", "sleep 1000 & echo $! > grandchild; echo started; wait")
	if o.code != 124 || o.result.Class != "command_timeout" || o.result.ExitCode != 124 || o.result.Success || string(o.stdout) != "started\n" {
		t.Fatalf("exit %d, %q, %+v\n%s", o.code, o.stdout, o.result, o.stderr)
	}
	if el := time.Since(start); el > 30*time.Second {
		t.Errorf("took %v", el)
	}
	b, err := os.ReadFile(filepath.Join(e.dir, "grandchild"))
	if err != nil {
		t.Fatal(err)
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	deadline := time.Now().Add(10 * time.Second)
	for processAlive(pid) {
		if time.Now().After(deadline) {
			syscall.Kill(pid, syscall.SIGKILL)
			t.Fatalf("grandchild %d survived the timeout", pid)
		}
		time.Sleep(10 * time.Millisecond)
	}
	var fin map[string]any
	for _, evs := range e.traceEvents(t) {
		fin = payload(evs[2])
	}
	if fin["timedOut"] != true || fin["class"] != "command_timeout" || fin["signal"] != "SIGTERM" || fin["exitCode"] != nil {
		t.Errorf("attempt %v", fin)
	}
}

// processAlive reports whether pid runs; a zombie does not.
func processAlive(pid int) bool {
	if pid <= 0 || syscall.Kill(pid, 0) != nil {
		return false
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	i := bytes.LastIndexByte(b, ')')
	return i < 0 || i+2 >= len(b) || b[i+2] != 'Z'
}

func TestExecKilledBySignal(t *testing.T) {
	t.Parallel()
	requireProcesses(t)
	e := newExecEnv(t)
	o := e.run(t, nil, "-q", "--op", "build", "--", "sh", "-c", "echo segfault >&2; kill -SEGV $$")
	if o.code != 128+int(syscall.SIGSEGV) || o.result.Class != "signal" || o.result.FinalError != "killed by SIGSEGV: segfault" {
		t.Fatalf("exit %d, %+v", o.code, o.result)
	}
}

// The retry handler's cascade: the third failure of a command within five of its
// invocations in one directory is reported, across processes, with the
// state in the store. The exit status stays the command's own, and
// unrelated commands are not counted: three unrelated failures made every
// later exec exit 81 (issue 11).
func TestExecCascadeAcrossInvocations(t *testing.T) {
	t.Parallel()
	requireProcesses(t)
	e := newExecEnv(t)
	// Three unrelated failures, then a fourth command: no cascade.
	for i, code := range []int{3, 4, 5, 6} {
		o := e.run(t, nil, "-q", "--op", "build", "--", "sh", "-c", fmt.Sprintf("exit %d", code))
		if o.code != code || o.result.CascadeDetected || o.result.ExitCode != code {
			t.Errorf("unrelated command %d: exit %d, %+v", i+1, o.code, o.result)
		}
	}
	var codes []int
	script := "echo broken >&2; exit 7"
	for i := range 4 {
		s := script
		if i == 1 {
			s = "exit 0" // another command: not in script's window
		}
		o := e.run(t, nil, "-q", "--op", "build", "--", "sh", "-c", s)
		codes = append(codes, o.code)
		if want := i == 3; o.result.CascadeDetected != want {
			t.Errorf("invocation %d: cascade %v\n%s", i+1, o.result.CascadeDetected, o.stderr)
		}
		if i == 3 {
			c := o.result.Cascade
			if c == nil || c.FailuresInWindow != 3 || c.Threshold != 3 || c.WindowSize != 5 || c.Action != "pause_and_alert" {
				t.Errorf("cascade %+v", c)
			}
			if !bytes.Contains(o.stderr, []byte("orchstat: cascade: 3 of the last 3 invocations of sh -c 'echo broken >&2; exit 7' in ")) ||
				!bytes.Contains(o.stderr, []byte("--reset-cascade")) {
				t.Errorf("stderr %s", o.stderr)
			}
		}
	}
	if want := []int{7, 0, 7, 7}; !slices.Equal(codes, want) {
		t.Errorf("exit codes %v, want %v", codes, want)
	}
	// The same command in another directory has a window of its own.
	other := filepath.Join(e.dir, "other")
	os.Mkdir(other, 0o755)
	cmd := runOrchstat(e.args("-q", "--op", "build", "--", "sh", "-c", script)...)
	cmd.Dir = other
	var errb bytes.Buffer
	cmd.Stderr = &errb
	cmd.Run()
	if r := lastResult(t, errb.Bytes()); r.CascadeDetected || cmd.ProcessState.ExitCode() != 7 {
		t.Errorf("in another directory: exit %d, %+v", cmd.ProcessState.ExitCode(), r)
	}
	sql := runOrchstat("--db", e.db, "sql", "--format", "csv", "select op, success, attempts, reason from exec_invocations order by finished_at")
	out, err := sql.Output()
	if err != nil {
		t.Fatal(err)
	}
	if want := "op,success,attempts,reason\n" + strings.Repeat("build,false,1,max_retries\n", 4) +
		"build,false,1,max_retries\nbuild,true,1,passed\n" + strings.Repeat("build,false,1,max_retries\n", 3); string(out) != want {
		t.Errorf("exec_invocations\n%s", out)
	}
	// --reset-cascade forgets this command's invocations here, runs
	// nothing, and the next failure is not a cascade.
	reset := e.run(t, nil, "--reset-cascade", "--", "sh", "-c", script)
	if reset.code != 0 || !bytes.Contains(reset.stdout, []byte("3 recorded invocations forgotten")) {
		t.Errorf("reset: exit %d, stdout %s, stderr %s", reset.code, reset.stdout, reset.stderr)
	}
	if o := e.run(t, nil, "-q", "--op", "build", "--", "sh", "-c", script); o.code != 7 || o.result.CascadeDetected {
		t.Errorf("after the reset: exit %d, %+v", o.code, o.result)
	}
	if all := e.run(t, nil, "--reset-cascade"); all.code != 0 || !bytes.Contains(all.stdout, []byte("every command: 7 recorded")) {
		t.Errorf("reset all: exit %d, stdout %s, stderr %s", all.code, all.stdout, all.stderr)
	}
}

// A store held by another process costs the cascade, never the command.
func TestExecStoreLocked(t *testing.T) {
	t.Parallel()
	requireProcesses(t)
	e := newExecEnv(t)
	if o := e.run(t, nil, "-q", "--", "true"); o.code != 0 {
		t.Fatal("creating the store")
	}
	holdLock(t, e.db)
	o := e.run(t, nil, "--lock-timeout", "300ms", "-q", "--op", "build", "--", "sh", "-c", "echo ran; exit 5")
	r := o.result
	if o.code != 5 || string(o.stdout) != "ran\n" || r.CascadeDetected || !strings.Contains(r.Note, "locked") {
		t.Fatalf("exit %d, stdout %q, %+v\n%s", o.code, o.stdout, r, o.stderr)
	}
	if !bytes.Contains(o.stderr, []byte("orchstat: warning: this invocation is not counted for cascade detection")) {
		t.Errorf("stderr %s", o.stderr)
	}
}

// --run-id joins a run exec did not start: no RunStarted or RunFinished of
// its own, and each invocation is its own record run under it.
func TestExecAppendsToARun(t *testing.T) {
	t.Parallel()
	requireProcesses(t)
	e := newExecEnv(t)
	run := "1765432100123"
	os.MkdirAll(filepath.Join(e.runs, run), 0o755)
	orch := `{"type":"RunStarted","schemaVersion":1,"timestamp":"2026-11-01T10:00:00.000Z","runId":"` + run + `","payload":{"taskId":"t","goal":"g"}}` + "\n"
	os.WriteFile(filepath.Join(e.runs, run, "trace.jsonl"), []byte(orch), 0o644)
	for _, op := range []string{"test", "build"} {
		if o := e.run(t, nil, "-q", "--run-id", run, "--op", op, "--", "true"); o.code != 0 || o.result.RunID != run {
			t.Fatalf("%s: exit %d, %+v", op, o.code, o.result)
		}
	}
	evs := e.traceEvents(t)[run]
	if got := types(evs); !slices.Equal(got, []string{"RunStarted", "CommandAttemptStarted", "CommandAttemptFinished", "CommandFinished",
		"CommandAttemptStarted", "CommandAttemptFinished", "CommandFinished"}) {
		t.Fatalf("events %v", got)
	}
	inv := payload(evs[1])["invocationId"].(string)
	if !strings.HasPrefix(inv, run+"/exec-") {
		t.Errorf("invocationId %q", inv)
	}
	if out, err := runOrchstat("--db", e.db, "ingest", "-q", e.runs).CombinedOutput(); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	sql := runOrchstat("--db", e.db, "sql", "--format", "csv", "select item, batch, status, attempts, max_attempts from attempt_runs order by item")
	out, err := sql.Output()
	if err != nil {
		t.Fatal(err)
	}
	if want := "item,batch,status,attempts,max_attempts\nbuild," + run + ",success,1,1\ntest," + run + ",success,1,3\n"; string(out) != want {
		t.Errorf("attempt_runs\n%s", out)
	}
}

// An interrupt stops the attempt (the command's group gets SIGTERM) and
// the retries; the run is cancelled, not failed, and not counted for
// cascades.
func TestExecInterrupted(t *testing.T) {
	t.Parallel()
	requireProcesses(t)
	e := newExecEnv(t)
	cmd := runOrchstat(e.args("-q", "--op", "test", "--", "sh", "-c", "echo $$ > pid; echo started; sleep 1000")...)
	cmd.Dir = e.dir
	stdout, _ := cmd.StdoutPipe()
	var errb bytes.Buffer
	cmd.Stderr = &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	if l, _ := bufio.NewReader(stdout).ReadString('\n'); l != "started\n" {
		t.Fatalf("%q", l)
	}
	cmd.Process.Signal(os.Interrupt)
	cmd.Wait()
	r := lastResult(t, errb.Bytes())
	if code := cmd.ProcessState.ExitCode(); code != 130 || r.Reason != "interrupted" || r.Attempts != 1 || r.EscalationRequired {
		t.Fatalf("exit %d, %+v\n%s", code, r, errb.String())
	}
	b, _ := os.ReadFile(filepath.Join(e.dir, "pid"))
	pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	deadline := time.Now().Add(10 * time.Second)
	for processAlive(pid) {
		if time.Now().After(deadline) {
			syscall.Kill(pid, syscall.SIGKILL)
			t.Fatalf("the command %d survived", pid)
		}
		time.Sleep(10 * time.Millisecond)
	}
	for _, evs := range e.traceEvents(t) {
		if got := types(evs); !slices.Equal(got, []string{"RunStarted", "CommandAttemptStarted", "CommandAttemptFinished", "CommandFinished", "RunFinished"}) {
			t.Errorf("events %v", got)
		}
		if s := payload(evs[4])["status"]; s != "cancelled" {
			t.Errorf("RunFinished %v", s)
		}
	}
	if _, err := os.Stat(e.db); err == nil {
		t.Error("an interrupted invocation was recorded for cascades")
	}
}

func TestExecResultToStdout(t *testing.T) {
	t.Parallel()
	requireProcesses(t)
	e := newExecEnv(t)
	o := e.run(t, nil, "-q", "--result", "-", "--", "sh", "-c", "echo out")
	lines := strings.Split(string(o.stdout), "\n")
	if o.code != 0 || lines[0] != "out" || !strings.HasPrefix(lines[1], `{"success":true,"attempts":1,`) || len(o.stderr) != 0 {
		t.Fatalf("exit %d\nstdout %q\nstderr %q", o.code, o.stdout, o.stderr)
	}
}

// A command that is not there is 127, as in a shell, and nothing is
// recorded.
func TestExecNotFound(t *testing.T) {
	t.Parallel()
	requireProcesses(t)
	e := newExecEnv(t)
	o := e.run(t, nil, "--", "orchstat-no-such-command")
	if o.code != 127 || !bytes.Contains(o.stderr, []byte("orchstat-no-such-command")) {
		t.Fatalf("exit %d\n%s", o.code, o.stderr)
	}
	if _, err := os.Stat(e.runs); err == nil {
		t.Error("a run was recorded")
	}
}

// execInProcess runs exec in this process with an injected sleeper and
// clock.
func execInProcess(t *testing.T, e execEnv, sleep func(context.Context, time.Duration) error, now func() time.Time, args ...string) (int, string, string, *execOptions) {
	t.Helper()
	var out, errb bytes.Buffer
	g := &globals{io: &IO{In: strings.NewReader(""), Out: &out, Err: &errb, Now: now}, db: e.db, lockTimeout: 10 * time.Second}
	var ran *execOptions
	cmd := newExecCmd(g, func(ctx context.Context, o *execOptions) error {
		ran = o
		o.Sleep = sleep
		return execRun(ctx, o)
	})
	cmd.SilenceErrors, cmd.SilenceUsage = true, true
	cmd.SetArgs(append([]string{"--runs-dir", e.runs}, args...))
	cmd.SetOut(io.Discard)
	err := cmd.ExecuteContext(context.Background())
	return exitCodeOf(err), out.String(), errb.String(), ran
}

// exitCodeOf is run's mapping of a command's error to an exit code.
func exitCodeOf(err error) int {
	var se silentError
	var ue usageError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &se):
		return se.code
	case errors.As(err, &ue):
		return exitUsage
	}
	return exitError
}

// The waits between attempts are the policy's backoff, taken through the
// injected sleeper, and the trace's times are the injected clock's.
func TestExecBackoffInjected(t *testing.T) {
	t.Parallel()
	requireProcesses(t)
	e := newExecEnv(t)
	policy := filepath.Join(e.dir, "slow.yaml")
	os.WriteFile(policy, []byte("extends: retry-handler\nbackoff: {initial: 2s, factor: 2, max: 5s}\n"), 0o644)
	var waits []time.Duration
	clock := time.Date(2026, 11, 1, 9, 0, 0, 0, time.UTC)
	now := func() time.Time { clock = clock.Add(time.Millisecond); return clock }
	sleep := func(ctx context.Context, d time.Duration) error {
		waits = append(waits, d)
		clock = clock.Add(d)
		return nil
	}
	start := time.Now()
	code, _, stderr, _ := execInProcess(t, e, sleep, now, "--policy", policy, "--max-retries", "3", "--", "sh", "-c", "exit 4")
	if code != 4 {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	if want := []time.Duration{2 * time.Second, 4 * time.Second, 5 * time.Second}; !slices.Equal(waits, want) {
		t.Errorf("waits %v, want %v", waits, want)
	}
	if time.Since(start) > 20*time.Second {
		t.Errorf("the sleeper was not injected")
	}
	if !strings.Contains(stderr, "orchstat: custom failed (attempt 2/4): exit status 4; retrying in 4s\n") {
		t.Errorf("stderr %s", stderr)
	}
	for run, evs := range e.traceEvents(t) {
		if run != "1793523600001" || evs[0]["timestamp"] != "2026-11-01T09:00:00.001Z" {
			t.Errorf("run %s starts %v", run, evs[0]["timestamp"])
		}
		var waitsMs []float64
		for _, ev := range evs {
			if ev["type"] == "CommandRetryScheduled" {
				waitsMs = append(waitsMs, payload(ev)["waitMs"].(float64))
			}
		}
		if !slices.Equal(waitsMs, []float64{2000, 4000, 5000}) {
			t.Errorf("waitMs %v", waitsMs)
		}
	}
}

// Every invalid invocation is a usage error, found before anything runs:
// no command, no trace, no store.
func TestExecUsageErrors(t *testing.T) {
	t.Parallel()
	e := newExecEnv(t)
	badPolicy := filepath.Join(e.dir, "bad.yaml")
	os.WriteFile(badPolicy, []byte("extends: retry-handler\nmax_retries: many\n"), 0o644)
	marker := filepath.Join(e.dir, "ran")
	cmd := []string{"sh", "-c", "touch " + marker}
	for _, args := range [][]string{
		cmd, // no --
		{"--"},
		{"--", ""},
		append([]string{"extra", "--"}, cmd...),
		append([]string{"--op", "deploy", "--"}, cmd...),
		append([]string{"--max-retries", "-1", "--"}, cmd...),
		append([]string{"--max-retries", "x", "--"}, cmd...),
		append([]string{"--timeout", "-1s", "--"}, cmd...),
		append([]string{"--timeout", "soon", "--"}, cmd...),
		append([]string{"--kill-after", "0", "--"}, cmd...),
		append([]string{"--run-id", "../escape", "--"}, cmd...),
		append([]string{"--run-id", "", "--"}, cmd...),
		append([]string{"--result", "", "--"}, cmd...),
		append([]string{"--policy", "retry-handlr", "--"}, cmd...),
		append([]string{"--policy", badPolicy, "--"}, cmd...),
		append([]string{"--policy", "missing.yaml", "--"}, cmd...),
		append([]string{"--no-such-flag", "--"}, cmd...),
		{"--", "sh", "-c", "touch " + marker, "a\x00b"},
	} {
		code, _, stderr, _ := execInProcess(t, e, nil, time.Now, args...)
		if code != exitUsage {
			t.Errorf("%q: exit %d, want 2\n%s", args, code, stderr)
		}
	}
	if _, err := os.Stat(marker); err == nil {
		t.Error("a command ran")
	}
	if _, err := os.Stat(e.runs); err == nil {
		t.Error("a run was recorded")
	}
	if _, err := os.Stat(e.db); err == nil {
		t.Error("the store was opened")
	}
}

// fuzzRoot is orchstat's root as far as exec sees it: the global flags and
// the flag errors, with exec's run step replaced.
func fuzzRoot(runF func(context.Context, *execOptions) error) *cobra.Command {
	g := &globals{io: &IO{In: strings.NewReader(""), Out: io.Discard, Err: io.Discard, Now: time.Now}}
	root := &cobra.Command{Use: "orchstat", SilenceErrors: true, SilenceUsage: true}
	root.PersistentFlags().StringVar(&g.db, "db", "", "")
	root.PersistentFlags().DurationVar(&g.lockTimeout, "lock-timeout", 30*time.Second, "")
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error { return usageError{err} })
	root.SetOut(io.Discard)
	root.SetErr(io.Discard)
	root.AddCommand(newExecCmd(g, runF))
	return root
}

// FuzzExecArgs feeds arbitrary argv to exec's parsing: it never panics,
// what it accepts is runnable, and what it refuses is a usage error with
// nothing run.
func FuzzExecArgs(f *testing.F) {
	for _, s := range []string{
		"--op\ntest\n--\ngo\ntest", "--\nsh\n-c\nexit 1", "--max-retries=3\n--timeout\n1m\n--\nx", "--op\n--\nx",
		"--run-id\n..\n--\nx", "--result\n-\n--policy\nnone\n--\nx\n--\ny", "x\n--\ny", "--help", "-q\n--kill-after=1ns\n--\n\x00",
		"--lock-timeout\n5s\n--db\nx.duckdb\n--\nx", "--timeout=-5s\n--\nx", "--op=review\n--max-retries\n9999999999999999999\n--\nx",
		"--reset-cascade", "--reset-cascade\n--\nmake", "--reset-cascade\n--op\nbad", "--reset-cascade\n--",
	} {
		f.Add(s, byte('\n'))
	}
	f.Fuzz(func(t *testing.T, joined string, sep byte) {
		args := strings.Split(joined, string([]byte{sep}))
		var ran *execOptions
		root := fuzzRoot(func(ctx context.Context, o *execOptions) error { ran = o; return nil })
		root.SetArgs(append([]string{"exec"}, args...))
		_, err := root.ExecuteC()
		code := exitCodeOf(err)
		if ran == nil {
			if code == 0 && !slices.ContainsFunc(args, func(a string) bool { return strings.HasPrefix(a, "-") && strings.Contains(a, "h") }) {
				t.Fatalf("%q: exit 0 without running or help", args)
			}
			if code != 0 && code != exitUsage {
				t.Fatalf("%q: exit %d (%v), want a usage error", args, code, err)
			}
			return
		}
		if code != 0 {
			t.Fatalf("%q: ran, then exit %d", args, code)
		}
		if ran.ResetCascade && len(ran.Argv) == 0 {
			// --reset-cascade alone: every command's, with nothing after it.
			if slices.Contains(args, "--") {
				t.Fatalf("%q: reset of every command with a command given", args)
			}
			return
		}
		if len(ran.Argv) == 0 || ran.Argv[0] == "" || !slices.Contains(execOps, ran.Op) || ran.MaxRetries < -1 ||
			ran.Timeout < 0 || ran.KillAfter <= 0 || ran.Policy == "" || ran.RunsDir == "" || strings.Contains(ran.RunID, "/") {
			t.Fatalf("%q: accepted %+v", args, ran)
		}
		for _, a := range ran.Argv {
			if strings.IndexByte(a, 0) >= 0 {
				t.Fatalf("%q: accepted a NUL", args)
			}
		}
		// The command is all that follows a "--".
		i := len(args) - len(ran.Argv) - 1
		if i < 0 || args[i] != "--" || !slices.Equal(ran.Argv, args[i+1:]) {
			t.Fatalf("%q: command %q", args, ran.Argv)
		}
	})
}

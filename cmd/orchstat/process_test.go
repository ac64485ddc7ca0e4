package main

import (
	"bufio"
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/orchstat/orchstat/query"
	"github.com/orchstat/orchstat/rules/retry/runner/guard"
)

// binary is a real orchstat built once for the tests that run it as a
// separate process (kill -9, lock contention).
var binary string

func TestMain(m *testing.M) {
	// The commands exec runs in process are guarded by this binary.
	if code, ok := guard.Main(); ok {
		os.Exit(code)
	}
	// A lake read by a test whose dependencies are defaultDeps() starts
	// its replica's build with this binary (os.Executable): it is not
	// orchstat, and builds nothing. lakeDeps builds in process instead.
	if len(os.Args) > 1 && os.Args[1] == "lake-replica" {
		os.Exit(0)
	}
	// Re-executed as a helper that holds the database lock until its stdin
	// closes. See holdLock.
	if path := os.Getenv("ORCHSTAT_TEST_HOLD_LOCK"); path != "" {
		st, err := query.Open(context.Background(), path, query.Options{})
		if err != nil {
			fmt.Println("error:", err)
			os.Exit(1)
		}
		fmt.Println("locked")
		io.Copy(io.Discard, os.Stdin)
		st.Close()
		os.Exit(0)
	}
	// The fast lane (-short) runs no test that starts the binary
	// (endToEnd, skipShort), so it does not pay for the link: about 8
	// CPU-seconds, a third of this package's short run.
	flag.Parse()
	if testing.Short() {
		binary = filepath.Join(os.TempDir(), "orchstat-not-built-under-short-mark-the-test-endToEnd")
		os.Exit(withDataHome(m))
	}
	// The binary is built into a folder of this run's own and removed
	// once the tests have run, so that no run leaves a binary in the
	// shared temporary folder. go build reuses its cache for the packages;
	// only the link is done again each run.
	dir, err := os.MkdirTemp("", "orchstat-test-bin-")
	if err != nil {
		panic(err)
	}
	binary = filepath.Join(dir, "orchstat")
	out, err := exec.Command("go", "build", "-o", binary, ".").CombinedOutput()
	if err != nil {
		os.RemoveAll(dir)
		fmt.Fprintf(os.Stderr, "building orchstat: %v\n%s", err, out)
		os.Exit(1)
	}
	code := withDataHome(m)
	os.RemoveAll(dir)
	os.Exit(code)
}

// withDataHome runs the tests with a data folder of their own: agents'
// records get a store in the user's data folder (agentStore), and no test
// may write into the real one.
func withDataHome(m *testing.M) int {
	data, err := os.MkdirTemp("", "orchstat-test-data-")
	if err != nil {
		panic(err)
	}
	os.Setenv("XDG_DATA_HOME", data)
	code := m.Run()
	os.RemoveAll(data)
	for _, f := range afterTests {
		f()
	}
	return code
}

// corpus writes runs whose expected counts are known exactly. Each run has
// valid events, including provider requests, plus badEvery-th bad lines.
type corpus struct {
	dir                       string
	events, quarantined, reqs int
	rng                       *rand.Rand
	next                      map[string]int
}

func newCorpus(t *testing.T, runs, lines int) *corpus {
	c := &corpus{dir: filepath.Join(t.TempDir(), "runs"), rng: rand.New(rand.NewPCG(1, 2)), next: map[string]int{}}
	for r := range runs {
		c.appendRun(t, fmt.Sprintf("17700000%05d", r), lines)
	}
	return c
}

func (c *corpus) appendRun(t *testing.T, run string, lines int) {
	t.Helper()
	path := filepath.Join(c.dir, run, "trace.jsonl")
	os.MkdirAll(filepath.Dir(path), 0o755)
	f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	w := bufio.NewWriter(f)
	for range lines {
		i := c.next[run]
		c.next[run]++
		ts := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC).Add(time.Duration(i) * time.Second).Format("2006-01-02T15:04:05.000Z")
		switch {
		case i%97 == 96:
			fmt.Fprintf(w, "{not json %d\n", i)
			c.quarantined++
		case i%2 == 1:
			fmt.Fprintf(w, `{"type":"ProviderRequestFinished","schemaVersion":1,"timestamp":%q,"runId":%q,"payload":{"provider":"p","durationMs":10,"success":true,"retries":%d}}`+"\n", ts, run, i%3)
			c.events++
			c.reqs++
		default:
			chunk := strings.Repeat("output line with \\\"quotes\\\" ", 10+c.rng.IntN(60))
			fmt.Fprintf(w, `{"type":"SubprocessOutputChunked","schemaVersion":1,"timestamp":%q,"runId":%q,"payload":{"pid":1,"stream":"stdout","chunk":"%s"}}`+"\n", ts, run, chunk)
			c.events++
		}
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
}

func runOrchstat(args ...string) *exec.Cmd {
	cmd := exec.Command(binary, args...)
	cmd.Env = append(os.Environ(), "ORCHSTAT_DB=")
	return cmd
}

// verify checks the store holds every line exactly once.
func (c *corpus) verify(t *testing.T, db string) {
	t.Helper()
	st, err := query.Open(context.Background(), db, query.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	var events, distinct, quarantined, qdistinct, reqs, badOffsets int
	tx, err := st.Begin(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(context.Background())
	row := tx.QueryRow(context.Background(), `SELECT
		(SELECT count(*) FROM events), (SELECT count(DISTINCT (file_id, line)) FROM events),
		(SELECT count(*) FROM quarantine), (SELECT count(DISTINCT (file_id, line)) FROM quarantine),
		(SELECT count(*) FROM provider_request_finishes),
		(SELECT count(*) FROM files WHERE byte_offset <> size)`)
	if err := row.Scan(&events, &distinct, &quarantined, &qdistinct, &reqs, &badOffsets); err != nil {
		t.Fatal(err)
	}
	if events != c.events || distinct != events || quarantined != c.quarantined || qdistinct != quarantined || reqs != c.reqs || badOffsets != 0 {
		t.Fatalf("store has %d events (%d distinct), %d quarantined (%d distinct), %d requests, %d files not fully read; want %d events, %d quarantined, %d requests",
			events, distinct, quarantined, qdistinct, reqs, badOffsets, c.events, c.quarantined, c.reqs)
	}
	// The runs' figures are those of the events the store holds: a kill
	// between a transaction's events and its figures left neither.
	if drift, err := st.FiguresDrift(context.Background()); err != nil || drift != 0 {
		t.Fatalf("the runs' figures differ from the events' in %d rows (%v)", drift, err)
	}
}

func TestKill9ExactlyOnce(t *testing.T) {
	if testing.Short() {
		t.Skip("kills real processes; go test ./... runs it (skipped under -short)")
	}
	c := newCorpus(t, 120, 300)
	db := filepath.Join(t.TempDir(), "orchstat.duckdb")
	// Small transactions so kills land between, inside and after commits.
	args := []string{"--db", db, "ingest", "--quiet", "--batch-rows", "2000", "--txn-bytes", "400000", c.dir}

	// Time a whole ingest into a scratch database to spread the kills over.
	start := time.Now()
	if out, err := runOrchstat("--db", filepath.Join(t.TempDir(), "timing.duckdb"), "ingest", "--quiet", "--batch-rows", "2000", "--txn-bytes", "400000", c.dir).CombinedOutput(); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	full := time.Since(start)

	rng := rand.New(rand.NewPCG(3, 4))
	// Keep going until enough ingests were killed mid-run: on a loaded
	// machine some finish before their kill time, and those prove nothing.
	const kills, maxAttempts = 25, 100
	killed, attempts := 0, 0
	for ; killed < kills && attempts < maxAttempts; attempts++ {
		cmd := runOrchstat(args...)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		// Kill points are spread from process start (opening the database)
		// to well into the commits.
		time.Sleep(time.Duration(rng.Float64() * 0.6 * float64(full)))
		cmd.Process.Signal(syscall.SIGKILL)
		err := cmd.Wait()
		if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			killed++
		} else if err != nil {
			t.Fatalf("ingest %d failed on its own: %v\n%s", attempts, err, stderr.String())
		}
		// Runs keep landing between crashes: a third of the corpus grows,
		// and a new run appears, so every ingest has real work to lose.
		for r := range 40 {
			c.appendRun(t, fmt.Sprintf("17700000%05d", (attempts*40+r)%120), 100)
		}
		c.appendRun(t, fmt.Sprintf("1770000100%03d", attempts), 30)
	}
	if killed < kills {
		t.Fatalf("only %d of %d ingests were killed mid-run", killed, attempts)
	}
	t.Logf("%d of %d ingests killed mid-run (a full ingest takes %s)", killed, attempts, full)
	if out, err := runOrchstat(args...).CombinedOutput(); err != nil {
		t.Fatalf("final ingest: %v\n%s", err, out)
	}
	c.verify(t, db)
}

func TestCrashPointsExactlyOnce(t *testing.T) {
	if testing.Short() {
		t.Skip("runs real processes; go test ./... runs it (skipped under -short)")
	}
	// before-figures: a transaction's events are written and its runs'
	// figures not yet, the first time for a first ingest's (rebuilt
	// whole), the third for a later transaction's touched runs.
	for _, point := range []string{"before-files:1", "before-commit:1", "before-commit:3", "after-commit:2", "before-figures:1", "before-figures:3"} {
		t.Run(point, func(t *testing.T) {
			c := newCorpus(t, 30, 200)
			db := filepath.Join(t.TempDir(), "orchstat.duckdb")
			args := []string{"--db", db, "ingest", "--quiet", "--batch-rows", "1500", "--txn-bytes", "300000", c.dir}
			cmd := runOrchstat(args...)
			cmd.Env = append(cmd.Env, "ORCHSTAT_TEST_CRASH="+point)
			err := cmd.Run()
			// The supervisor reports its child's death by SIGKILL as a
			// shell would, 128+9.
			if cmd.ProcessState.ExitCode() != 128+int(syscall.SIGKILL) {
				t.Fatalf("ingest was not killed at %s: %v", point, err)
			}
			c.appendRun(t, "17700000000001", 50)
			if out, err := runOrchstat(args...).CombinedOutput(); err != nil {
				t.Fatalf("%v\n%s", err, out)
			}
			c.verify(t, db)
		})
	}
}

// holdLock starts a process that holds db's write lock until release.
func holdLock(t *testing.T, db string) (pid int, release func()) {
	t.Helper()
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), "ORCHSTAT_TEST_HOLD_LOCK="+db)
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, _ := bufio.NewReader(stdout).ReadString('\n')
	if line != "locked\n" {
		t.Fatalf("lock holder: %q", line)
	}
	done := false
	release = func() {
		if !done {
			done = true
			stdin.Close()
			cmd.Wait()
		}
	}
	t.Cleanup(release)
	return cmd.Process.Pid, release
}

func TestLockContention(t *testing.T) {
	if testing.Short() {
		t.Skip("runs real processes; go test ./... runs it (skipped under -short)")
	}
	c := newCorpus(t, 10, 50)
	db := filepath.Join(t.TempDir(), "orchstat.duckdb")
	if out, err := runOrchstat("--db", db, "ingest", "-q", c.dir).CombinedOutput(); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}

	t.Run("gives up naming the file and the holder", func(t *testing.T) {
		pid, release := holdLock(t, db)
		defer release()
		for _, args := range [][]string{
			{"--db", db, "--lock-timeout", "300ms", "ingest", c.dir},
			{"--db", db, "--lock-timeout", "300ms", "report", "--no-ingest"},
		} {
			var stderr bytes.Buffer
			cmd := runOrchstat(args...)
			cmd.Stderr = &stderr
			err := cmd.Run()
			if cmd.ProcessState.ExitCode() != 1 {
				t.Fatalf("%v: exit %v, want 1\n%s", args, err, stderr.String())
			}
			msg := stderr.String()
			for _, want := range []string{db, fmt.Sprintf("process %d", pid), "locked by", "--lock-timeout"} {
				if !strings.Contains(msg, want) {
					t.Errorf("%v: message %q does not mention %q", args, msg, want)
				}
			}
		}
	})

	t.Run("waits and proceeds when the holder finishes", func(t *testing.T) {
		_, release := holdLock(t, db)
		c.appendRun(t, "17700000099999", 40)
		cmd := runOrchstat("--db", db, "--lock-timeout", "20s", "ingest", c.dir)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(700 * time.Millisecond)
		release()
		if err := cmd.Wait(); err != nil {
			t.Fatalf("%v\n%s", err, stderr.String())
		}
		if !strings.Contains(stderr.String(), "waiting for") {
			t.Errorf("no waiting notice: %q", stderr.String())
		}
		c.verify(t, db)
	})

	t.Run("concurrent ingests and reports never corrupt or duplicate", func(t *testing.T) {
		c.appendRun(t, "17700000088888", 500)
		var cmds []*exec.Cmd
		for i := range 4 {
			args := []string{"--db", db, "--lock-timeout", "60s", "ingest", "-q", "--batch-rows", "100", "--txn-bytes", "20000", c.dir}
			if i%2 == 1 {
				args = []string{"--db", db, "--lock-timeout", "60s", "report", "-q", "--format", "json", c.dir}
			}
			cmd := runOrchstat(args...)
			cmd.Stdout = io.Discard
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			cmds = append(cmds, cmd)
		}
		for _, cmd := range cmds {
			if err := cmd.Wait(); err != nil {
				t.Fatalf("%v: %v", cmd.Args, err)
			}
		}
		c.verify(t, db)
	})
}

package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestKilledExecTakesItsCommand: kill -9 of `orchstat exec` (of the process
// cron started, or of the one doing the work) takes the command with it.
// Before, the command was orphaned and ran on past --timeout.
func TestKilledExecTakesItsCommand(t *testing.T) {
	if testing.Short() {
		t.Skip("kills real processes; go test ./... runs it (skipped under -short)")
	}
	for _, victim := range []string{"supervisor", "worker"} {
		t.Run(victim, func(t *testing.T) {
			dir := t.TempDir()
			pidfile := filepath.Join(dir, "pid")
			cmd := runOrchstat("exec", "--runs-dir", filepath.Join(dir, "runs"), "--timeout", "10m", "--",
				"sh", "-c", fmt.Sprintf("echo $$ > %s; exec sleep 1000", pidfile))
			cmd.Dir = dir
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			defer func() { cmd.Process.Kill(); cmd.Wait() }()
			var pid int
			deadline := time.Now().Add(60 * time.Second)
			for pid == 0 {
				if b, err := os.ReadFile(pidfile); err == nil && strings.HasSuffix(string(b), "\n") {
					pid, _ = strconv.Atoi(strings.TrimSpace(string(b)))
				}
				if time.Now().After(deadline) {
					t.Fatal("the command never started")
				}
				time.Sleep(5 * time.Millisecond)
			}
			target := cmd.Process.Pid
			if victim == "worker" {
				if target = childOf(cmd.Process.Pid); target == 0 {
					t.Fatal("no worker process")
				}
			}
			syscall.Kill(target, syscall.SIGKILL)
			cmd.Wait()
			deadline = time.Now().Add(30 * time.Second)
			for alive(pid) {
				if time.Now().After(deadline) {
					syscall.Kill(pid, syscall.SIGKILL)
					t.Fatalf("the command (pid %d) outlived orchstat exec", pid)
				}
				time.Sleep(10 * time.Millisecond)
			}
		})
	}
}

// alive reports whether pid runs: a zombie is dead, waiting to be reaped.
func alive(pid int) bool {
	if syscall.Kill(pid, 0) != nil {
		return false
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	return err == nil && !strings.Contains(string(b), ") Z ")
}

// TestCommandsInheritNoSupervisorPipes: the descriptors the supervisor
// hands orchstat's worker are not passed on to the commands it runs; a
// command that kept the report pipe open would keep the supervisor
// waiting for it.
func TestCommandsInheritNoSupervisorPipes(t *testing.T) {
	endToEnd(t, "kills real exec processes")
	t.Parallel()
	dir := t.TempDir()
	cmd := runOrchstat("exec", "--runs-dir", filepath.Join(dir, "runs"), "--",
		"sh", "-c", `for f in 3 4; do if [ -e /proc/$$/fd/$f ]; then echo "fd $f: $(readlink /proc/$$/fd/$f)"; fi; done`)
	cmd.Dir = dir
	out, err := cmd.Output()
	if err != nil {
		t.Fatal(err)
	}
	if len(out) > 0 {
		t.Fatalf("the command inherited orchstat's descriptors:\n%s", out)
	}
}

// TestExecArgumentsThatAreNotUTF8: a command line that is not UTF-8 is
// recorded for cascade detection like any other. Before, DuckDB refused
// it and the invocation went uncounted.
func TestExecArgumentsThatAreNotUTF8(t *testing.T) {
	endToEnd(t, "kills real exec processes")
	t.Parallel()
	dir := t.TempDir()
	cmd := runOrchstat("exec", "--runs-dir", filepath.Join(dir, "runs"), "--", "true", "caf\xe9")
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil || strings.Contains(string(out), "not counted for cascade detection") {
		t.Fatalf("%v: %s", err, out)
	}
}

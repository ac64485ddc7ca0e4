package runner

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/orchstat/orchstat/rules/retry"
	"github.com/orchstat/orchstat/rules/retry/runner/guard"
)

// parentEnv makes this test binary a stand-in for orchstat: it runs the
// script named in it through Run, and is killed by the test.
const parentEnv = "ORCHSTAT_TEST_RUNNER_PARENT"

func TestMain(m *testing.M) {
	if code, ok := guard.Main(); ok {
		os.Exit(code)
	}
	if script := os.Getenv(parentEnv); script != "" {
		os.Unsetenv(parentEnv)
		p, _ := retry.Preset("retry-handler")
		Run(context.Background(), Spec{Op: "test", Argv: []string{"sh", "-c", script}, Dir: ".", Policy: p})
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// What a command started lives and dies with orchstat: kill -9 of the
// process that ran it takes down the command and what the command
// started. Before, the kernel's parent-death signal reached only the
// command (sh), and its sleep lived on under init.
func TestKilledParentTakesTheGroup(t *testing.T) {
	dir := t.TempDir()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	parent := exec.Command(self, "-test.run=^$")
	parent.Dir = dir
	parent.Env = append(os.Environ(), parentEnv+"=sleep 1000 & "+writePID("$!", "grandchild")+"; "+writePID("$$", "child")+"; wait")
	if err := parent.Start(); err != nil {
		t.Fatal(err)
	}
	defer parent.Process.Kill()
	var child, grandchild int
	deadline := time.Now().Add(30 * time.Second)
	for {
		c, ok1 := pidIn(filepath.Join(dir, "child"))
		g, ok2 := pidIn(filepath.Join(dir, "grandchild"))
		if ok1 && ok2 {
			child, grandchild = c, g
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the command never started")
		}
		time.Sleep(5 * time.Millisecond)
	}
	parent.Process.Kill()
	parent.Wait()
	waitDead(t, child)
	waitDead(t, grandchild)
}

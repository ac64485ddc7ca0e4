// Package guard runs a command in a process group of its own that dies
// with orchstat.
//
// The kernel's parent-death signal reaches only the process orchstat
// starts, not what that process starts in turn: with `sh -c 'sleep 96'`,
// a kill -9 of orchstat killed sh and left sleep to init. So the command
// is started by a guard, orchstat's own executable in a small mode of its
// own (Main), which leads a new process group, starts the command in it,
// and reports how it ended. When orchstat dies, the kernel signals the
// guard (SIGUSR1), and the guard kills its whole group, the command and
// all it started. A timeout signals the group as before; the guard
// ignores SIGTERM and SIGINT, so the command decides how it ends, and the
// guard reports that.
//
// A program enables guarding by calling Main first thing in main (and
// exiting with its status when it says so); one that does not (a test
// binary without it) starts commands directly, as before.
package guard

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
)

// env marks a guard process; its value is unused.
const env = "ORCHSTAT_GUARD"

// statusFD is the guard's report pipe: "started", or "error ERRNO", then
// "exit CODE" or "signal N".
const statusFD = 3

var enabled atomic.Bool

// Main runs the guard when this process is one, and reports its exit
// status; otherwise it enables guarding for the commands this process
// starts and returns ok false.
func Main() (code int, ok bool) {
	if os.Getenv(env) == "" {
		enabled.Store(true)
		return 0, false
	}
	return run(os.Args[1:]), true
}

func run(argv []string) int {
	os.Unsetenv(env) // not for the command
	syscall.CloseOnExec(statusFD)
	status := os.NewFile(statusFD, "guard-status")
	parent := os.Getppid()
	// The parent-death signal: orchstat is gone, so is everything it ran.
	deaths := make(chan os.Signal, 1)
	signal.Notify(deaths, syscall.SIGUSR1)
	// Caught, not ignored: an ignored signal stays ignored in the
	// command, which must meet a timeout's SIGTERM as it would alone.
	signal.Notify(make(chan os.Signal, 1), syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP, syscall.SIGQUIT)
	// argv is the command's path, then its arguments, its name first.
	if len(argv) < 2 {
		fmt.Fprintln(status, "error", int(syscall.EINVAL))
		return 126
	}
	cmd := &exec.Cmd{Path: argv[0], Args: argv[1:]}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	if err := cmd.Start(); err != nil {
		errno := syscall.ENOENT
		errors.As(err, &errno)
		fmt.Fprintln(status, "error", int(errno))
		return 127
	}
	fmt.Fprintln(status, "started")
	go func() {
		for range deaths {
			if os.Getppid() != parent {
				syscall.Kill(0, syscall.SIGKILL) // the whole group, this guard too
			}
		}
	}()
	cmd.Wait()
	ws, _ := cmd.ProcessState.Sys().(syscall.WaitStatus)
	if ws.Signaled() {
		fmt.Fprintln(status, "signal", int(ws.Signal()))
		return 128 + int(ws.Signal())
	}
	fmt.Fprintln(status, "exit", ws.ExitStatus())
	return ws.ExitStatus()
}

// Cmd is a command started through a guard, or directly when guarding is
// not enabled.
type Cmd struct {
	*exec.Cmd
	status *bufio.Reader
	closer io.Closer
}

// Start starts cmd in a new process group under a guard. cmd.Path must be
// resolved; cmd.SysProcAttr, if set, must not be shared. A command that
// cannot be started fails here, with the error exec.Cmd.Start would give.
func Start(cmd *exec.Cmd) (*Cmd, error) {
	g := &Cmd{Cmd: cmd}
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Setpgid = true
	self, err := os.Executable()
	if !enabled.Load() || err != nil || len(cmd.ExtraFiles) > 0 {
		return g, cmd.Start()
	}
	r, w, err := os.Pipe()
	if err != nil {
		return g, err
	}
	path, args := cmd.Path, cmd.Args
	cmd.Path, cmd.Args = self, append([]string{self, path}, args...)
	envv := cmd.Env
	if envv == nil {
		envv = os.Environ()
	}
	cmd.Env = append(envv[:len(envv):len(envv)], env+"=1")
	cmd.ExtraFiles = []*os.File{w}
	// The guard learns of orchstat's death, and does the rest.
	cmd.SysProcAttr.Pdeathsig = syscall.SIGUSR1
	err = cmd.Start()
	w.Close()
	cmd.Path, cmd.Args = path, args // as the caller knows them, for its messages
	if err != nil {
		r.Close()
		return g, err
	}
	g.status, g.closer = bufio.NewReader(r), r
	line, _ := g.status.ReadString('\n')
	if word, n, _ := strings.Cut(strings.TrimSpace(line), " "); word == "error" || word == "" {
		cmd.Wait()
		r.Close()
		errno, _ := strconv.Atoi(n)
		if word == "" {
			errno = int(syscall.EIO)
		}
		return nil, &os.PathError{Op: "fork/exec", Path: path, Err: syscall.Errno(errno)}
	}
	return g, nil
}

// ExitStatus is how the command ended, once Wait has returned: its exit
// code, or -1 and the signal that killed it. A guard killed with its
// group (a SIGKILL to the group) reports nothing; its own death is the
// command's.
func (g *Cmd) ExitStatus() (code int, sig syscall.Signal, signaled bool) {
	if g.status != nil {
		line, _ := g.status.ReadString('\n')
		g.closer.Close()
		g.status = nil
		word, v, _ := strings.Cut(strings.TrimSpace(line), " ")
		n, err := strconv.Atoi(v)
		switch {
		case err != nil:
		case word == "signal":
			return -1, syscall.Signal(n), true
		case word == "exit":
			return n, 0, false
		}
	}
	ws, ok := g.ProcessState.Sys().(syscall.WaitStatus)
	switch {
	case !ok:
		return g.ProcessState.ExitCode(), 0, false
	case ws.Signaled():
		return -1, ws.Signal(), true
	}
	return ws.ExitStatus(), 0, false
}

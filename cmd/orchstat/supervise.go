package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/orchstat/orchstat/model/disk"
	"github.com/orchstat/orchstat/query"
)

// orchstat runs as two processes: a small supervisor, and the orchstat
// that does the work as its child. A Go program that crashes (a runtime
// fatal error, a panic on another goroutine, or DuckDB's C++ aborting, as
// it does when the disk fills mid-commit) exits with status 2, which for
// `check` means CRITICAL to cron and for every other command a usage
// error. Only a parent can tell such a death from a deliberate exit, so
// the child tells its parent the status it means to exit with, and the
// parent turns any other death into an honest one (see crashCode).
const (
	supervisedEnv = "ORCHSTAT_SUPERVISED"    // set in the child: the fd it reports on
	noSupervisor  = "ORCHSTAT_NO_SUPERVISOR" // set to 1 to run in one process
	// exitCrash is sysexits' EX_SOFTWARE: orchstat itself failed.
	exitCrash = 70
	// reportFD and crashFD are the child's descriptors for its reports and
	// for the Go runtime's crash output.
	reportFD = 3
	crashFD  = 4
	// withCrashFile is supervisedEnv's value when the child has both.
	withCrashFile = "3,4"
)

// reporter is the child's side: it tells the supervisor what it is doing,
// and the status it chose. Its zero value (no supervisor) does nothing.
type reporter struct{ w *os.File }

// childReporter returns the reporter of a supervised child, after pointing
// the runtime's crash output at the file the supervisor keeps.
func childReporter() reporter {
	if os.Getenv(supervisedEnv) == "" {
		return reporter{}
	}
	fds := os.Getenv(supervisedEnv)
	os.Unsetenv(supervisedEnv) // not for the commands `exec` runs
	// Nor the descriptors: a command that kept the report pipe open would
	// keep the supervisor waiting for it to close.
	syscall.CloseOnExec(reportFD)
	if fds == withCrashFile {
		syscall.CloseOnExec(crashFD)
		f := os.NewFile(crashFD, "crash")
		debug.SetCrashOutput(f, debug.CrashOptions{})
		f.Close() // SetCrashOutput keeps its own copy
	}
	return reporter{w: os.NewFile(reportFD, "supervisor")}
}

func (r reporter) report(key, value string) {
	if r.w != nil {
		fmt.Fprintf(r.w, "%s %s\n", key, strconv.Quote(value))
	}
}

// exit reports the status, then exits with it.
func (r reporter) exit(code int) {
	r.report("exit", strconv.Itoa(code))
	os.Exit(code)
}

// supervise runs orchstat as its own child and returns the status to exit
// with. ok is false when this process should do the work itself: it is the
// child, supervision is turned off, or the child cannot be started.
func supervise(args []string, stderr io.Writer) (code int, ok bool) {
	if os.Getenv(supervisedEnv) != "" || os.Getenv(noSupervisor) == "1" {
		return 0, false
	}
	c, ok := startChild(args)
	if !ok {
		return 0, false
	}
	rep := c.wait()
	code, crashed := outcome(c.cmd.ProcessState, rep)
	if !crashed {
		c.removeCrash()
		if killedOutright(c.cmd.ProcessState) {
			// SIGKILL leaves the worker no word of its own: kill -9, or the
			// kernel's out-of-memory killer.
			what := "orchstat"
			if rep.command != "" {
				what += " " + rep.command
			}
			fmt.Fprintf(stderr, "orchstat: %s was killed (SIGKILL: kill -9, or the kernel's out-of-memory killer); "+
				"nothing committed to the store is lost\n", what)
			if rep.command == "check" {
				code = checkUnknown
			}
		}
		return code, true
	}
	defer c.removeCrash()
	return explainCrash(stderr, c, rep), true
}

// child is the supervised orchstat: the command, the read end of its
// reports' pipe, and the unnamed file its crash output goes to (nil
// without one).
type child struct {
	cmd     *exec.Cmd
	reports *os.File
	crash   *os.File
	sigs    chan os.Signal
}

func (c *child) removeCrash() {
	if c.crash != nil {
		c.crash.Close()
	}
}

// startChild starts orchstat with args as a child that reports to this
// process, and forwards the signals this process gets to it; ok is false
// when it could not be started.
func startChild(args []string) (c *child, ok bool) {
	exe, err := os.Executable()
	if err != nil {
		return nil, false
	}
	r, w, err := os.Pipe()
	if err != nil {
		return nil, false
	}
	c = &child{reports: r}
	// The runtime's crash output also goes to a file that has no name
	// until there is a crash to keep, so a supervisor killed with -9
	// leaves nothing behind. Without one (a full /tmp, say) the report
	// goes to standard error alone.
	c.crash, _ = os.CreateTemp("", "orchstat-crash-*.txt")
	if c.crash != nil {
		os.Remove(c.crash.Name())
	}
	cmd := exec.Command(exe, args...)
	c.cmd = cmd
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.ExtraFiles = []*os.File{w} // fd 3
	fds := strconv.Itoa(reportFD)
	if c.crash != nil {
		cmd.ExtraFiles = append(cmd.ExtraFiles, c.crash) // fd 4
		fds = withCrashFile
	}
	cmd.Env = append(os.Environ(), supervisedEnv+"="+fds)
	cmd.SysProcAttr = childAttr()
	// The child's parent-death signal fires when the thread that started
	// it exits, so this goroutine keeps its thread to the end.
	runtime.LockOSThread()
	c.sigs = make(chan os.Signal, 4)
	// SIGQUIT too: the worker prints its goroutines and dies, which is
	// explained as a crash, rather than this process dying with status 2,
	// which cron reads as CRITICAL.
	signal.Notify(c.sigs, os.Interrupt, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT)
	if err := cmd.Start(); err != nil {
		signal.Stop(c.sigs)
		r.Close()
		w.Close()
		c.removeCrash()
		return nil, false
	}
	w.Close()
	// Signals sent to this process are meant for orchstat; a terminal's
	// Ctrl-C reaches both, and the child takes a repeat in its stride.
	go func() {
		for s := range c.sigs {
			cmd.Process.Signal(s)
		}
	}()
	return c, true
}

// wait waits for the child to end and returns what it reported.
func (c *child) wait() childReport {
	reports := make(chan childReport, 1)
	go func() { reports <- readReports(c.reports) }()
	c.cmd.Wait() // how it ended is read from ProcessState
	signal.Stop(c.sigs)
	close(c.sigs)
	// The child's reports end when its end of the pipe closes, at its
	// exit; should anything it started still hold it, stop reading.
	var rep childReport
	select {
	case rep = <-reports:
	case <-time.After(time.Second):
		c.reports.Close()
		rep = <-reports
	}
	c.reports.Close()
	return rep
}

// explainCrash tells the user that the child crashed, and why when it is
// a full disk, and returns the status to exit with.
func explainCrash(stderr io.Writer, c *child, rep childReport) int {
	if rep.store != "" {
		query.RemoveStaleTemp(rep.store)
	}
	what := "orchstat"
	if rep.command != "" {
		what = "orchstat " + rep.command
	}
	code := exitCrash
	if rep.command == "check" {
		code = checkUnknown
	}
	// A full disk is the usual reason DuckDB dies while writing; say so in
	// the words the file system would use, as a clean failure would.
	if rep.store != "" {
		dir := filepath.Dir(rep.store)
		if free, ok := disk.FreeBytes(dir); ok && free < diskFullBelow {
			fmt.Fprintf(stderr, "orchstat: no space left on device: %s (%s free); the store is as it was before this command\n",
				dir, disk.FormatBytes(free))
			if rep.command != "check" {
				code = exitError
			}
			return code
		}
	}
	saved := ""
	if name := keepCrashReport(c.crash); name != "" {
		saved = " The crash report is in " + name + "."
	}
	fmt.Fprintf(stderr, "orchstat: internal error: %s crashed (%s); this is a bug in orchstat, not in your data.%s "+
		"Nothing committed to the store is lost.\n", what, describeDeath(c.cmd.ProcessState), saved)
	return code
}

// keepCrashReport copies what the runtime wrote to the unnamed crash file
// into a named one, and returns its name ("" if there was nothing).
func keepCrashReport(crash *os.File) string {
	if crash == nil {
		return ""
	}
	if info, err := crash.Stat(); err != nil || info.Size() == 0 {
		return ""
	}
	out, err := os.CreateTemp("", "orchstat-crash-*.txt")
	if err != nil {
		return ""
	}
	defer out.Close()
	if _, err := io.Copy(out, io.NewSectionReader(crash, 0, 1<<30)); err != nil {
		os.Remove(out.Name())
		return ""
	}
	return out.Name()
}

// diskFullBelow is the free space under which a crash is taken for a full
// disk: DuckDB writes in blocks of 256 KiB, and a write needs several.
const diskFullBelow = 4 << 20

type childReport struct {
	exit           int
	exited         bool // the child reported its status
	command, store string
}

func readReports(r io.Reader) childReport {
	var rep childReport
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		key, val, ok := strings.Cut(sc.Text(), " ")
		if !ok {
			continue
		}
		v, err := strconv.Unquote(val)
		if err != nil {
			continue
		}
		switch key {
		case "exit":
			if n, err := strconv.Atoi(v); err == nil {
				rep.exit, rep.exited = n, true
			}
		case "command":
			rep.command = v
		case "store":
			rep.store = v
		}
	}
	return rep
}

// outcome decides the status from how the child ended. A status the child
// reported is its own; death by a signal someone sent is the shell's
// 128+N; anything else is a crash.
func outcome(ps *os.ProcessState, rep childReport) (code int, crashed bool) {
	if ps == nil {
		return exitCrash, true
	}
	ws, _ := ps.Sys().(syscall.WaitStatus)
	switch {
	case ws.Exited() && rep.exited && ws.ExitStatus() == rep.exit:
		return rep.exit, false
	case ws.Signaled():
		switch sig := ws.Signal(); sig {
		case syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGKILL, syscall.SIGPIPE:
			return 128 + int(sig), false
		}
	}
	return exitCrash, true
}

// killedOutright reports whether the worker died by SIGKILL.
func killedOutright(ps *os.ProcessState) bool {
	ws, ok := ps.Sys().(syscall.WaitStatus)
	return ok && ws.Signaled() && ws.Signal() == syscall.SIGKILL
}

func describeDeath(ps *os.ProcessState) string {
	if ps == nil {
		return "it could not be waited for"
	}
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return "signal " + ws.Signal().String()
	}
	return fmt.Sprintf("exit status %d without finishing", ps.ExitCode())
}

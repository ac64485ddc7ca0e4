package runner

import (
	"sync"
	"syscall"
)

var subreaper sync.Once

// procAttr puts the command in its own process group, so a timeout reaches
// its children too, and has the kernel kill it should orchstat die first
// (kill -9 leaves no chance to do it ourselves). The parent-death signal is
// sent when the thread that started the command exits, so attempt keeps
// its goroutine on that thread until the command is gone.
func procAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

// adoptOrphans makes this process the subreaper of what it starts: a
// command's children that outlive it become ours rather than init's. Not
// every init reaps (a container's often does not), and an unreaped zombie
// still counts as a member of its process group, so without this a
// timeout would wait out its whole grace for processes already dead. It
// also keeps the group's id from being reused while orchstat may still
// signal it.
func adoptOrphans() {
	subreaper.Do(func() {
		const prSetChildSubreaper = 36
		syscall.RawSyscall(syscall.SYS_PRCTL, prSetChildSubreaper, 1, 0)
	})
}

// reap collects the exited members of group pgid that are this process's
// children.
func reap(pgid int) {
	for {
		var ws syscall.WaitStatus
		if pid, err := syscall.Wait4(-pgid, &ws, syscall.WNOHANG, nil); pid <= 0 || err != nil {
			return
		}
	}
}

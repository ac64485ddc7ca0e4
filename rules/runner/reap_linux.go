package runner

import (
	"sync"
	"syscall"
)

var subreaper sync.Once

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

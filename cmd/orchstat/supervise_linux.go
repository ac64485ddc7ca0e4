package main

import "syscall"

// childAttr makes the child die with the supervisor: killed with -9, the
// supervisor can forward nothing, and an orphaned orchstat would hold the
// store's lock for no one.
func childAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}

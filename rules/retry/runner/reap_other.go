//go:build !linux

package runner

import "syscall"

// procAttr puts the command in its own process group; only Linux has a
// parent-death signal.
func procAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setpgid: true} }

// adoptOrphans is Linux's child subreaper; elsewhere orphans go to init,
// which reaps them.
func adoptOrphans() {}

func reap(pgid int) {}

//go:build !linux

package runner

// adoptOrphans is Linux's child subreaper; elsewhere orphans go to init,
// which reaps them.
func adoptOrphans() {}

func reap(pgid int) {}

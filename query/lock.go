package query

import (
	"fmt"
	"os"
	"strings"
	"syscall"
)

// flock is orchstat's own lock beside the database. DuckDB locks the file
// too, but orchstat needs to know it is alone before DuckDB opens the file,
// to deal with a crashed writer's WAL (see Open), and it records who holds
// it so a waiting process can say.
type flock struct{ f *os.File }

// tryLock takes the lock, or returns who holds it.
func tryLock(path string) (*flock, string, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		if os.IsPermission(err) {
			// A read-only directory: rely on DuckDB's own lock alone.
			return &flock{}, "", nil
		}
		return nil, "", fmt.Errorf("opening lock file: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		holder, _ := os.ReadFile(path)
		f.Close()
		if err == syscall.EWOULDBLOCK {
			h := strings.TrimSpace(string(holder))
			if h == "" {
				h = "another orchstat process"
			}
			return nil, h, nil
		}
		return nil, "", fmt.Errorf("locking %s: %w", path, err)
	}
	f.Truncate(0)
	fmt.Fprintf(f, "%s\n", describeHolder(fmt.Sprint(os.Getpid()), os.Args[0]))
	return &flock{f: f}, "", nil
}

func (l *flock) unlock() {
	if l == nil || l.f == nil {
		return
	}
	l.f.Truncate(0)
	syscall.Flock(int(l.f.Fd()), syscall.LOCK_UN)
	l.f.Close()
}

// heldElsewhere reports whether another process holds DuckDB's own lock on
// the database file (DuckDB takes an fcntl lock on the whole file). Such a
// process, a DuckDB CLI for instance, does not take orchstat's lock, and
// its write-ahead log is live, not a crashed writer's.
//
// Closing a descriptor drops every fcntl lock this process holds on the
// file, so this must not run while this process has the database open;
// Open calls it only before opening, and only when a log is present.
func heldElsewhere(db string) bool {
	f, err := os.Open(db)
	if err != nil {
		return false
	}
	defer f.Close()
	lk := syscall.Flock_t{Type: syscall.F_WRLCK, Whence: 0, Start: 0, Len: 0}
	if err := syscall.FcntlFlock(f.Fd(), syscall.F_GETLK, &lk); err != nil {
		return false
	}
	return lk.Type != syscall.F_UNLCK
}

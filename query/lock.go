package query

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"time"
)

// flock is orchstat's own lock beside the database. DuckDB locks the file
// too, but orchstat needs to know it is alone before DuckDB opens the file,
// to deal with a crashed writer's WAL (see Open), and it records who holds
// it so a waiting process can say. Writers hold it exclusively; readers
// share it, as DuckDB lets any number of read-only processes open a file
// that no process is writing.
type flock struct {
	f      *os.File
	shared bool
}

// tryLock takes the lock, or returns who holds it.
func tryLock(path string, shared bool) (*flock, string, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		if os.IsPermission(err) {
			// A read-only directory: rely on DuckDB's own lock alone.
			return &flock{}, "", nil
		}
		return nil, "", fmt.Errorf("opening lock file: %w", err)
	}
	how := syscall.LOCK_EX
	if shared {
		how = syscall.LOCK_SH
	}
	if err := syscall.Flock(int(f.Fd()), how|syscall.LOCK_NB); err != nil {
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
	if !shared {
		f.Truncate(0)
		fmt.Fprintf(f, "%s\n", describeHolder(fmt.Sprint(os.Getpid()), os.Args[0]))
	}
	return &flock{f: f, shared: shared}, "", nil
}

func (l *flock) unlock() {
	if l == nil || l.f == nil {
		return
	}
	if !l.shared {
		l.f.Truncate(0) // only an exclusive holder wrote its name
	}
	syscall.Flock(int(l.f.Fd()), syscall.LOCK_UN)
	l.f.Close()
}

// ticket is a process's place in the line for the store. Without a line,
// whoever polled the lock first after it was released got it, so a
// process that waited longest could lose to every newcomer, and two
// processes in a loop starved a third past its --lock-timeout. Each
// process that opens the store first takes a ticket, a file named by the
// time it arrived in <db>.queue, and holds a lock on the file until it
// closes the store; it may take the store's lock only when no live ticket
// ahead of it conflicts with it (readers do not conflict with readers).
// A ticket whose file nobody holds locked belonged to a process that died,
// and is removed by whoever finds it.
type ticket struct {
	f      *os.File
	dir    string
	name   string
	shared bool
}

// enqueue takes a ticket. Where the queue cannot be written (a read-only
// directory), it returns nil and the store's lock alone decides.
func enqueue(db string, shared bool, now time.Time) (*ticket, error) {
	dir := db + ".queue"
	var f *os.File
	// The last process to leave removes the directory; one arriving just
	// then finds it gone, and makes it again.
	for range 3 {
		if err := os.Mkdir(dir, 0o755); err != nil && !os.IsExist(err) {
			if os.IsPermission(err) {
				return nil, nil
			}
			return nil, fmt.Errorf("joining the queue for %s: %w", db, err)
		}
		// The ticket is locked before it takes its place, so nobody can
		// see it unlocked and take it for a dead process's.
		var err error
		if f, err = os.CreateTemp(dir, ".new-"); err == nil {
			break
		}
		if os.IsPermission(err) {
			return nil, nil
		}
		if !os.IsNotExist(err) {
			return nil, fmt.Errorf("joining the queue for %s: %w", db, err)
		}
	}
	if f == nil {
		return nil, fmt.Errorf("joining the queue for %s: its directory keeps disappearing", db)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		os.Remove(f.Name())
		return nil, fmt.Errorf("joining the queue for %s: %w", db, err)
	}
	fmt.Fprintf(f, "%s\n", describeHolder(fmt.Sprint(os.Getpid()), os.Args[0]))
	mode := "w"
	if shared {
		mode = "r"
	}
	name := fmt.Sprintf("%020d-%010d-%s", now.UnixNano(), os.Getpid(), mode)
	if err := os.Rename(f.Name(), filepath.Join(dir, name)); err != nil {
		// The directory was removed between the two calls: try afresh.
		if os.IsNotExist(err) {
			f.Close()
			return enqueue(db, shared, now)
		}
		f.Close()
		os.Remove(f.Name())
		return nil, fmt.Errorf("joining the queue for %s: %w", db, err)
	}
	return &ticket{f: f, dir: dir, name: name, shared: shared}, nil
}

// ahead names the first live ticket ahead of t that t must wait for.
func (t *ticket) ahead() (holder string, blocked bool) {
	if t == nil {
		return "", false
	}
	es, err := os.ReadDir(t.dir)
	if err != nil {
		return "", false
	}
	names := make([]string, 0, len(es))
	for _, e := range es {
		n := e.Name()
		if strings.HasPrefix(n, ".new-") {
			// A process that died while taking its ticket; one taking it
			// now holds it locked within microseconds.
			if info, err := e.Info(); err == nil && time.Since(info.ModTime()) > time.Minute {
				holds(filepath.Join(t.dir, n))
			}
			continue
		}
		if n < t.name {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	for _, n := range names {
		desc, live := holds(filepath.Join(t.dir, n))
		if !live {
			continue
		}
		if t.shared && strings.HasSuffix(n, "-r") {
			continue // readers share the store
		}
		if desc == "" {
			desc = "another orchstat process"
		}
		return desc + " (ahead in the queue)", true
	}
	return "", false
}

// holds reports whether a live process holds the ticket at path, with the
// description it wrote; a dead process's ticket is removed.
func holds(path string) (string, bool) {
	f, err := os.Open(path)
	if err != nil {
		return "", false // gone already
	}
	defer f.Close()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err == nil {
		os.Remove(path)
		return "", false
	}
	b := make([]byte, 512)
	n, _ := f.Read(b)
	return strings.TrimSpace(string(b[:n])), true
}

// leave gives up the ticket.
func (t *ticket) leave() {
	if t == nil {
		return
	}
	os.Remove(filepath.Join(t.dir, t.name))
	t.f.Close()
	os.Remove(t.dir) // only if no one else is in line: the store stays one file
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

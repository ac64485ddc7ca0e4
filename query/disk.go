package query

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// NoSpaceError reports that the store's file system is too full to write.
// DuckDB 1.1.2 does not always survive running out of space mid-commit (it
// has aborted the process), so writers check before they write.
type NoSpaceError struct {
	Dir        string
	Free, Need int64 // bytes; Need is 0 when the file system itself said so
}

func (e *NoSpaceError) Error() string {
	if e.Need == 0 {
		return "no space left on device: " + e.Dir
	}
	return fmt.Sprintf("no space left on device: %s (%s free; writing needs about %s; the store is unchanged)",
		e.Dir, FormatBytes(e.Free), FormatBytes(e.Need))
}

// EnsureSpace fails with a NoSpaceError unless the file system holding the
// store has need bytes free for an unprivileged writer. Where free space
// cannot be read, it does not fail.
func (s *Store) EnsureSpace(need int64) error {
	dir := filepath.Dir(s.Path)
	free, ok := FreeBytes(dir)
	if ok && free < need {
		return &NoSpaceError{Dir: dir, Free: free, Need: need}
	}
	return nil
}

// FreeBytes is the space an unprivileged process may still write in the
// file system holding dir.
func FreeBytes(dir string) (int64, bool) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return 0, false
	}
	return int64(st.Bavail) * int64(st.Bsize), true
}

// IsNoSpace recognises running out of space, whether the error came from
// Go (ENOSPC) or from DuckDB's message.
func IsNoSpace(err error) bool {
	var ns *NoSpaceError
	return err != nil && (errors.As(err, &ns) || errors.Is(err, syscall.ENOSPC) ||
		strings.Contains(strings.ToLower(err.Error()), "no space left on device"))
}

// RemoveStaleTemp deletes the spill files DuckDB left in its temporary
// directory (<db>.tmp) when a process using the store died without
// cleaning up. It takes orchstat's lock without waiting, so it never
// touches the files of a live process.
func RemoveStaleTemp(db string) {
	lk, _, err := tryLock(db+".lock", false)
	if err != nil || lk == nil {
		return
	}
	defer lk.unlock()
	if heldElsewhere(db) {
		return
	}
	removeTemp(db)
}

func removeTemp(db string) {
	dir := db + ".tmp"
	es, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, e := range es {
		if strings.HasPrefix(e.Name(), "duckdb_temp_") {
			os.Remove(filepath.Join(dir, e.Name()))
		}
	}
	os.Remove(dir) // only if empty: it may hold someone else's files
}

// FormatBytes prints a size the way people read it: 1.5 MiB.
func FormatBytes(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}

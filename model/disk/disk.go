// Package disk says how full the file system holding a store is, in the
// words every stage reports it with: ingest and the store check before
// they write, and the supervisor names a full disk as such.
package disk

import (
	"errors"
	"fmt"
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

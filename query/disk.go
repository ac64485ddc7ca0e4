package query

import (
	"os"
	"path/filepath"
	"strings"

	"github.com/orchstat/orchstat/model/disk"
)

// EnsureSpace fails with a NoSpaceError unless the file system holding the
// store has need bytes free for an unprivileged writer. Where free space
// cannot be read, it does not fail.
func (s *Store) EnsureSpace(need int64) error {
	dir := filepath.Dir(s.Path)
	free, ok := disk.FreeBytes(dir)
	if ok && free < need {
		return &disk.NoSpaceError{Dir: dir, Free: free, Need: need}
	}
	return nil
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

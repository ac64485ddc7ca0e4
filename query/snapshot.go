package query

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/orchstat/orchstat/model/disk"
	"golang.org/x/sys/unix"
)

// maxCopiedSnapshot is the largest store a snapshot copies byte by byte;
// a larger one is read in place unless the file system can clone it.
const maxCopiedSnapshot = 1 << 30

// snapshot is a private copy of the store that one reader queries, so a
// long query holds no lock: DuckDB lets no process write a file while
// another reads it, and a copy is the only way a writer need not wait.
type snapshot struct {
	path string
	f    *os.File // held locked while in use; see removeStaleSnapshots
}

// takeSnapshot copies db, which the caller holds locked (shared or not),
// beside it. It returns nil when a copy would cost too much (the store is
// large and the file system cannot clone), when there is no room, or
// when a log beside the store would be left out of the copy.
func takeSnapshot(db string) *snapshot {
	if _, err := os.Stat(db + ".wal"); err == nil {
		return nil
	}
	src, err := os.Open(db)
	if err != nil {
		return nil
	}
	defer src.Close()
	info, err := src.Stat()
	if err != nil {
		return nil
	}
	dir := db + ".snapshots"
	if err := os.Mkdir(dir, 0o755); err != nil && !os.IsExist(err) {
		return nil
	}
	removeStaleSnapshots(dir)
	dst, err := os.CreateTemp(dir, "*.duckdb")
	if err != nil {
		return nil
	}
	s := &snapshot{path: dst.Name(), f: dst}
	if syscall.Flock(int(dst.Fd()), syscall.LOCK_EX|syscall.LOCK_NB) != nil {
		s.remove()
		return nil
	}
	// A clone shares the blocks, so it is instant and takes no room.
	if unix.IoctlFileClone(int(dst.Fd()), int(src.Fd())) == nil {
		return s
	}
	free, ok := disk.FreeBytes(dir)
	if info.Size() > maxCopiedSnapshot || !ok || free < info.Size()+snapshotMargin {
		s.remove()
		return nil
	}
	if _, err := io.Copy(dst, src); err != nil { // copy_file_range on Linux
		s.remove()
		return nil
	}
	return s
}

// snapshotMargin is the room a snapshot leaves for the store's writers.
const snapshotMargin = 64 << 20

func (s *snapshot) remove() {
	if s == nil {
		return
	}
	os.Remove(s.path)
	os.Remove(s.path + ".wal")
	s.f.Close()
	os.Remove(filepath.Dir(s.path)) // only once empty
}

// removeStaleSnapshots deletes the copies of readers that died: their
// files are no longer locked.
func removeStaleSnapshots(dir string) {
	es, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, e := range es {
		if !strings.HasSuffix(e.Name(), ".duckdb") {
			continue
		}
		p := filepath.Join(dir, e.Name())
		f, err := os.Open(p)
		if err != nil {
			continue
		}
		if syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB) == nil {
			os.Remove(p)
			os.Remove(p + ".wal")
		}
		f.Close()
	}
}

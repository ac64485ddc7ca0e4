package ingest

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/orchstat/orchstat/ingest/runfile"
)

// Source kinds, as stored in files.kind.
const (
	KindTrace        = "trace"
	KindSummary      = "summary"
	KindVerification = "verification"
	KindStdin        = "stdin"
)

type source struct {
	path   string // absolute; "<stdin:NAME>" for standard input
	kind   string
	runDir string // the run directory's name, the fallback run id for run files
}

// listing is what discovery learned about one run directory.
type listing struct {
	dir   string
	mtime time.Time
	// fresh is set when the directory was read and its mtime is old enough
	// to trust next time (see trustable).
	fresh bool
}

// known is what earlier ingests recorded, so discovery can skip reading
// run directories that have not changed.
type known struct {
	dirs  map[string]time.Time // run directory -> mtime when last listed
	files map[string][]source  // run directory -> its files
}

// trustable reports whether a directory's mtime can stand for its listing:
// on filesystems with coarse timestamps a file created in the same tick as
// the listing would not move the mtime, so recent mtimes are not recorded
// (git's "racy index" rule).
func trustable(mtime, now time.Time) bool { return now.Sub(mtime) > 2*time.Second }

// discover expands the user's PATH arguments into sources, sorted by path.
// Paths that cannot be read are returned as errors and do not stop the rest.
func discover(paths []string, k known, now time.Time) ([]source, []FileError, []listing) {
	var out []source
	var errs []FileError
	var lists []listing
	seen := map[string]bool{}
	add := func(s source) {
		if !seen[s.path] {
			seen[s.path] = true
			out = append(out, s)
		}
	}
	for _, p := range paths {
		if p == "-" {
			continue
		}
		abs, err := filepath.Abs(p)
		if err == nil {
			// Resolve symlinks so one file reached two ways is one file.
			if r, rerr := filepath.EvalSymlinks(abs); rerr == nil {
				abs = r
			}
		}
		fi, err := os.Stat(abs)
		if err != nil {
			errs = append(errs, FileError{Path: p, Err: describeOpenErr(err)})
			continue
		}
		if !fi.IsDir() {
			if s, ok := classify(abs); ok {
				add(s)
			} else {
				// A file named explicitly is read as a trace whatever its name.
				add(source{path: abs, kind: KindTrace, runDir: filepath.Base(filepath.Dir(abs))})
			}
			continue
		}
		if isRunDir(abs) {
			l, e := addRunDir(abs, k, now, add)
			errs, lists = append(errs, e...), append(lists, l)
			continue
		}
		dir := abs
		// Accept the .orchestrator directory (or a repo root) for convenience.
		for _, sub := range []string{"runs", filepath.Join(".orchestrator", "runs")} {
			if st, err := os.Stat(filepath.Join(abs, sub)); err == nil && st.IsDir() {
				dir = filepath.Join(abs, sub)
				break
			}
		}
		entries, err := os.ReadDir(dir)
		if err != nil {
			errs = append(errs, FileError{Path: dir, Err: describeOpenErr(err)})
			continue
		}
		var runDirs []string
		for _, e := range entries {
			if e.IsDir() || e.Type()&fs.ModeSymlink != 0 {
				runDirs = append(runDirs, filepath.Join(dir, e.Name()))
			}
		}
		l, e := addRunDirs(runDirs, k, now, add)
		errs, lists = append(errs, e...), append(lists, l...)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].path < out[j].path })
	return out, errs, lists
}

func isRunDir(dir string) bool {
	for _, name := range []string{"trace.jsonl", "summary.json", "manifest.json"} {
		if _, err := os.Stat(filepath.Join(dir, name)); err == nil {
			return true
		}
	}
	return false
}

// addRunDirs lists many run directories at once. Listing is all system
// calls, so a few goroutines keep the no-change path short even on one core.
func addRunDirs(dirs []string, k known, now time.Time, add func(source)) ([]listing, []FileError) {
	type result struct {
		srcs []source
		errs []FileError
		l    listing
	}
	out := make([]result, len(dirs))
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(8, len(dirs)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= len(dirs) {
					return
				}
				r := &out[i]
				r.l, r.errs = addRunDir(dirs[i], k, now, func(s source) { r.srcs = append(r.srcs, s) })
			}
		}()
	}
	wg.Wait()
	var errs []FileError
	lists := make([]listing, 0, len(out))
	for _, r := range out {
		for _, s := range r.srcs {
			add(s)
		}
		errs = append(errs, r.errs...)
		lists = append(lists, r.l)
	}
	return lists, errs
}

// addRunDir adds a run directory's files. When the directory's mtime is
// the one recorded last time, no file was added, removed or renamed in it
// since, so the recorded file list is used instead of reading it.
func addRunDir(dir string, k known, now time.Time, add func(source)) (listing, []FileError) {
	l := listing{dir: dir}
	fi, err := os.Stat(dir)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return l, nil // a dangling symlink or a run removed while we looked
		}
		return l, []FileError{{Path: dir, Err: describeOpenErr(err)}}
	}
	l.mtime = fi.ModTime().UTC().Truncate(time.Microsecond)
	if m, ok := k.dirs[dir]; ok && m.Equal(l.mtime) {
		for _, s := range k.files[dir] {
			add(s)
		}
		return l, nil
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return l, nil
		}
		return l, []FileError{{Path: dir, Err: describeOpenErr(err)}}
	}
	for _, e := range entries {
		if e.IsDir() {
			continue
		}
		if s, ok := classify(filepath.Join(dir, e.Name())); ok {
			add(s)
		}
	}
	l.fresh = trustable(l.mtime, now)
	return l, nil
}

func classify(path string) (source, bool) {
	base := filepath.Base(path)
	s := source{path: path, runDir: filepath.Base(filepath.Dir(path))}
	switch {
	case base == "trace.jsonl":
		s.kind = KindTrace
	case base == "summary.json":
		s.kind = KindSummary
	case runfile.IsVerification(base):
		s.kind = KindVerification
	default:
		return s, false
	}
	return s, true
}

func describeOpenErr(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		switch {
		case errors.Is(err, fs.ErrNotExist):
			return errors.New("no such file or directory")
		case errors.Is(err, fs.ErrPermission):
			return errors.New("permission denied")
		}
		return pe.Err
	}
	return err
}

// FileError is a file or path that could not be read.
type FileError struct {
	Path string
	Err  error
}

func (e FileError) Error() string { return fmt.Sprintf("%s: %v", e.Path, e.Err) }

func stdinPath(name string) string {
	return "<stdin:" + strings.TrimSpace(name) + ">"
}

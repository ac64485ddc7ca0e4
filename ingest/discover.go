package ingest

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

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

// discover expands the user's PATH arguments into sources, sorted by path.
// Paths that cannot be read are returned as errors and do not stop the rest.
func discover(paths []string) ([]source, []FileError) {
	var out []source
	var errs []FileError
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
			errs = append(errs, addRunDir(abs, add)...)
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
		for _, e := range entries {
			if e.IsDir() || e.Type()&fs.ModeSymlink != 0 {
				errs = append(errs, addRunDir(filepath.Join(dir, e.Name()), add)...)
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].path < out[j].path })
	return out, errs
}

func isRunDir(dir string) bool {
	for _, name := range []string{"trace.jsonl", "summary.json", "manifest.json"} {
		if _, err := os.Stat(filepath.Join(dir, name)); err == nil {
			return true
		}
	}
	return false
}

func addRunDir(dir string, add func(source)) []FileError {
	entries, err := os.ReadDir(dir)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil // a dangling symlink or a run removed while we looked
		}
		return []FileError{{Path: dir, Err: describeOpenErr(err)}}
	}
	for _, e := range entries {
		if e.IsDir() {
			continue
		}
		if s, ok := classify(filepath.Join(dir, e.Name())); ok {
			add(s)
		}
	}
	return nil
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

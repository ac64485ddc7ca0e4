package ingest

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/orchstat/orchstat/ingest/runfile"
	"github.com/orchstat/orchstat/model/rows"
	"golang.org/x/sys/unix"
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
	// sealed is set when the directory's run had ended when it was read
	// whole and its mtime has not changed since: its files were not
	// looked at (see sealable). files is how many it holds.
	sealed bool
	files  int
	// ids are the files a listing being sealed covers (sealable).
	ids []int32
}

// known is what earlier ingests recorded, so discovery can skip reading
// run directories that have not changed.
type known struct {
	dirs   map[string]time.Time // run directory -> mtime when last listed
	files  map[string][]source  // run directory -> its files
	sealed map[string]rows.Sealed
	// full is set on a full pass, which looks into sealed directories
	// too; sealed is then what was sealed before it.
	full bool
}

// settled reports whether a cron pass leaves a run directory alone, not
// even stat'ing it: it was sealed, and it had been left alone for
// settleAge when sealed. Only a full pass looks at it again (see
// settleAge).
func (k known) settled(dir string, now time.Time) bool {
	if k.full {
		return false
	}
	s, ok := k.sealed[dir]
	return ok && now.Sub(s.MTime) >= settleAge
}

// trustable reports whether a directory's mtime can stand for its listing:
// on filesystems with coarse timestamps a file created in the same tick as
// the listing would not move the mtime, so recent mtimes are not recorded
// (git's "racy index" rule).
func trustable(mtime, now time.Time) bool { return now.Sub(mtime) > 2*time.Second }

// discoverAll expands the user's PATH arguments into sources. Paths that
// cannot be read are returned as errors and do not stop the rest. Run
// directories are stat'ed once getKnown has loaded what earlier ingests
// recorded, but for settled ones (known.settled), which a cron pass
// leaves alone.
//
// format is one of Formats ("" is auto). In auto, a directory is read as
// orchestrator runs; claudestrator's and orchestr8's files are looked for
// where those systems keep them; and a directory holding no orchestrator
// records is walked for any system's records. Naming a record system
// walks the directories for that system's records only.
//
// Found also holds the files the walks met that no format reads.
func discoverAll(paths []string, format string, getKnown func() (known, error), now time.Time) (*Found, error) {
	if format == "auto" {
		format = ""
	}
	format = formatSystem(format)
	d := &discovery{format: format, seen: map[string]bool{}}
	for _, p := range paths {
		if p != "-" {
			d.resolve(p)
		}
	}
	k, err := getKnown()
	if err != nil {
		return nil, err
	}
	settled := func(dir string) bool { return k.settled(dir, now) }
	lists := d.list(statDirs(d.dirs, settled), k, now)
	d.noteSealed(lists)
	// Runs the walks meet below a parent folder are listed like the
	// others, so an unchanged one costs a stat here too.
	if deeper := d.walkOthers(); len(deeper) > 0 {
		l, e := addRunDirs(deeper, statDirs(deeper, settled), k, now, d.add)
		d.errs, lists = append(d.errs, e...), append(lists, l...)
		d.noteSealed(l)
	}
	// No global sort: run directories are listed in name order and each
	// directory's files are in name order, which is enough for new files to
	// get ids deterministically, and sorting 100,000 paths showed up in the
	// cost of an ingest with nothing new.
	return &Found{sources: d.out, errs: d.errs, lists: lists, skipped: d.skipped}, nil
}

// discovery is discover's state: what it found so far, and what it has
// yet to list.
type discovery struct {
	format string
	out    []source
	errs   []FileError
	seen   map[string]bool // paths in out
	// items are the arguments in order, each a file or run directories;
	// dirs are all those run directories, to stat at once.
	items []discoveryItem
	dirs  []string
	// walkRoots are directories read as runs in auto, walked for other
	// systems' records if they hold no orchestrator records (walkOthers).
	walkRoots []string
	// skipped are the files the walks met that no format reads.
	skipped []Skipped
	// sealed are the run directories not looked into (listing.sealed).
	sealed []string
}

// holdsSealed reports whether a sealed run directory lies under root.
func (d *discovery) holdsSealed(root string) bool {
	prefix := root + string(filepath.Separator)
	for _, dir := range d.sealed {
		if strings.HasPrefix(dir, prefix) {
			return true
		}
	}
	return false
}

// noteSealed records the sealed listings among lists.
func (d *discovery) noteSealed(lists []listing) {
	for _, l := range lists {
		if l.sealed {
			d.sealed = append(d.sealed, l.dir)
		}
	}
}

// discoveryItem is one argument resolved: a file, or run directories.
type discoveryItem struct {
	file source
	dirs []string
}

// allow reports whether the format asked for takes a kind of source.
func (d *discovery) allow(kind string) bool { return d.format == "" || systemOf(kind) == d.format }

// add adds a source the format takes, once whichever way it was reached.
func (d *discovery) add(s source) {
	if !d.seen[s.path] && d.allow(s.kind) {
		d.seen[s.path] = true
		d.out = append(d.out, s)
	}
}

func (d *discovery) fail(path string, err error) {
	d.errs = append(d.errs, FileError{Path: path, Err: err})
}

// resolve turns one PATH argument into what it names: a file, kept in
// the arguments' order; a directory of another system's records, walked
// now; or run directories, collected to be stat'ed with the others.
func (d *discovery) resolve(p string) {
	abs, err := filepath.Abs(p)
	if err == nil {
		// Resolve symlinks so one file reached two ways is one file.
		if r, rerr := filepath.EvalSymlinks(abs); rerr == nil {
			abs = r
		}
	}
	fi, err := os.Stat(abs)
	if err != nil {
		d.fail(p, describeOpenErr(err))
		return
	}
	if !fi.IsDir() {
		s, ok := classifyFile(abs, d.format)
		if !ok && d.format == "" {
			// Named alone, as a folder's file would be: not recognised,
			// saying what its first bytes are.
			_, why := namedContentKind(abs)
			d.fail(p, fmt.Errorf("not recognised: no format reads it: it is %s", why))
			return
		}
		if !ok {
			d.fail(p, fmt.Errorf("is not a %s record (its name and content say neither)", d.format))
			return
		}
		d.items = append(d.items, discoveryItem{file: s})
		return
	}
	if d.format != "" && d.format != "orchestrator" {
		probeRecords(abs, d.allow, d.add)
		w := &walk{}
		if err := walkRecords(abs, d.allow, d.add, w); err != nil {
			d.fail(p, describeOpenErr(err))
		}
		d.skipped = append(d.skipped, w.skipped...)
		return
	}
	if d.format == "" {
		probeRecords(abs, d.allow, d.add)
	}
	d.walkRoots = append(d.walkRoots, abs)
	if isRunDir(abs) {
		d.items = append(d.items, discoveryItem{dirs: []string{abs}})
		d.dirs = append(d.dirs, abs)
		return
	}
	dir := runsDir(abs)
	runDirs, err := listRunDirs(dir)
	if err != nil {
		d.fail(dir, describeOpenErr(err))
		return
	}
	d.items = append(d.items, discoveryItem{dirs: runDirs})
	d.dirs = append(d.dirs, runDirs...)
}

// runsDir is the runs directory a directory argument names: its runs
// folder or its .orchestrator's, accepted for convenience, else itself.
func runsDir(abs string) string {
	for _, sub := range []string{"runs", filepath.Join(".orchestrator", "runs")} {
		if st, err := os.Stat(filepath.Join(abs, sub)); err == nil && st.IsDir() {
			return filepath.Join(abs, sub)
		}
	}
	return abs
}

// listRunDirs lists a runs directory's run directories, in name order,
// with symbolic links resolved.
func listRunDirs(dir string) ([]string, error) {
	entries, err := readDirUnsorted(dir)
	if err != nil {
		return nil, err
	}
	slices.SortFunc(entries, func(a, b dirEntry) int { return strings.Compare(a.name, b.name) })
	// dir is absolute and clean: it ends in a separator only as the root.
	prefix := strings.TrimSuffix(dir, string(filepath.Separator)) + string(filepath.Separator)
	runDirs := make([]string, 0, len(entries))
	for _, e := range entries {
		if strings.HasPrefix(e.name, ".") {
			// Hidden: not a run, such as the .orchestrator folder a
			// store is kept in when a runs folder has none above it.
			continue
		}
		d := prefix + e.name
		if e.typ&fs.ModeSymlink != 0 {
			// Resolved, so a run linked from elsewhere is one run
			// whichever way it is reached.
			r, err := filepath.EvalSymlinks(d)
			if err != nil {
				continue // dangling
			}
			if st, err := os.Stat(r); err != nil || !st.IsDir() {
				continue
			}
			d = r
		} else if !e.typ.IsDir() {
			continue
		}
		runDirs = append(runDirs, d)
	}
	return runDirs, nil
}

// dirEntry is a directory entry's name and type.
type dirEntry struct {
	name string
	typ  fs.FileMode
}

// list adds the arguments' files and their run directories' files, in
// the arguments' order. A run directory whose mtime is as recorded is not
// read again (addRunDir).
func (d *discovery) list(stats []dirStat, k known, now time.Time) []listing {
	var lists []listing
	for _, it := range d.items {
		if it.file.path != "" {
			d.add(it.file)
			continue
		}
		// The items' directories are d.dirs, in order: stats is theirs.
		l, e := addRunDirs(it.dirs, stats[:len(it.dirs)], k, now, d.add)
		stats = stats[len(it.dirs):]
		d.errs, lists = append(d.errs, e...), append(lists, l...)
	}
	return lists
}

// walkOthers walks each directory read as runs that held no orchestrator
// records: it may hold runs in folders further down, and, in auto,
// another system's records anywhere below it. It returns the run
// directories it met that were not listed yet.
func (d *discovery) walkOthers() []string {
	// A runs folder's every subfolder is listed as a run; those that held
	// an orchestrator file are not walked into again.
	ran := make(map[string]bool, len(d.sealed))
	for _, s := range d.out {
		if systemOf(s.kind) == "orchestrator" {
			ran[filepath.Dir(s.path)] = true
		}
	}
	for _, dir := range d.sealed {
		ran[dir] = true
	}
	var deeper []string
	var listed map[string]bool // made when a walk needs it
	for _, root := range d.walkRoots {
		if ran[root] || (holdsTraces(d.out, root) || d.holdsSealed(root)) && !d.mixed(root, ran) {
			continue
		}
		if listed == nil {
			listed = make(map[string]bool, len(d.dirs))
			for _, dir := range d.dirs {
				listed[dir] = true
			}
		}
		w := &walk{runs: true, listed: ran}
		if err := walkRecords(root, d.allow, d.add, w); err != nil {
			d.fail(root, describeOpenErr(err))
		}
		for _, dir := range w.runDirs {
			if !listed[dir] {
				listed[dir] = true
				deeper = append(deeper, dir)
			}
		}
		d.skipped = append(d.skipped, w.skipped...)
	}
	return deeper
}

// mixed reports whether root, a folder read as a runs folder itself, has
// subfolders that are no runs beside those that are: a parent folder of
// runs and other things, walked for what lies further down. A repository
// or .orchestrator folder whose runs folder holds runs is not walked.
func (d *discovery) mixed(root string, ran map[string]bool) bool {
	if runsDir(root) != root {
		return false
	}
	for _, dir := range d.dirs {
		if !ran[dir] && filepath.Dir(dir) == root {
			return true
		}
	}
	return false
}

type dirStat struct {
	mtime time.Time
	err   error
	// settled is set when the directory was not stat'ed (known.settled).
	settled bool
}

// statDirs stats many directories at once, in dirs' order, but for those
// settled says to leave alone; it is all system calls, so a few goroutines
// help even on one core.
func statDirs(dirs []string, settled func(dir string) bool) []dirStat {
	out := make([]dirStat, len(dirs))
	// Most are entries of one runs folder: stat'ed by name relative to it,
	// the kernel looks up one name, not the whole path, which was a third
	// of a stat at 30,000 runs.
	parent, fd := "", -1
	if len(dirs) > 0 {
		parent = filepath.Dir(dirs[0])
		if f, err := unix.Open(parent, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0); err == nil {
			fd = f
			defer unix.Close(fd)
		}
	}
	parallel(len(dirs), func(i int) {
		d := dirs[i]
		if settled(d) {
			out[i].settled = true
			return
		}
		if name, ok := strings.CutPrefix(d, parent); ok && fd >= 0 && len(name) > 1 && name[0] == filepath.Separator && !strings.ContainsRune(name[1:], filepath.Separator) {
			var st unix.Stat_t
			if err := unix.Fstatat(fd, name[1:], &st, 0); err != nil {
				out[i].err = &fs.PathError{Op: "stat", Path: d, Err: err}
				return
			}
			out[i].mtime = time.Unix(st.Mtim.Unix()).UTC().Truncate(time.Microsecond)
			return
		}
		fi, err := os.Stat(d)
		if err != nil {
			out[i].err = err
			return
		}
		out[i].mtime = fi.ModTime().UTC().Truncate(time.Microsecond)
	})
	return out
}

// parallel calls f(0..n-1) on up to 8 goroutines.
func parallel(n int, f func(i int)) {
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(8, n) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= n {
					return
				}
				f(i)
			}
		}()
	}
	wg.Wait()
}

func isRunDir(dir string) bool {
	for _, name := range []string{"trace.jsonl", "summary.json", "manifest.json"} {
		if _, err := os.Stat(filepath.Join(dir, name)); err == nil {
			return true
		}
	}
	return false
}

// addRunDirs lists many run directories at once.
func addRunDirs(dirs []string, stats []dirStat, k known, now time.Time, add func(source)) ([]listing, []FileError) {
	type result struct {
		srcs []source
		errs []FileError
		l    listing
	}
	out := make([]result, len(dirs))
	parallel(len(dirs), func(i int) {
		r := &out[i]
		r.l, r.errs = addRunDir(dirs[i], stats[i], k, now, func(s source) { r.srcs = append(r.srcs, s) })
	})
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
func addRunDir(dir string, st dirStat, k known, now time.Time, add func(source)) (listing, []FileError) {
	l := listing{dir: dir}
	if err := st.err; err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return l, nil // a dangling symlink or a run removed while we looked
		}
		return l, []FileError{{Path: dir, Err: describeOpenErr(err)}}
	}
	if st.settled {
		s := k.sealed[dir]
		l.mtime, l.sealed, l.files = s.MTime, true, s.Files
		return l, nil
	}
	l.mtime = st.mtime
	if s, ok := k.sealed[dir]; ok && !k.full && s.MTime.Equal(l.mtime) {
		l.sealed, l.files = true, s.Files
		return l, nil
	}
	if m, ok := k.dirs[dir]; ok && m.Equal(l.mtime) {
		// Known files already have ids, so their order does not matter.
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

// holdsTraces reports whether any orchestrator source lies under root.
func holdsTraces(srcs []source, root string) bool {
	prefix := root + string(filepath.Separator)
	for _, s := range srcs {
		if systemOf(s.kind) == "orchestrator" && strings.HasPrefix(s.path, prefix) {
			return true
		}
	}
	return false
}

// classifyFile names the kind of a file the user named. In auto a file
// whose name no format claims is read as a trace, whatever its name.
func classifyFile(path, format string) (source, bool) {
	s := source{path: path, runDir: filepath.Base(filepath.Dir(path))}
	switch format {
	case "", "orchestrator":
		if c, ok := classify(path); ok {
			return c, true
		}
		if k, ok := recordKind(path); ok && format == "" {
			s.kind = k
			return s, true
		}
		// A file whose name says nothing is read as what its first
		// lines say, as a folder's files are: a README or a go.sum named
		// alone is not recognised, not quarantined line by line as a
		// trace. --input-format orchestrator reads it as a trace all the
		// same, and so does a file that cannot be looked at first (a
		// pipe: it is refused when read, saying why).
		k, why := namedContentKind(path)
		switch {
		case format == "" && (byContent(k) || k == KindTrace):
			s.kind = k
			return s, true
		case format == "" && why != "" && why != "empty":
			// An empty file may be a trace not yet written: it is read
			// as one, which stores nothing until it has lines.
			return s, false
		}
		s.kind = KindTrace
		return s, true
	}
	if k, ok := recordKind(path); ok && systemOf(k) == format {
		s.kind = k
		return s, true
	}
	k, ok := sniffKind(format, path)
	s.kind = k
	return s, ok
}

// namedContentKind is contentKind for a regular file; a pipe is not
// opened (it would wait for a writer), and is refused when read.
func namedContentKind(path string) (kind, why string) {
	if st, err := os.Stat(path); err != nil || !st.Mode().IsRegular() {
		return "", ""
	}
	return contentKind(path)
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
		case errors.Is(err, syscall.ELOOP):
			return errors.New("a symbolic link loop (too many levels of symbolic links)")
		case errors.Is(err, fs.ErrNotExist):
			if target, lerr := os.Readlink(pe.Path); lerr == nil {
				return fmt.Errorf("a symbolic link to %s, which does not exist", target)
			}
			return errors.New("no such file or directory")
		case errors.Is(err, fs.ErrPermission):
			return errors.New("permission denied")
		}
		return pe.Err
	}
	return err
}

// DescribePathError says why a path named on the command line cannot be
// read, in words a user acts on: missing, a symbolic link loop, a dangling
// link, or no permission.
func DescribePathError(err error) error { return describeOpenErr(err) }

// FileError is a file or path that could not be read.
type FileError struct {
	Path string
	Err  error
}

func (e FileError) Error() string { return fmt.Sprintf("%s: %v", e.Path, e.Err) }

const stdinPrefix = "<stdin:"

func stdinPath(name string) string {
	return stdinPrefix + strings.TrimSpace(name) + ">"
}

// Found is what discovery found for paths without a store (Find).
type Found struct {
	sources []source
	errs    []FileError
	lists   []listing
	skipped []Skipped
}

// Skipped are the files the walks met that no format reads, in path order.
func (f *Found) Skipped() []Skipped { return f.skipped }

// Files counts the files found.
func (f *Found) Files() int { return len(f.sources) }

// Errors are the paths that could not be read, as Run reports them.
func (f *Found) Errors() []FileError { return f.errs }

// Find discovers the files an ingest of paths would read, without a store:
// what a command looks at before it creates one. Handed to Run as
// Options.Found for a store that did not exist, it spares a second
// discovery, which would find the same with no earlier ingest to skip by.
func Find(paths []string, format string, now time.Time) (*Found, error) {
	return discoverAll(paths, format, func() (known, error) { return known{}, nil }, now)
}

// ScopePath is how a PATH argument is named in the store: absolute with
// symbolic links resolved, as discovery records files, or, for "-", the
// name standard input is stored under.
func ScopePath(p, stdinName string) string {
	if p == "-" {
		if stdinName == "" {
			stdinName = "stdin"
		}
		return stdinPath(stdinName)
	}
	abs, err := filepath.Abs(p)
	if err != nil {
		return p
	}
	if r, err := filepath.EvalSymlinks(abs); err == nil {
		abs = r
	}
	return abs
}

// ScopePaths are the paths under which the files read for PATH p are
// stored: ScopePath's, and, as discovery follows the symbolic links among
// a runs directory's entries to the runs they name, those runs' own
// directories.
func ScopePaths(p, stdinName string) []string {
	root := ScopePath(p, stdinName)
	out := []string{root}
	if p == "-" {
		return out
	}
	dir := runsDir(root)
	entries, err := readDirUnsorted(dir)
	if err != nil {
		return out
	}
	var links []string // in name order, as os.ReadDir gave them
	for _, e := range entries {
		if e.typ&fs.ModeSymlink != 0 {
			links = append(links, e.name)
		}
	}
	slices.Sort(links)
	for _, name := range links {
		r, err := filepath.EvalSymlinks(filepath.Join(dir, name))
		if err != nil {
			continue
		}
		if st, err := os.Stat(r); err == nil && st.IsDir() && !strings.HasPrefix(r, root+string(filepath.Separator)) {
			out = append(out, r)
		}
	}
	return out
}

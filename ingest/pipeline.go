package ingest

import (
	"context"
	"io"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/orchstat/orchstat/model/systems"
)

// The steps of runOnce, in the order it takes them: plan what to read,
// read it on many goroutines, gather what was read into batches, commit
// the batches on one goroutine, and settle the result.

// plan is what one ingest reads: each source with its earlier state and
// its file id, and what discovery learned on the way.
type plan struct {
	tasks []task
	errs  []FileError // paths discovery could not read
	lists []listing   // run directories listed, recorded once their files are
	known known       // what earlier ingests recorded about run directories
	// skipped are the files discovery met that no format reads.
	skipped []Skipped
}

// earlier is what earlier ingests recorded in the store.
type earlier struct {
	states map[string]*fileState // by path
	maxID  int32                 // the highest file id given out
	known  known
}

// loadEarlier starts reading what earlier ingests recorded and returns a
// function that waits for it. Discovery stats run directories meanwhile:
// both are a large share of an ingest with nothing new.
func loadEarlier(ctx context.Context, st Store, full bool) func() (*earlier, error) {
	var e earlier
	loaded := make(chan error, 1)
	go func() {
		var err error
		if e.states, e.maxID, err = loadStates(ctx, st, full); err == nil {
			e.known, err = loadKnown(ctx, st, e.states, full)
		}
		loaded <- err
	}()
	// e is only read after the loader has reported.
	return sync.OnceValues(func() (*earlier, error) {
		err := <-loaded
		return &e, err
	})
}

// makePlan finds the sources opts names (or takes what Find found), adds
// standard input, and pairs each source with what earlier ingests recorded
// about it.
func makePlan(ctx context.Context, st Store, opts Options) (*plan, error) {
	wait := loadEarlier(ctx, st, opts.Full)
	var sources []source
	var errs []FileError
	var lists []listing
	var skipped []Skipped
	if f := opts.Found; f != nil {
		sources, errs, lists, skipped = f.sources, f.errs, f.lists, f.skipped
	} else {
		f, err := discoverAll(opts.Paths, opts.Format, func() (known, error) {
			e, err := wait()
			return e.known, err
		}, opts.Now())
		if err != nil {
			return nil, err
		}
		sources, errs, lists, skipped = f.sources, f.errs, f.lists, f.skipped
	}
	e, err := wait()
	if err != nil {
		return nil, err
	}
	if err := loadUnsealed(ctx, st, e, sources, lists); err != nil {
		return nil, err
	}
	if s, ok := stdinSource(opts); ok {
		sources = append(sources, s)
	}
	return &plan{tasks: newTasks(sources, e), errs: errs, lists: lists, known: e.known, skipped: skipped}, nil
}

// loadUnsealed loads the states of the sealed run directories this
// ingest looks into after all: those whose mtime changed, and, when a new
// file may be a known one moved, those that were not found where they
// were (see moves). What is loaded follows what changed.
func loadUnsealed(ctx context.Context, st Store, e *earlier, sources []source, lists []listing) error {
	if len(e.known.sealed) == 0 || e.known.full {
		return nil
	}
	var dirs []string
	for _, l := range lists {
		if _, ok := e.known.sealed[l.dir]; ok && !l.sealed {
			dirs = append(dirs, l.dir) // changed since it was sealed
		}
	}
	newFile := false
	for _, s := range sources {
		if e.states[s.path] == nil {
			newFile = true
			break
		}
	}
	if newFile {
		listed := make(map[string]bool, len(lists))
		for _, l := range lists {
			listed[l.dir] = true
		}
		for dir := range e.known.sealed {
			if !listed[dir] {
				dirs = append(dirs, dir) // not found where it was: moved?
			}
		}
	}
	if len(dirs) == 0 {
		return nil
	}
	return loadStatesIn(ctx, st, dirs, e.states)
}

// streamKind is the kind standard input is read as in a format whose
// kind is read as a stream of lines: agents' records. Any other format
// reads it as an orchestrator trace.
func streamKind(format string) (string, bool) {
	s, ok := systems.OfFormat(format)
	for _, f := range formats {
		if !ok || f.System != s.Name {
			continue
		}
		for _, k := range f.Kinds {
			if k.Stream != nil {
				return k.Name, true
			}
		}
	}
	return "", false
}

// stdinSource is the source standard input is read as, when a path is "-".
func stdinSource(opts Options) (source, bool) {
	for _, p := range opts.Paths {
		if p == "-" {
			name := opts.StdinName
			if name == "" {
				name = "stdin"
			}
			kind := KindStdin
			if k, ok := streamKind(opts.Format); ok {
				kind = k
			}
			return source{path: stdinPath(name), kind: kind, runDir: name}, true
		}
	}
	return source{}, false
}

// newTasks pairs each source with its earlier state. Known files keep
// their id; new ones get the next free ones, in discovery's order.
func newTasks(sources []source, e *earlier) []task {
	mv := newMoves(e.states)
	maxID := e.maxID
	tasks := make([]task, 0, len(sources))
	for _, s := range sources {
		t := task{src: s, prev: e.states[s.path], moves: mv}
		if t.prev != nil {
			t.id = t.prev.id
		} else {
			maxID++
			t.id = maxID
		}
		tasks = append(tasks, t)
	}
	return tasks
}

// readAll reads the tasks on opts.Workers goroutines and returns the
// chunks they read, in no particular order; the channel is closed once
// every reader has stopped, at the end or when ctx is cancelled. Files
// skipped as unchanged are counted in unchanged.
func readAll(ctx context.Context, tasks []task, opts Options, unchanged *atomic.Int64) <-chan chunk {
	// Twice as many workers as cores: when nothing changed, a worker's time
	// is spent waiting on stat(2), and when files are read, the bounded
	// channel below keeps memory flat whatever the count.
	workers := opts.Workers
	if workers <= 0 {
		workers = 2 * runtime.GOMAXPROCS(0)
	}
	stdin := opts.Stdin
	todo := make(chan task)
	out := make(chan chunk, 4)
	send := func(c chunk) bool {
		select {
		case out <- c:
			return true
		case <-ctx.Done():
			return false
		}
	}
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for t := range todo {
				if !readTask(t, stdin, send, unchanged) {
					return
				}
			}
		}()
	}
	go func() {
		defer close(todo)
		for _, t := range tasks {
			select {
			case todo <- t:
			case <-ctx.Done():
				return
			}
		}
	}()
	go func() { wg.Wait(); close(out) }()
	return out
}

// readTask reads one source, a file or standard input; it returns false
// when cancelled.
func readTask(t task, stdin io.Reader, send func(chunk) bool, unchanged *atomic.Int64) bool {
	if t.src.kind == KindStdin {
		return readStream(t, stdin, send)
	}
	if strings.HasPrefix(t.src.path, stdinPrefix) {
		return readWholeStream(t, stdin, send)
	}
	skipped, ok := readFile(t, send)
	if skipped {
		unchanged.Add(1)
	}
	return ok
}

// commitAll writes the batches it receives on its own goroutine, so
// parsing continues while DuckDB writes, and commits the open transaction
// once commits is closed. It reports on the returned channel when done;
// after a failure it cancels the ingest and drains commits, so the sender
// never blocks.
func commitAll(ctx context.Context, cancel context.CancelFunc, w *writer, commits <-chan *batch) <-chan error {
	committed := make(chan error, 1)
	go func() {
		var err error
		for b := range commits {
			if err != nil {
				continue // drain after a failure so the sender never blocks
			}
			if err = w.write(ctx, b); err != nil {
				cancel()
			}
		}
		if err == nil && ctx.Err() == nil {
			err = w.commit(ctx)
		}
		committed <- err
	}()
	return committed
}

// gather turns the readers' chunks into batches for the committer, and
// keeps the totals Result and Progress report as they come in.
type gather struct {
	res               *Result
	prog              Progress
	progress          func(Progress)
	b                 *batch
	maxBytes, maxRows int
	failed            int // sources that reported an error
	// final is where the files read to their last chunk ended, by id:
	// what sealing asks of them, not their whole states, which at
	// 100,000 files were tens of megabytes kept to the end of a first
	// ingest.
	final map[int32]readTo
}

// readTo is how far a file was read, and its size and mtime then.
type readTo struct {
	offset, size int64
	mtime        time.Time
}

func readToOf(s fileState) readTo { return readTo{s.offset, s.size, s.mtime} }

func newGather(res *Result, opts Options) *gather {
	g := &gather{res: res, progress: opts.Progress, maxBytes: opts.BatchBytes, maxRows: opts.BatchRows, final: map[int32]readTo{}}
	if g.maxBytes <= 0 {
		g.maxBytes = defaultBatchBytes
	}
	if g.maxRows <= 0 {
		g.maxRows = defaultBatchRows
	}
	g.b = newBatch(g.maxBytes, g.maxRows)
	g.prog.FilesTotal = res.Files
	return g
}

// add puts a chunk into the batch being filled, and hands the batch to
// the committer once it is full. The handoff is unbuffered: at most one
// batch is being filled while another commits, which bounds memory.
func (g *gather) add(c chunk, commits chan<- *batch) {
	res := g.res
	if c.err != nil {
		res.Errors = append(res.Errors, *c.err)
		g.failed++
	}
	if c.replace != "" {
		res.Replaced = append(res.Replaced, Replacement{Path: c.state.path, Reason: c.replace})
	}
	if c.moved != "" {
		res.Moved = append(res.Moved, Replacement{Path: c.state.path, Reason: "it was " + c.moved})
	}
	g.b.add(c)
	if c.last && c.err == nil && c.state.id != 0 {
		g.final[c.state.id] = readToOf(c.state)
	}
	res.Events += int64(len(c.rows.Events))
	res.Calls += int64(len(c.rows.Calls))
	if c.drop != nil {
		res.Calls -= int64(len(c.drop.calls)) // the same calls, read on
	}
	res.Quarantined += c.quarantinedLines()
	for why, n := range c.ignored {
		if res.Ignored == nil {
			res.Ignored = map[string]int64{}
		}
		res.Ignored[why] += int64(n)
	}
	res.Bytes += c.consumed
	g.prog.Events, g.prog.Bytes = res.Events, res.Bytes
	if c.last {
		g.prog.FilesDone++
	}
	if g.b.full() {
		commits <- g.b
		g.b = newBatch(g.maxBytes, g.maxRows)
	}
	if g.progress != nil {
		g.progress(g.prog)
	}
}

// last hands the committer the batch being filled, with the directory
// listings to record, unless there is nothing in either.
func (g *gather) last(commits chan<- *batch, dirs, sealed []listing) {
	g.b.dirs, g.b.sealed = dirs, sealed
	if !g.b.empty() || len(g.b.dirs) > 0 || len(sealed) > 0 {
		commits <- g.b
	}
}

// settle completes an ingest that committed everything: the counts, the
// states' compaction and the last progress report.
func (g *gather) settle(ctx context.Context, st Store, w *writer, unchanged int64) error {
	res := g.res
	res.Unchanged = int(unchanged)
	res.Read = max(0, res.Files-res.Unchanged-g.failed)
	// Only an ingest that recorded states can have tipped the balance, and
	// counting them is a sizeable share of one that found nothing new.
	if w.seq > w.firstSeq {
		if err := st.CompactStates(ctx); err != nil {
			return err
		}
	}
	g.prog.FilesDone = res.Files
	if g.progress != nil {
		g.progress(g.prog)
	}
	return nil
}

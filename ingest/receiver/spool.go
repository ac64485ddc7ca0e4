package receiver

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"syscall"
	"time"
)

// The spool appends accepted payloads to JSON-lines files in the
// Collector file exporter's format, one file per signal at a time,
// named for the signal and the moment it was opened (logs-20261129T042501Z.jsonl),
// which `orchstat ingest` reads like any collector file. A request is
// answered only once its lines are on disk (fsync): one writer takes
// every request waiting and syncs each file once for all of them, so a
// busy receiver pays one sync per batch, not per request. A write that
// fails is cut back off the file, so a file never holds half a request.

// ErrFull is a write refused for want of disk space.
var ErrFull = errors.New("the disk is full")

// ErrBusy is a request refused because the writer is behind.
var ErrBusy = errors.New("the receiver cannot keep up")

type write struct {
	signal string
	lines  [][]byte
	done   chan error
}

type current struct {
	f      *os.File
	name   string
	signal string
	day    string // the UTC date it was opened on
	size   int64
}

type spool struct {
	dir    string
	now    func() time.Time
	rotate int64
	reqs   chan *write
	files  map[string]*current
	// retired are files rotated away from during a batch: still synced
	// with it before they are closed, as requests of the batch may be in
	// them.
	retired []*current
	lock    *os.File // held on dir while the spool is open (openSpool)
	quit    chan struct{}
	exited  chan struct{}
}

// queueDepth is how many requests may wait for the writer before more
// are refused (429): with a sync per batch, a longer queue only makes
// clients wait longer for the same disk.
const queueDepth = 256

// lockName is the file a spool locks in its folder: a second receiver on
// the same folder would mend (truncate) files the first is writing.
const lockName = ".orchstat-receive.lock"

func openSpool(dir string, now func() time.Time, rotate int64) (*spool, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	lock, err := os.OpenFile(filepath.Join(dir, lockName), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		lock.Close()
		return nil, fmt.Errorf("%s: another orchstat receive writes there (%v)", dir, err)
	}
	if err := mendTails(dir); err != nil {
		lock.Close()
		return nil, err
	}
	s := &spool{dir: dir, now: now, rotate: rotate, reqs: make(chan *write, queueDepth), lock: lock,
		files: map[string]*current{}, quit: make(chan struct{}), exited: make(chan struct{})}
	go s.run()
	return s, nil
}

// mendTails cuts off a last line that a crash left without its newline:
// it was never acknowledged (a request is answered after its whole lines
// are synced), and the next line appended would be glued to it.
func mendTails(dir string) error {
	names, err := filepath.Glob(filepath.Join(dir, "*.jsonl"))
	if err != nil {
		return err
	}
	for _, name := range names {
		// Only the receiver's own files: another file in the folder is
		// the user's, whatever its last line.
		if !ownName.MatchString(filepath.Base(name)) {
			continue
		}
		if err := mendTail(name); err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
	}
	return nil
}

// ownName is the name of a file the spool writes.
var ownName = regexp.MustCompile(`^(logs|traces|metrics)-\d{8}T\d{6}Z(-\d+)?\.jsonl$`)

func mendTail(name string) error {
	f, err := os.OpenFile(name, os.O_RDWR, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil || st.Size() == 0 {
		return err
	}
	// Read back from the end to the last newline.
	end := st.Size()
	buf := make([]byte, 64<<10)
	for pos := end; pos > 0; {
		n := int64(len(buf))
		if pos < n {
			n = pos
		}
		pos -= n
		if _, err := f.ReadAt(buf[:n], pos); err != nil && err != io.EOF {
			return err
		}
		if i := bytes.LastIndexByte(buf[:n], '\n'); i >= 0 {
			keep := pos + int64(i) + 1
			if keep == end {
				return nil
			}
			if err := f.Truncate(keep); err != nil {
				return err
			}
			return f.Sync()
		}
	}
	if err := f.Truncate(0); err != nil {
		return err
	}
	return f.Sync()
}

// append queues lines for signal and waits until they are on disk.
func (s *spool) append(signal string, lines [][]byte) error {
	w := &write{signal: signal, lines: lines, done: make(chan error, 1)}
	select {
	case <-s.exited:
		return ErrBusy // stopped: the client is to come back
	case s.reqs <- w:
	default:
		return ErrBusy
	}
	select {
	case err := <-w.done:
		return err
	case <-s.exited:
		// The writer stopped before it took this one (a handler that
		// outlived the shutdown): nothing of it was written.
		select {
		case err := <-w.done:
			return err
		default:
			return ErrBusy
		}
	}
}

// close stops the writer once the requests queued are written.
func (s *spool) close() {
	close(s.quit)
	<-s.exited
}

func (s *spool) run() {
	defer close(s.exited)
	for {
		var first *write
		select {
		case first = <-s.reqs:
		case <-s.quit:
			// Whatever was queued before the quit is written still.
			select {
			case first = <-s.reqs:
			default:
				s.closeFiles()
				s.lock.Close()
				return
			}
		}
		batch := []*write{first}
	more:
		for len(batch) < queueDepth {
			select {
			case w := <-s.reqs:
				batch = append(batch, w)
			default:
				break more
			}
		}
		s.writeBatch(batch)
	}
}

// writeBatch writes each request's lines, cutting a failed one back off,
// then syncs each file touched once and answers.
func (s *spool) writeBatch(batch []*write) {
	errs := make([]error, len(batch))
	type mark struct {
		c    *current
		size int64
	}
	touched := map[*current][]int{}
	var marks []mark
	for i, w := range batch {
		c, err := s.file(w.signal)
		if err != nil {
			errs[i] = err
			continue
		}
		marks = append(marks, mark{c, c.size})
		var buf bytes.Buffer
		for _, l := range w.lines {
			buf.Write(l)
			buf.WriteByte('\n')
		}
		n, err := c.f.Write(buf.Bytes())
		c.size += int64(n)
		if err != nil {
			errs[i] = s.cutBack(c, c.size-int64(n), err)
			continue
		}
		touched[c] = append(touched[c], i)
	}
	for c, idx := range touched {
		if err := c.f.Sync(); err != nil && slices.Contains(s.retired, c) {
			// A file rotated away from is not written again: what it holds
			// unsynced is not acknowledged, and the next start mends it.
			for _, i := range idx {
				errs[i] = fmt.Errorf("%s: %w", c.name, err)
			}
		} else if err != nil {
			// What the sync did not make durable cannot be acknowledged;
			// cut back to before the first of them.
			first := c.size
			for _, m := range marks {
				if m.c == c && m.size < first {
					first = m.size
				}
			}
			err = s.cutBack(c, first, err)
			for _, i := range idx {
				errs[i] = err
			}
		}
	}
	for _, c := range s.retired {
		_ = c.f.Close()
	}
	s.retired = nil
	for i, w := range batch {
		w.done <- errs[i]
	}
}

// cutBack truncates c to size after a failed write, and says why it
// failed, a full disk as ErrFull.
func (s *spool) cutBack(c *current, size int64, err error) error {
	if terr := c.f.Truncate(size); terr == nil {
		c.size = size
		_, _ = c.f.Seek(size, io.SeekStart)
	} else if s.files[c.signal] == c {
		// The partial line stays: the next line must not be glued to it.
		// The file is left (the next start mends it) for a new one.
		delete(s.files, c.signal)
		s.retired = append(s.retired, c)
	}
	if errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT) {
		return fmt.Errorf("%w: %s: %v", ErrFull, c.name, err)
	}
	return fmt.Errorf("%s: %w", c.name, err)
}

// file is signal's file to append to, a new one on a new day (UTC) or
// past the size to rotate at.
func (s *spool) file(signal string) (*current, error) {
	now := s.now().UTC()
	day := now.Format("20060102")
	c := s.files[signal]
	if c != nil && c.day == day && (s.rotate <= 0 || c.size < s.rotate) {
		return c, nil
	}
	if c != nil {
		// Requests of this batch may be in it, unsynced: it is closed
		// after the batch's sync (writeBatch).
		s.retired = append(s.retired, c)
		delete(s.files, signal)
	}
	base := signal + "-" + now.Format("20060102T150405Z")
	name := filepath.Join(s.dir, base+".jsonl")
	for k := 1; ; k++ {
		f, err := os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL|os.O_APPEND, 0o600)
		if errors.Is(err, os.ErrExist) {
			name = filepath.Join(s.dir, fmt.Sprintf("%s-%d.jsonl", base, k))
			continue
		}
		if err != nil {
			if errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT) {
				return nil, fmt.Errorf("%w: %v", ErrFull, err)
			}
			return nil, err
		}
		// The new name must survive a crash too.
		if d, err := os.Open(s.dir); err == nil {
			_ = d.Sync()
			d.Close()
		}
		c = &current{f: f, name: name, day: day, signal: signal}
		s.files[signal] = c
		return c, nil
	}
}

func (s *spool) closeFiles() {
	for _, c := range s.files {
		_ = c.f.Close()
	}
}

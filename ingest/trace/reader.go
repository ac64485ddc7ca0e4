package trace

import (
	"bytes"
	"errors"
	"io"
	"sync"
)

const (
	// MaxLine is the longest line accepted; longer ones are quarantined.
	MaxLine = 64 << 20
	// MaxRaw is how much of a bad line is kept in the quarantine table.
	MaxRaw = 64 << 10
)

var bom = []byte{0xEF, 0xBB, 0xBF}

// Line is one physical line of a trace file.
type Line struct {
	Num     int64  // 1-based line number in the file
	Offset  int64  // byte offset of the line's first byte
	Bytes   []byte // without "\n" and a trailing "\r"; valid until the next call to Next
	TooLong bool   // longer than MaxLine: Bytes holds only its first MaxRaw bytes
	// Len is the line's length in bytes, without "\n"; for a TooLong line,
	// more than Bytes holds.
	Len int64
}

// Reader yields the complete lines of a stream in bounded memory. A final
// line without "\n" may still be being written, so it is never returned and
// Offset stays before it.
type Reader struct {
	r       io.Reader
	buf     []byte
	lo, hi  int   // unread data is buf[lo:hi]
	base    int64 // file offset of buf[0]
	num     int64
	offset  int64 // offset after the last complete line returned
	eof     bool
	err     error
	maxLine int
	long    []byte
	// stream is set for input that has no "next time", like a pipe: its
	// final line counts even without a newline.
	stream bool
}

// NewStreamReader reads a stream to its end: unlike a file that may still be
// written, a final line without "\n" is returned as a line.
func NewStreamReader(r io.Reader) *Reader {
	rd := NewReader(r, 0, 0)
	rd.stream = true
	return rd
}

// NewReader reads r, whose first byte is at file offset offset and follows
// line number line (0 at the start of a file).
func NewReader(r io.Reader, offset, line int64) *Reader {
	buf := bufPool.Get().(*[]byte)
	return &Reader{r: r, buf: *buf, base: offset, num: line, offset: offset, maxLine: MaxLine}
}

// An ingest reads tens of thousands of files; taking each one's buffer
// from a pool rather than allocating it was a visible share of ingest time
// (allocation and the collector's work for it).
const bufSize = 64 << 10

var bufPool = sync.Pool{New: func() any { b := make([]byte, bufSize); return &b }}

// Close gives the reader's buffer back for another reader. Lines it
// returned are invalid after Close, and r must not be used again.
func (r *Reader) Close() {
	if len(r.buf) == bufSize { // one grown for a long line is left to the GC
		buf := r.buf
		bufPool.Put(&buf)
	}
	r.buf, r.lo, r.hi = nil, 0, 0
}

// Offset is the byte offset just past the last complete line returned.
func (r *Reader) Offset() int64 { return r.offset }

// LineNum is the number of the last complete line returned.
func (r *Reader) LineNum() int64 { return r.num }

// Pending is what follows the last complete line once Next has returned
// io.EOF: a last line without "\n", which may still be being written. It
// is nil when there is none, or when it is longer than MaxLine.
func (r *Reader) Pending() []byte {
	if !r.eof || r.err != nil || r.hi <= r.lo || r.hi-r.lo > r.maxLine {
		return nil
	}
	b := r.buf[r.lo:r.hi]
	if r.base+int64(r.lo) == 0 && bytes.HasPrefix(b, bom) {
		b = b[len(bom):]
	}
	if n := len(b); n > 0 && b[n-1] == '\r' {
		b = b[:n-1]
	}
	return b
}

// Next returns the next complete line, or io.EOF when none is left.
func (r *Reader) Next() (Line, error) {
	for {
		if i := bytes.IndexByte(r.buf[r.lo:r.hi], '\n'); i >= 0 {
			return r.emit(r.buf[r.lo:r.lo+i], i+1, false), nil
		}
		if r.hi-r.lo > r.maxLine {
			return r.skipLong()
		}
		if err := r.fill(); err != nil {
			if errors.Is(err, io.EOF) && r.stream && r.hi > r.lo {
				return r.emit(r.buf[r.lo:r.hi], r.hi-r.lo, false), nil
			}
			return Line{}, err
		}
	}
}

func (r *Reader) emit(b []byte, consumed int, tooLong bool) Line {
	start := r.base + int64(r.lo)
	r.lo += consumed
	r.num++
	r.offset = r.base + int64(r.lo)
	if start == 0 && bytes.HasPrefix(b, bom) {
		b = b[len(bom):]
	}
	if !tooLong && len(b) > 0 && b[len(b)-1] == '\r' {
		b = b[:len(b)-1]
	}
	return Line{Num: r.num, Offset: start, Bytes: b, TooLong: tooLong, Len: int64(len(b))}
}

// fill reads more data, compacting or growing the buffer as needed.
func (r *Reader) fill() error {
	if r.eof {
		if r.err != nil {
			return r.err
		}
		return io.EOF
	}
	if r.lo > 0 {
		n := copy(r.buf, r.buf[r.lo:r.hi])
		r.base += int64(r.lo)
		r.lo, r.hi = 0, n
	}
	if r.hi == len(r.buf) {
		size := 2 * len(r.buf)
		if size > r.maxLine+1 {
			size = r.maxLine + 1
		}
		nb := make([]byte, size)
		copy(nb, r.buf[:r.hi])
		r.buf = nb
	}
	n, err := r.r.Read(r.buf[r.hi:])
	r.hi += n
	if err != nil {
		r.eof = true
		if err != io.EOF {
			r.err = err
		}
		if n > 0 {
			return nil
		}
		return r.fill()
	}
	return nil
}

// skipLong keeps the head of an over-long line and discards the rest up to
// its newline without buffering it.
func (r *Reader) skipLong() (Line, error) {
	r.long = append(r.long[:0], r.buf[r.lo:r.lo+min(MaxRaw, r.hi-r.lo)]...)
	start := r.base + int64(r.lo)
	for {
		if i := bytes.IndexByte(r.buf[r.lo:r.hi], '\n'); i >= 0 {
			end := r.base + int64(r.lo+i)
			r.lo += i + 1
			r.num++
			r.offset = r.base + int64(r.lo)
			return Line{Num: r.num, Offset: start, Bytes: r.long, TooLong: true, Len: end - start}, nil
		}
		r.base += int64(r.hi)
		r.lo, r.hi = 0, 0
		if r.eof {
			if r.err != nil {
				return Line{}, r.err
			}
			if r.stream {
				r.num++
				return Line{Num: r.num, Offset: start, Bytes: r.long, TooLong: true, Len: r.base - start}, nil
			}
			// The line is not finished yet: leave it for the next ingest.
			return Line{}, io.EOF
		}
		n, err := r.r.Read(r.buf)
		r.hi = n
		if err != nil {
			r.eof = true
			if err != io.EOF {
				r.err = err
			}
		}
	}
}

// Blank reports whether a line holds only JSON whitespace.
func Blank(b []byte) bool {
	for _, c := range b {
		if c != ' ' && c != '\t' && c != '\r' && c != '\n' {
			return false
		}
	}
	return true
}

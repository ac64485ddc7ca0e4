package main

import (
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/orchstat/orchstat/ingest"
)

// progress draws one self-overwriting status line on a terminal. It redraws
// at most every 100 ms so it costs nothing measurable.
type progress struct {
	mu    sync.Mutex
	w     io.Writer
	now   func() time.Time
	start time.Time
	last  time.Time
	drawn bool
	p     ingest.Progress
	ended bool
}

func newProgress(w io.Writer, now func() time.Time) *progress {
	t := now()
	return &progress{w: w, now: now, start: t}
}

func (p *progress) update(pr ingest.Progress) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.p = pr
	if t := p.now(); t.Sub(p.last) >= 100*time.Millisecond && !p.ended {
		p.last = t
		p.draw(t)
	}
}

func (p *progress) draw(t time.Time) {
	secs := t.Sub(p.start).Seconds()
	rate := 0.0
	if secs > 0 {
		rate = float64(p.p.Bytes) / (1 << 20) / secs
	}
	width := 24
	filled := 0
	if p.p.FilesTotal > 0 {
		filled = width * p.p.FilesDone / p.p.FilesTotal
	}
	bar := make([]byte, width)
	for i := range bar {
		bar[i] = '.'
		if i < filled {
			bar[i] = '#'
		}
	}
	fmt.Fprintf(p.w, "\r\x1b[K[%s] files %d/%d  events %d  %.1f MB/s", bar, p.p.FilesDone, p.p.FilesTotal, p.p.Events, rate)
	p.drawn = true
}

// done clears the line so later output starts clean.
func (p *progress) done() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.drawn && !p.ended {
		fmt.Fprint(p.w, "\r\x1b[K")
	}
	p.ended = true
}

package tracegen

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sync"
)

// File is one artifact of a run, named relative to the run's directory.
type File struct {
	Name string
	Data []byte
}

// Run is one run's artifacts, in memory. Files[0] is trace.jsonl and
// Files[1] manifest.json; summary.json and verification reports follow when
// the run wrote them.
type Run struct {
	ID     string // Date.now()-style runId, also the directory name
	Events int    // trace lines (a torn last line counts)
	Files  []File
}

// BuildRun builds run i (0-based) of the corpus cfg describes, without
// touching the disk.
func BuildRun(cfg Config, i int) Run {
	s := newSim(&cfg, i)
	s.run()
	return s.output()
}

// WriteRun writes r under dir/<r.ID>/.
func WriteRun(dir string, r Run) (Stats, error) {
	runDir := filepath.Join(dir, r.ID)
	if err := os.MkdirAll(runDir, 0o755); err != nil {
		return Stats{}, err
	}
	st := Stats{Runs: 1, Events: int64(r.Events)}
	for _, f := range r.Files {
		if err := os.WriteFile(filepath.Join(runDir, f.Name), f.Data, 0o644); err != nil {
			return Stats{}, err
		}
		st.Files++
		st.Bytes += int64(len(f.Data))
	}
	return st, nil
}

// Generate writes cfg.Runs runs under dir, in parallel. Each run depends
// only on cfg and its index, so the files are the same for any Workers.
func Generate(dir string, cfg Config) (Stats, error) {
	if err := cfg.validate(); err != nil {
		return Stats{}, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return Stats{}, err
	}
	workers := cfg.Workers
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	next := make(chan int)
	var (
		mu    sync.Mutex
		total Stats
		first error
		wg    sync.WaitGroup
	)
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var mine Stats
			var err error
			for i := range next {
				if err != nil {
					continue // drain so the producer never blocks
				}
				var st Stats
				st, err = WriteRun(dir, BuildRun(cfg, i))
				if err != nil {
					err = fmt.Errorf("tracegen: run %d: %w", i, err)
				}
				mine.add(st)
			}
			mu.Lock()
			total.add(mine)
			if first == nil {
				first = err
			}
			mu.Unlock()
		}()
	}
	for i := range cfg.Runs {
		next <- i
	}
	close(next)
	wg.Wait()
	return total, first
}

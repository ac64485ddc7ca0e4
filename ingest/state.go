package ingest

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/orchstat/orchstat/model/rows"
)

// loadStates reads where every known file stopped, but for the files of
// sealed run directories unless full.
func loadStates(ctx context.Context, st Store, full bool) (map[string]*fileState, int32, error) {
	var out map[string]*fileState
	var maxID int32
	load := st.UnsealedFileStates
	if full {
		load = st.FileStates
	}
	err := load(ctx, func(n int) {
		out = make(map[string]*fileState, n) // sized once, no rehashing garbage
	}, func(f *rows.FileState) {
		s := stateOf(f)
		out[s.path] = s
		maxID = max(maxID, s.id)
	})
	if err != nil {
		return nil, 0, fmt.Errorf("reading ingest state: %w", err)
	}
	if !full {
		// Sealed files keep their ids: new ones come after all of them.
		all, err := st.MaxFileID(ctx)
		if err != nil {
			return nil, 0, fmt.Errorf("reading ingest state: %w", err)
		}
		maxID = max(maxID, all)
	}
	return out, maxID, nil
}

// loadStatesIn adds to states the files of the sealed directories dirs.
func loadStatesIn(ctx context.Context, st Store, dirs []string, states map[string]*fileState) error {
	err := st.FileStatesIn(ctx, dirs, func(f *rows.FileState) {
		s := stateOf(f)
		states[s.path] = s
	})
	if err != nil {
		return fmt.Errorf("reading ingest state: %w", err)
	}
	return nil
}

func stateOf(f *rows.FileState) *fileState {
	s := &fileState{id: f.ID, size: f.Size, dev: f.Dev, ino: f.Inode, offset: f.Offset, lines: f.Lines,
		headLen: int(f.HeadLen), headHash: f.HeadHash, events: f.Events, quarantined: f.Quarantined, pairing: f.Pairing}
	s.path = rows.ReadString(f.Path)
	s.kind = internKind(f.Kind)
	s.runDir = baseOf(s.path, rows.ReadString(f.RunDir))
	s.mtime = time.UnixMicro(f.MTimeMicros).UTC()
	return s
}

func internKind(k string) string {
	for _, known := range []string{KindTrace, KindSummary, KindVerification, KindStdin} {
		if k == known {
			return known
		}
	}
	return k
}

// baseOf returns runDir as a substring of the file's path when it is the
// path's parent directory's name (it always is for files in run
// directories), so the two share memory.
func baseOf(path, runDir string) string {
	dir := path
	if i := strings.LastIndexByte(dir, '/'); i >= 0 {
		dir = dir[:i]
	}
	if i := strings.LastIndexByte(dir, '/'); i >= 0 && dir[i+1:] == runDir {
		return dir[i+1:]
	}
	return runDir
}

package ingest

import (
	"context"
	"time"

	"github.com/orchstat/orchstat/model/rows"
)

// Store is what ingest needs of the store it writes to; cmd/orchstat
// hands it the DuckDB store (Store), and ingest never sees more of
// it. The types crossing it are package model/rows'.
type Store interface {
	Sink
	StateSource
	Settings
}

// Sink is where rows go: write transactions, and the room they need.
type Sink interface {
	// Appender begins a write transaction.
	Appender(ctx context.Context) (rows.Appender, error)
	// EnsureSpace fails with a disk.NoSpaceError unless the store's file
	// system has need bytes free.
	EnsureSpace(need int64) error
	// MemoryLimit and SetMemoryLimit read and set the store's buffer
	// pool, as DuckDB prints it ("1073741824B").
	MemoryLimit(ctx context.Context) (string, error)
	SetMemoryLimit(ctx context.Context, limit string) error
	// Reopen replaces an instance that failed for want of memory.
	Reopen(ctx context.Context) error
	// DBPath is the store's file, named in errors.
	DBPath() string
}

// StateSource is where earlier ingests stopped: the states of files, run
// directories as listed and sealed run directories. Paths are as stored
// (see rows.ReadString).
type StateSource interface {
	// FileStates calls each for every known file's latest state, after
	// sized with an upper bound of their number.
	FileStates(ctx context.Context, sized func(n int), each func(*rows.FileState)) error
	// UnsealedFileStates is FileStates without the files of sealed run
	// directories.
	UnsealedFileStates(ctx context.Context, sized func(n int), each func(*rows.FileState)) error
	// FileStatesIn calls each for the files of the directories dirs.
	FileStatesIn(ctx context.Context, dirs []string, each func(*rows.FileState)) error
	DirStates(ctx context.Context, unsealed bool, each func(path string, mtime time.Time)) error
	SealedDirs(ctx context.Context, each func(path string, d rows.Sealed)) error
	// LastStateSeq is the latest state's sequence number; MaxFileID, the
	// highest file id given out.
	LastStateSeq(ctx context.Context) (int64, error)
	MaxFileID(ctx context.Context) (int32, error)
	// CompactStates drops superseded states once they outnumber the live
	// ones.
	CompactStates(ctx context.Context) error
}

// Settings are ingest's own values kept in the store: the memory limit an
// ingest needed and when the last full pass ended.
type Settings interface {
	Setting(ctx context.Context, key string) (value string, ok bool, err error)
	SaveSetting(ctx context.Context, key, value string) error
}

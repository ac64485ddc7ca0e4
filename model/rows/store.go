package rows

import (
	"context"
	"strconv"
	"time"
)

// Appender is a write transaction of the store, as ingest writes through
// it: rows appended, a file's earlier rows deleted, then committed or
// rolled back as a whole. It is declared here, beside the rows it takes,
// so the store can return one without knowing who asks (as prometheus's
// storage.Appender is).
type Appender interface {
	// Append adds the rows of sets, every table's in rows.Set's order.
	Append(sets ...*Set) error
	// AppendStates adds file, directory and sealed directory states.
	AppendStates(s *States) error
	// DeleteFiles removes every row the files with these ids contributed
	// to the file tables.
	DeleteFiles(ctx context.Context, ids []int32) error
	// DeleteOpen deletes each file's open rows (see OpenRows).
	DeleteOpen(ctx context.Context, files []OpenRows) error
	// Commit ends the transaction, keeping its rows; when it fails, the
	// transaction is still the caller's to roll back.
	Commit(ctx context.Context) error
	// Rollback ends the transaction, dropping its rows. It is safe to
	// call after Commit, and runs even when ctx is cancelled.
	Rollback(ctx context.Context)
}

// FileState is where ingest stopped reading one file, as file_states
// records it (see the files view). A file read from standard input has no
// size, time or identity: those are zero.
type FileState struct {
	ID                  int32
	Path, Kind, RunDir  string // as stored; see ReadString
	Size                int64
	MTimeMicros         int64
	Dev, Inode          uint64
	Offset, Lines       int64
	HeadLen             int32
	HeadHash            string
	Events, Quarantined int64
	Pairing             string
}

// Sealed is a run directory recorded as sealed: its mtime then, and how
// many files it held.
type Sealed struct {
	MTime time.Time
	Files int
}

// OpenRows are the rows an agent file's last reading stored as still
// open (see ingest's readAgent): its calls by id and line (OpenCallKey),
// their attempts by call id, its runs by id, and the quarantine rows of a
// last line that had no newline yet. The next reading deletes them before
// it stores what they became. A call is named by its line too because a
// format's reader keeps ids unique only within a window of recent calls:
// an id repeated from far back must not take the earlier call with it.
type OpenRows struct {
	File     int32
	Calls    []string // OpenCallKey of each call
	CallIDs  []string
	Runs     []string
	TailLine int64
}

// OpenCallKey names a stored call for OpenRows.
func OpenCallKey(callID string, line int64) string {
	return StoreString(callID) + "@" + strconv.FormatInt(line, 10)
}

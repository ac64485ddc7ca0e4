package ingest

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"time"

	"github.com/orchstat/orchstat/model/disk"
	"github.com/orchstat/orchstat/model/rows"
)

// batch is what the writer hands DuckDB in one go; a transaction holds
// several (see writer.write).
type batch struct {
	deletes []int32
	drops   []rows.OpenRows
	// sets are the chunks' own rows, kept as they are: copying every
	// event into one slice was a visible share of ingest CPU.
	sets         []*rows.Set
	nEvents      int
	nQuarantined int // quarantined lines, which weigh as events do
	states       map[int32]fileState
	order        []int32
	dirs         []listing
	sealed       []listing // run directories to record as sealed
	payloadBytes int
	maxPayload   int
	maxBytes     int
	maxRows      int
	// done is what the batch accounts for in Result terms, counted once
	// its transaction commits (see writer.committed).
	done tally
}

// tally is ingest work in the terms Result reports it.
type tally struct {
	events, quarantined, bytes int64
	filesRead                  int
}

func (t *tally) add(o tally) {
	t.events += o.events
	t.quarantined += o.quarantined
	t.bytes += o.bytes
	t.filesRead += o.filesRead
}

func newBatch(maxBytes, maxRows int) *batch {
	return &batch{states: map[int32]fileState{}, maxBytes: maxBytes, maxRows: maxRows}
}

func (b *batch) empty() bool { return len(b.states) == 0 }

func (b *batch) full() bool {
	return b.payloadBytes >= b.maxBytes || b.nEvents+b.nQuarantined >= b.maxRows
}

func (b *batch) add(c chunk) {
	if c.err != nil && c.state.path == "" {
		return // nothing was read
	}
	id := c.state.id
	if c.deleteOld {
		b.deletes = append(b.deletes, id)
	} else if !c.drop.empty() {
		b.drops = append(b.drops, rows.OpenRows{File: id, Calls: c.drop.calls, CallIDs: callIDsOf(c.drop.calls), Runs: c.drop.runs, TailLine: c.drop.tail})
	}
	b.sets = append(b.sets, c.rows)
	b.nEvents += len(c.rows.Events)
	if _, ok := b.states[id]; !ok {
		b.order = append(b.order, id)
	}
	b.states[id] = c.state
	b.payloadBytes += c.payloadBytes
	b.nQuarantined += c.quarantined
	b.maxPayload = max(b.maxPayload, c.maxPayload)
	b.done.events += int64(len(c.rows.Events))
	b.done.quarantined += c.quarantinedLines()
	b.done.bytes += c.consumed
	if c.last && c.err == nil {
		b.done.filesRead++
	}
}

type writer struct {
	st   Store
	now  func() time.Time
	hook func(string)
	seq  int64 // last file_states.seq written
	// firstSeq is seq before this ingest wrote any state.
	firstSeq int64

	tx          rows.Appender // the open transaction, if any
	txnBytes    int           // payload bytes in the open transaction
	maxTxnBytes int
	commits     int
	memLimit    int64 // DuckDB's memory_limit as last set
	scratch     bool  // see Options.Scratch
	// txn is the work of the open transaction; committed, of those that
	// committed. A retried ingest (see Run) reports both attempts from them.
	txn, committed tally
}

// setMemoryLimit sets DuckDB's buffer pool size for the ingest.
func (w *writer) setMemoryLimit(ctx context.Context, n int64) error {
	if err := w.st.SetMemoryLimit(ctx, fmt.Sprintf("%dB", n)); err != nil {
		return fmt.Errorf("setting DuckDB's memory limit to %d bytes: %w", n, err)
	}
	w.memLimit = n
	return nil
}

func newWriter(ctx context.Context, st Store, opts Options) (*writer, error) {
	w := &writer{st: st, now: opts.Now, hook: opts.Hook, maxTxnBytes: opts.TxnBytes, scratch: opts.Scratch}
	if w.maxTxnBytes <= 0 {
		w.maxTxnBytes = defaultTxnBytes
	}
	seq, err := st.LastStateSeq(ctx)
	if err != nil {
		return nil, fmt.Errorf("reading ingest state: %w", err)
	}
	w.seq = seq
	w.firstSeq = w.seq
	return w, nil
}

func (w *writer) close() {
	w.rollback(context.Background())
}

// write adds a batch, and the file states it accounts for, to the open
// transaction, beginning one if needed, and commits once the transaction
// holds txnBytes of payload. Long transactions let DuckDB write whole,
// compressed row groups straight to the file, as its own bulk loads do;
// committing small batches instead sent every row through the WAL and
// rewrote the last partial row group at every checkpoint.
func (w *writer) write(ctx context.Context, b *batch) (err error) {
	// A value is stored whole in one block, and a checkpoint needs room for
	// it and its compressed copy: a pool smaller than that fails with a
	// fatal error that invalidates the database. Lines of up to 64 MiB are
	// accepted, so the pool grows when one arrives.
	if need := 3*int64(b.maxPayload) + 32<<20; need > w.memLimit && !w.scratch {
		if err := w.setMemoryLimit(ctx, need); err != nil {
			return err
		}
	}
	// Free space is checked before DuckDB sees the rows: running out
	// mid-commit has aborted DuckDB 1.1.2 (see disk.NoSpaceError). The
	// rows pass through the log and then the file, hence twice, and the
	// margin covers the blocks a checkpoint rewrites.
	if err := w.st.EnsureSpace(2*int64(w.txnBytes+b.payloadBytes) + spaceMargin); err != nil {
		w.rollback(ctx)
		return err
	}
	if w.tx == nil {
		tx, err := w.st.Appender(ctx)
		if err != nil {
			return err
		}
		w.tx, w.txnBytes = tx, 0
	}
	defer func() {
		if err != nil {
			w.rollback(ctx)
			err = w.wrap(err)
		}
	}()
	if err := w.tx.DeleteFiles(ctx, b.deletes); err != nil {
		return err
	}
	if err := w.tx.DeleteOpen(ctx, b.drops); err != nil {
		return err
	}
	now := w.now().UTC()
	for _, s := range b.sets {
		for i := range s.Quarantine {
			s.Quarantine[i].IngestedAt = now
		}
	}
	if err := w.tx.Append(b.sets...); err != nil {
		return err
	}
	w.hook("before-files")
	if err := w.appendStates(b, now); err != nil {
		return err
	}
	w.txnBytes += b.payloadBytes
	w.txn.add(b.done)
	if w.txnBytes >= w.maxTxnBytes {
		return w.commit(ctx)
	}
	return nil
}

// appendStates records where each file of the batch now stops, and the
// directories listed, numbered after every state before them.
func (w *writer) appendStates(b *batch, now time.Time) error {
	var st rows.States
	for _, id := range b.order {
		s := b.states[id]
		w.seq++
		st.Files = append(st.Files, rows.FileStateRow{Seq: w.seq, FileID: s.id, Path: s.path, Kind: s.kind, RunDir: s.runDir,
			Size: s.size, MTime: s.mtime, Dev: s.dev, Inode: s.ino, ByteOffset: s.offset, Lines: s.lines, HeadLen: int32(s.headLen),
			HeadSHA256: s.headHash, Events: s.events, Quarantined: s.quarantined, IngestedAt: now, Pairing: s.pairing})
	}
	for _, d := range b.dirs {
		w.seq++
		st.Dirs = append(st.Dirs, rows.DirStateRow{Seq: w.seq, Path: d.dir, MTime: d.mtime})
	}
	for _, d := range b.sealed {
		w.seq++
		st.Sealed = append(st.Sealed, rows.SealedDirRow{Seq: w.seq, Path: d.dir, MTime: d.mtime, Files: int32(d.files), FileIDs: d.ids})
	}
	return w.tx.AppendStates(&st)
}

// commit ends the open transaction. Its rows and the read positions of
// their files are in DuckDB's write-ahead log together, which DuckDB 1.5.6
// replays after a crash; DuckDB checkpoints the log into the file as it
// grows and when the store is closed.
func (w *writer) commit(ctx context.Context) (err error) {
	if w.tx == nil {
		return nil
	}
	w.hook("before-commit")
	if err := w.st.EnsureSpace(2*int64(w.txnBytes) + spaceMargin); err != nil {
		w.rollback(ctx)
		return err
	}
	if err := w.tx.Commit(ctx); err != nil {
		w.rollback(ctx)
		return w.wrap(err)
	}
	w.tx = nil
	w.commits++
	w.committed.add(w.txn)
	w.txn = tally{}
	w.hook("after-commit")
	return nil
}

// spaceMargin is the free space a write keeps in hand beyond its rows.
const spaceMargin = 4 << 20

// wrap names the store in a write error; running out of space is said
// plainly, as the file system would.
func (w *writer) wrap(err error) error {
	if disk.IsNoSpace(err) {
		var ns *disk.NoSpaceError
		if errors.As(err, &ns) {
			return err
		}
		return &disk.NoSpaceError{Dir: filepath.Dir(w.st.DBPath())}
	}
	return fmt.Errorf("writing to %s: %w", w.st.DBPath(), err)
}

func (w *writer) rollback(ctx context.Context) {
	if w.tx != nil {
		w.tx.Rollback(ctx)
		w.tx = nil
	}
	w.txn = tally{}
}

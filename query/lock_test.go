package query

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"
)

func openT(t *testing.T, db string, readOnly bool, timeout time.Duration) (*Store, error) {
	t.Helper()
	return Open(context.Background(), db, Options{ReadOnly: readOnly, LockTimeout: timeout})
}

// openWaiting opens db in the background, and returns once the open is
// waiting for the store; done receives its outcome.
func openWaiting(t *testing.T, db string, readOnly bool, then func(*Store, error)) {
	t.Helper()
	waiting := make(chan struct{})
	go func() {
		st, err := Open(context.Background(), db, Options{ReadOnly: readOnly, LockTimeout: 30 * time.Second,
			Waiting: func(string) { close(waiting) }})
		then(st, err)
	}()
	select {
	case <-waiting:
	case <-time.After(30 * time.Second):
		t.Fatal("the open never waited")
	}
}

func newStore(t *testing.T) string {
	t.Helper()
	db := filepath.Join(t.TempDir(), "orchstat.duckdb")
	st, err := openT(t, db, false, 0)
	if err != nil {
		t.Fatal(err)
	}
	st.Close()
	return db
}

func isLockError(err error) bool {
	var le *LockError
	return errors.As(err, &le)
}

// TestLockIsFirstComeFirstServed: processes waiting for the store get it
// in the order they came, and a newcomer does not slip in ahead of them
// when the holder lets go. Before the queue, waiters polled with a backoff
// of up to a second and any newcomer could take the lock in between.
func TestLockIsFirstComeFirstServed(t *testing.T) {
	db := newStore(t)
	holder, err := openT(t, db, false, 0)
	if err != nil {
		t.Fatal(err)
	}
	order := make(chan string, 2)
	for _, name := range []string{"first", "second"} {
		openWaiting(t, db, false, func(st *Store, err error) {
			if err != nil {
				order <- name + ": " + err.Error()
				return
			}
			order <- name
			time.Sleep(20 * time.Millisecond) // hold it a moment
			st.Close()
		})
	}
	holder.Close()
	if st, err := openT(t, db, false, 0); err == nil {
		st.Close()
		t.Fatal("a newcomer took the store ahead of two processes waiting for it")
	} else if !isLockError(err) {
		t.Fatal(err)
	}
	if a, b := <-order, <-order; a != "first" || b != "second" {
		t.Fatalf("served %q then %q", a, b)
	}
}

// TestReadersShareTheStore: any number of readers read at once, and a
// writer waiting for them is not starved by readers that come after it.
func TestReadersShareTheStore(t *testing.T) {
	db := newStore(t)
	r1, err := openT(t, db, true, 0)
	if err != nil {
		t.Fatal(err)
	}
	r2, err := openT(t, db, true, 0)
	if err != nil {
		t.Fatalf("a second reader waited for the first: %v", err)
	}
	var one int
	if err := r2.conn.QueryRowContext(context.Background(), "SELECT 1").Scan(&one); err != nil {
		t.Fatal(err)
	}
	got := make(chan error, 1)
	openWaiting(t, db, false, func(w *Store, err error) {
		if err == nil {
			w.Close()
		}
		got <- err
	})
	if r3, err := openT(t, db, true, 0); err == nil {
		r3.Close()
		t.Fatal("a reader went ahead of the writer waiting before it")
	} else if !isLockError(err) {
		t.Fatal(err)
	}
	r1.Close()
	r2.Close()
	if err := <-got; err != nil {
		t.Fatalf("the writer never got the store: %v", err)
	}
}

// TestDeadProcessesLeaveTheQueue: a ticket nobody holds (its process died)
// does not block anyone.
func TestDeadProcessesLeaveTheQueue(t *testing.T) {
	db := newStore(t)
	if err := os.MkdirAll(db+".queue", 0o755); err != nil {
		t.Fatal(err)
	}
	dead := filepath.Join(db+".queue", "00000000000000000001-0000000001-w")
	if err := os.WriteFile(dead, []byte("process 1 (orchstat ingest)\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	st, err := openT(t, db, false, 0)
	if err != nil {
		t.Fatalf("a dead process's ticket blocked the store: %v", err)
	}
	st.Close()
	if _, err := os.Stat(dead); !os.IsNotExist(err) {
		t.Fatal("the dead ticket was not removed")
	}
	if es, _ := os.ReadDir(db + ".queue"); len(es) != 0 {
		t.Fatalf("tickets left behind: %v", es)
	}
}

// TestSnapshotReadersHoldNoLock: a reader of a snapshot keeps no writer
// waiting (a long `orchstat sql` made `check` give up), reads the store as
// it was when it opened, and leaves no copy behind.
func TestSnapshotReadersHoldNoLock(t *testing.T) {
	db := newStore(t)
	ctx := context.Background()
	r, err := Open(ctx, db, Options{ReadOnly: true, Snapshot: true})
	if err != nil {
		t.Fatal(err)
	}
	w, err := openT(t, db, false, 0)
	if err != nil {
		t.Fatalf("a writer waited for a snapshot reader: %v", err)
	}
	if _, err := w.conn.ExecContext(ctx, `INSERT INTO meta VALUES ('written', 'after the snapshot')`); err != nil {
		t.Fatal(err)
	}
	w.Close()
	var n int
	if err := r.conn.QueryRowContext(ctx, `SELECT count(*) FROM meta WHERE key = 'written'`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 0 {
		t.Fatal("the snapshot saw a later write")
	}
	r.Close()
	if _, err := os.Stat(db + ".snapshots"); !os.IsNotExist(err) {
		t.Fatalf("the snapshot was left behind (%v)", err)
	}

	// A reader that died leaves its copy unlocked; the next one removes it.
	os.MkdirAll(db+".snapshots", 0o755)
	stale := filepath.Join(db+".snapshots", "123.duckdb")
	os.WriteFile(stale, []byte("x"), 0o644)
	r, err = Open(ctx, db, Options{ReadOnly: true, Snapshot: true})
	if err != nil {
		t.Fatal(err)
	}
	r.Close()
	if _, err := os.Stat(stale); !os.IsNotExist(err) {
		t.Fatal("a dead reader's snapshot was not removed")
	}
}

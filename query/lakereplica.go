package query

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/orchstat/orchstat/query/lake"
)

// A lake's first read has no replica to read: it is answered from the
// lake's files (lakeviews.go), and the replica is built apart, by
// BuildReplica in a process of its own that the command starts and does
// not wait for. The replica is built as a file beside its place
// (replicaBuilding) and put in its place whole, once complete, so a read
// never meets a replica half built: a builder killed at any point leaves
// the lake's next read to answer from the files again, and the next
// builder resumes what the killed one had committed.

// replicaBuilding is where the replica at path is built.
func replicaBuilding(path string) string { return path + ".building" }

// ReplicaMissing reports whether the lake's replica at path is still to be
// built.
func ReplicaMissing(path string) bool {
	_, err := os.Stat(path)
	return errors.Is(err, os.ErrNotExist)
}

// BuildReplica builds the replica o.Replica of the whole lake, unless it
// exists, and puts it in place. Another builder at work is left to it: the
// builder's file is locked, and the lock is not waited for.
func BuildReplica(ctx context.Context, lk lake.Lake, o LakeOptions) (LakeRead, error) {
	var got LakeRead
	if !ReplicaMissing(o.Replica) {
		return got, nil
	}
	objs, err := listLake(ctx, lk)
	if err != nil {
		return got, err
	}
	building := replicaBuilding(o.Replica)
	st, err := openReplica(ctx, LakeOptions{Replica: building})
	if err != nil {
		return got, err
	}
	// Another builder may have finished between the check and the lock.
	if !ReplicaMissing(o.Replica) {
		st.Close()
		return got, nil
	}
	if err := syncReplica(ctx, st, lk, objs, LakeOptions{Replica: building, Memory: o.Memory}, &got); err != nil {
		st.Close()
		return got, err
	}
	if err := st.Checkpoint(ctx); err != nil {
		st.Close()
		return got, err
	}
	return got, st.closeInto(o.Replica)
}

// closeInto closes the store and renames its file to path while it still
// holds orchstat's lock, so no other process has the file open as it
// moves: DuckDB names its log after the file's path, and a log left
// beside the old name would be lost to the new one.
func (s *Store) closeInto(path string) error {
	err := s.conn.Close()
	if e := s.db.Close(); err == nil {
		err = e
	}
	if err == nil {
		if _, e := os.Stat(s.Path + ".wal"); e == nil {
			err = fmt.Errorf("replica %s: its log %s.wal is left after its checkpoint; not put in place", s.Path, s.Path)
		}
	}
	if err == nil {
		err = os.Rename(s.Path, path)
	}
	s.lock.unlock()
	s.ticket.leave()
	s.snapshot.remove()
	return err
}

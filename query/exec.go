package query

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/orchstat/orchstat/model/rows"
)

// ExecInvocation is one `orchstat exec` invocation as exec_invocations
// keeps it: what the retry handler's cascade detection counts across invocations.
type ExecInvocation struct {
	StartedAt, FinishedAt time.Time
	RunID, Op, Command    string
	// Dir is the working directory the command ran in. With Command it
	// keys the cascade: failures of unrelated commands, or of the same
	// command in another checkout, say nothing about this one.
	Dir      string
	Success  bool
	Attempts int
	// Reason is why the invocation stopped: "passed", or the retry core's
	// reason for not retrying its last failure.
	Reason string
}

// RecordExecInvocation appends inv, then reads the outcomes of the last n
// invocations of the same command in the same directory, inv included
// (RecentExecOutcomes), in one transaction: invocations that finish
// together each count the other exactly once, whichever writes first.
func (st *Store) RecordExecInvocation(ctx context.Context, inv ExecInvocation, n int) ([]bool, error) {
	var out []bool
	err := st.inTransaction(ctx, "recording the exec invocation", func() error {
		if _, err := st.conn.ExecContext(ctx, `INSERT INTO exec_invocations
			(started_at, finished_at, run_id, op, command, success, attempts, reason, dir) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			inv.StartedAt.UTC(), inv.FinishedAt.UTC(), rows.StoreString(inv.RunID), inv.Op, rows.StoreString(inv.Command), inv.Success, inv.Attempts, inv.Reason,
			rows.StoreString(inv.Dir)); err != nil {
			return err
		}
		var err error
		out, err = recentExecOutcomes(ctx, st.conn, inv.Command, inv.Dir, n)
		return err
	})
	return out, err
}

// ResetExecCascade forgets the recorded invocations of command in dir, so
// that its cascade detection starts afresh; command "" forgets every
// invocation. It returns how many were forgotten.
func (st *Store) ResetExecCascade(ctx context.Context, command, dir string) (int64, error) {
	var n int64
	err := st.inTransaction(ctx, "resetting the exec cascade", func() error {
		r, err := st.conn.ExecContext(ctx, `DELETE FROM exec_invocations WHERE $1 = '' OR (command = $1 AND dir = $2)`,
			rows.StoreString(command), rows.StoreString(dir))
		if err != nil {
			return err
		}
		n, err = r.RowsAffected()
		return err
	})
	return n, err
}

// RecentExecOutcomes is whether each of the last n invocations of command
// in dir failed, on the store's connection; exec's write transaction reads
// them with recentExecOutcomes on its own.
func (s *Store) RecentExecOutcomes(ctx context.Context, command, dir string, n int) ([]bool, error) {
	return recentExecOutcomes(ctx, s.conn, command, dir, n)
}

// recentExecOutcomes is whether each of the last n invocations of command
// in dir failed, oldest first, as retry.Cascade.Detect reads them; n <= 0
// is every such invocation. The last are those that finished last;
// invocations that finished in the same microsecond keep the order they
// were recorded in.
func recentExecOutcomes(ctx context.Context, q querier, command, dir string, n int) ([]bool, error) {
	limit := ""
	if n > 0 {
		limit = fmt.Sprintf(" LIMIT %d", n)
	}
	rs, err := q.QueryContext(ctx, `SELECT NOT coalesce(success, false) FROM exec_invocations
		WHERE command = $1 AND dir = $2
		ORDER BY finished_at DESC NULLS LAST, rowid DESC`+limit, rows.StoreString(command), rows.StoreString(dir))
	if err != nil {
		return nil, fmt.Errorf("reading exec invocations: %w", err)
	}
	defer rs.Close()
	var out []bool
	for rs.Next() {
		var failed bool
		if err := rs.Scan(&failed); err != nil {
			return nil, fmt.Errorf("reading exec invocations: %w", err)
		}
		out = append(out, failed)
	}
	if err := rs.Err(); err != nil {
		return nil, fmt.Errorf("reading exec invocations: %w", err)
	}
	slices.Reverse(out)
	return out, nil
}

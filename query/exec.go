package query

import (
	"context"
	"fmt"
	"slices"
	"time"
)

// ExecInvocation is one `orchstat exec` invocation as exec_invocations
// keeps it: what seed 001's cascade detection counts across invocations.
type ExecInvocation struct {
	StartedAt, FinishedAt time.Time
	RunID, Op, Command    string
	Success               bool
	Attempts              int
	// Reason is why the invocation stopped: "passed", or the retry core's
	// reason for not retrying its last failure.
	Reason string
}

// RecordExecInvocation appends inv, then reads the outcomes of the last n
// invocations, inv included (RecentExecOutcomes), in one transaction:
// invocations that finish together each count the other exactly once,
// whichever writes first.
func RecordExecInvocation(ctx context.Context, st *Store, inv ExecInvocation, n int) ([]bool, error) {
	var out []bool
	err := st.inTransaction(ctx, "recording the exec invocation", func() error {
		if _, err := st.Conn.ExecContext(ctx, `INSERT INTO exec_invocations VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
			inv.StartedAt.UTC(), inv.FinishedAt.UTC(), StoreString(inv.RunID), inv.Op, StoreString(inv.Command), inv.Success, inv.Attempts, inv.Reason); err != nil {
			return err
		}
		var err error
		out, err = RecentExecOutcomes(ctx, st.Conn, n)
		return err
	})
	return out, err
}

// RecentExecOutcomes is whether each of the last n exec invocations
// failed, oldest first, as retry.Cascade.Detect reads them; n <= 0 is
// every invocation. The last are those that finished last; invocations
// that finished in the same microsecond keep the order they were recorded in.
func RecentExecOutcomes(ctx context.Context, q querier, n int) ([]bool, error) {
	limit := ""
	if n > 0 {
		limit = fmt.Sprintf(" LIMIT %d", n)
	}
	rs, err := q.QueryContext(ctx, `SELECT NOT coalesce(success, false) FROM exec_invocations
		ORDER BY finished_at DESC NULLS LAST, rowid DESC`+limit)
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

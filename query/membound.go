package query

import (
	"context"
	"fmt"
)

// exportMemory is DuckDB's memory limit while an export writes the lake's
// files; DuckDB spills what does not fit to the store's .tmp folder.
const exportMemory = "128MB"

// boundMemory sets DuckDB's memory limit to limit, and lets it write rows
// in any order (which bounded COPYs and INSERTs need: a lake file's rows
// and a table's have none), until restore. before is the limit it had.
// DuckDB refuses a SET in a transaction that failed: call restore after
// the transaction ends.
func (s *Store) boundMemory(ctx context.Context, limit string) (before string, restore func(), err error) {
	if before, err = s.MemoryLimit(ctx); err != nil {
		return "", nil, err
	}
	restore = func() {
		ctx := context.WithoutCancel(ctx)
		// Out of the bound first: even reading a setting needs memory.
		s.SetMemoryLimit(ctx, before)
		s.exec(ctx, `RESET preserve_insertion_order`)
		// DuckDB prints the limit rounded, so setting it back from its
		// print drifts; RESET is exact when the limit was the default,
		// as it is unless an ingest in this process bounds its own.
		s.exec(ctx, `RESET memory_limit`)
		if now, err := s.MemoryLimit(ctx); err == nil && now != before {
			s.SetMemoryLimit(ctx, before)
		}
	}
	for _, q := range []string{`SET preserve_insertion_order = false`, `SET memory_limit = ` + quoteSQL(limit)} {
		if err := s.exec(ctx, q); err != nil {
			restore()
			return "", nil, err
		}
	}
	return before, restore, nil
}

// oneThread runs DuckDB's queries on this store's connection on one
// thread until restore, which puts back the thread count it had. DuckDB
// refuses a SET in a transaction that failed: call restore after the
// transaction ends.
func (s *Store) oneThread(ctx context.Context) (restore func() error, err error) {
	var threads int64
	if err := s.conn.QueryRowContext(ctx, `SELECT current_setting('threads')`).Scan(&threads); err != nil {
		return nil, fmt.Errorf("reading DuckDB's thread count: %w", err)
	}
	if threads <= 1 {
		return func() error { return nil }, nil
	}
	if _, err := s.conn.ExecContext(ctx, `SET threads = 1`); err != nil {
		return nil, err
	}
	return func() error {
		_, err := s.conn.ExecContext(context.WithoutCancel(ctx), fmt.Sprintf(`SET threads = %d`, threads))
		return err
	}, nil
}

package query

import (
	"context"
	"strings"
)

// boundedMemory is DuckDB's memory limit while orchstat moves a whole
// store's rows at once (an export, the first read of a lake into its
// replica): DuckDB spills what does not fit to the store's .tmp folder.
const boundedMemory = "128MB"

// boundMemory sets DuckDB's memory limit to limit, and lets it write rows
// in any order (which bounded COPYs and INSERTs need: a lake file's rows
// and a table's have none), until restore. before is the limit it had.
func (s *Store) boundMemory(ctx context.Context, limit string) (before string, restore func(), err error) {
	if before, err = s.MemoryLimit(ctx); err != nil {
		return "", nil, err
	}
	for _, q := range []string{`SET preserve_insertion_order = false`, `SET memory_limit = ` + quoteSQL(limit)} {
		if err := s.exec(ctx, q); err != nil {
			return "", nil, err
		}
	}
	return before, func() {
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
	}, nil
}

func isOutOfMemory(err error) bool {
	return err != nil && strings.Contains(err.Error(), "Out of Memory Error")
}

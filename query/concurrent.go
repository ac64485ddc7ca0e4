package query

import (
	"context"
	"database/sql"
	"fmt"
	"runtime"

	"github.com/orchstat/orchstat/model/reports"
)

// ReportConcurrently computes Report's report, its parts spread over one
// connection of the store per CPU, each query on one DuckDB thread. The
// report is a handful of small queries, and at the scale orchstat is
// measured at (benchmarks/, 20,000 runs) each table they read fits in one
// of DuckDB's row groups (122,880 rows), which one thread scans: DuckDB's
// other threads then mostly set up hash tables of their own, a third of
// the report's CPU for no gain in time. Queries side by side use the
// cores instead. The store's thread count is restored afterwards.
func (s *Store) ReportConcurrently(ctx context.Context, f Filter) (*reports.Report, error) {
	restore, err := s.oneThread(ctx)
	if err != nil {
		return nil, err
	}
	defer restore()
	setup, err := s.pricing(ctx)
	if err != nil {
		return nil, err
	}
	r, parts := reportParts(s.scoped(f))
	if err := runParts(ctx, s.db, min(runtime.NumCPU(), len(parts)), parts, setup); err != nil {
		return nil, err
	}
	return r, nil
}

// runParts runs parts on conns connections of db at once, each connection
// taking the next part when done with its last. The first error stops the
// rest and is returned.
func runParts(ctx context.Context, db *sql.DB, conns int, parts []part, setup []stmt) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	todo := make(chan part, len(parts))
	for _, p := range parts {
		todo <- p
	}
	close(todo)
	errs := make(chan error, conns)
	for range conns {
		go func() { errs <- runOn(ctx, db, todo, setup) }()
	}
	var first error
	for range conns {
		if err := <-errs; err != nil && first == nil {
			first = err
			cancel()
		}
	}
	return first
}

// runOn runs parts from todo on a connection of its own until none is
// left.
func runOn(ctx context.Context, db *sql.DB, todo <-chan part, setup []stmt) error {
	c, err := db.Conn(ctx)
	if err != nil {
		return fmt.Errorf("opening a connection to the store: %w", cleanDuckErr(err))
	}
	defer c.Close()
	// priced_calls is temporary, so each connection makes its own.
	if err := applyPricing(ctx, c, setup); err != nil {
		return err
	}
	for p := range todo {
		if err := p(ctx, c); err != nil {
			return err
		}
	}
	return nil
}

package query

import (
	"context"
	"database/sql"
	"fmt"
	"maps"
	"slices"

	"github.com/orchstat/orchstat/model/episode"
	"github.com/orchstat/orchstat/model/failure"
	"github.com/orchstat/orchstat/model/reports"
)

// Seams for query's external tests, compiled into its tests only.

// Querier is what the read models run on.
type Querier = querier

// ConnOf is the store's connection, for tests that arrange rows or
// settings the read models do not cover.
func ConnOf(st *Store) *sql.Conn { return st.conn }

// EpisodesOn is Episodes on any querier: a test can hide the driver behind
// one to make Episodes read through database/sql instead of Arrow.
func EpisodesOn(ctx context.Context, q Querier, f Filter, classify func(string) failure.Class) ([]episode.Episode, error) {
	return episodes(ctx, q, f, classify)
}

// AfterTests run once every test has: they remove fixtures that tests
// share (see sharedDatasets).
var AfterTests []func()

// CountsOf names the counts a family's query computes for each group: the
// columns (or, for calls, the sums) the catalog's metrics are made of.
func CountsOf(ctx context.Context, st *Store, family reports.Family) ([]string, error) {
	var cte string
	var args []any
	var query string
	switch family {
	case reports.FamilyTrace:
		cte, args = Filter{}.scope("'all'")
		query = metricsSQL("true")
	case reports.FamilyRecord:
		cte, args = Filter{}.recordScope("'all'")
		query = recordMetricsSQL()
	case reports.FamilyCall:
		return slices.Sorted(maps.Keys(callCountsOf(&reports.CallRow{}, callCounts{}))), nil
	default:
		return nil, fmt.Errorf("no query computes %q metrics", family)
	}
	rs, err := st.conn.QueryContext(ctx, "WITH "+cte+query, args...)
	if err != nil {
		return nil, err
	}
	defer rs.Close()
	cols, err := rs.Columns()
	if err != nil {
		return nil, err
	}
	return cols[1:], nil // the group's key first
}

// SetFigures makes the store's reads use its kept figures (on) or compute
// them from the events (off), as they do on a store an older orchstat
// made, and returns what puts it back.
func SetFigures(st *Store, on bool) (restore func()) {
	was := st.figures
	st.figures = on
	return func() { st.figures = was }
}

package query

import (
	"context"
	"database/sql"

	"github.com/orchstat/orchstat/model/episode"
	"github.com/orchstat/orchstat/model/failure"
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

package ingest

import (
	"context"
	"errors"

	"github.com/orchstat/orchstat/query"
)

type arrowBulk struct{ st *query.Store }

func newArrowBulk(ctx context.Context, st *query.Store) (*arrowBulk, error) {
	return nil, errors.New("arrow bulk path not built yet")
}

func (ab *arrowBulk) appendEvents(ctx context.Context, b *batch) error { return nil }
func (ab *arrowBulk) close() error                                     { return nil }

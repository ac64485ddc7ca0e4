package ruletest

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
)

// testStore is the one store the tests of a worker share, cleared before
// each: creating a store's schema cost about 0.15 s, most of a test's time.
type testStore struct {
	open        func(ctx context.Context, path string) (Store, error)
	appendTrace TraceFunc
	dir         string
	st          Store
}

// fresh returns the store emptied, and a new directory for the test's
// files.
func (s *testStore) fresh(ctx context.Context) (Store, string, error) {
	if s.st == nil {
		dir, err := os.MkdirTemp("", "orchstat-rules-test-")
		if err != nil {
			return nil, "", err
		}
		s.dir = dir
		if s.st, err = s.open(ctx, filepath.Join(dir, "orchstat.duckdb")); err != nil {
			s.st = nil
			return nil, "", err
		}
	} else if err := s.st.Clear(ctx); err != nil {
		// A store that cannot be cleared is not reused: the next test
		// starts from a new one.
		s.close()
		return nil, "", fmt.Errorf("clearing the test store: %w", err)
	}
	tmp, err := os.MkdirTemp(s.dir, "test-")
	return s.st, tmp, err
}

func (s *testStore) close() {
	if s.st != nil {
		s.st.Close()
		s.st = nil
	}
	if s.dir != "" {
		os.RemoveAll(s.dir)
		s.dir = ""
	}
}

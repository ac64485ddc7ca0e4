package query

import (
	"context"
	"fmt"
	"slices"
	"sort"

	"github.com/orchstat/orchstat/model/factory/spec"
)

// RecordedStages is every stage the records of system ("" every system)
// name, as the report names them: the stages of attempts, the stages
// attempts failed at, and the stages runs ended at.
func (s *Store) RecordedStages(ctx context.Context, system string) ([]string, error) {
	rs, err := s.conn.QueryContext(ctx, `SELECT stage FROM attempt_stages WHERE $1 = '' OR system = $1
	  UNION SELECT stage FROM attempts WHERE $1 = '' OR system = $1
	  UNION SELECT ended_stage FROM attempt_runs WHERE $1 = '' OR system = $1`, system)
	if err != nil {
		return nil, fmt.Errorf("reading the recorded stages: %w", err)
	}
	defer rs.Close()
	var out []string
	for rs.Next() {
		var s *string
		if err := rs.Scan(&s); err != nil {
			return nil, err
		}
		if s != nil && *s != "" && !slices.Contains(out, spec.ReportStage(*s)) {
			out = append(out, spec.ReportStage(*s))
		}
	}
	sort.Strings(out)
	return out, rs.Err()
}

package query

import (
	"context"
	"fmt"
	"slices"
	"sort"

	"github.com/orchstat/orchstat/ingest/factory"
)

// failureStages maps the factory's failure-brief stages, which name how
// an attempt failed, to the pipeline stage the report's Stages table
// shows (ingest/factory's record_stages names), so that a user asks about
// "verify" as the report calls it. Brief stages with no pipeline stage
// (preflight, exception, ...) keep their names.
var failureStages = map[string]string{
	"write_failed":       factory.StageWrite,
	"patch_apply_failed": factory.StageApply,
	"verify_failed":      factory.StageVerify,
	"acceptance_failed":  factory.StageAcceptance,
}

// ReportStage is the report's name for a stage a record names.
func ReportStage(stage string) string {
	if s, ok := failureStages[stage]; ok {
		return s
	}
	return stage
}

// StageAliases is every name records may give the report's stage, itself
// first.
func StageAliases(stage string) []string {
	out := []string{stage}
	for raw, s := range failureStages {
		if s == stage {
			out = append(out, raw)
		}
	}
	sort.Strings(out[1:])
	return out
}

// recordedStages is every stage the records of system ("" every system)
// name, as the report names them: the stages of attempts, the stages
// attempts failed at, and the stages runs ended at.
func recordedStages(ctx context.Context, q querier, system string) ([]string, error) {
	rs, err := q.QueryContext(ctx, `SELECT stage FROM attempt_stages WHERE $1 = '' OR system = $1
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
		if s != nil && *s != "" && !slices.Contains(out, ReportStage(*s)) {
			out = append(out, ReportStage(*s))
		}
	}
	sort.Strings(out)
	return out, rs.Err()
}

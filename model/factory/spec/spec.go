// Package spec holds what the factory (llm-contract-harness)
// itself defines, written once: the stages of an attempt, and the
// failure-brief stages that name how an attempt failed at one of them.
// The reader (ingest/factory), the store's stage queries, recommend and
// shell completion all take them from here. The package imports nothing
// of orchstat's, so any stage may stand on it.
package spec

import "sort"

// Stage names of record_stages: the factory's write step (the patch
// factory's patch apply), then its verify and acceptance commands, in the
// order an attempt runs them.
const (
	StageWrite      = "write"
	StageApply      = "apply"
	StageVerify     = "verify"
	StageAcceptance = "acceptance"
)

// failureStages maps the factory's failure-brief stages, which name how
// an attempt failed, to the pipeline stage the report's Stages table
// shows (the record_stages names above), so that a user asks about
// "verify" as the report calls it. Brief stages with no pipeline stage
// (preflight, exception, ...) keep their names.
var failureStages = map[string]string{
	"write_failed":       StageWrite,
	"patch_apply_failed": StageApply,
	"verify_failed":      StageVerify,
	"acceptance_failed":  StageAcceptance,
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

package query

import (
	"context"

	"github.com/orchstat/orchstat/model/episode"
	"github.com/orchstat/orchstat/model/failure"
	"github.com/orchstat/orchstat/model/reports"
)

// The store's read models. Each runs on the store's connection; the
// lower-case function it calls takes any querier, so a report can run its
// parts on connections of their own (see ReportConcurrently).

// FactoryAudit audits the factory records of the filtered runs; see factoryAudit.
func (s *Store) FactoryAudit(ctx context.Context, f Filter) (*reports.FactoryAudit, error) {
	return factoryAudit(ctx, s.conn, f)
}

// Episodes reads the filtered runs' retry episodes, for replay; see episodes.
func (s *Store) Episodes(ctx context.Context, f Filter, classify func(string) failure.Class) ([]episode.Episode, error) {
	if err := s.priced(ctx); err != nil {
		return nil, err
	}
	return episodes(ctx, s.conn, f, classify)
}

// RecentExecOutcomes is whether each of the last n invocations of command in dir failed; see recentExecOutcomes.
func (s *Store) RecentExecOutcomes(ctx context.Context, command, dir string, n int) ([]bool, error) {
	return recentExecOutcomes(ctx, s.conn, command, dir, n)
}

// Metrics computes the METRICS.md metrics over the filtered runs; see metrics.
func (s *Store) Metrics(ctx context.Context, f Filter) (reports.Metrics, error) {
	return metrics(ctx, s.conn, f)
}

// Report computes the whole report for the filtered runs, one query at a time (see ReportConcurrently); see report.
func (s *Store) Report(ctx context.Context, f Filter) (*reports.Report, error) {
	if err := s.priced(ctx); err != nil {
		return nil, err
	}
	return report(ctx, s.conn, f)
}

// KnownProviders lists the providers a provider filter can name; see knownProviders.
func (s *Store) KnownProviders(ctx context.Context) ([]string, error) {
	return knownProviders(ctx, s.conn)
}

// KnownRuns lists the run ids a run filter can name; see knownRuns.
func (s *Store) KnownRuns(ctx context.Context) ([]string, error) {
	return knownRuns(ctx, s.conn)
}

// AttemptRuns reads the selected record runs with their attempts, for replay; see attemptRuns.
func (s *Store) AttemptRuns(ctx context.Context, f Filter) (*RecordedRuns, error) {
	return attemptRuns(ctx, s.conn, f)
}

// ScopeOf counts the store's runs, and those of them not found under paths; see scopeOf.
func (s *Store) ScopeOf(ctx context.Context, paths []string) (reports.Scope, error) {
	return scopeOf(ctx, s.conn, paths)
}

// RecordedStages is every stage the records of system ("" every system) name; see recordedStages.
func (s *Store) RecordedStages(ctx context.Context, system string) ([]string, error) {
	return recordedStages(ctx, s.conn, system)
}

// StageHistory reads the stage outcomes of system's recorded runs under paths; see stageHistory.
func (s *Store) StageHistory(ctx context.Context, system string, paths []string) ([]episode.StageOutcome, []string, error) {
	return stageHistory(ctx, s.conn, system, paths)
}

// StageAttempts counts the recorded failures of item at stage; see stageAttempts.
func (s *Store) StageAttempts(ctx context.Context, system, item, stage string) (int, error) {
	return stageAttempts(ctx, s.conn, system, item, stage)
}

package query

import (
	"context"
	"database/sql"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/orchstat/orchstat/model/episode"
	"github.com/orchstat/orchstat/model/events"

	"github.com/orchstat/orchstat/model/failure"
)

// MaxRecordedRetries bounds the retries one provider request is taken to
// have made. The orchestrator's client makes 0..maxRetries (3 by default);
// a larger count is a damaged or foreign record, and taking it at its word
// would give one request millions of attempts. Counts are clamped into
// [0, MaxRecordedRetries], NaN and negative counts read as 0, and fractions
// are rounded down.
const MaxRecordedRetries = 100

// Episodes reads the filtered runs' retry episodes, for replay, on the
// store's connection with the calls priced; see episodes.
func (s *Store) Episodes(ctx context.Context, f Filter, classify func(string) failure.Class) ([]episode.Episode, error) {
	if err := s.priced(ctx); err != nil {
		return nil, err
	}
	return episodes(ctx, s.conn, f, classify)
}

// episodes builds the recorded failure episodes of the runs f selects, in
// (Time, ID) order (Kind breaks the tie that cannot happen between kinds'
// ID shapes). As in Metrics, a selected run brings all its episodes: the
// Provider filter selects runs, not requests.
//
// Three kinds come out, each read with one streamed query:
//
//   - episode.KindProvider, one per ProviderRequestFinished, ID
//     "<run>/<file_id>:<line>". See providerEpisodes for attempts and cost.
//   - episode.KindL2, one per run with L2 events, ID "<run>/l2". See
//     l2Episodes.
//   - episode.KindL3, one per (run, L3 step) with CandidateGenerated rows, ID
//     "<run>/l3/<step>". See l3Episodes.
//   - episode.KindProvider again, one per agent call whose attempts the
//     record shows, ID "<system>:<run>/<file_id>:<call>". See callEpisodes.
//
// classify turns a failed request's last error text into its class; it is
// called once per distinct text, so it must be a pure function. A nil
// classify leaves classes empty.
func episodes(ctx context.Context, q querier, f Filter, classify func(string) failure.Class) ([]episode.Episode, error) {
	l2, err := l2Episodes(ctx, q, f)
	if err != nil {
		return nil, err
	}
	if err := initialSignatures(ctx, q, l2); err != nil {
		return nil, err
	}
	l3, err := l3Episodes(ctx, q, f)
	if err != nil {
		return nil, err
	}
	loops := append(l2, l3...)
	slices.SortFunc(loops, episode.Order)
	out, err := providerEpisodes(ctx, q, f, classify, len(loops))
	if err != nil {
		return nil, err
	}
	return withCalls(ctx, q, f, classify, episode.MergeInto(out, loops))
}

// initialSignatures sets each L2 loop's InitialSignature from its run's
// initial verification report: the failure the first iteration repairs.
func initialSignatures(ctx context.Context, q querier, l2 []episode.Episode) error {
	if len(l2) == 0 {
		return nil
	}
	rs, err := q.QueryContext(ctx, `SELECT run_id, arg_max(failure_signature, file_id) FROM verifications
		WHERE phase = 'initial' AND run_id IS NOT NULL GROUP BY run_id`)
	if err != nil {
		return fmt.Errorf("reading initial verifications: %w", err)
	}
	defer rs.Close()
	sig := map[string]string{}
	for rs.Next() {
		var run string
		var s sql.NullString
		if err := rs.Scan(&run, &s); err != nil {
			return fmt.Errorf("reading initial verifications: %w", err)
		}
		sig[run] = s.String
	}
	for i := range l2 {
		l2[i].InitialSignature = sig[l2[i].Run]
	}
	return rs.Err()
}

// queryRow scans the one row of a query.
func queryRow(ctx context.Context, q querier, query string, args []any, dest ...any) error {
	rs, err := q.QueryContext(ctx, query, args...)
	if err != nil {
		return err
	}
	defer rs.Close()
	if !rs.Next() {
		if err := rs.Err(); err != nil {
			return err
		}
		return sql.ErrNoRows
	}
	if err := rs.Scan(dest...); err != nil {
		return err
	}
	return rs.Close()
}

// providerEpisodesSQL reads one row per ProviderRequestFinished of the
// selected runs, in time order, with its attempt count and cost share.
// Sorting on the time alone is much cheaper than on (time, ID) text; the
// few requests that share a timestamp are put in ID order in Go.
//
// Cost: tokens and cost are only in summary.json, per run and provider, so
// a request's cost is an estimate. The run's latest summary file is used
// (as the runs view does). When it has a costs.perProvider entry for the
// request's provider, that cost is spread over the run's attempts to that
// provider; an entry whose cost is null (a local model) gives 0. When the
// summary has per-provider entries but none for this provider, the cost is
// unknown and 0: falling back to the run's total would count the other
// providers' cost twice. Only a summary with no per-provider entries at all
// spreads its total over all the run's attempts. Either way every attempt
// is assumed to cost the same, although a retried 429 likely cost nothing:
// the figure is a share, not a bill. No summary, or no cost in it, gives 0.
const providerEpisodesSQL = `,
pr AS (
  SELECT p.run_id, p.file_id, p.line, p.ts, p.provider, p.model, p.duration_ms, p.success,
    CASE WHEN p.retries IS NULL OR isnan(p.retries) OR p.retries < 0 THEN 0
         WHEN p.retries > %[1]d THEN %[1]d
         ELSE floor(p.retries) END::INTEGER AS retries,
    CASE WHEN p.success IS DISTINCT FROM true THEN p.error END AS error
  FROM provider_request_finishes p JOIN s USING (run_id)),
sf AS (
  SELECT run_id, max(file_id) AS file_id FROM summaries WHERE run_id IN (SELECT run_id FROM s) GROUP BY run_id),
sm AS (
  SELECT sf.run_id, su.cost_usd AS total,
    EXISTS (SELECT 1 FROM summary_costs c WHERE c.file_id = sf.file_id AND c.run_id = sf.run_id) AS per_provider
  FROM sf JOIN summaries su USING (run_id, file_id)),
sc AS (
  SELECT c.run_id, c.provider, any_value(c.cost_usd) AS cost
  FROM summary_costs c JOIN sf USING (run_id, file_id) GROUP BY ALL),
pa AS (SELECT run_id, provider, sum(retries + 1)::BIGINT AS attempts FROM pr GROUP BY ALL),
rate AS (
  SELECT pa.run_id, pa.provider,
    CASE WHEN sm.per_provider THEN coalesce(sc.cost, 0) / pa.attempts
         ELSE coalesce(sm.total, 0) / sum(pa.attempts) OVER (PARTITION BY pa.run_id) END AS per_attempt
  FROM pa JOIN sm USING (run_id)
  LEFT JOIN sc ON sc.run_id = pa.run_id AND sc.provider IS NOT DISTINCT FROM pa.provider)
SELECT pr.run_id, pr.file_id::BIGINT AS file_id, pr.line::BIGINT AS line, pr.ts, pr.provider, pr.model,
  pr.duration_ms::DOUBLE AS duration_ms, pr.success, pr.retries, pr.error,
  (coalesce(rate.per_attempt, 0) * (pr.retries + 1))::DOUBLE AS cost
FROM pr LEFT JOIN rate ON rate.run_id = pr.run_id AND rate.provider IS NOT DISTINCT FROM pr.provider
ORDER BY pr.ts`

// providerEpisodes reads one episode per logical provider request. The
// trace records a request's retry count, outcome and LAST error only, so:
// there are retries+1 attempts (clamped, see MaxRecordedRetries); every
// attempt before the last failed, as it was retried; the last one's OK is
// the request's success, and when it failed its Class is classify(error)
// (error NULL reads as ""). Earlier attempts have Class "": their errors
// were never written down. A success that is missing or not a boolean is
// no success. Duration is durationMs, which covers every attempt and the
// backoff sleeps between them.
//
// The result has room for extra more episodes.
func providerEpisodes(ctx context.Context, q querier, f Filter, classify func(string) failure.Class, extra int) ([]episode.Episode, error) {
	cte, args := f.scope("''")
	// The count sizes the result: growing a slice of a million episodes
	// step by step costs more than the query. It is only a hint.
	var size, attempts int64
	err := queryRow(ctx, q, "WITH "+cte+`
		SELECT count(*), coalesce(sum(least(greatest(coalesce(retries, 0), 0), ?)), 0)::BIGINT + count(*)
		FROM provider_request_finishes JOIN s USING (run_id)`, append(slices.Clip(args), MaxRecordedRetries), &size, &attempts)
	if err != nil {
		return nil, fmt.Errorf("reading provider episodes: %w", err)
	}
	b := &providerBuilder{
		classify: classify,
		out:      make([]episode.Episode, 0, int(size)+extra),
		slab:     make([]episode.Attempt, attempts),
		names:    map[string]string{},
		classes:  map[string]failure.Class{},
	}
	query := "WITH " + cte + fmt.Sprintf(providerEpisodesSQL, MaxRecordedRetries)
	err = b.readRows(ctx, q, query, args)
	if err != nil {
		return nil, fmt.Errorf("reading provider episodes: %w", err)
	}
	return b.finish(), nil
}

// providerRow is one row of providerEpisodesSQL.
type providerRow struct {
	run             string
	fileID, line    int64
	ts              time.Time
	provider, model string
	duration        float64 // ms, NaN when NULL
	success         bool
	retries         int
	err             string
	cost            float64
}

type providerBuilder struct {
	classify func(string) failure.Class
	out      []episode.Episode
	slab     []episode.Attempt // episodes' attempts, allocated in blocks
	names    map[string]string
	classes  map[string]failure.Class
	buf      []byte
}

// intern returns s, copied once, so rows share provider and model names
// and none points into a row buffer.
func (b *providerBuilder) intern(s string) string {
	if v, ok := b.names[s]; ok {
		return v
	}
	v := strings.Clone(s)
	b.names[v] = v
	return v
}

func (b *providerBuilder) add(r *providerRow) {
	n := r.retries + 1
	if n > len(b.slab) { // more rows than counted
		b.slab = make([]episode.Attempt, max(n, 8192))
	}
	att := b.slab[:n:n]
	b.slab = b.slab[n:]
	last := &att[n-1]
	last.OK = r.success
	if !last.OK && b.classify != nil {
		c, ok := b.classes[r.err]
		if !ok {
			text := strings.Clone(r.err)
			c = b.classify(text)
			b.classes[text] = c
		}
		last.Class = c
	}
	b.buf = append(b.buf[:0], r.run...)
	b.buf = append(b.buf, '/')
	b.buf = strconv.AppendInt(b.buf, r.fileID, 10)
	b.buf = append(b.buf, ':')
	b.buf = strconv.AppendInt(b.buf, r.line, 10)
	id := string(b.buf)
	e := episode.Episode{
		Kind:     episode.KindProvider,
		ID:       id,
		Run:      id[:len(r.run)],
		Time:     r.ts.UTC(),
		Provider: b.intern(r.provider),
		Model:    b.intern(r.model),
		Attempts: att,
		Success:  r.success,
		CostUSD:  r.cost,
	}
	if r.duration > 0 && !math.IsInf(r.duration, 0) {
		e.Duration = time.Duration(r.duration * float64(time.Millisecond))
	}
	b.out = append(b.out, e)
}

// finish puts requests that share a timestamp in ID order.
func (b *providerBuilder) finish() []episode.Episode {
	out := b.out
	for i := 0; i < len(out); {
		j := i + 1
		for j < len(out) && out[j].Time.Equal(out[i].Time) {
			j++
		}
		if j-i > 1 {
			slices.SortFunc(out[i:j], episode.Order)
		}
		i = j
	}
	return out
}

func (b *providerBuilder) readRows(ctx context.Context, q querier, query string, args []any) error {
	rs, err := q.QueryContext(ctx, query, args...)
	if err != nil {
		return err
	}
	defer rs.Close()
	var (
		r                       providerRow
		provider, model, errTxt sql.NullString
		dur, cost               sql.NullFloat64
		success                 sql.NullBool
	)
	for rs.Next() {
		if err := rs.Scan(&r.run, &r.fileID, &r.line, &r.ts, &provider, &model, &dur, &success, &r.retries, &errTxt, &cost); err != nil {
			return err
		}
		r.provider, r.model, r.err = provider.String, model.String, errTxt.String
		r.duration, r.success, r.cost = math.NaN(), success.Valid && success.Bool, cost.Float64
		if dur.Valid {
			r.duration = dur.Float64
		}
		b.add(&r)
		if len(b.out)%65536 == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
	}
	return rs.Err()
}

// l2EpisodesSQL streams, per run with L2 events, those events (each with
// the verification report of its iteration), PatchApplyFailed events,
// escalations and RunStopped events, in trace order.
const l2EpisodesSQL = `,
lr AS (SELECT DISTINCT run_id FROM l2_events JOIN s USING (run_id)),
vr AS (
  SELECT run_id, iteration, arg_max(passed, file_id) AS passed, arg_max(failure_signature, file_id) AS sig
  FROM verifications JOIN lr USING (run_id) WHERE phase = 'l2' AND iteration IS NOT NULL GROUP BY ALL)
SELECT run_id, file_id, line, ts, src, type, iteration, a, b, passed, sig FROM (
  SELECT e.run_id, e.file_id, e.line, e.ts, 0 AS src, e.type, e.iteration, e.result AS a, e.patch_path AS b, vr.passed, vr.sig
  FROM l2_events e JOIN lr USING (run_id) LEFT JOIN vr ON vr.run_id = e.run_id AND vr.iteration = e.iteration
  UNION ALL
  SELECT p.run_id, p.file_id, p.line, p.ts, 1, p.type, NULL, p.error, NULL, NULL, NULL
  FROM patch_events p JOIN lr USING (run_id) WHERE p.type = 'PatchApplyFailed'
  UNION ALL
  SELECT x.run_id, x.file_id, x.line, x.ts, 2, 'RunEscalated', NULL, x.from_level, x.reason, NULL, NULL
  FROM escalations x JOIN lr USING (run_id)
  UNION ALL
  SELECT r.run_id, r.file_id, r.line, r.ts, 3, r.type, NULL, r.reason, NULL, NULL, NULL
  FROM run_events r JOIN lr USING (run_id) WHERE r.type = 'RunStopped')
ORDER BY run_id, file_id, line, src`

// l2Episodes reads one episode per run's L2 repair loop: the rows of
// l2EpisodesSQL, in trace order, folded by an episode.L2Reader, which
// says how a loop is read.
func l2Episodes(ctx context.Context, q querier, f Filter) ([]episode.Episode, error) {
	cte, args := f.scope("''")
	rs, err := q.QueryContext(ctx, "WITH "+cte+l2EpisodesSQL, args...)
	if err != nil {
		return nil, fmt.Errorf("reading L2 episodes: %w", err)
	}
	defer rs.Close()
	var r episode.L2Reader
	for rs.Next() {
		var (
			run            string
			fileID         int64
			line           int64
			ts             time.Time
			src            int
			typ, a, b, sig sql.NullString
			iteration      sql.NullFloat64
			passed         sql.NullBool
		)
		if err := rs.Scan(&run, &fileID, &line, &ts, &src, &typ, &iteration, &a, &b, &passed, &sig); err != nil {
			return nil, fmt.Errorf("reading L2 episodes: %w", err)
		}
		ts = ts.UTC()
		r.Run(run)
		switch src {
		case 0: // an L2 event
			r.Event(episode.L2Event{Time: ts, Type: typ.String, Iteration: nanIfNull(iteration),
				Result: a.String, PatchPath: b.String, Passed: passed.Bool, HasPassed: passed.Valid,
				Signature: sig.String, HasSignature: sig.Valid})
		case 1: // PatchApplyFailed
			r.PatchApplyFailed(ts)
		case 2: // RunEscalated
			r.Escalation(ts, a.String, b.String)
		case 3: // RunStopped
			r.Stopped(ts, a.String)
		}
	}
	if err := rs.Err(); err != nil {
		return nil, fmt.Errorf("reading L2 episodes: %w", err)
	}
	return r.Episodes(), nil
}

// nanIfNull is v, NaN when NULL: a number the model reads as absent.
func nanIfNull(v sql.NullFloat64) float64 {
	if !v.Valid {
		return math.NaN()
	}
	return v.Float64
}

// l3EpisodesSQL streams, per run with L3 candidates, the candidates, steps,
// DiagnosisStarted events and patch events, in trace order.
const l3EpisodesSQL = `,
cr AS (SELECT DISTINCT run_id FROM l3_candidates JOIN s USING (run_id))
SELECT run_id, file_id, line, ts, src, type, iteration, flag, a FROM (
  SELECT c.run_id, c.file_id, c.line, c.ts, 0 AS src, NULL AS type, c.iteration, c.valid AS flag, c.provider_id AS a
  FROM l3_candidates c JOIN cr USING (run_id)
  UNION ALL
  SELECT t.run_id, t.file_id, t.line, t.ts, 1, t.type, NULL, t.success, NULL
  FROM steps t JOIN cr USING (run_id)
  UNION ALL
  SELECT d.run_id, d.file_id, d.line, d.ts, 2, d.type, d.iteration, NULL, NULL
  FROM diagnoses d JOIN cr USING (run_id) WHERE d.type = 'DiagnosisStarted'
  UNION ALL
  SELECT p.run_id, p.file_id, p.line, p.ts, 3, p.type, NULL, NULL, p.error
  FROM patch_events p JOIN cr USING (run_id))
ORDER BY run_id, file_id, line, src`

// l3Episodes reads one episode per L3 step with candidates: the rows of
// l3EpisodesSQL, in trace order, folded by an episode.L3Reader, which
// says how a step is read.
func l3Episodes(ctx context.Context, q querier, f Filter) ([]episode.Episode, error) {
	cte, args := f.scope("''")
	rs, err := q.QueryContext(ctx, "WITH "+cte+l3EpisodesSQL, args...)
	if err != nil {
		return nil, fmt.Errorf("reading L3 episodes: %w", err)
	}
	defer rs.Close()
	var r episode.L3Reader
	for rs.Next() {
		var (
			fileID, line int64
			ts           time.Time
			src          int
			typ, a       sql.NullString
			iteration    sql.NullFloat64
			flag         sql.NullBool
			thisRun      string
		)
		if err := rs.Scan(&thisRun, &fileID, &line, &ts, &src, &typ, &iteration, &flag, &a); err != nil {
			return nil, fmt.Errorf("reading L3 episodes: %w", err)
		}
		ts = ts.UTC()
		r.Run(thisRun)
		ok := flag.Valid && flag.Bool
		switch src {
		case 0: // CandidateGenerated
			r.Candidate(nanIfNull(iteration), ts, ok, a.String)
		case 1: // StepStarted or StepFinished
			r.StepEvent(typ.String == events.StepStarted, ts, ok)
		case 2: // DiagnosisStarted
			r.Diagnosis(nanIfNull(iteration))
		case 3: // PatchApplied or PatchApplyFailed
			r.Patch(typ.String == events.PatchApplyFailed, ts, a.String)
		}
	}
	if err := rs.Err(); err != nil {
		return nil, fmt.Errorf("reading L3 episodes: %w", err)
	}
	return r.Episodes(), nil
}

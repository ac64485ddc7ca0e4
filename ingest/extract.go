package ingest

import (
	"bytes"
	"database/sql/driver"
	"encoding/json"
	"math"
	"sort"
	"strings"
	"time"

	"github.com/orchstat/orchstat/model/events"

	"github.com/orchstat/orchstat/ingest/runfile"
	"github.com/orchstat/orchstat/ingest/trace"
	"github.com/orchstat/orchstat/model/records"
	"github.com/orchstat/orchstat/query"
)

// rows collects rows per table for one chunk or batch.
type rows map[string][][]driver.Value

func (r rows) add(t query.Table, row ...driver.Value) { r[t.Name] = append(r[t.Name], row) }

func str(p *string) driver.Value {
	if p == nil {
		return nil
	}
	return *p
}

func num(p *float64) driver.Value {
	if p == nil {
		return nil
	}
	return *p
}

func boolean(p *bool) driver.Value {
	if p == nil {
		return nil
	}
	return *p
}

func tstamp(p *time.Time) driver.Value {
	if p == nil {
		return nil
	}
	return *p
}

func jsonText(v any) driver.Value {
	if v == nil {
		return nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil
	}
	return string(b)
}

// pairing remembers, per run and provider, the model of the latest
// ProviderRequestStarted in a file, which is the model of the requests that
// finish after it (METRICS.md's pairing). Pairing while reading is far
// cheaper than an ASOF join at every report; the map is saved with the
// file's state so an ingest that resumes mid-file pairs the same way.
type pairing map[string]*string

func pairKey(run, provider string) string { return run + "\x00" + provider }

// encode renders the map for file_states.pairing, sorted so equal maps
// encode equally.
func (p pairing) encode() string {
	if len(p) == 0 {
		return ""
	}
	keys := make([]string, 0, len(p))
	for k := range p {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	out := make([][3]any, 0, len(keys))
	for _, k := range keys {
		run, provider, _ := strings.Cut(k, "\x00")
		var model any
		if m := p[k]; m != nil {
			model = *m
		}
		out = append(out, [3]any{run, provider, model})
	}
	b, _ := json.Marshal(out)
	return string(b)
}

func decodePairing(s string) pairing {
	p := pairing{}
	if s == "" {
		return p
	}
	var triples [][3]*string
	if json.Unmarshal([]byte(s), &triples) != nil {
		return p // only orchstat writes this; a bad value just loses pairing
	}
	for _, t := range triples {
		if t[0] != nil && t[1] != nil {
			p[pairKey(*t[0], *t[1])] = t[2]
		}
	}
	return p
}

// extractEvent adds the typed row for a metric-bearing event. Event types
// orchstat does not index are kept only in events.
func extractEvent(r rows, pair pairing, fileID int32, line int64, ev *trace.Event) {
	k := typedRow{r: r, fileID: fileID, line: line, ev: ev}
	switch ev.Type {
	case events.RunStarted, events.RunFinished, events.RunStopped:
		p := trace.ParsePayload(ev.Payload)
		k.add(query.RunEvents, ev.Type, str(p.String("taskId")), str(p.String("status")), str(p.String("reason")))
	case events.RunEscalated:
		p := trace.ParsePayload(ev.Payload)
		k.add(query.Escalations, str(p.String("from")), str(p.String("to")), str(p.String("reason")))
	case events.ProviderSelected:
		p := trace.ParsePayload(ev.Payload)
		k.add(query.ProviderSelections, str(p.String("role")), str(p.String("providerId")))
	case events.ProviderRequestStarted, events.ProviderRequestFinished:
		providerRow(k, pair)
	case events.IterationStarted, events.RepairAttempted, events.IterationFinished:
		p := trace.ParsePayload(ev.Payload)
		k.add(query.L2Events, ev.Type, num(p.Number("iteration")), str(p.String("result")), str(p.String("patchPath")))
	case events.PatchApplied, events.PatchApplyFailed:
		patchRow(k)
	case events.VerificationFinished:
		p := trace.ParsePayload(ev.Payload)
		var failed driver.Value
		if raw := p.Raw("failedChecks"); len(raw) > 0 && raw[0] == '[' {
			failed = string(raw)
		}
		k.add(query.VerificationEvents, boolean(p.Bool("passed")), failed)
	case events.StepStarted, events.StepFinished:
		p := trace.ParsePayload(ev.Payload)
		k.add(query.Steps, ev.Type, num(p.Number("index")), num(p.Number("total")), boolean(p.Bool("success")),
			str(p.String("error")), boolean(p.Bool("judgeInvoked")), str(p.String("judgeReason")))
	case events.CandidateGenerated:
		candidateRow(k)
	case events.DiagnosisStarted, events.DiagnosisCompleted:
		diagnosisRow(k)
	case events.JudgeInvoked, events.JudgeDecided, events.JudgeFailed:
		p := trace.ParsePayload(ev.Payload)
		k.add(query.JudgeCalls, ev.Type, num(p.Number("iteration")), str(p.String("reason")), num(p.Number("candidateCount")),
			idText(p, "winnerCandidateId"), num(p.Number("confidence")), num(p.Number("durationMs")), str(p.String("error")),
			idText(p, "fallbackCandidateId"))
	case events.CommandAttemptFinished, events.CommandFinished:
		execRecord(r, fileID, ev)
	}
}

// typedRow is where an event's typed row goes. Every typed table starts
// with the same key, the event's file, line, run and time.
type typedRow struct {
	r      rows
	fileID int32
	line   int64
	ev     *trace.Event
}

// add adds a row of t: the key, then vals. The row is made at its full
// length at once, as there is one for most events.
func (k typedRow) add(t query.Table, vals ...driver.Value) {
	row := make([]driver.Value, 4, 4+len(vals))
	row[0], row[1], row[2], row[3] = k.fileID, k.line, k.ev.RunID, k.ev.Time
	k.r.add(t, append(row, vals...)...)
}

// providerRow adds a provider request's start or finish. A finish carries
// no model: it is the model of the latest start for its run and provider
// (see pairing).
func providerRow(k typedRow, pair pairing) {
	ev := k.ev
	p := trace.ParsePayload(ev.Payload)
	provider := p.String("provider")
	if ev.Type == events.ProviderRequestStarted {
		model := p.String("model")
		if provider != nil {
			pair[pairKey(ev.RunID, *provider)] = model
		}
		k.add(query.ProviderStarts, str(provider), str(model))
		return
	}
	var model *string
	if provider != nil {
		model = pair[pairKey(ev.RunID, *provider)]
	}
	k.add(query.ProviderFinishes, str(provider), str(model), num(p.Number("durationMs")), boolean(p.Bool("success")),
		num(p.Number("retries")), str(p.String("error")))
}

// patchRow adds a patch's application. The error's type and kind sit in
// nested details; a failure that does not say success is not one.
func patchRow(k typedRow) {
	p := trace.ParsePayload(k.ev.Payload)
	var errType, errKind *string
	if d, ok := p.Object("details"); ok {
		errType = d.String("type")
		if dd, ok := d.Object("details"); ok {
			errKind = dd.String("kind")
		}
	}
	success := p.Bool("success")
	if k.ev.Type == events.PatchApplyFailed && success == nil {
		f := false
		success = &f
	}
	k.add(query.PatchEvents, k.ev.Type, boolean(success), str(p.String("error")), str(errType), str(errKind))
}

// candidateRow adds an L3 candidate, with its patch's size when given.
func candidateRow(k typedRow) {
	p := trace.ParsePayload(k.ev.Payload)
	var files, added, deleted *float64
	if ps, ok := p.Object("patchStats"); ok {
		files, added, deleted = ps.Number("filesChanged"), ps.Number("linesAdded"), ps.Number("linesDeleted")
	}
	k.add(query.L3Candidates, num(p.Number("iteration")), num(p.Number("candidateIndex")), boolean(p.Bool("valid")),
		str(p.String("providerId")), num(p.Number("durationMs")), num(files), num(added), num(deleted))
}

// diagnosisRow adds a diagnosis. Its selected hypothesis is a string or
// an object, kept as JSON text.
func diagnosisRow(k typedRow) {
	p := trace.ParsePayload(k.ev.Payload)
	hyp := p.String("selectedHypothesis")
	if hyp == nil {
		if raw := p.Raw("selectedHypothesis"); len(raw) > 0 && raw[0] == '{' {
			s := string(raw)
			hyp = &s
		}
	}
	k.add(query.Diagnoses, k.ev.Type, num(p.Number("iteration")), str(p.String("reason")), str(hyp))
}

// execRecord maps `orchstat exec`'s events to the record tables, so its
// attempts count with the other systems'. An invocation appended to an
// existing run carries its own invocationId: that is its record run, with
// the trace's run as its batch, so two invocations in one run do not
// merge into one.
func execRecord(r rows, fileID int32, ev *trace.Event) {
	p := trace.ParsePayload(ev.Payload)
	run := ev.RunID
	if id := p.String("invocationId"); id != nil && *id != "" {
		run = *id
	}
	op := str(p.String("op"))
	if ev.Type == events.CommandAttemptFinished {
		passed := p.Bool("passed")
		var stage driver.Value
		if passed != nil && !*passed {
			stage = op
		}
		r.add(query.RecordAttempts, fileID, records.Exec, run, op, "trace", int32Of(p.Number("attempt")), ev.Time, boolean(passed),
			stage, str(p.String("class")), int32Of(p.Number("exitCode")), textOf(p.String("command")), textOf(p.String("stderrTail")),
			str(p.String("signature")), num(p.Number("durationMs")), nil, nil)
		return
	}
	status := p.String("status")
	var started, ended driver.Value
	if s := p.String("startedAt"); s != nil {
		if t, err := trace.ParseTime(*s); err == nil {
			started = t
		}
	}
	if status != nil && *status == "failure" {
		ended = op
	}
	var detail driver.Value
	if len(ev.Payload) > 0 {
		detail = string(ev.Payload)
	}
	r.add(query.RecordRuns, fileID, records.Exec, run, op, "trace", ev.RunID, started, ev.Time, str(status), str(p.String("reason")),
		int32Of(p.Number("attempts")), int32Of(p.Number("maxAttempts")), ended, num(p.Number("durationMs")), nil, nil, detail)
}

// textOf is a string, with "" as NULL as the record formats store it.
func textOf(p *string) driver.Value {
	if p == nil {
		return nil
	}
	return text(*p)
}

// int32Of is a whole number that fits an INTEGER column, else NULL.
func int32Of(p *float64) driver.Value {
	if p == nil || *p != math.Trunc(*p) || *p < math.MinInt32 || *p > math.MaxInt32 {
		return nil
	}
	return int32(*p)
}

// idText keeps candidate ids, which are strings or numbers, as text.
func idText(p trace.Payload, k string) driver.Value {
	if s := p.String(k); s != nil {
		return *s
	}
	if n := p.Number(k); n != nil {
		return string(p.Raw(k))
	}
	return nil
}

func summaryRows(r rows, fileID int32, runID string, s *runfile.Summary, raw []byte) {
	var l3 runfile.L3
	if s.L3 != nil {
		l3 = *s.L3
	}
	var failed any
	if s.FailedChecks != nil {
		failed = s.FailedChecks
	}
	r.add(query.Summaries, fileID, runID, num(s.SchemaVersion), str(s.Status), str(s.StopReason), str(s.ThinkLevel),
		boolean(s.Escalated), tstamp(s.StartedAt), tstamp(s.FinishedAt), num(s.DurationMs), str(s.Goal),
		boolean(s.VerificationPassed), jsonText(failed), num(s.FailedCheckCount), num(s.InputTokens), num(s.OutputTokens), num(s.TotalTokens),
		num(s.CostUSD), num(l3.BestOfN), num(l3.CandidatesGenerated), num(l3.CandidatesEvaluated),
		boolean(l3.PassingCandidateSelected), boolean(l3.ReviewerInvoked), boolean(l3.JudgeInvoked),
		str(l3.JudgeInvocationReason), rawJSON(raw))
	for _, c := range s.Costs {
		r.add(query.SummaryCosts, fileID, runID, c.Provider, num(c.InputTokens), num(c.OutputTokens), num(c.TotalTokens), num(c.CostUSD))
	}
}

func verificationRows(r rows, fileID int32, runID, report string, v *runfile.Verification, raw []byte) {
	var iter driver.Value
	if v.Iteration != nil {
		iter = *v.Iteration
	}
	var failed any
	if v.FailedChecks != nil {
		failed = v.FailedChecks
	}
	var checks driver.Value
	if v.ChecksJSON != nil {
		checks = string(v.ChecksJSON)
	}
	r.add(query.VerificationReports, fileID, runID, report, v.Phase, iter, boolean(v.Passed), str(v.FailureSignature),
		str(v.FailureSummary), jsonText(failed), checks, rawJSON(raw))
}

// rawJSON keeps a run file's text as written; it was parsed already, so it
// is valid JSON.
func rawJSON(raw []byte) driver.Value {
	return string(bytes.TrimPrefix(raw, []byte{0xEF, 0xBB, 0xBF}))
}

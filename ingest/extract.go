package ingest

import (
	"bytes"
	"encoding/json"
	"math"
	"sort"
	"strings"
	"time"

	"github.com/orchstat/orchstat/model/events"

	"github.com/orchstat/orchstat/ingest/runfile"
	"github.com/orchstat/orchstat/ingest/trace"
	"github.com/orchstat/orchstat/model/records"
	"github.com/orchstat/orchstat/model/rows"
)

// jsonText is v as JSON text, or NULL.
func jsonText(v any) *string {
	if v == nil {
		return nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil
	}
	s := string(b)
	return &s
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
func extractEvent(r *rows.Set, pair pairing, fileID int32, line int64, ev *trace.Event) {
	k := rows.EventKey{FileID: fileID, Line: line, RunID: ev.RunID, TS: ev.Time}
	switch ev.Type {
	case events.RunStarted, events.RunFinished, events.RunStopped:
		p := trace.ParsePayload(ev.Payload)
		r.RunEvents = append(r.RunEvents, rows.RunEvent{EventKey: k, Type: ev.Type, TaskID: p.String("taskId"),
			Status: p.String("status"), Reason: p.String("reason")})
	case events.RunEscalated:
		p := trace.ParsePayload(ev.Payload)
		r.Escalations = append(r.Escalations, rows.Escalation{EventKey: k, FromLevel: p.String("from"), ToLevel: p.String("to"),
			Reason: p.String("reason")})
	case events.ProviderSelected:
		p := trace.ParsePayload(ev.Payload)
		r.ProviderSelections = append(r.ProviderSelections, rows.ProviderSelection{EventKey: k, Role: p.String("role"),
			ProviderID: p.String("providerId")})
	case events.ProviderRequestStarted, events.ProviderRequestFinished:
		providerRow(r, k, ev, pair)
	case events.IterationStarted, events.RepairAttempted, events.IterationFinished:
		p := trace.ParsePayload(ev.Payload)
		r.L2Events = append(r.L2Events, rows.L2Event{EventKey: k, Type: ev.Type, Iteration: p.Number("iteration"),
			Result: p.String("result"), PatchPath: p.String("patchPath")})
	case events.PatchApplied, events.PatchApplyFailed:
		patchRow(r, k, ev)
	case events.VerificationFinished:
		p := trace.ParsePayload(ev.Payload)
		var failed *string
		if raw := p.Raw("failedChecks"); len(raw) > 0 && raw[0] == '[' {
			s := string(raw)
			failed = &s
		}
		r.VerificationEvents = append(r.VerificationEvents, rows.VerificationEvent{EventKey: k, Passed: p.Bool("passed"), FailedChecks: failed})
	case events.StepStarted, events.StepFinished:
		p := trace.ParsePayload(ev.Payload)
		r.Steps = append(r.Steps, rows.Step{EventKey: k, Type: ev.Type, StepIndex: p.Number("index"), Total: p.Number("total"),
			Success: p.Bool("success"), Error: p.String("error"), JudgeInvoked: p.Bool("judgeInvoked"), JudgeReason: p.String("judgeReason")})
	case events.CandidateGenerated:
		candidateRow(r, k, ev)
	case events.DiagnosisStarted, events.DiagnosisCompleted:
		diagnosisRow(r, k, ev)
	case events.JudgeInvoked, events.JudgeDecided, events.JudgeFailed:
		p := trace.ParsePayload(ev.Payload)
		r.JudgeCalls = append(r.JudgeCalls, rows.JudgeCall{EventKey: k, Type: ev.Type, Iteration: p.Number("iteration"),
			Reason: p.String("reason"), CandidateCount: p.Number("candidateCount"), WinnerCandidateID: idText(p, "winnerCandidateId"),
			Confidence: p.Number("confidence"), DurationMS: p.Number("durationMs"), Error: p.String("error"),
			FallbackCandidateID: idText(p, "fallbackCandidateId")})
	case events.CommandAttemptFinished, events.CommandFinished:
		execRecord(r, fileID, ev)
	}
}

// providerRow adds a provider request's start or finish. A finish carries
// no model: it is the model of the latest start for its run and provider
// (see pairing).
func providerRow(r *rows.Set, k rows.EventKey, ev *trace.Event, pair pairing) {
	p := trace.ParsePayload(ev.Payload)
	provider := p.String("provider")
	if ev.Type == events.ProviderRequestStarted {
		model := p.String("model")
		if provider != nil {
			pair[pairKey(ev.RunID, *provider)] = model
		}
		r.ProviderStarts = append(r.ProviderStarts, rows.ProviderStart{EventKey: k, Provider: provider, Model: model})
		return
	}
	var model *string
	if provider != nil {
		model = pair[pairKey(ev.RunID, *provider)]
	}
	r.ProviderFinishes = append(r.ProviderFinishes, rows.ProviderFinish{EventKey: k, Provider: provider, Model: model,
		DurationMS: p.Number("durationMs"), Success: p.Bool("success"), Retries: p.Number("retries"), Error: p.String("error")})
}

// patchRow adds a patch's application. The error's type and kind sit in
// nested details; a failure that does not say success is not one.
func patchRow(r *rows.Set, k rows.EventKey, ev *trace.Event) {
	p := trace.ParsePayload(ev.Payload)
	var errType, errKind *string
	if d, ok := p.Object("details"); ok {
		errType = d.String("type")
		if dd, ok := d.Object("details"); ok {
			errKind = dd.String("kind")
		}
	}
	success := p.Bool("success")
	if ev.Type == events.PatchApplyFailed && success == nil {
		f := false
		success = &f
	}
	r.PatchEvents = append(r.PatchEvents, rows.PatchEvent{EventKey: k, Type: ev.Type, Success: success, Error: p.String("error"),
		ErrorType: errType, ErrorKind: errKind})
}

// candidateRow adds an L3 candidate, with its patch's size when given.
func candidateRow(r *rows.Set, k rows.EventKey, ev *trace.Event) {
	p := trace.ParsePayload(ev.Payload)
	var files, added, deleted *float64
	if ps, ok := p.Object("patchStats"); ok {
		files, added, deleted = ps.Number("filesChanged"), ps.Number("linesAdded"), ps.Number("linesDeleted")
	}
	r.L3Candidates = append(r.L3Candidates, rows.L3Candidate{EventKey: k, Iteration: p.Number("iteration"),
		CandidateIndex: p.Number("candidateIndex"), Valid: p.Bool("valid"), ProviderID: p.String("providerId"),
		DurationMS: p.Number("durationMs"), FilesChanged: files, LinesAdded: added, LinesDeleted: deleted})
}

// diagnosisRow adds a diagnosis. Its selected hypothesis is a string or
// an object, kept as JSON text.
func diagnosisRow(r *rows.Set, k rows.EventKey, ev *trace.Event) {
	p := trace.ParsePayload(ev.Payload)
	hyp := p.String("selectedHypothesis")
	if hyp == nil {
		if raw := p.Raw("selectedHypothesis"); len(raw) > 0 && raw[0] == '{' {
			s := string(raw)
			hyp = &s
		}
	}
	r.Diagnoses = append(r.Diagnoses, rows.Diagnosis{EventKey: k, Type: ev.Type, Iteration: p.Number("iteration"),
		Reason: p.String("reason"), SelectedHypothesis: hyp})
}

// execRecord maps `orchstat exec`'s events to the record tables, so its
// attempts count with the other systems'. An invocation appended to an
// existing run carries its own invocationId: that is its record run, with
// the trace's run as its batch, so two invocations in one run do not
// merge into one.
func execRecord(r *rows.Set, fileID int32, ev *trace.Event) {
	p := trace.ParsePayload(ev.Payload)
	run := ev.RunID
	if id := p.String("invocationId"); id != nil && *id != "" {
		run = *id
	}
	op := p.String("op")
	source := "trace"
	ts := ev.Time
	if ev.Type == events.CommandAttemptFinished {
		passed := p.Bool("passed")
		var stage *string
		if passed != nil && !*passed {
			stage = op
		}
		r.RecordAttempts = append(r.RecordAttempts, rows.RecordAttempt{FileID: fileID, System: records.Exec, RunID: run, Item: op,
			Source: &source, Attempt: int32Of(p.Number("attempt")), TS: &ts, Passed: passed, Stage: stage, Class: p.String("class"),
			ExitCode: int32Of(p.Number("exitCode")), Command: textOf(p.String("command")), Error: textOf(p.String("stderrTail")),
			Signature: p.String("signature"), DurationMS: p.Number("durationMs")})
		return
	}
	status := p.String("status")
	var started *time.Time
	if s := p.String("startedAt"); s != nil {
		if t, err := trace.ParseTime(*s); err == nil {
			started = &t
		}
	}
	var ended *string
	if status != nil && *status == "failure" {
		ended = op
	}
	var detail *string
	if len(ev.Payload) > 0 {
		s := string(ev.Payload)
		detail = &s
	}
	batch := ev.RunID
	r.RecordRuns = append(r.RecordRuns, rows.RecordRun{FileID: fileID, System: records.Exec, RunID: run, Item: op, Source: &source,
		Batch: &batch, StartedAt: started, FinishedAt: &ts, Status: status, Verdict: p.String("reason"),
		Attempts: int32Of(p.Number("attempts")), MaxAttempts: int32Of(p.Number("maxAttempts")), EndedStage: ended,
		DurationMS: p.Number("durationMs"), Detail: detail})
}

// textOf is a string, with "" as NULL as the record formats store it.
func textOf(p *string) *string {
	if p == nil {
		return nil
	}
	return text(*p)
}

// int32Of is a whole number that fits an INTEGER column, else NULL.
func int32Of(p *float64) *int32 {
	if p == nil || *p != math.Trunc(*p) || *p < math.MinInt32 || *p > math.MaxInt32 {
		return nil
	}
	n := int32(*p)
	return &n
}

// idText keeps candidate ids, which are strings or numbers, as text.
func idText(p trace.Payload, k string) *string {
	if s := p.String(k); s != nil {
		return s
	}
	if n := p.Number(k); n != nil {
		s := string(p.Raw(k))
		return &s
	}
	return nil
}

func summaryRows(r *rows.Set, fileID int32, runID string, s *runfile.Summary, raw []byte) {
	var l3 runfile.L3
	if s.L3 != nil {
		l3 = *s.L3
	}
	var failed any
	if s.FailedChecks != nil {
		failed = s.FailedChecks
	}
	r.Summaries = append(r.Summaries, rows.Summary{FileID: fileID, RunID: runID, SchemaVersion: s.SchemaVersion, Status: s.Status,
		StopReason: s.StopReason, ThinkLevel: s.ThinkLevel, Escalated: s.Escalated, StartedAt: s.StartedAt, FinishedAt: s.FinishedAt,
		DurationMS: s.DurationMs, Goal: s.Goal, VerificationPassed: s.VerificationPassed, FailedChecks: jsonText(failed),
		FailedCheckCount: s.FailedCheckCount, InputTokens: s.InputTokens, OutputTokens: s.OutputTokens, TotalTokens: s.TotalTokens,
		CostUSD: s.CostUSD, L3BestOfN: l3.BestOfN, L3CandidatesGenerated: l3.CandidatesGenerated,
		L3CandidatesEvaluated: l3.CandidatesEvaluated, L3PassingCandidateSelected: l3.PassingCandidateSelected,
		L3ReviewerInvoked: l3.ReviewerInvoked, L3JudgeInvoked: l3.JudgeInvoked, L3JudgeInvocationReason: l3.JudgeInvocationReason,
		Raw: rawJSON(raw)})
	for _, c := range s.Costs {
		r.SummaryCosts = append(r.SummaryCosts, rows.SummaryCost{FileID: fileID, RunID: runID, Provider: c.Provider,
			InputTokens: c.InputTokens, OutputTokens: c.OutputTokens, TotalTokens: c.TotalTokens, CostUSD: c.CostUSD})
	}
}

func verificationRows(r *rows.Set, fileID int32, runID, report string, v *runfile.Verification, raw []byte) {
	var failed any
	if v.FailedChecks != nil {
		failed = v.FailedChecks
	}
	var checks *string
	if v.ChecksJSON != nil {
		s := string(v.ChecksJSON)
		checks = &s
	}
	r.VerificationReports = append(r.VerificationReports, rows.VerificationReport{FileID: fileID, RunID: runID, Report: report,
		Phase: v.Phase, Iteration: v.Iteration, Passed: v.Passed, FailureSignature: v.FailureSignature,
		FailureSummary: v.FailureSummary, FailedChecks: jsonText(failed), Checks: checks, Raw: rawJSON(raw)})
}

// rawJSON keeps a run file's text as written; it was parsed already, so it
// is valid JSON.
func rawJSON(raw []byte) string {
	return string(bytes.TrimPrefix(raw, []byte{0xEF, 0xBB, 0xBF}))
}

package factory

import (
	"bytes"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/orchstat/orchstat/model/failure"
	"github.com/orchstat/orchstat/model/records"
)

// The web pipeline (web/server/pipeline.py) plans work orders, then runs
// the factory on each in turn, stopping at the first that does not pass.
// It keeps two files per pipeline run, runs/<id>/events.jsonl and
// runs/<id>/meta.json, which describe the same work orders.
//
// A pipeline's work order is one factory run: RunID "<pipeline>/<wo>",
// Batch the pipeline, Item the work order. The events say everything the
// meta file says about a work order and more (when each started, each
// attempt and its time), so the runs and attempts come from the events
// alone and meta.json adds no rows: a work order is never counted twice,
// and which of the two files was ingested last does not matter.
//
// The factory_run_id is not the run's id: the fake runner names every
// pipeline's work orders FAKE_FACTORY_WO-01..05, which would make the 45
// work orders of the 9 real pipelines 5 runs. It stays in the detail.

// ParseEvents reads a web pipeline's runs/<id>/events.jsonl: one JSON
// object a line, with seq, ts and type. A line that cannot be read is a
// Problem with its line number and field; the other lines are kept.
func ParseEvents(path string, b []byte) (*records.Set, error) {
	pipeline := dirName(filepath.Dir(path))
	if pipeline == "" {
		return nil, &records.Error{Msg: "pipeline events: the file's directory does not name the pipeline"}
	}
	p := &pipelineLog{id: pipeline, wos: map[string]*workOrder{}}
	set := &records.Set{}
	lines, good := records.Lines(b), 0
	for _, l := range lines {
		if err := p.line(text{b: l.B, line: l.No, base: l.Off}); err != nil {
			set.Problems = append(set.Problems, *err)
			continue
		}
		good++
	}
	if len(lines) > 0 && good == 0 {
		first := set.Problems[0]
		return nil, &first
	}
	set.Runs, set.Attempts = p.records()
	return set, nil
}

// pipelineLog is what a pipeline's events say so far.
type pipelineLog struct {
	id         string
	order      []*workOrder // by first mention
	wos        map[string]*workOrder
	complete   bool
	failed     bool
	failedAt   *time.Time
	failReason string
}

// workOrder is one work order's events.
type workOrder struct {
	id           string
	ran          bool
	started      *time.Time
	factoryRunID string
	attempts     []pipelineAttempt
	verdict      string // the wo_status word that ended it: "pass", "fail"
	finished     *time.Time
	stage, err   string
	lines        [][]byte
}

type pipelineAttempt struct {
	n  int
	ts *time.Time
}

// line reads one event.
func (p *pipelineLog) line(t text) *records.Error {
	root, err := decode(t)
	if err != nil {
		return err
	}
	if root.kind != kObject {
		return t.errAt(root.off, "", "event: want a JSON object, got "+root.kind.String())
	}
	f := &fields{t: t}
	typ := f.str(root.get("type"), "type")
	ts := f.when(root.get("ts"), "ts")
	if f.err == nil && typ == "" {
		f.bad(root, "type", "missing")
	}
	switch typ {
	case "wo_status":
		p.woStatus(f, root, ts, t.b)
	case "pipeline_status":
		status := f.str(root.get("status"), "status")
		reason := f.str(root.get("error"), "error")
		if f.err != nil {
			break
		}
		switch status {
		case "complete":
			p.complete = true
		case "failed":
			p.failed, p.failedAt, p.failReason = true, ts, reason
		}
	}
	return f.err
}

func (p *pipelineLog) woStatus(f *fields, root *node, ts *time.Time, raw []byte) {
	id := f.str(root.get("wo_id"), "wo_id")
	st := f.str(root.get("status"), "status")
	attempt := f.integer(root.get("attempt"), "attempt")
	fid := f.str(root.get("factory_run_id"), "factory_run_id")
	stage := f.str(root.get("failure_stage"), "failure_stage")
	reason := f.str(root.get("error"), "error")
	switch {
	case f.err != nil:
		return
	case id == "":
		f.bad(root, "wo_id", "missing")
		return
	case st == "":
		f.bad(root, "status", "missing")
		return
	}
	if strings.HasPrefix(st, "attempt_") && attempt == nil {
		n, err := strconv.Atoi(strings.TrimPrefix(st, "attempt_"))
		if err != nil {
			f.bad(root.get("status"), "status", fmt.Sprintf("%q names no attempt number", st))
			return
		}
		attempt = &n
	}
	if attempt != nil && *attempt < 1 {
		f.bad(root, "attempt", fmt.Sprintf("attempts count from 1, got %d", *attempt))
		return
	}
	w := p.wos[id]
	if w == nil {
		w = &workOrder{id: id}
		p.wos[id] = w
		p.order = append(p.order, w)
	}
	w.lines = append(w.lines, raw)
	if fid != "" {
		w.factoryRunID = fid
	}
	switch {
	case st == "queued":
		return
	case strings.HasPrefix(st, "attempt_"):
		w.attempt(*attempt, ts)
	case st == "pass" || st == "fail":
		w.verdict, w.finished, w.stage, w.err = st, ts, stage, reason
	}
	w.ran = true
	if w.started == nil {
		w.started = ts
	}
}

// attempt notes attempt n; an attempt announced twice keeps its first
// time.
func (w *workOrder) attempt(n int, ts *time.Time) {
	for _, a := range w.attempts {
		if a.n == n {
			return
		}
	}
	w.attempts = append(w.attempts, pipelineAttempt{n, ts})
}

// outcome is how a work order ended. The pipeline's own word wins; without
// one, it follows from how the pipeline goes on (pipeline.py's
// _run_factory): it starts the next work order only after a PASS, reports
// "complete" only when every work order passed, and reports "failed" when
// the work order it was running did not pass.
func (p *pipelineLog) outcome(i int) (status string, finished *time.Time, stage, reason string) {
	w := p.order[i]
	switch w.verdict {
	case "pass":
		return "success", w.finished, "", ""
	case "fail":
		return "failure", w.finished, w.stage, w.err
	}
	for _, later := range p.order[i+1:] {
		if later.ran {
			return "success", nil, "", ""
		}
	}
	switch {
	case p.complete:
		return "success", nil, "", ""
	case p.failed:
		return "failure", p.failedAt, "", p.failReason
	}
	return "unfinished", nil, "", ""
}

// records turns the work orders that ran into runs and attempts. Every
// attempt but the last failed, since the factory retries only a failure;
// where it failed the events do not say. The last one has the work
// order's outcome.
func (p *pipelineLog) records() ([]records.Run, []records.Attempt) {
	var runs []records.Run
	var atts []records.Attempt
	for i, w := range p.order {
		if !w.ran {
			continue // queued, never started
		}
		st, finished, stage, reason := p.outcome(i)
		run := records.Run{System: records.Factory, RunID: p.id + "/" + w.id, Item: w.id, Source: SourceEvents, Batch: p.id,
			StartedAt: w.started, FinishedAt: finished, Status: st, Verdict: w.verdict, EndedStage: stage,
			Detail: detail(append(append([]byte{'['}, bytes.Join(w.lines, []byte{','})...), ']'))}
		if len(w.attempts) > 0 {
			run.Attempts = records.Int(len(w.attempts))
		}
		runs = append(runs, run)
		last := 0
		for _, a := range w.attempts {
			last = max(last, a.n)
		}
		for _, a := range w.attempts {
			r := records.Attempt{System: records.Factory, RunID: run.RunID, Item: w.id, Source: SourceEvents, Attempt: a.n, TS: a.ts}
			switch {
			case a.n < last:
				r.Passed, r.Class = records.Bool(false), string(failure.ClassUnknown)
			case st == "success":
				r.Passed = records.Bool(true)
			case st == "failure":
				b := brief{stage: stage, excerpt: reason}
				r.Passed, r.Stage, r.Error, r.Class, r.Signature = records.Bool(false), stage, reason, b.class(""), b.signature()
			}
			atts = append(atts, r)
		}
	}
	return runs, atts
}

// ParseMeta reads a web pipeline's runs/<id>/meta.json. Ingest reads it
// only beside its events.jsonl, whose work orders it repeats, so it adds
// no rows (see ParseEvents): it is checked, and a file that is not a
// pipeline's meta is reported.
func ParseMeta(path string, b []byte) (*records.Set, error) {
	t := text{b: b, line: 1}
	root, err := decode(t)
	if err != nil {
		return nil, err
	}
	if root.kind != kObject {
		return nil, t.errAt(root.off, "", "pipeline meta: want a JSON object, got "+root.kind.String())
	}
	f := &fields{t: t}
	if f.str(root.get("pipeline_run_id"), "pipeline_run_id") == "" && f.err == nil {
		f.bad(root, "pipeline_run_id", "missing")
	}
	f.str(root.get("status"), "status")
	f.str(root.get("error"), "error")
	f.when(root.get("started_at"), "started_at")
	f.when(root.get("finished_at"), "finished_at")
	for i, id := range f.array(root.get("factory_run_ids"), "factory_run_ids") {
		f.str(id, fmt.Sprintf("factory_run_ids[%d]", i))
	}
	if v := f.object(root.get("work_order_verdicts"), "work_order_verdicts"); v != nil {
		for _, k := range slices.Sorted(maps.Keys(v.obj)) {
			f.str(v.obj[k], "work_order_verdicts."+k)
		}
	}
	if f.err != nil {
		return nil, f.err
	}
	return &records.Set{}, nil
}

package otlp

import (
	"fmt"

	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/orchstat/orchstat/model/records"
)

// span is one span with where it was read from: its line and its place
// among the line's spans, which order a group's spans as read.
type span struct {
	line, pos int
	scope     string
	ptrace.Span
	trace, id, parent string
}

// logRec is one log record with where it was read from: its line and its
// place among the line's records.
type logRec struct {
	line, index int
	scope       string
	plog.LogRecord
}

// lineRead is what one line holds: its kind (0 when it is a Problem), its
// spans and log records, and the problems met reading it.
type lineRead struct {
	kind     int
	spans    []*span
	fields   []string // each span's place in the line, for problems
	logs     []*logRec
	problems []records.Error
}

func (r *lineRead) problem(line int, offset int64, field, msg string) {
	r.problems = append(r.problems, records.Error{Line: line, Offset: offset, Field: field, Msg: excerpt(msg)})
}

// readLine reads one record: a line, or a whole one-object file.
func readLine(no int, offset int64, text []byte) lineRead {
	var r lineRead
	kind, key, why := sniffLine(text)
	if why != "" {
		r.problem(no, offset, key, why)
		return r
	}
	switch kind {
	case kindTraces:
		td, err := (&ptrace.JSONUnmarshaler{}).UnmarshalTraces(text)
		if err != nil {
			r.problem(no, offset, key, "traces: "+err.Error())
			return r
		}
		r.addTraces(no, offset, td)
	case kindLogs:
		ld, err := (&plog.JSONUnmarshaler{}).UnmarshalLogs(text)
		if err != nil {
			r.problem(no, offset, key, "logs: "+err.Error())
			return r
		}
		r.addLogs(no, ld)
	}
	r.kind = kind
	return r
}

func (r *lineRead) addTraces(line int, offset int64, td ptrace.Traces) {
	rss := td.ResourceSpans()
	for i := range rss.Len() {
		sss := rss.At(i).ScopeSpans()
		for j := range sss.Len() {
			ss := sss.At(j)
			for k := range ss.Spans().Len() {
				sp := ss.Spans().At(k)
				if sp.TraceID().IsEmpty() || sp.SpanID().IsEmpty() {
					field := fmt.Sprintf("resourceSpans[%d].scopeSpans[%d].spans[%d]", i, j, k)
					r.problem(line, offset, field+".spanId", "span without traceId or spanId")
					continue
				}
				r.spans = append(r.spans, newSpan(line, len(r.spans), ss.Scope().Name(), sp))
				r.fields = append(r.fields, fmt.Sprintf("resourceSpans[%d].scopeSpans[%d].spans[%d]", i, j, k))
			}
		}
	}
}

func newSpan(line, pos int, scope string, sp ptrace.Span) *span {
	s := &span{line: line, pos: pos, scope: scope, Span: sp,
		trace: sp.TraceID().String(), id: sp.SpanID().String()}
	if !sp.ParentSpanID().IsEmpty() {
		s.parent = sp.ParentSpanID().String()
	}
	return s
}

// addLogs keeps the log records of the agents read (eventName); the rest
// are other events, which give no row.
func (r *lineRead) addLogs(line int, ld plog.Logs) {
	n := 0
	rls := ld.ResourceLogs()
	for i := range rls.Len() {
		sls := rls.At(i).ScopeLogs()
		for j := range sls.Len() {
			sl := sls.At(j)
			for k := range sl.LogRecords().Len() {
				l := &logRec{line: line, index: n, scope: sl.Scope().Name(), LogRecord: sl.LogRecords().At(k)}
				if agent, _ := eventName(l); agent != "" {
					r.logs = append(r.logs, l)
				}
				n++
			}
		}
	}
}

// build maps spans and log records, each in the order read, into rows:
// the calls, attempts and runs of whole groups (traces, sessions).
func build(spans []*span, logs []*logRec) *records.Set {
	set := &records.Set{}
	t := newTraceIndex(spans)
	t.calls(set)
	t.runs(set)
	events := readEvents(logs)
	for _, c := range set.Calls {
		events.used[c.CallID]++
	}
	events.calls(set)
	return set
}

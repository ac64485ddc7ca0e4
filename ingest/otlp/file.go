package otlp

import (
	"fmt"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/orchstat/orchstat/ingest/records"
)

// file gathers a file's spans and log records before mapping them: a
// trace's spans may arrive over several lines, and calls group across
// lines.
type file struct {
	spans    []*span
	logs     []*logRec
	problems []records.Error
	seen     map[string]bool // trace+span ids read so far
}

// span is one span with where it was read from.
type span struct {
	line  int
	field string
	scope string
	ptrace.Span
	trace, id, parent string
}

// logRec is one log record with where it was read from.
type logRec struct {
	line, index int
	field       string
	scope       string
	res         pcommon.Map
	plog.LogRecord
}

func (f *file) problem(line int, offset int64, field, msg string) {
	f.problems = append(f.problems, records.Error{Line: line, Offset: offset, Field: field, Msg: excerpt(msg)})
}

// readLine reads one record and returns its kind, or 0 when it is a
// Problem.
func (f *file) readLine(r record) int {
	kind, key, why := sniffLine(r.text)
	if why != "" {
		f.problem(r.line, r.offset, key, why)
		return 0
	}
	switch kind {
	case kindTraces:
		td, err := (&ptrace.JSONUnmarshaler{}).UnmarshalTraces(r.text)
		if err != nil {
			f.problem(r.line, r.offset, key, "traces: "+err.Error())
			return 0
		}
		f.addTraces(r, td)
	case kindLogs:
		ld, err := (&plog.JSONUnmarshaler{}).UnmarshalLogs(r.text)
		if err != nil {
			f.problem(r.line, r.offset, key, "logs: "+err.Error())
			return 0
		}
		f.addLogs(r, ld)
	}
	return kind
}

func (f *file) addTraces(r record, td ptrace.Traces) {
	line := r.line
	if f.seen == nil {
		f.seen = map[string]bool{}
	}
	rss := td.ResourceSpans()
	for i := range rss.Len() {
		sss := rss.At(i).ScopeSpans()
		for j := range sss.Len() {
			ss := sss.At(j)
			for k := range ss.Spans().Len() {
				sp := ss.Spans().At(k)
				field := fmt.Sprintf("resourceSpans[%d].scopeSpans[%d].spans[%d]", i, j, k)
				s := &span{line: line, field: field, scope: ss.Scope().Name(), Span: sp}
				if sp.TraceID().IsEmpty() || sp.SpanID().IsEmpty() {
					f.problem(line, r.offset, field+".spanId", "span without traceId or spanId")
					continue
				}
				s.trace, s.id = sp.TraceID().String(), sp.SpanID().String()
				if !sp.ParentSpanID().IsEmpty() {
					s.parent = sp.ParentSpanID().String()
				}
				if f.seen[s.trace+s.id] {
					f.problem(line, r.offset, field+".spanId", "span "+s.id+" of trace "+s.trace+" seen before; first kept")
					continue
				}
				f.seen[s.trace+s.id] = true
				f.spans = append(f.spans, s)
			}
		}
	}
}

func (f *file) addLogs(r record, ld plog.Logs) {
	line := r.line
	n := 0
	rls := ld.ResourceLogs()
	for i := range rls.Len() {
		res := rls.At(i).Resource().Attributes()
		sls := rls.At(i).ScopeLogs()
		for j := range sls.Len() {
			sl := sls.At(j)
			for k := range sl.LogRecords().Len() {
				field := fmt.Sprintf("resourceLogs[%d].scopeLogs[%d].logRecords[%d]", i, j, k)
				f.logs = append(f.logs, &logRec{line: line, index: n, field: field,
					scope: sl.Scope().Name(), res: res, LogRecord: sl.LogRecords().At(k)})
				n++
			}
		}
	}
}

// build maps everything read into the file's set.
func (f *file) build() *records.Set {
	set := &records.Set{}
	t := newTraceIndex(f.spans)
	t.calls(set)
	t.runs(set)
	events := readEvents(f.logs)
	for _, c := range set.Calls {
		events.used[c.CallID]++
	}
	events.calls(set)
	set.Problems = append(f.problems, set.Problems...)
	return set
}

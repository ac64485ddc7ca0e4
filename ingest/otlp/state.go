package otlp

import (
	"encoding/json"
	"errors"
	"fmt"
	"sort"

	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/ptrace"
)

// stateVersion changes whenever the state's shape or the limits that
// decide closure change: a state of another version is refused, and the
// file is read again from its start.
const stateVersion = 1

// saved is a stream's State: the counts and head that judge the file,
// the rings of ids handed out, and the open spans and events themselves,
// as OTLP protobuf (which keeps every byte of a string, valid UTF-8 or
// not), each with its line and place in the line.
type saved struct {
	V      int      `json:"v"`
	Stats  [5]int   `json:"stats"`
	Head   []byte   `json:"head,omitempty"`
	Runs   []byte   `json:"runs,omitempty"`
	Calls  []byte   `json:"calls,omitempty"`
	Spans  []byte   `json:"spans,omitempty"`
	SpanAt [][2]int `json:"span_at,omitempty"`
	Logs   []byte   `json:"logs,omitempty"`
	LogAt  [][2]int `json:"log_at,omitempty"`
}

// State encodes what is open. Rows closed but not yet taken by Final are
// not part of it: State after Final.
func (s *stream) State() ([]byte, error) {
	if o := s.out; len(o.Calls)+len(o.Runs)+len(o.CallAttempts)+len(o.Problems)+len(o.Ignored) > 0 {
		return nil, errors.New("otlp: State called with rows not yet taken by Final")
	}
	sv := saved{V: stateVersion, Head: s.head, Runs: s.runs.bytes(), Calls: s.calls.bytes(),
		Stats: [5]int{s.st.lines, s.st.traces, s.st.logs, s.st.metrics, s.st.bad}}
	td, ld := ptrace.NewTraces(), plog.NewLogs()
	for _, g := range s.openGroups() {
		for _, sp := range g.spans {
			ss := td.ResourceSpans().AppendEmpty().ScopeSpans().AppendEmpty()
			ss.Scope().SetName(sp.scope)
			sp.CopyTo(ss.Spans().AppendEmpty())
			sv.SpanAt = append(sv.SpanAt, [2]int{sp.line, sp.pos})
		}
		for _, l := range g.logs {
			sl := ld.ResourceLogs().AppendEmpty().ScopeLogs().AppendEmpty()
			sl.Scope().SetName(l.scope)
			l.CopyTo(sl.LogRecords().AppendEmpty())
			sv.LogAt = append(sv.LogAt, [2]int{l.line, l.index})
		}
	}
	var err error
	if len(sv.SpanAt) > 0 {
		if sv.Spans, err = (&ptrace.ProtoMarshaler{}).MarshalTraces(td); err != nil {
			return nil, err
		}
	}
	if len(sv.LogAt) > 0 {
		if sv.Logs, err = (&plog.ProtoMarshaler{}).MarshalLogs(ld); err != nil {
			return nil, err
		}
	}
	return json.Marshal(sv)
}

// resume rebuilds a stream from its State; the groups' first and last
// lines and roots follow from their spans and events.
func resume(lim limits, state []byte) (*stream, error) {
	var sv saved
	if err := json.Unmarshal(state, &sv); err != nil {
		return nil, fmt.Errorf("otlp state: %w", err)
	}
	if sv.V != stateVersion {
		return nil, fmt.Errorf("otlp state: version %d, this reader writes %d", sv.V, stateVersion)
	}
	s := newStream(lim)
	s.st = stats{lines: sv.Stats[0], traces: sv.Stats[1], logs: sv.Stats[2], metrics: sv.Stats[3], bad: sv.Stats[4]}
	s.head = sv.Head
	var ok1, ok2 bool
	if s.runs, ok1 = ringFrom(lim.runIDs, sv.Runs); !ok1 {
		return nil, errors.New("otlp state: run ids cut short")
	}
	if s.calls, ok2 = ringFrom(lim.callIDs, sv.Calls); !ok2 {
		return nil, errors.New("otlp state: call ids cut short")
	}
	td, err := (&ptrace.ProtoUnmarshaler{}).UnmarshalTraces(sv.Spans)
	if err != nil {
		return nil, fmt.Errorf("otlp state: spans: %w", err)
	}
	ld, err := (&plog.ProtoUnmarshaler{}).UnmarshalLogs(sv.Logs)
	if err != nil {
		return nil, fmt.Errorf("otlp state: logs: %w", err)
	}
	var spans []*span
	rss := td.ResourceSpans()
	for i := range rss.Len() {
		sss := rss.At(i).ScopeSpans()
		for j := range sss.Len() {
			ss := sss.At(j)
			for k := range ss.Spans().Len() {
				n := len(spans)
				if n >= len(sv.SpanAt) {
					return nil, errors.New("otlp state: more spans than places")
				}
				sp := ss.Spans().At(k)
				if sp.TraceID().IsEmpty() || sp.SpanID().IsEmpty() {
					return nil, errors.New("otlp state: a span without ids")
				}
				spans = append(spans, newSpan(sv.SpanAt[n][0], sv.SpanAt[n][1], ss.Scope().Name(), sp))
			}
		}
	}
	var logs []*logRec
	rls := ld.ResourceLogs()
	for i := range rls.Len() {
		sls := rls.At(i).ScopeLogs()
		for j := range sls.Len() {
			sl := sls.At(j)
			for k := range sl.LogRecords().Len() {
				n := len(logs)
				if n >= len(sv.LogAt) {
					return nil, errors.New("otlp state: more events than places")
				}
				l := &logRec{line: sv.LogAt[n][0], index: sv.LogAt[n][1], scope: sl.Scope().Name(), LogRecord: sl.LogRecords().At(k)}
				if agent, _ := eventName(l); agent == "" {
					return nil, errors.New("otlp state: an event of no agent read")
				}
				logs = append(logs, l)
			}
		}
	}
	if len(spans) != len(sv.SpanAt) || len(logs) != len(sv.LogAt) {
		return nil, errors.New("otlp state: fewer spans or events than places")
	}
	sort.SliceStable(spans, func(i, j int) bool {
		return spans[i].line < spans[j].line || spans[i].line == spans[j].line && spans[i].pos < spans[j].pos
	})
	sort.SliceStable(logs, func(i, j int) bool {
		return logs[i].line < logs[j].line || logs[i].line == logs[j].line && logs[i].index < logs[j].index
	})
	for _, sp := range spans {
		if !s.addSpan(sp) {
			return nil, errors.New("otlp state: a span twice")
		}
	}
	for _, l := range logs {
		s.addLog(l)
	}
	s.requeue()
	return s, nil
}

// requeue rebuilds the closure queues from the groups: one entry per
// group at its last line (the entries a live stream holds besides these
// are stale, and closing skips them).
func (s *stream) requeue() {
	gs := s.openGroups()
	sort.SliceStable(gs, func(i, j int) bool { return gs[i].last < gs[j].last })
	s.all, s.rooted = nil, nil
	for _, g := range gs {
		s.all = append(s.all, touch{g, g.last})
		if g.root {
			g.rootQueued = g.last
			s.rooted = append(s.rooted, touch{g, g.last})
		}
	}
}

package otlp

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"

	"github.com/orchstat/orchstat/model/records"
)

// Agents whose log events are read.
const (
	claudeCode = "claude_code"
	codex      = "codex"
)

// Claude Code's event names without their claude_code. prefix.
var claudeEvents = map[string]bool{
	"api_request": true, "api_error": true, "api_retries_exhausted": true,
}

// event is a log record of an agent this package reads.
type event struct {
	*logRec
	agent, name string // name without the agent's prefix
	ts          *time.Time
	order       int // in the file
}

func (e *event) attrs() pcommon.Map { return e.Attributes() }

func (e *event) duration() *float64 { return numPtr(e.attrs(), "duration_ms") }

// events are a file's agent log events, by time then as read.
type events struct {
	list []*event
	used map[string]int // call ids handed out
}

// readEvents keeps the log records that are Claude Code or Codex events;
// the rest are other events, ignored.
func readEvents(logs []*logRec) *events {
	es := &events{used: map[string]int{}}
	for _, l := range logs {
		agent, name := eventName(l)
		if agent == "" {
			continue
		}
		es.list = append(es.list, &event{logRec: l, agent: agent, name: name, ts: logTime(l), order: len(es.list)})
	}
	sort.SliceStable(es.list, func(i, j int) bool {
		a, b := es.list[i].ts, es.list[j].ts
		if a == nil || b == nil {
			return a == nil && b != nil
		}
		return a.Before(*b)
	})
	return es
}

// eventName finds the event's name in eventName, the event.name
// attribute or the body (Claude Code sets the full name in the body and
// the bare one in event.name), and whose event it is.
func eventName(l *logRec) (agent, name string) {
	names := []string{l.EventName(), str(l.Attributes(), "event.name")}
	if b := l.Body(); b.Type() == pcommon.ValueTypeStr {
		names = append(names, strings.TrimSpace(b.Str()))
	}
	for _, n := range names {
		if rest, ok := strings.CutPrefix(n, "codex."); ok {
			return codex, rest
		}
		if rest, ok := strings.CutPrefix(n, "claude_code."); ok {
			return claudeCode, rest
		}
	}
	for _, n := range names {
		if claudeEvents[n] {
			return claudeCode, n
		}
	}
	return "", ""
}

// logTime is the record's time, else when the collector observed it,
// else its event.timestamp attribute.
func logTime(l *logRec) *time.Time {
	if t := when(l.Timestamp()); t != nil {
		return t
	}
	if t := when(l.ObservedTimestamp()); t != nil {
		return t
	}
	if t, err := time.Parse(time.RFC3339Nano, str(l.Attributes(), "event.timestamp")); err == nil {
		u := t.UTC()
		return &u
	}
	return nil
}

// callID names a call by its request id when it has one, else by its
// first record's time ("t" and Unix nanoseconds), else by where that
// record is in the file ("L" line "." index); a repeated id gets a #n
// suffix. The store counts one system, session and call id once (a
// synced copy of a file, a session exported by two runners): a time is
// the same in every copy of a record, and apart in two files of one
// session (a receiver's files rotated mid-session), where a place in
// the file is not.
func (es *events) callID(requestID string, first *event) string {
	id := requestID
	if id == "" && first.ts != nil {
		id = "t" + strconv.FormatInt(first.ts.UnixNano(), 10)
	}
	if id == "" {
		id = fmt.Sprintf("L%d.%d", first.line, first.index)
	}
	es.used[id]++
	if n := es.used[id]; n > 1 {
		id = fmt.Sprintf("%s#%d", id, n)
	}
	return id
}

// calls adds both agents' calls and a run per session.
func (es *events) calls(set *records.Set) {
	from := len(set.Calls)
	es.claudeCalls(set)
	es.codexCalls(set)
	es.runs(set, set.Calls[from:])
}

// wallClock is the wall-clock time from the first attempt's start to the last
// one's end: events are logged as each attempt ends.
func wallClock(first, last *event) *float64 {
	d := first.duration()
	if d == nil {
		return nil
	}
	between := msBetween(first.ts, last.ts)
	if between == nil {
		return nil
	}
	return add(d, between)
}

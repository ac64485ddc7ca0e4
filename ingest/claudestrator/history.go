package claudestrator

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/orchstat/orchstat/model/failure"
	"github.com/orchstat/orchstat/model/records"
)

// stageColumns are the quality gates a loop reports, in the order a loop
// runs them: the first that failed is where the attempt failed.
var stageColumns = []struct{ col, name string }{
	{"build_passed", "build"}, {"lint_passed", "lint"}, {"tests_passed", "tests"}}

// failureColumns hold failure text, when a history carries any. The real
// file has none (its error_count is a number), so the signature is often
// the stage alone: every build failure of a task looks the same, which is
// all the file can say.
var failureColumns = []string{"error", "errors", "error_message", "failure", "failure_reason", "failure_summary"}

// histRow is one row of history.csv: one task in one loop.
type histRow struct {
	line       int
	loop       int
	hasLoop    bool
	ts         *time.Time
	dur        *float64 // ms
	gates      [3]*bool
	gateIn     [3]bool
	text       string
	tokens     *float64
	cost       *float64
	raw        map[string]any
	superseded bool
}

// ParseHistory reads .orchestrator/history.csv: one row per task per loop.
// Columns are read by header name, so reordered, extra and missing columns
// are fine; only run_id and task_id are required, as they name the run.
//
// Attempts are numbered 1, 2, ... in loop order, not by the loop number:
// a task first run in loop 3 (a remediation task, auto-retry's improvement
// loop) has made one attempt, and counting it as attempt 3 would report
// retries that never happened. The loop numbers stay in the run's Detail.
func ParseHistory(path string, b []byte) (*records.Set, error) {
	r := csv.NewReader(bytes.NewReader(b))
	r.FieldsPerRecord = -1
	h, err := readHistoryHeader(r)
	if err != nil {
		return nil, err
	}
	set := &records.Set{}
	h.set = set
	order, groups := h.readRows(r)
	for _, k := range order {
		historyRun(set, k.run, k.task, h.latestLoops(k, groups[k]), h.anyGate)
	}
	sortProblems(set)
	return set, nil
}

// histKey names a run: one task of one claudestrator run.
type histKey struct{ run, task string }

// histReader reads history.csv's rows by the header's column names.
type histReader struct {
	header  []string
	col     map[string]int // lower-case name → index
	hasLoop bool           // the file has a loop column
	anyGate bool           // the file has a quality-gate column
	set     *records.Set
}

// readHistoryHeader reads the header and checks that it names the
// columns a run needs.
func readHistoryHeader(r *csv.Reader) (*histReader, error) {
	header, err := r.Read()
	if err != nil {
		msg := "no CSV header"
		if !errors.Is(err, io.EOF) {
			msg += ": " + err.Error()
		}
		return nil, &records.Error{Line: 1, Field: "run_id", Msg: msg + ": not a claudestrator history.csv"}
	}
	h := &histReader{header: header, col: map[string]int{}}
	for i, name := range header {
		if i == 0 {
			name = strings.TrimPrefix(name, "\ufeff")
		}
		name = strings.ToLower(strings.TrimSpace(name))
		if _, dup := h.col[name]; !dup && name != "" {
			h.col[name] = i
		}
	}
	for _, need := range []string{"run_id", "task_id"} {
		if _, ok := h.col[need]; !ok {
			return nil, &records.Error{Line: 1, Field: need, Msg: "no " + need + " column: not a claudestrator history.csv"}
		}
	}
	_, h.hasLoop = h.col["loop"]
	for _, g := range stageColumns {
		if _, ok := h.col[g.col]; ok {
			h.anyGate = true
		}
	}
	return h, nil
}

// readRows reads every row, grouped by run in the order runs first
// appear. A row that cannot be read is a problem and is skipped.
func (h *histReader) readRows(r *csv.Reader) ([]histKey, map[histKey][]*histRow) {
	var order []histKey
	groups := map[histKey][]*histRow{}
	for {
		rec, err := r.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		var pe *csv.ParseError
		if errors.As(err, &pe) {
			h.set.Problems = append(h.set.Problems, problem(pe.StartLine, h.missing(rec), pe.Err.Error()+"; row skipped"))
			continue
		}
		if err != nil {
			h.set.Problems = append(h.set.Problems, problem(0, "", err.Error()))
			break
		}
		line, _ := r.FieldPos(0)
		k, row, ok := h.row(rec, line)
		if !ok {
			continue
		}
		if _, seen := groups[k]; !seen {
			order = append(order, k)
		}
		groups[k] = append(groups[k], row)
	}
	return order, groups
}

// missing is the header's name for the first field a short row lacks, or
// "".
func (h *histReader) missing(rec []string) string {
	if len(rec) < len(h.header) {
		return strings.TrimSpace(h.header[len(rec)])
	}
	return ""
}

// row reads one row; false when it is skipped.
func (h *histReader) row(rec []string, line int) (histKey, *histRow, bool) {
	get := func(name string) string {
		i, ok := h.col[name]
		if !ok || i >= len(rec) {
			return ""
		}
		return strings.TrimSpace(rec[i])
	}
	if len(rec) != len(h.header) {
		h.set.Problems = append(h.set.Problems, problem(line, h.missing(rec),
			fmt.Sprintf("row has %d fields, the header %d; read by position as far as they go", len(rec), len(h.header))))
	}
	k := histKey{get("run_id"), get("task_id")}
	if k.run == "" || k.task == "" {
		field := "run_id"
		if k.run != "" {
			field = "task_id"
		}
		h.set.Problems = append(h.set.Problems, problem(line, field, "empty; row skipped"))
		return k, nil, false
	}
	row := &histRow{line: line, raw: map[string]any{"line": line}}
	for i, name := range h.header {
		if i < len(rec) {
			name = strings.TrimSpace(strings.TrimPrefix(name, "\ufeff"))
			if _, dup := row.raw[name]; !dup && name != "" {
				row.raw[name] = rec[i]
			}
		}
	}
	if h.hasLoop {
		n, present, ok := parseInt(get("loop"))
		if !present || !ok || n == 0 {
			h.set.Problems = append(h.set.Problems, problem(line, "loop", fmt.Sprintf("%q is not a loop number; row skipped", get("loop"))))
			return k, nil, false
		}
		row.loop, row.hasLoop = n, true
	}
	h.values(row, rec, get)
	return k, row, true
}

// values reads a row's time, duration, quality gates, failure text and
// spend.
func (h *histReader) values(row *histRow, rec []string, get func(string) string) {
	set, line := h.set, row.line
	if s := get("timestamp"); s != "" && !isNull(s) {
		if t, ok := parseTime(s); ok {
			row.ts = &t
		} else {
			set.Problems = append(set.Problems, problem(line, "timestamp", fmt.Sprintf("%q is not a time", s)))
		}
	}
	row.dur = number(set, line, "duration_sec", get("duration_sec"), 1000)
	for gi, g := range stageColumns {
		if i, ok := h.col[g.col]; ok && i < len(rec) {
			row.gateIn[gi] = true
		}
		s := get(g.col)
		v, known, ok := parseBool(s)
		switch {
		case !ok:
			set.Problems = append(set.Problems, problem(line, g.col, fmt.Sprintf("%q is not true, false or N/A; read as unknown", s)))
		case known:
			row.gates[gi] = records.Bool(v)
		}
	}
	for _, c := range failureColumns {
		if s := get(c); s != "" && !isNull(s) {
			row.text = s
			break
		}
	}
	if s := get("tokens"); s != "" {
		row.tokens = number(set, line, "tokens", s, 1)
	} else {
		row.tokens = number(set, line, "total_tokens", get("total_tokens"), 1)
	}
	row.cost = number(set, line, "cost_usd", get("cost_usd"), 1)
}

// latestLoops puts a run's rows in loop order and keeps, of a loop written
// twice, the later row: the newer word on it.
func (h *histReader) latestLoops(k histKey, rows []*histRow) []*histRow {
	if h.hasLoop {
		sort.SliceStable(rows, func(i, j int) bool { return rows[i].loop < rows[j].loop })
		for i := 0; i+1 < len(rows); i++ {
			if rows[i].loop == rows[i+1].loop {
				first, second := rows[i], rows[i+1]
				if first.line > second.line {
					first, second = second, first
					rows[i], rows[i+1] = first, second
				}
				first.superseded = true
				h.set.Problems = append(h.set.Problems, problem(first.line, "loop",
					fmt.Sprintf("loop %d of %s/%s is written again at line %d, which is kept", first.loop, k.run, k.task, second.line)))
			}
		}
	}
	kept := rows[:0:0]
	for _, row := range rows {
		if !row.superseded {
			kept = append(kept, row)
		}
	}
	return kept
}

// historyRun adds one task's run, its attempts and their stages.
func historyRun(set *records.Set, runID, task string, rows []*histRow, anyGate bool) {
	rid := runID + "/" + task
	run := records.Run{System: records.Claudestrator, RunID: rid, Item: task, Source: srcHistory, Batch: runID,
		Attempts: records.Int(len(rows))}
	var loops []int
	var detailRows []map[string]any
	var dur, tokens, cost *float64
	add := func(sum **float64, v *float64) {
		if v != nil {
			if *sum == nil {
				*sum = records.Float(0)
			}
			**sum += *v
		}
	}
	var last *records.Attempt
	for i, row := range rows {
		n := i + 1
		if row.hasLoop {
			loops = append(loops, row.loop)
		}
		detailRows = append(detailRows, row.raw)
		a := records.Attempt{System: records.Claudestrator, RunID: rid, Item: task, Source: srcHistory, Attempt: n,
			TS: row.ts, DurationMS: row.dur, Tokens: row.tokens, CostUSD: row.cost}
		if anyGate {
			passed := true
			for gi, g := range stageColumns {
				if row.gates[gi] != nil && !*row.gates[gi] && passed {
					passed = false
					a.Stage = g.name
				}
			}
			a.Passed = records.Bool(passed)
			if !passed {
				a.Error = excerpt(row.text)
				a.Signature = failure.Signature(a.Stage, row.text)
			}
		}
		seq := 0
		for gi, g := range stageColumns {
			if !row.gateIn[gi] {
				continue
			}
			seq++
			set.Stages = append(set.Stages, records.Stage{System: records.Claudestrator, RunID: rid, Item: task, Source: srcHistory,
				Attempt: n, Seq: seq, Name: g.name, Passed: row.gates[gi]})
		}
		add(&dur, row.dur)
		add(&tokens, row.tokens)
		add(&cost, row.cost)
		set.Attempts = append(set.Attempts, a)
		last = &set.Attempts[len(set.Attempts)-1]
	}
	run.DurationMS, run.Tokens, run.CostUSD = dur, tokens, cost
	// timestamp is when the loop's report was written: the report's
	// duration.end_time (reports/BUILD-003-loop-001.json), so the task
	// started duration_sec before its first row's timestamp.
	if first := rows[0]; first.ts != nil && first.dur != nil {
		t := first.ts.Add(-time.Duration(*first.dur * float64(time.Millisecond)))
		run.StartedAt = &t
	}
	run.FinishedAt = last.TS
	if last.Passed != nil {
		if *last.Passed {
			run.Status = "success"
		} else {
			run.Status = "failure"
			run.EndedStage = last.Stage
		}
	}
	run.Detail, _ = json.Marshal(map[string]any{"run_id": runID, "task_id": task, "loops": loops, "rows": detailRows})
	set.Runs = append(set.Runs, run)
}

// number reads a non-negative number in a column, scaled (seconds to
// milliseconds). Empty and null are absent.
func number(set *records.Set, line int, field, s string, scale float64) *float64 {
	if s == "" || isNull(s) {
		return nil
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil || v < 0 || math.IsInf(v, 0) || math.IsNaN(v) {
		set.Problems = append(set.Problems, problem(line, field, fmt.Sprintf("%q is not a non-negative number", s)))
		return nil
	}
	return records.Float(v * scale)
}

func isNull(s string) bool {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "null", "n/a", "na", "none", "-", "nil", "undefined":
		return true
	}
	return false
}

var timeLayouts = []string{time.RFC3339Nano, "2006-01-02T15:04:05", "2006-01-02 15:04:05Z07:00", "2006-01-02 15:04:05",
	"2006-01-02T15:04Z07:00", "2006-01-02T15:04", "2006-01-02 15:04", "2006-01-02"}

// parseTime reads the timestamps agents write: ISO 8601, with or without
// seconds or zone. A time without a zone is taken as UTC.
func parseTime(s string) (time.Time, bool) {
	s = strings.Trim(strings.TrimSpace(s), "`*[]")
	for _, l := range timeLayouts {
		if t, err := time.Parse(l, s); err == nil {
			return t, true
		}
	}
	return time.Time{}, false
}

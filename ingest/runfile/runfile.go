// Package runfile reads a run's summary.json and verification reports. Their
// shapes changed over the orchestrator's history, so every field is optional
// and a field of the wrong type reads as absent rather than failing.
package runfile

import (
	"bytes"
	"errors"
	"fmt"
	"path/filepath"
	"regexp"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/orchstat/orchstat/ingest/trace"
)

// Summary is the part of summary.json that orchstat indexes.
type Summary struct {
	RunID         *string
	SchemaVersion *float64
	Status        *string
	StopReason    *string
	ThinkLevel    *string
	Goal          *string
	Escalated     *bool
	StartedAt     *time.Time
	FinishedAt    *time.Time
	DurationMs    *float64
	// Verification outcome recorded at the end of the run. failedChecks is
	// a list of names in some versions and a count in run-summary.ts.
	VerificationPassed *bool
	FailedChecks       []string
	FailedCheckCount   *float64
	// Totals over all providers.
	InputTokens, OutputTokens, TotalTokens, CostUSD *float64
	Costs                                           []ProviderCost
	L3                                              *L3
}

// ProviderCost is one entry of costs.perProvider.
type ProviderCost struct {
	Provider                                        string
	InputTokens, OutputTokens, TotalTokens, CostUSD *float64
}

// L3 is summary.json's l3 block.
type L3 struct {
	BestOfN, CandidatesGenerated, CandidatesEvaluated       *float64
	PassingCandidateSelected, ReviewerInvoked, JudgeInvoked *bool
	JudgeInvocationReason                                   *string
}

// Verification is one verification report.
type Verification struct {
	Phase            string // initial, l2, l3_final or other
	Iteration        *int64
	Passed           *bool
	FailureSignature *string
	FailureSummary   *string
	FailedChecks     []string
	Checks           []Check
	ChecksJSON       []byte // checks[] as written, for the store
}

// Check is one entry of a report's checks[].
type Check struct {
	Name       *string  `json:"name"`
	Command    *string  `json:"command,omitempty"`
	ExitCode   *float64 `json:"exitCode,omitempty"`
	DurationMs *float64 `json:"durationMs,omitempty"`
	Passed     *bool    `json:"passed"`
}

// Error locates a problem in a run file.
type Error struct {
	Line, Column int
	Offset       int // byte offset of the offending byte
	Field        string
	Reason       string
}

func (e *Error) Error() string {
	loc := ""
	if e.Line > 0 {
		loc = fmt.Sprintf("line %d, column %d: ", e.Line, e.Column)
	}
	if e.Field != "" {
		return fmt.Sprintf("%sfield %q: %s", loc, e.Field, e.Reason)
	}
	return loc + e.Reason
}

// object reads a JSON object's members leniently: a member of the wrong
// type reads as absent.
type object struct{ p trace.Payload }

func decodeObject(b []byte) (object, error) {
	b = bytes.TrimPrefix(b, []byte{0xEF, 0xBB, 0xBF})
	if !utf8.Valid(b) {
		return object{}, &Error{Reason: "not JSON: invalid UTF-8"}
	}
	p, ok, err := trace.ParseObject(b)
	if err != nil {
		var se *trace.SyntaxError
		if errors.As(err, &se) {
			line, col := position(b, int64(se.Offset)+1)
			return object{}, &Error{Line: line, Column: col, Offset: se.Offset, Reason: "not JSON: " + err.Error()}
		}
		return object{}, &Error{Reason: "not JSON: " + err.Error()}
	}
	if !ok {
		return object{}, &Error{Reason: "not a JSON object"}
	}
	return object{p}, nil
}

// position turns an offset counting the offending byte into a 1-based line
// and column.
func position(b []byte, off int64) (line, col int) {
	off--
	if off > int64(len(b)) {
		off = int64(len(b))
	}
	if off < 0 {
		off = 0
	}
	line = 1 + bytes.Count(b[:off], []byte("\n"))
	col = int(off) - bytes.LastIndexByte(b[:off], '\n')
	return line, col
}

func (o object) obj(k string) (object, bool) {
	p, ok := o.p.Object(k)
	return object{p}, ok
}

func (o object) str(k string) *string   { return o.p.String(k) }
func (o object) num(k string) *float64  { return o.p.Number(k) }
func (o object) boolean(k string) *bool { return o.p.Bool(k) }
func (o object) raw(k string) []byte    { return o.p.Raw(k) }

// text reads a string, or keeps any other JSON value as its text: some
// versions write failureSummary as an object.
func (o object) text(k string) *string {
	if s := o.str(k); s != nil {
		return s
	}
	if raw := o.raw(k); len(raw) > 0 && string(raw) != "null" {
		s := string(raw)
		return &s
	}
	return nil
}

// level reads a think level written as "L2" or as the number 2.
func (o object) level(k string) *string {
	if s := o.str(k); s != nil {
		return s
	}
	if n := o.num(k); n != nil && *n == float64(int(*n)) {
		s := fmt.Sprintf("L%d", int(*n))
		return &s
	}
	return nil
}

func (o object) time(k string) *time.Time {
	s := o.str(k)
	if s == nil {
		return nil
	}
	t, err := time.Parse(time.RFC3339Nano, *s)
	if err != nil {
		return nil
	}
	t = t.UTC()
	return &t
}

// strings reads a list of names; some versions list objects with a name.
func (o object) strings(k string) []string {
	elems := o.p.Array(k)
	if elems == nil {
		return nil
	}
	out := []string{}
	for _, e := range elems {
		if s := trace.StringOf(e); s != nil {
			out = append(out, *s)
		} else if len(e) > 0 && e[0] == '{' {
			if n := trace.ParsePayload(e).String("name"); n != nil {
				out = append(out, *n)
			}
		}
	}
	return out
}

// ParseSummary reads summary.json. Both the current RunSummary and the older
// shapes ({status, runId, summary} and the cost-only {providers, total}) are
// understood.
func ParseSummary(b []byte) (*Summary, error) {
	o, err := decodeObject(b)
	if err != nil {
		return nil, err
	}
	s := &Summary{
		RunID:         o.str("runId"),
		SchemaVersion: o.num("schemaVersion"),
		Status:        o.str("status"),
		StopReason:    o.str("stopReason"),
		ThinkLevel:    o.level("thinkLevel"),
		Goal:          o.str("goal"),
		Escalated:     o.boolean("escalated"),
		StartedAt:     o.time("startedAt"),
		FinishedAt:    o.time("finishedAt"),
		DurationMs:    o.num("durationMs"),
	}
	if v, ok := o.obj("verification"); ok {
		s.VerificationPassed = v.boolean("passed")
		s.FailedChecks = v.strings("failedChecks")
		if n := v.num("failedChecks"); n != nil {
			s.FailedCheckCount = n
		} else if s.FailedChecks != nil {
			n := float64(len(s.FailedChecks))
			s.FailedCheckCount = &n
		}
	}
	costs, hasCosts := o.obj("costs")
	per, _ := costs.obj("perProvider")
	totals, hasTotals := costs.obj("totals")
	if !hasCosts { // the cost-only summary of early versions
		per, _ = o.obj("providers")
		totals, hasTotals = o.obj("total")
	}
	for _, name := range per.p.Keys() {
		c, ok := per.obj(name)
		if !ok {
			continue
		}
		s.Costs = append(s.Costs, ProviderCost{
			Provider: name, InputTokens: c.num("inputTokens"), OutputTokens: c.num("outputTokens"),
			TotalTokens: c.num("totalTokens"), CostUSD: c.num("estimatedCostUsd"),
		})
	}
	if hasTotals {
		s.InputTokens, s.OutputTokens = totals.num("inputTokens"), totals.num("outputTokens")
		s.TotalTokens, s.CostUSD = totals.num("totalTokens"), totals.num("estimatedCostUsd")
	}
	if l3, ok := o.obj("l3"); ok {
		s.L3 = &L3{
			BestOfN: l3.num("bestOfN"), CandidatesGenerated: l3.num("candidatesGenerated"),
			CandidatesEvaluated: l3.num("candidatesEvaluated"), PassingCandidateSelected: l3.boolean("passingCandidateSelected"),
			ReviewerInvoked: l3.boolean("reviewerInvoked"), JudgeInvoked: l3.boolean("judgeInvoked"),
			JudgeInvocationReason: l3.str("judgeInvocationReason"),
		}
	}
	return s, nil
}

var (
	reInitial = regexp.MustCompile(`^verification_report_initial\.json$`)
	reL2      = regexp.MustCompile(`^verification_report_iter_(\d+)\.json$`)
	reL3      = regexp.MustCompile(`^verification_iter_(\d+)_final\.json$`)
	reAny     = regexp.MustCompile(`^verification.*\.json$`)
)

// IsVerification reports whether a file name is a verification report.
func IsVerification(name string) bool { return reAny.MatchString(filepath.Base(name)) }

// Phase derives the loop phase and iteration from a report's file name.
func Phase(name string) (string, *int64) {
	base := filepath.Base(name)
	if reInitial.MatchString(base) {
		return "initial", nil
	}
	for _, p := range []struct {
		re    *regexp.Regexp
		phase string
	}{{reL2, "l2"}, {reL3, "l3_final"}} {
		if m := p.re.FindStringSubmatch(base); m != nil {
			if n, err := strconv.ParseInt(m[1], 10, 64); err == nil {
				return p.phase, &n
			}
			return p.phase, nil
		}
	}
	return "other", nil
}

// ParseVerification reads a verification report named name.
func ParseVerification(name string, b []byte) (*Verification, error) {
	o, err := decodeObject(b)
	if err != nil {
		return nil, err
	}
	v := &Verification{
		Passed:           o.boolean("passed"),
		FailureSignature: o.str("failureSignature"),
		FailureSummary:   o.text("failureSummary"),
	}
	v.Phase, v.Iteration = Phase(name)
	if raw := o.raw("checks"); len(raw) > 0 && raw[0] == '[' {
		v.ChecksJSON = raw
	}
	for _, e := range o.p.Array("checks") {
		if len(e) == 0 || e[0] != '{' {
			continue
		}
		c := object{trace.ParsePayload(e)}
		ck := Check{Name: c.str("name"), Command: c.str("command"), ExitCode: c.num("exitCode"), DurationMs: c.num("durationMs"), Passed: c.boolean("passed")}
		v.Checks = append(v.Checks, ck)
		if ck.Passed != nil && !*ck.Passed && ck.Name != nil {
			v.FailedChecks = append(v.FailedChecks, *ck.Name)
		}
	}
	return v, nil
}

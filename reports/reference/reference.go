// Package reference computes METRICS.md directly from trace files, as an independent oracle for tests.
//
// It is deliberately simple and slow: every file is read into memory, every
// accepted line becomes an event, and each metric is computed by a plain loop
// over the events of the selected runs. It shares no code with the ingester or
// the SQL queries, so that tests can compare the two.
package reference

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// MaxLineBytes is the longest line accepted (the line without its "\n" and
// without a trailing "\r"); longer lines are quarantined.
const MaxLineBytes = 64 << 20

// Filter selects runs. The zero Filter selects every run.
type Filter struct {
	Since, Until time.Time // zero = unbounded; a run is in scope when its start (its earliest event timestamp) is >= Since and < Until
	Runs         []string  // empty = all; else only these runIds
	// Provider: "" = all; else only runs in which some ProviderRequestStarted or
	// ProviderRequestFinished has payload.provider == Provider, or some
	// ProviderSelected has payload.providerId == Provider, in any case; and the
	// request-level metrics (provider_*, ByProvider) count only the
	// ProviderRequestFinished events of that provider.
	Provider string
}

// Metric is one entry of METRICS.md. For counts only Value is set; for ratios
// Numerator and Denominator are both set and Value is nil when the denominator is 0.
type Metric struct {
	Value       *float64
	Numerator   *float64
	Denominator *float64
}

// ProviderRow is the by-provider (and model) breakdown of ProviderRequestFinished events.
type ProviderRow struct {
	Provider     string
	Model        *string
	Requests     int64
	Retried      int64
	Failed       int64
	RetriesTotal float64
}

// Result is everything Compute works out.
type Result struct {
	Metrics     map[string]Metric            // every metric in METRICS.md, keyed by its name
	ByProvider  []ProviderRow                // sorted by provider, then model (nil model first)
	ByDay       map[string]map[string]Metric // UTC date of the run's start -> metrics over the runs that started that day
	Quarantined int64                        // lines rejected by the line rules (in all inputs, whatever the filter)
	Events      int64                        // lines accepted (in all inputs, whatever the filter)
}

// event is one accepted line.
type event struct {
	file    int // index of the input it came from
	typ     string
	runID   string
	ts      time.Time // UTC
	payload map[string]json.RawMessage
}

// Compute reads the given trace.jsonl files (each file fully, in order).
func Compute(files []string, f Filter) (*Result, error) {
	var datas [][]byte
	for _, name := range files {
		b, err := os.ReadFile(name)
		if err != nil {
			return nil, err
		}
		datas = append(datas, b)
	}
	return compute(datas, f), nil
}

// ComputeReader is Compute for a single reader; name is used only in errors.
func ComputeReader(name string, r io.Reader, f Filter) (*Result, error) {
	return ComputeReaders([]string{name}, []io.Reader{r}, f)
}

// ComputeReaders is Compute over several readers, each treated as one file, in order.
// names[i] (if present) is used only in errors.
func ComputeReaders(names []string, rs []io.Reader, f Filter) (*Result, error) {
	var datas [][]byte
	for i, r := range rs {
		b, err := io.ReadAll(r)
		if err != nil {
			name := fmt.Sprintf("input %d", i)
			if i < len(names) {
				name = names[i]
			}
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		datas = append(datas, b)
	}
	return compute(datas, f), nil
}

func compute(datas [][]byte, f Filter) *Result {
	res := &Result{}

	// 1. Lines -> events.
	var events []event
	for i, data := range datas {
		for _, line := range splitLines(data) {
			if strings.Trim(string(line), " \t\r\n") == "" { // JSON whitespace only
				continue // blank: neither event nor quarantined
			}
			e, ok := parseLine(line)
			if !ok {
				res.Quarantined++
				continue
			}
			e.file = i
			events = append(events, e)
			res.Events++
		}
	}

	// 2. Each run's start, and whether it matches the provider filter.
	start := map[string]time.Time{}
	providerMatch := map[string]bool{}
	for _, e := range events {
		if s, seen := start[e.runID]; !seen || e.ts.Before(s) {
			start[e.runID] = e.ts
		}
		switch e.typ {
		case "ProviderRequestStarted", "ProviderRequestFinished":
			if p, ok := stringField(e.payload, "provider"); ok && sameProvider(p, f.Provider) {
				providerMatch[e.runID] = true
			}
		case "ProviderSelected":
			if p, ok := stringField(e.payload, "providerId"); ok && sameProvider(p, f.Provider) {
				providerMatch[e.runID] = true
			}
		}
	}

	// 3. Selected runs.
	selected := map[string]bool{}
	since, until := f.Since.Truncate(time.Microsecond), f.Until.Truncate(time.Microsecond)
	for run, s := range start {
		if !since.IsZero() && s.Before(since) {
			continue
		}
		if !until.IsZero() && !s.Before(until) {
			continue
		}
		if len(f.Runs) > 0 && !contains(f.Runs, run) {
			continue
		}
		if f.Provider != "" && !providerMatch[run] {
			continue
		}
		selected[run] = true
	}

	// 4. Metrics over all selected runs, then per day of the run's start.
	var inScope []event
	byDay := map[string][]event{}
	for _, e := range events {
		if selected[e.runID] {
			inScope = append(inScope, e)
			day := start[e.runID].Format("2006-01-02")
			byDay[day] = append(byDay[day], e)
		}
	}
	res.Metrics = metrics(inScope, f.Provider)
	res.ByDay = map[string]map[string]Metric{}
	for day, evs := range byDay {
		res.ByDay[day] = metrics(evs, f.Provider)
	}

	// 5. By provider and model.
	res.ByProvider = byProvider(events, selected, f.Provider)
	return res
}

// splitLines applies the file-level rules: drop a leading BOM, split on "\n",
// ignore a final segment without "\n", strip one trailing "\r" per line.
func splitLines(data []byte) [][]byte {
	data = bytes.TrimPrefix(data, []byte("\xEF\xBB\xBF"))
	parts := bytes.Split(data, []byte("\n"))
	parts = parts[:len(parts)-1] // the last segment never ends in "\n": incomplete (or empty)
	for i, p := range parts {
		parts[i] = bytes.TrimSuffix(p, []byte("\r"))
	}
	return parts
}

// parseLine applies the line rules; ok is false when the line is to be quarantined.
func parseLine(line []byte) (e event, ok bool) {
	if !utf8.Valid(line) || len(line) > MaxLineBytes {
		return e, false
	}
	if !json.Valid(line) || !isObject(line) {
		return e, false
	}
	var obj map[string]json.RawMessage // a map, not a struct: keys match exactly; last duplicate wins
	if err := json.Unmarshal(line, &obj); err != nil {
		return e, false
	}
	typ, ok := stringField(obj, "type")
	if !ok || typ == "" {
		return e, false
	}
	run, ok := stringField(obj, "runId")
	if !ok || run == "" {
		return e, false
	}
	tsText, ok := stringField(obj, "timestamp")
	if !ok {
		return e, false
	}
	ts, err := time.Parse(time.RFC3339Nano, tsText)
	if err != nil {
		return e, false
	}
	// Timestamps must fall in the years 1 to 9999 (UTC), and have
	// microsecond precision, as the store keeps them.
	if y := ts.UTC().Year(); y < 1 || y > 9999 {
		return e, false
	}
	ts = ts.Truncate(time.Microsecond)
	rawPayload, ok := obj["payload"]
	if !ok || !isObject(rawPayload) {
		return e, false
	}
	var payload map[string]json.RawMessage
	if err := json.Unmarshal(rawPayload, &payload); err != nil {
		return e, false
	}
	return event{typ: typ, runID: run, ts: ts.UTC(), payload: payload}, true
}

// isObject reports whether the (valid) JSON value is an object.
func isObject(raw []byte) bool {
	raw = bytes.TrimSpace(raw)
	return len(raw) > 0 && raw[0] == '{'
}

// stringField returns m[key] when it is a JSON string.
func stringField(m map[string]json.RawMessage, key string) (string, bool) {
	raw := bytes.TrimSpace(m[key])
	if len(raw) == 0 || raw[0] != '"' {
		return "", false
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return "", false
	}
	return s, true
}

// numberField returns m[key] when it is a JSON number. A number too large for a
// float64 becomes ±Inf (strconv.ParseFloat's result on a range error).
func numberField(m map[string]json.RawMessage, key string) (float64, bool) {
	raw := bytes.TrimSpace(m[key])
	if len(raw) == 0 || !(raw[0] == '-' || (raw[0] >= '0' && raw[0] <= '9')) {
		return 0, false
	}
	v, _ := strconv.ParseFloat(string(raw), 64)
	return v, true
}

// isBool reports whether m[key] is the JSON literal want.
func isBool(m map[string]json.RawMessage, key string, want bool) bool {
	return string(bytes.TrimSpace(m[key])) == strconv.FormatBool(want)
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// stepKey is a distinct (runId, payload.iteration); hasIter false is the null iteration.
type stepKey struct {
	run     string
	hasIter bool
	iter    float64
}

func stepOf(e event) stepKey {
	it, ok := numberField(e.payload, "iteration")
	return stepKey{run: e.runID, hasIter: ok, iter: it}
}

// metrics computes every METRICS.md metric over the given events (all of which are in scope).
// provider, when not "", keeps the provider_* metrics to that provider's requests.
func metrics(evs []event, provider string) map[string]Metric {
	t := newTally(provider)
	for _, e := range evs {
		t.add(e)
	}
	return t.metrics()
}

// tally is what the metrics count, accumulated event by event.
type tally struct {
	provider string // when not "", the provider_* counts take only its requests

	runs, failedRuns map[string]bool

	// Provider requests.
	requests, retried, failed, retriesTotal float64

	// L2.
	l2Runs, escalatedFromL2 map[string]bool
	maxRepairIteration      map[string]float64 // only runs with a numeric RepairAttempted iteration

	// L3.
	l3Steps, diagnosisSteps                        map[stepKey]bool
	diagnoses, judges, candidates, validCandidates float64
	candidateRuns                                  map[string]bool
}

func newTally(provider string) *tally {
	return &tally{
		provider:           provider,
		runs:               map[string]bool{},
		failedRuns:         map[string]bool{},
		l2Runs:             map[string]bool{},
		escalatedFromL2:    map[string]bool{},
		maxRepairIteration: map[string]float64{},
		l3Steps:            map[stepKey]bool{},
		diagnosisSteps:     map[stepKey]bool{},
		candidateRuns:      map[string]bool{},
	}
}

func (t *tally) add(e event) {
	t.runs[e.runID] = true
	p := e.payload
	switch e.typ {
	case "ProviderRequestFinished":
		if requestOf(p, t.provider) {
			t.request(p)
		}
	case "IterationStarted":
		t.l2Runs[e.runID] = true
	case "RunEscalated":
		if from, ok := stringField(p, "from"); ok && from == "L2" {
			t.escalatedFromL2[e.runID] = true
		}
	case "RunFinished":
		if status, ok := stringField(p, "status"); ok && status == "failure" {
			t.failedRuns[e.runID] = true
		}
	case "RepairAttempted":
		t.repair(e)
	case "CandidateGenerated":
		t.candidate(e)
	case "DiagnosisStarted":
		t.diagnoses++
		t.diagnosisSteps[stepOf(e)] = true
	case "JudgeInvoked":
		t.judges++
	}
}

func (t *tally) request(p map[string]json.RawMessage) {
	t.requests++
	if r, ok := numberField(p, "retries"); ok {
		t.retriesTotal += r
		if r > 0 {
			t.retried++
		}
	}
	if isBool(p, "success", false) {
		t.failed++
	}
}

// repair keeps each run's highest repair iteration.
func (t *tally) repair(e event) {
	it, ok := numberField(e.payload, "iteration")
	if !ok {
		return
	}
	if m, seen := t.maxRepairIteration[e.runID]; !seen || it > m {
		t.maxRepairIteration[e.runID] = it
	}
}

func (t *tally) candidate(e event) {
	t.candidates++
	t.candidateRuns[e.runID] = true
	t.l3Steps[stepOf(e)] = true
	if isBool(e.payload, "valid", true) {
		t.validCandidates++
	}
}

func (t *tally) metrics() map[string]Metric {
	// l2_escalation_rate's denominator: l2_runs ∪ runs escalated from L2.
	l2OrEscalated := map[string]bool{}
	for r := range t.l2Runs {
		l2OrEscalated[r] = true
	}
	for r := range t.escalatedFromL2 {
		l2OrEscalated[r] = true
	}
	// Summed in run order, so the result does not depend on map order.
	var sumMaxRepair float64
	for _, r := range sortedKeys(t.maxRepairIteration) {
		sumMaxRepair += t.maxRepairIteration[r]
	}
	l3Runs := float64(len(t.candidateRuns))

	return map[string]Metric{
		"runs":                         count(float64(len(t.runs))),
		"provider_requests":            count(t.requests),
		"provider_retry_rate":          ratio(t.retried, t.requests),
		"provider_failure_rate":        ratio(t.failed, t.requests),
		"provider_retries_total":       count(t.retriesTotal),
		"l2_runs":                      count(float64(len(t.l2Runs))),
		"l2_escalation_rate":           ratio(float64(len(t.escalatedFromL2)), float64(len(l2OrEscalated))),
		"avg_repair_iterations":        ratio(sumMaxRepair, float64(len(t.maxRepairIteration))),
		"l3_steps":                     count(float64(len(t.l3Steps))),
		"l3_diagnosis_rate":            ratio(float64(len(t.diagnosisSteps)), float64(len(t.l3Steps))),
		"diagnoses_per_l3_run":         ratio(t.diagnoses, l3Runs),
		"judge_invocations_per_l3_run": ratio(t.judges, l3Runs),
		"candidate_validity_rate":      ratio(t.validCandidates, t.candidates),
		"failed_runs":                  count(float64(len(t.failedRuns))),
	}
}

func count(v float64) Metric { return Metric{Value: &v} }

func ratio(num, den float64) Metric {
	m := Metric{Numerator: &num, Denominator: &den}
	if den != 0 {
		v := num / den
		m.Value = &v
	}
	return m
}

// byProvider groups the selected runs' ProviderRequestFinished events by
// provider and by the model of the nearest preceding ProviderRequestStarted in
// the same file with the same runId and the same (string) provider.
func byProvider(events []event, selected map[string]bool, only string) []ProviderRow {
	type startKey struct {
		file     int
		run      string
		provider string
	}
	type rowKey struct {
		provider string
		hasModel bool
		model    string
	}
	lastModel := map[startKey]*string{} // latest ProviderRequestStarted's model so far
	rows := map[rowKey]*ProviderRow{}

	for _, e := range events { // events are in file order, then line order
		provider, providerIsString := stringField(e.payload, "provider")
		switch e.typ {
		case "ProviderRequestStarted":
			if providerIsString {
				var model *string
				if m, ok := stringField(e.payload, "model"); ok {
					model = &m
				}
				lastModel[startKey{e.file, e.runID, provider}] = model
			}
		case "ProviderRequestFinished":
			if !selected[e.runID] || !requestOf(e.payload, only) {
				continue
			}
			var model *string
			if providerIsString {
				model = lastModel[startKey{e.file, e.runID, provider}]
			}
			k := rowKey{provider: provider}
			if model != nil {
				k.hasModel, k.model = true, *model
			}
			row := rows[k]
			if row == nil {
				row = &ProviderRow{Provider: provider, Model: model}
				rows[k] = row
			}
			row.Requests++
			if r, ok := numberField(e.payload, "retries"); ok {
				row.RetriesTotal += r
				if r > 0 {
					row.Retried++
				}
			}
			if isBool(e.payload, "success", false) {
				row.Failed++
			}
		}
	}

	out := []ProviderRow{}
	for _, r := range rows {
		out = append(out, *r)
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.Provider != b.Provider {
			return a.Provider < b.Provider
		}
		if (a.Model == nil) != (b.Model == nil) {
			return a.Model == nil
		}
		return a.Model != nil && *a.Model < *b.Model
	})
	return out
}

func sortedKeys(m map[string]float64) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// sameProvider compares provider names as the filter does: in any case.
func sameProvider(a, b string) bool { return strings.ToLower(a) == strings.ToLower(b) }

// requestOf reports whether a ProviderRequestFinished payload is a request
// of provider ("" = any).
func requestOf(payload map[string]json.RawMessage, provider string) bool {
	if provider == "" {
		return true
	}
	p, ok := stringField(payload, "provider")
	return ok && sameProvider(p, provider)
}

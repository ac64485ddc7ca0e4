// Package orchestr8 reads orchestr8's records (orchestr8's adaptive retry spec):
// .claude/pipeline-history.json and .claude/retry-config.json.
//
// No real history or retry configuration was ever published, so the
// shapes are those of github.com/NewmanJustice/orchestr8's own code and
// tests:
//   - src/history.js and test/feature_pipeline-history.test.js: the file
//     is a JSON array of entries {slug, status ("success", "failed",
//     "paused"), startedAt, completedAt, totalDurationMs, stages: {alex,
//     cass, nigel, codey-plan, codey-implement: {startedAt, completedAt,
//     durationMs}}, failedStage, pausedAfter};
//   - test/feature_feedback-loop.test.js and src/insights.js: a stage's
//     feedback {about, rating, confidence, issues, recommendation} and
//     gateDecision;
//   - src/murm.js (runMurm): a murmuration batch entry {slug: "a+b",
//     mode: "murmuration", status ("success", "partial"), startedAt,
//     completedAt, totalDurationMs, baseBranch, features: [{slug, status
//     ("murm_complete", "murm_failed", "merge_conflict", ...), startedAt,
//     completedAt}], summary}, written after mergeWorktreeHistory has
//     appended the entries of the features that merged; src/parallel.js
//     is its predecessor ("parallel_complete", ...);
//   - test/feature_adaptive-retry.test.js: entries with no stages at all;
//   - src/retry.js: retry-config.json {maxRetries, windowSize,
//     highFailureThreshold, strategies: {stage: [strategy]}}.
//
// orchestr8 records no tokens, cost or error text, and orchestr8's adaptive
// retry spec names the history fields retryAttempts and strategiesUsed[]
// (line 174) without a shape. Those are read under the names in tokenKeys,
// costKeys and errorKeys and in the shapes parser.retries reads, which are
// this package's guesses; strategiesUsed stays in the run's Detail.
package orchestr8

import (
	"cmp"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/orchstat/orchstat/model/failure"
	"github.com/orchstat/orchstat/model/orchestr8/spec"
	"github.com/orchstat/orchstat/model/records"
)

const source = "history"

// stageOrder is the pipeline's order: the agents, then the commit.
// Stages not listed follow in the order written.
var stageOrder = append(slices.Clone(spec.Stages), spec.Commit)

var (
	tokenKeys = []string{"tokens", "totalTokens", "tokensUsed", "total_tokens"}
	costKeys  = []string{"costUsd", "costUSD", "cost_usd", "estimatedCostUsd", "cost"}
	errorKeys = []string{"error", "errorMessage", "failureReason", "failure"}
)

// parser holds one file's state.
type parser struct {
	b    []byte
	set  *records.Set
	used map[string]bool
	// paired are the batch features whose own entries are their runs.
	paired map[*node]bool
}

func (p *parser) problem(n *node, field, msg string) {
	var off int64
	if n != nil {
		off = n.start
	}
	p.set.Problems = append(p.set.Problems, records.Error{Line: lineOf(p.b, off), Offset: off, Field: field, Msg: msg})
}

// sortProblems puts the problems in file order.
func (p *parser) sortProblems() {
	slices.SortStableFunc(p.set.Problems, func(a, b records.Error) int { return cmp.Compare(a.Offset, b.Offset) })
}

// str reads a string field; anything else is a problem and absent.
func (p *parser) str(obj *node, path, key string) string {
	v := obj.get(key)
	if v == nil || v.kind == '0' {
		return ""
	}
	if v.kind != '"' {
		p.problem(v, path+"."+key, "not a string")
		return ""
	}
	return strings.TrimSpace(v.str)
}

// num reads the first present of keys as a non-negative number.
func (p *parser) num(obj *node, path string, keys ...string) *float64 {
	v, key := obj.first(keys...)
	if v == nil {
		return nil
	}
	f, ok := v.float()
	if !ok || f < 0 || math.IsInf(f, 0) {
		p.problem(v, path+"."+key, "not a non-negative number")
		return nil
	}
	return records.Float(f)
}

// when reads a time: an ISO 8601 string, as toISOString writes, or epoch
// milliseconds.
func (p *parser) when(obj *node, path, key string) (*time.Time, string) {
	v := obj.get(key)
	if v == nil || v.kind == '0' {
		return nil, ""
	}
	switch v.kind {
	case '"':
		for _, l := range []string{time.RFC3339Nano, "2006-01-02T15:04:05.999999999", "2006-01-02 15:04:05"} {
			if t, err := time.Parse(l, strings.TrimSpace(v.str)); err == nil {
				return &t, v.str
			}
		}
	case 'n':
		if f, ok := v.float(); ok && f >= 0 && f < 1e15 {
			t := time.UnixMilli(int64(f)).UTC()
			return &t, string(v.num)
		}
	}
	p.problem(v, path+"."+key, "not a time")
	return nil, ""
}

// tokens reads a count of tokens, or sums a usage object's.
func (p *parser) tokens(obj *node, path string) *float64 {
	if t := p.num(obj, path, tokenKeys...); t != nil {
		return t
	}
	u := obj.get("usage")
	if u == nil || u.kind != '{' {
		return nil
	}
	if t := p.num(u, path+".usage", "totalTokens", "total_tokens"); t != nil {
		return t
	}
	in := p.num(u, path+".usage", "inputTokens", "input_tokens")
	out := p.num(u, path+".usage", "outputTokens", "output_tokens")
	if in == nil && out == nil {
		return nil
	}
	sum := 0.0
	for _, x := range []*float64{in, out} {
		if x != nil {
			sum += *x
		}
	}
	return records.Float(sum)
}

// runID names an entry's run: its slug and when it started. orchestr8
// has no run ids, and a slug is run again and again.
func (p *parser) runID(slug, at string, i int) string {
	if slug == "" {
		slug = fmt.Sprintf("[%d]", i)
	}
	id := slug
	if at != "" {
		id += "@" + at
	}
	if p.used[id] {
		// Entry i's own: but one entry (a batch) can hold the same feature
		// more than once, so count on until the id is free.
		base := id + fmt.Sprintf("#%d", i)
		id = base
		for k := 2; p.used[id]; k++ {
			id = fmt.Sprintf("%s.%d", base, k)
		}
	}
	p.used[id] = true
	return id
}

// entryInfo is what pairing a batch with its features' entries needs.
type entryInfo struct {
	n          *node
	slug       string
	start, end *time.Time
	batch      bool
	batchID    string // for a feature's entry, its batch
}

// ParseHistory reads .claude/pipeline-history.json. Each pipeline entry is
// a run of its slug with one attempt (more when it records retries), whose
// stages are the agents it ran, in pipeline order: those before
// failedStage passed, failedStage failed, and none ran after it. A
// murmuration batch entry gives a run per feature, in the batch; a
// feature whose own entry was merged into the history (it precedes the
// batch entry and started within it) is that entry's run, so it is not
// counted twice.
func ParseHistory(path string, b []byte) (*records.Set, error) {
	b = stripBOM(b)
	root, err := parseTree(b, "entries")
	if err != nil {
		return nil, err
	}
	if root.kind != '[' {
		return nil, &records.Error{Line: lineOf(b, root.start), Offset: root.start, Field: "entries",
			Msg: "not a JSON array of pipeline history entries"}
	}
	p := &parser{b: b, set: &records.Set{}, used: map[string]bool{}, paired: map[*node]bool{}}
	infos := make([]*entryInfo, len(root.vals))
	for i, e := range root.vals {
		if e.kind != '{' {
			p.problem(e, fmt.Sprintf("[%d]", i), "not an object; entry skipped")
			continue
		}
		in := &entryInfo{n: e}
		if s := e.get("slug"); s != nil && s.kind == '"' {
			in.slug = strings.TrimSpace(s.str)
		}
		in.start, _ = quietTime(e.get("startedAt"))
		in.end, _ = quietTime(e.get("completedAt"))
		mode := ""
		if m := e.get("mode"); m != nil && m.kind == '"' {
			mode = m.str
		}
		f := e.get("features")
		in.batch = mode == "murmuration" || mode == "parallel" || (f != nil && f.kind == '[')
		infos[i] = in
	}
	for i, in := range infos {
		if in == nil || !in.batch {
			continue
		}
		p.batchRuns(i, in, infos)
	}
	// Runs in file order: a batch's unpaired features where the batch is.
	for i, in := range infos {
		if in == nil {
			continue
		}
		if in.batch {
			p.emitBatch(i, in)
		} else {
			p.pipelineRun(i, in)
		}
	}
	p.sortProblems()
	return p.set, nil
}

// quietTime reads a time without reporting a problem; the entry's own
// reading reports it.
func quietTime(v *node) (*time.Time, bool) {
	if v == nil || v.kind != '"' {
		return nil, false
	}
	t, err := time.Parse(time.RFC3339Nano, strings.TrimSpace(v.str))
	if err != nil {
		return nil, false
	}
	return &t, true
}

func runStatus(s string) string {
	switch strings.ToLower(s) {
	case "success", "succeeded", "complete", "completed":
		return "success"
	case "failed", "failure", "error":
		return "failure"
	case "aborted", "cancelled", "canceled":
		return "cancelled"
	}
	return strings.ToLower(s)
}

func (p *parser) pipelineRun(i int, in *entryInfo) {
	e, path := in.n, fmt.Sprintf("[%d]", i)
	slug := p.str(e, path, "slug")
	if slug == "" {
		p.problem(e, path+".slug", "no slug: the run names no feature")
	}
	status := p.str(e, path, "status")
	failedStage := p.str(e, path, "failedStage")
	started, startRaw := p.when(e, path, "startedAt")
	finished, endRaw := p.when(e, path, "completedAt")
	at := startRaw
	if at == "" {
		at = endRaw
	}
	run := records.Run{System: records.Orchestr8, RunID: p.runID(slug, at, i), Item: slug, Source: source, Batch: in.batchID,
		StartedAt: started, FinishedAt: finished, Status: runStatus(status), Verdict: status, EndedStage: failedStage,
		DurationMS: p.num(e, path, "totalDurationMs", "durationMs"), Detail: e.raw(p.b)}
	run.Tokens = p.tokens(e, path)
	run.CostUSD = p.num(e, path, costKeys...)

	retries, retryStages := p.retries(e, path)
	if run.Status == "failure" && failedStage != "" {
		// The pipeline stays in a stage while it retries it
		// (orchestr8's adaptive retry spec line 85) and moves on only
		// when the stage passes, so retries whose stage is not said
		// were at the stage it failed at in the end.
		for k := range retryStages {
			if retryStages[k] == "" {
				retryStages[k] = failedStage
			}
		}
	}
	n := retries + 1
	run.Attempts = records.Int(n)
	for k := 1; k < n; k++ {
		a := records.Attempt{System: records.Orchestr8, RunID: run.RunID, Item: slug, Source: source, Attempt: k,
			Passed: records.Bool(false), Stage: retryStages[k-1]}
		if a.Stage != "" {
			a.Signature = failure.Signature(a.Stage, "")
		}
		if k == 1 {
			a.TS = cmp.Or(started, finished)
		}
		p.set.Attempts = append(p.set.Attempts, a)
	}
	final := records.Attempt{System: records.Orchestr8, RunID: run.RunID, Item: slug, Source: source, Attempt: n}
	if n == 1 {
		// Entries written by older pipelines carry only completedAt.
		final.TS = cmp.Or(started, finished)
		final.DurationMS = run.DurationMS
	}
	switch run.Status {
	case "success":
		final.Passed = records.Bool(true)
	case "failure", "partial":
		final.Passed = records.Bool(false)
	}
	stageTokens, stageCost := p.stages(e, path, run.RunID, slug, n, run.Status, failedStage)
	if run.Tokens == nil {
		run.Tokens = stageTokens
	}
	if run.CostUSD == nil {
		run.CostUSD = stageCost
	}
	if n == 1 {
		final.Tokens, final.CostUSD = run.Tokens, run.CostUSD
	}
	if final.Passed != nil && !*final.Passed {
		final.Stage = failedStage
		final.Error = p.errorText(e, path, failedStage)
		if final.Stage != "" || final.Error != "" {
			final.Signature = failure.Signature(final.Stage, final.Error)
		}
	}
	p.set.Attempts = append(p.set.Attempts, final)
	p.set.Runs = append(p.set.Runs, run)
}

// retries reads how many times an entry's stages were retried, and at
// which stage each retry was, "" when not said. orchestr8's adaptive retry spec adds
// retryAttempts to history entries without a shape, so a count, a list of
// retries (each a stage name or an object with a stage) and a map of
// stage to count are all read; attempts or attemptCount, when present,
// count the passes themselves.
func (p *parser) retries(e *node, path string) (int, []string) {
	const limit = 1000 // no pipeline is retried this often; bounds a typo
	var stages []string
	if v, key := e.first("attempts", "attemptCount"); v != nil {
		f, ok := v.float()
		if ok && f >= 1 && f <= limit && f == math.Trunc(f) {
			return int(f) - 1, make([]string, int(f)-1)
		}
		p.problem(v, path+"."+key, "not a count of attempts")
	}
	v := e.get("retryAttempts")
	if v == nil || v.kind == '0' {
		return 0, nil
	}
	switch v.kind {
	case 'n':
		f, ok := v.float()
		if ok && f >= 0 && f <= limit && f == math.Trunc(f) {
			return int(f), make([]string, int(f))
		}
	case '[':
		if len(v.vals) <= limit {
			for _, x := range v.vals {
				switch x.kind {
				case '"':
					stages = append(stages, x.str)
				case '{':
					s := ""
					if st := x.get("stage"); st != nil && st.kind == '"' {
						s = st.str
					}
					stages = append(stages, s)
				default:
					stages = append(stages, "")
				}
			}
			return len(stages), stages
		}
	case '{':
		total := 0
		for _, name := range orderedKeys(v) {
			f, ok := v.get(name).float()
			if !ok || f < 0 || f != math.Trunc(f) || total+int(f) > limit {
				p.problem(v.get(name), path+".retryAttempts."+name, "not a count of retries")
				continue
			}
			for range int(f) {
				stages = append(stages, name)
			}
			total += int(f)
		}
		return total, stages
	}
	p.problem(v, path+".retryAttempts", "not a count or list of retries")
	return 0, nil
}

// orderedKeys is an object's keys, the pipeline's stages first in
// pipeline order, then the rest as written, each once.
func orderedKeys(obj *node) []string {
	var out []string
	for _, s := range stageOrder {
		if obj.get(s) != nil {
			out = append(out, s)
		}
	}
	for _, k := range obj.keys {
		if !slices.Contains(out, k) {
			out = append(out, k)
		}
	}
	return out
}

// stages adds an entry's stages to its attempt n and returns their token
// and cost sums.
func (p *parser) stages(e *node, path, runID, slug string, n int, status, failedStage string) (tokens, cost *float64) {
	obj := e.get("stages")
	var names []string
	if obj != nil && obj.kind != '0' {
		if obj.kind != '{' {
			p.problem(obj, path+".stages", "not an object")
			obj = nil
		} else {
			names = orderedKeys(obj)
		}
	}
	failedAt := -1
	if failedStage != "" {
		failedAt = slices.Index(names, failedStage)
		if failedAt < 0 {
			// History is recorded at stage boundaries: the stage that
			// failed may have no record of its own.
			names = append(names, failedStage)
			failedAt = len(names) - 1
		}
	}
	add := func(sum **float64, v *float64) {
		if v != nil {
			if *sum == nil {
				*sum = records.Float(0)
			}
			**sum += *v
		}
	}
	seq := 0
	for idx, name := range names {
		spath := path + ".stages." + name
		sn := obj.get(name)
		if name == "" {
			// A stage must be named to be counted as one; the report and
			// recommend name stages.
			p.problem(cmp.Or(sn, obj), path+`.stages[""]`, "a stage with no name; stage skipped")
			continue
		}
		if failedAt >= 0 && idx > failedAt {
			p.problem(cmp.Or(sn, obj), spath, fmt.Sprintf("recorded after failedStage %q; stage skipped", failedStage))
			continue
		}
		if sn != nil && sn.kind != '{' && sn.kind != '0' {
			p.problem(sn, spath, "not an object")
			sn = nil
		}
		seq++
		st := records.Stage{System: records.Orchestr8, RunID: runID, Item: slug, Source: source, Attempt: n, Seq: seq, Name: name}
		switch {
		case failedAt >= 0:
			st.Passed = records.Bool(idx != failedAt)
		case status == "success" || status == "paused":
			// A paused pipeline stopped after the stages it recorded.
			st.Passed = records.Bool(true)
		}
		if sn != nil {
			st.DurationMS = p.num(sn, spath, "durationMs")
			st.Tokens = p.tokens(sn, spath)
			st.CostUSD = p.num(sn, spath, costKeys...)
			if fb := sn.get("feedback"); fb != nil {
				switch fb.kind {
				case '"':
					st.Feedback = fb.str
				case '{', '[':
					st.Feedback = string(fb.raw(p.b))
				}
			}
		}
		add(&tokens, st.Tokens)
		add(&cost, st.CostUSD)
		p.set.Stages = append(p.set.Stages, st)
	}
	return tokens, cost
}

// errorText is the failure's text, when the entry or its failed stage has
// any.
func (p *parser) errorText(e *node, path, failedStage string) string {
	for _, obj := range []*node{e, e.get("stages").get(failedStage)} {
		for _, k := range errorKeys {
			if v := obj.get(k); v != nil {
				switch v.kind {
				case '"':
					return excerpt(v.str)
				case '{':
					if m := v.get("message"); m != nil && m.kind == '"' {
						return excerpt(m.str)
					}
				}
			}
		}
	}
	return ""
}

// excerpt keeps a record's text to 2,000 bytes.
func excerpt(s string) string { return records.Excerpt(s, 2000) }

// batchRuns pairs a batch's features with the entries merged from their
// worktrees: the closest earlier entry of the same slug that started
// within the batch. Without times only a feature that merged is paired.
func (p *parser) batchRuns(j int, in *entryInfo, infos []*entryInfo) {
	e := in.n
	slug := in.slug
	feats := e.get("features")
	if slug == "" && feats != nil {
		var names []string
		for _, f := range feats.vals {
			if s := f.get("slug"); s != nil && s.kind == '"' {
				names = append(names, s.str)
			}
		}
		slug = strings.Join(names, "+")
	}
	at := ""
	if v := e.get("startedAt"); v != nil && v.kind == '"' {
		at = v.str
	}
	in.batchID = p.runID(slug, at, j)
	if feats == nil || feats.kind != '[' {
		return
	}
	for _, f := range feats.vals {
		fs := f.get("slug")
		if fs == nil || fs.kind != '"' || fs.str == "" {
			continue
		}
		fstatus := ""
		if v := f.get("status"); v != nil && v.kind == '"' {
			fstatus = featureStatus(v.str)
		}
		for k := j - 1; k >= 0; k-- {
			c := infos[k]
			if c == nil || c.batch || c.batchID != "" || c.slug != strings.TrimSpace(fs.str) {
				continue
			}
			timed := in.start != nil && c.start != nil
			if timed && (c.start.Before(*in.start) || (in.end != nil && c.start.After(*in.end))) {
				continue
			}
			if !timed && fstatus != "success" {
				continue
			}
			c.batchID = in.batchID
			p.paired[f] = true
			break
		}
	}
}

// featureStatus maps murm.js's and parallel.js's feature states.
func featureStatus(s string) string {
	switch strings.TrimPrefix(strings.TrimPrefix(strings.ToLower(s), "murm_"), "parallel_") {
	case "complete", "completed", "success":
		return "success"
	case "failed", "failure":
		return "failure"
	case "aborted", "cancelled":
		return "cancelled"
	case "running", "worktree_created", "merge_pending":
		return "unfinished"
	case "queued":
		return "queued"
	}
	return strings.ToLower(s)
}

// emitBatch adds a run for each feature of a batch that has no entry of
// its own.
func (p *parser) emitBatch(j int, in *entryInfo) {
	e, path := in.n, fmt.Sprintf("[%d]", j)
	feats := e.get("features")
	if feats == nil || feats.kind == '0' {
		p.problem(e, path+".features", "a batch with no features")
		return
	}
	if feats.kind != '[' {
		p.problem(feats, path+".features", "not a list")
		return
	}
	batch := map[string]any{"id": in.batchID}
	for _, k := range []string{"slug", "mode", "status", "startedAt", "completedAt", "totalDurationMs", "baseBranch"} {
		if v := e.get(k); v != nil {
			batch[k] = json.RawMessage(v.raw(p.b))
		}
	}
	for fi, f := range feats.vals {
		fpath := fmt.Sprintf("%s.features[%d]", path, fi)
		if p.paired[f] {
			continue
		}
		if f.kind != '{' {
			p.problem(f, fpath, "not an object; feature skipped")
			continue
		}
		slug := p.str(f, fpath, "slug")
		if slug == "" {
			p.problem(f, fpath+".slug", "no slug; feature skipped")
			continue
		}
		raw := p.str(f, fpath, "status")
		status := featureStatus(raw)
		started, startRaw := p.when(f, fpath, "startedAt")
		finished, _ := p.when(f, fpath, "completedAt")
		id := in.batchID + "/" + slug // a feature that never started
		if startRaw != "" {
			id = slug + "@" + startRaw
		}
		run := records.Run{System: records.Orchestr8, RunID: p.runID(id, "", j), Item: slug, Source: source, Batch: in.batchID,
			StartedAt: started, FinishedAt: finished, Status: status, Verdict: raw}
		if started != nil && finished != nil && !finished.Before(*started) {
			run.DurationMS = records.Float(float64(finished.Sub(*started).Microseconds()) / 1000)
		}
		run.Detail, _ = json.Marshal(map[string]any{"batch": batch, "feature": json.RawMessage(f.raw(p.b))})
		if started != nil || (status != "queued" && status != "cancelled") {
			run.Attempts = records.Int(1)
			a := records.Attempt{System: records.Orchestr8, RunID: run.RunID, Item: slug, Source: source, Attempt: 1,
				TS: started, DurationMS: run.DurationMS}
			switch status {
			case "success":
				a.Passed = records.Bool(true)
			case "failure":
				a.Passed = records.Bool(false)
			case "merge_conflict":
				// The pipeline passed; merging its branch did not.
				a.Passed, a.Stage = records.Bool(false), "merge"
				run.EndedStage = "merge"
				a.Signature = failure.Signature("merge", "")
			}
			p.set.Attempts = append(p.set.Attempts, a)
		}
		p.set.Runs = append(p.set.Runs, run)
	}
}

// Package factory reads the records of the factory
// (llm-contract-harness): run summaries, failure briefs, and the web
// pipeline's events and meta files.
//
// Every parser takes a whole file and never panics: a file that is not
// its format is a *records.Error, a record with a wrong-typed field is one
// too, located by line and JSON path, and a broken attempt of an otherwise
// readable run is a Problem while the rest is kept.
package factory

import (
	"bytes"
	"fmt"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/orchstat/orchstat/model/factory/spec"
	"github.com/orchstat/orchstat/model/failure"
	"github.com/orchstat/orchstat/model/records"
)

// Sources, as stored in the source columns. attempt_runs prefers any
// source to "brief" for a run, so briefs count only for runs whose summary
// is missing.
const (
	SourceSummary = "run_summary"
	SourceBrief   = "brief"
	SourceEvents  = "events"
)

// status maps the factory's verdict to the store's run status.
func status(verdict string) string {
	switch verdict {
	case "":
		return ""
	case "PASS":
		return "success"
	case "FAIL":
		return "failure"
	}
	return strings.ToLower(verdict)
}

// dirName names a run by a directory, as the factory names its artifact
// directories after the run. "" when the path has no such directory.
func dirName(dir string) string {
	b := filepath.Base(dir)
	if b == "." || b == string(filepath.Separator) || b == "" {
		return ""
	}
	return b
}

// detail is a file's text for the detail column: it was parsed as JSON
// already; the store wants valid UTF-8 and no byte order mark.
func detail(b []byte) []byte {
	b = bytes.TrimPrefix(b, bom)
	if !utf8.Valid(b) {
		b = bytes.ToValidUTF8(b, []byte("\uFFFD"))
	}
	return b
}

// ParseSummary reads a run_summary.json. Two shapes are known. The patch
// factory's (12-hex run ids) has started_utc, ended_utc, ended_stage,
// max_attempts and work_order_path, and attempts that apply a diff
// (apply_ok, stage patch_apply_failed). The write factory's (16-hex run
// ids, and what factory/run.py writes today, with ULIDs) has
// total_attempts, work_order_id and baseline_commit, attempts that write
// files (write_ok), and often the run's "config". patch_apply_failed
// predates ALLOWED_STAGES, so the shape with times is the older one.
func ParseSummary(path string, b []byte) (*records.Set, error) {
	t := text{b: b, line: 1}
	root, err := decode(t)
	if err != nil {
		return nil, err
	}
	if root.kind != kObject {
		return nil, t.errAt(root.off, "", "run summary: want a JSON object, got "+root.kind.String())
	}
	f := &fields{t: t}
	run := records.Run{System: records.Factory, Source: SourceSummary, Detail: detail(b)}
	run.RunID = f.str(root.get("run_id"), "run_id")
	run.Item = f.str(root.get("work_order_id"), "work_order_id")
	if wo := f.str(root.get("work_order_path"), "work_order_path"); run.Item == "" && wo != "" {
		run.Item = workOrderName(wo)
	}
	run.Verdict = f.str(root.get("verdict"), "verdict")
	run.Status = status(run.Verdict)
	run.StartedAt = f.when(root.get("started_utc"), "started_utc")
	run.FinishedAt = f.when(root.get("ended_utc"), "ended_utc")
	if run.StartedAt != nil && run.FinishedAt != nil && !run.FinishedAt.Before(*run.StartedAt) {
		run.DurationMS = records.Float(float64(run.FinishedAt.Sub(*run.StartedAt).Microseconds()) / 1000)
	}
	run.EndedStage = f.str(root.get("ended_stage"), "ended_stage")
	run.Attempts = f.integer(root.get("total_attempts"), "total_attempts")
	// The run's own config says how many attempts it was allowed when the
	// summary does not.
	run.MaxAttempts = f.integer(root.get("max_attempts"), "max_attempts")
	if cfg := f.object(root.get("config"), "config"); run.MaxAttempts == nil {
		run.MaxAttempts = f.integer(cfg.get("max_attempts"), "config.max_attempts")
	}
	atts := f.array(root.get("attempts"), "attempts")
	if run.Attempts == nil && root.get("attempts") != nil && f.err == nil {
		run.Attempts = records.Int(len(atts))
	}
	if f.err != nil {
		return nil, f.err
	}
	if run.RunID == "" {
		if run.RunID = dirName(filepath.Dir(path)); run.RunID == "" {
			return nil, t.errAt(root.off, "run_id", "missing, and the file's directory does not name the run")
		}
	}

	set := &records.Set{}
	seen := map[int]bool{}
	lastFailed, lastStage := 0, ""
	for i, an := range atts {
		a, stages, perr := readAttempt(t, run, an, i)
		if perr != nil {
			set.Problems = append(set.Problems, *perr)
			continue
		}
		if seen[a.Attempt] {
			at := an
			if idx := an.get("attempt_index"); idx != nil {
				at = idx
			}
			set.Problems = append(set.Problems, *t.errAt(at.off, fmt.Sprintf("attempts[%d].attempt_index", i),
				fmt.Sprintf("attempt %d appears twice; the first is kept", a.Attempt)))
			continue
		}
		seen[a.Attempt] = true
		set.Attempts = append(set.Attempts, a)
		set.Stages = append(set.Stages, stages...)
		if a.Passed != nil && !*a.Passed && a.Attempt > lastFailed {
			lastFailed, lastStage = a.Attempt, a.Stage
		}
	}
	// Summaries without ended_stage: a run that did not pass ended at its
	// last failure.
	if run.EndedStage == "" && run.Status != "success" {
		run.EndedStage = lastStage
	}
	set.Runs = []records.Run{run}
	return set, nil
}

// workOrderName is a work order's name from its file: WO-03 for
// /repos/aos/wo/WO-03.json, whichever separator the path uses.
func workOrderName(p string) string {
	if i := strings.LastIndexAny(p, `/\`); i >= 0 {
		p = p[i+1:]
	}
	return strings.TrimSuffix(p, filepath.Ext(p))
}

// readAttempt reads attempts[i] of a summary and the stages it ran.
func readAttempt(t text, run records.Run, n *node, i int) (records.Attempt, []records.Stage, *records.Error) {
	p := fmt.Sprintf("attempts[%d]", i)
	f := &fields{t: t}
	if f.object(n, p) == nil && f.err == nil {
		f.err = t.errAt(n.off, p, "want an object, got null")
	}
	a := records.Attempt{System: records.Factory, RunID: run.RunID, Item: run.Item, Source: run.Source, Attempt: i + 1}
	if idx := f.integer(n.get("attempt_index"), p+".attempt_index"); idx != nil {
		if *idx < 1 {
			f.bad(n.get("attempt_index"), p+".attempt_index", fmt.Sprintf("attempts count from 1, got %d", *idx))
		}
		a.Attempt = *idx
	}

	var stages []records.Stage
	add := func(name string, passed *bool, exit *int, cmd string, dur *float64, feedback string) {
		stages = append(stages, records.Stage{System: a.System, RunID: a.RunID, Item: a.Item, Source: a.Source,
			Attempt: a.Attempt, Seq: len(stages) + 1, Name: name, Passed: passed, ExitCode: exit, Command: cmd,
			DurationMS: dur, Feedback: feedback})
	}
	for _, w := range []struct{ key, name string }{{"write_ok", spec.StageWrite}, {"apply_ok", spec.StageApply}} {
		if ok := f.boolean(n.get(w.key), p+"."+w.key); ok != nil {
			add(w.name, ok, nil, "", nil, "")
		}
	}
	// A timed-out command's "[TIMEOUT]" marker is at the end of its stderr,
	// which the brief's excerpt may have cut; the command results keep it.
	var timedOut []string
	for _, s := range []struct{ key, name string }{{"verify", spec.StageVerify}, {"acceptance", spec.StageAcceptance}} {
		for j, c := range f.array(n.get(s.key), p+"."+s.key) {
			cp := fmt.Sprintf("%s.%s[%d]", p, s.key, j)
			if f.object(c, cp) == nil {
				f.bad(c, cp, "want an object, got null")
				continue
			}
			exit := f.integer(c.get("exit_code"), cp+".exit_code")
			cmd := f.command(c.get("command"), cp+".command")
			stderr := f.str(c.get("stderr_trunc"), cp+".stderr_trunc")
			stdout := f.str(c.get("stdout_trunc"), cp+".stdout_trunc")
			var dur *float64
			if sec := f.number(c.get("duration_seconds"), cp+".duration_seconds"); sec != nil {
				dur = records.Float(*sec * 1000)
			}
			var passed *bool
			feedback := ""
			if exit != nil {
				passed = records.Bool(*exit == 0)
				if *exit != 0 {
					if feedback = stderr; feedback == "" {
						feedback = stdout
					}
					timedOut = append(timedOut, stderr)
				}
			}
			add(s.name, passed, exit, cmd, dur, feedback)
		}
	}

	fbn := n.get("failure_brief")
	switch {
	case fbn == nil:
		// The attempt does not say whether it passed.
	case fbn.kind == kNull:
		a.Passed = records.Bool(true)
	default:
		fb := readBrief(f, fbn, p+".failure_brief")
		a.Passed = records.Bool(false)
		a.Stage, a.ExitCode, a.Command, a.Error = fb.stage, fb.exit, fb.command, fb.excerpt
		a.Class = fb.class(strings.Join(timedOut, "\n"))
		a.Signature = fb.signature()
	}
	if f.err != nil {
		return a, nil, f.err
	}
	return a, stages, nil
}

// brief is a FailureBrief: in a summary's attempt or in its own file.
type brief struct {
	stage, command, excerpt string
	exit                    *int
}

func readBrief(f *fields, n *node, p string) brief {
	join := func(k string) string {
		if p == "" {
			return k
		}
		return p + "." + k
	}
	n = f.object(n, p)
	return brief{
		stage:   f.str(n.get("stage"), join("stage")),
		command: f.command(n.get("command"), join("command")),
		excerpt: f.str(n.get("primary_error_excerpt"), join("primary_error_excerpt")),
		exit:    f.integer(n.get("exit_code"), join("exit_code")),
	}
}

// class is the failure's class (model/failure). A verify or acceptance
// command that timed out says so in its stderr (the factory audit, T2), given as
// extra text when the record has it.
func (b brief) class(stderr string) string {
	exit := 0
	if b.exit != nil {
		exit = *b.exit
	}
	return string(failure.ClassifyFactory(b.stage, exit, b.excerpt+"\n"+stderr))
}

// signature is the failure's signature (failure.Signature over the stage
// and the excerpt). A brief that records neither has none: two failures
// that say nothing are not known to be the same failure.
func (b brief) signature() string {
	if b.stage == "" && b.excerpt == "" {
		return ""
	}
	return failure.Signature(b.stage, b.excerpt)
}

var attemptDir = regexp.MustCompile(`^attempt_([0-9]+)$`)

// ParseBrief reads an attempt_N/failure_brief.json. The brief names
// neither its run nor its attempt: the directories do. A brief is written
// only when its attempt failed, and says nothing about how the run ended,
// so its run is "unfinished": when the run's summary exists, attempt_runs
// takes the run from the summary instead; when it does not, the run most
// likely never finished (the factory writes a summary even when it
// crashes), and its attempts still count.
func ParseBrief(path string, b []byte) (*records.Set, error) {
	t := text{b: b, line: 1}
	root, err := decode(t)
	if err != nil {
		return nil, err
	}
	if root.kind != kObject {
		return nil, t.errAt(root.off, "", "failure brief: want a JSON object, got "+root.kind.String())
	}
	dir := filepath.Dir(path)
	m := attemptDir.FindStringSubmatch(filepath.Base(dir))
	if m == nil {
		return nil, t.errAt(root.off, "", fmt.Sprintf("failure brief: cannot tell its attempt: it is not in an attempt_N directory (%s)", filepath.Base(dir)))
	}
	n, aerr := strconv.Atoi(m[1])
	if aerr != nil || n < 1 || n > 1<<31-1 {
		return nil, t.errAt(root.off, "", fmt.Sprintf("failure brief: attempt number out of range: %s", m[1]))
	}
	runID := dirName(filepath.Dir(dir))
	if runID == "" {
		return nil, t.errAt(root.off, "", "failure brief: its attempt directory is not in a run directory")
	}
	f := &fields{t: t}
	fb := readBrief(f, root, "")
	if f.err != nil {
		return nil, f.err
	}
	run := records.Run{System: records.Factory, RunID: runID, Source: SourceBrief, Status: "unfinished", Detail: detail(b)}
	a := records.Attempt{System: records.Factory, RunID: runID, Source: SourceBrief, Attempt: n, Passed: records.Bool(false),
		Stage: fb.stage, Class: fb.class(""), ExitCode: fb.exit, Command: fb.command, Error: fb.excerpt,
		Signature: fb.signature()}
	return &records.Set{Runs: []records.Run{run}, Attempts: []records.Attempt{a}}, nil
}

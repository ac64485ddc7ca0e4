package tracegen

import (
	"bytes"
	"math"
)

// finish is RunFinalizerService.finalize: RunStopped when there is a stop
// reason, RunFinished, then summary.json and the manifest's finishedAt.
func (s *sim) finish(status, stopReason, msg string) {
	s.tick(1, 10)
	if stopReason != "" {
		l := s.ev("RunStopped")
		l.w().kstr("reason", stopReason).kstr("details", msg)
		l.done()
	}
	l := s.ev("RunFinished")
	l.w().kstr("status", status).kstr("summary", msg)
	l.done()
	s.ended = true
	s.tick(1, 15)
	s.writeSummary(status, stopReason, true)
}

// finishCancelled ends a run the user aborted mid-request.
func (s *sim) finishCancelled() {
	l := s.ev("RunFinished")
	l.w().kstr("status", "cancelled").kstr("summary", "Run cancelled by user")
	l.done()
	s.ended = true
	s.tick(1, 15)
	s.writeSummary("cancelled", "", true)
}

// writeSummary writes summary.json in RunSummaryService.build's key order.
// finalized says whether the finalizer ran (it also sets patch stats and
// updates the manifest); l1.ts's planning-failure path does neither.
func (s *sim) writeSummary(status, stopReason string, finalized bool) {
	j := jw{b: make([]byte, 0, 2048)}
	j.obj().knum("schemaVersion", 1).kstr("runId", s.id)
	j.key("command").strs([]string{"run", s.goal})
	j.kstr("goal", s.goal).kstr("repoRoot", s.repo.root).kstr("repoId", s.repo.root)
	j.key("startedAt").ts(s.startMs).key("finishedAt").ts(s.now).knum("durationMs", s.now-s.startMs)
	j.kstr("status", status)
	if stopReason != "" {
		j.kstr("stopReason", stopReason)
	}
	j.knum("thinkLevel", int64(s.level)).kbool("escalated", s.escalated)
	j.key("selectedProviders").obj().kstr("planner", s.planner().p.id).kstr("executor", s.executor().p.id)
	j.kstr("reviewer", s.reviewer().p.id).end()
	j.key("budgets").obj().knum("maxIterations", maxIterBudget).knum("maxToolRuns", 999).knum("maxWallTimeMs", s.budgetMs)
	if s.costCap > 0 {
		j.key("maxCostUsd").float(s.costCap)
	}
	j.end()
	if finalized {
		j.key("patchStats").obj().knum("filesChanged", int64(len(s.touched))).knum("linesAdded", 0).knum("linesDeleted", 0)
		if len(s.patchPaths) > 0 {
			j.kstr("finalDiffPath", s.patchPaths[len(s.patchPaths)-1])
		}
		j.end()
	}
	v := s.verif
	if v == nil {
		v = &summaryVerif{failedChecks: -1}
	}
	j.key("verification").obj().kbool("enabled", v.enabled).kbool("passed", v.passed)
	if v.failedChecks >= 0 {
		j.knum("failedChecks", int64(v.failedChecks))
	}
	if v.enabled {
		j.key("reportPaths").strs(s.reports)
	}
	j.end()
	j.key("tools").obj().kbool("enabled", true).key("runs").arr().end().end()
	j.key("memory").obj().kbool("enabled", false).end()
	j.key("indexing").obj().kbool("enabled", false).kbool("autoUpdated", false).end()
	s.writeCosts(&j)
	j.key("artifacts").obj().kstr("manifestPath", s.artifacts+"/manifest.json").kstr("tracePath", s.artifacts+"/trace.jsonl")
	if finalized {
		j.key("patchPaths").strs(s.patchPaths)
	}
	j.key("contextPaths").arr().end().key("toolLogPaths").arr().end().end()
	j.key("telemetry").obj().kbool("enabled", false).kstr("mode", "local").end()
	if m := s.l3; m != nil {
		j.key("l3").obj().knum("bestOfN", bestOfN).knum("candidatesGenerated", int64(m.candidatesGenerated))
		j.knum("candidatesEvaluated", int64(m.candidatesEvaluated))
		if m.selected != "" {
			j.kstr("selectedCandidateId", m.selected)
		}
		j.kbool("passingCandidateSelected", m.passing).kbool("reviewerInvoked", m.reviewer).kbool("judgeInvoked", m.judge)
		if m.judgeReason != "" {
			j.kstr("judgeInvocationReason", m.judgeReason)
		}
		j.key("evaluationReportPaths").strs(m.evalPaths).end()
	}
	j.end()
	s.addFile("summary.json", indent(j.b, true))
	if finalized {
		s.finalMan = s.manifest(true)
	}
}

func (s *sim) writeCosts(j *jw) {
	var in, out int64
	var cost float64
	priced := false
	j.key("costs").obj().key("perProvider").obj()
	for _, u := range s.usage {
		j.key(u.id).obj()
		tokens(j, u.in, u.out, u.cost, u.hasPrice)
		j.end()
		in, out, cost = in+u.in, out+u.out, cost+u.cost
		priced = priced || u.hasPrice
	}
	j.end().key("totals").obj()
	tokens(j, in, out, cost, priced)
	j.end().end()
}

func tokens(j *jw, in, out int64, cost float64, priced bool) {
	j.knum("inputTokens", in).knum("outputTokens", out).knum("totalTokens", in+out)
	j.key("estimatedCostUsd")
	if priced {
		j.float(math.Round(cost*1e6) / 1e6)
	} else {
		j.null()
	}
}

// manifest renders manifest.json as initializeManifest writes it and, when
// final, as the finalizer's updateManifest leaves it.
func (s *sim) manifest(final bool) []byte {
	j := jw{b: make([]byte, 0, 1024)}
	j.obj().knum("schemaVersion", 1).kstr("runId", s.id).key("startedAt").ts(s.manStarted)
	j.kstr("command", "run "+s.goal).kstr("repoRoot", s.repo.root).kstr("artifactsDir", s.artifacts)
	j.kstr("tracePath", s.artifacts+"/trace.jsonl").kstr("summaryPath", s.artifacts+"/summary.json")
	j.kstr("effectiveConfigPath", s.artifacts+"/effective-config.json")
	patches, reports := []string{}, []string{}
	if final {
		patches = s.patchPaths
		if s.level == 2 { // only L2's finalize passes its report paths
			reports = s.reports
		}
	}
	j.key("patchPaths").strs(patches).key("contextPaths").arr().end().key("toolLogPaths").arr().end()
	j.key("verificationPaths").strs(reports)
	if final {
		j.key("finishedAt").ts(s.now)
	}
	j.end()
	return indent(j.b, true)
}

// cut turns a finished simulation into a still-running or crashed one: the
// trace stops after some line and only the files written by then remain.
func (s *sim) cut(unfinished bool, frac float64, torn bool) {
	s.keep = len(s.cuts)
	if !unfinished || len(s.cuts) < 2 {
		return
	}
	s.keep = 1 + int(frac*float64(len(s.cuts)-1))
	s.j.b = s.j.b[:s.cuts[s.keep-1]]
	s.lines = bytes.Count(s.j.b, []byte{'\n'})
	s.finalMan = nil
	if torn {
		last := bytes.LastIndexByte(s.j.b[:len(s.j.b)-1], '\n') + 1
		n := len(s.j.b) - last
		s.j.b = []byte(truncateUTF8(string(s.j.b), last+1+s.rng.IntN(n-1)))
	}
}

// output is the run's files in a fixed order.
func (s *sim) output() Run {
	r := Run{ID: s.id, Events: s.lines}
	r.Files = append(r.Files, File{"trace.jsonl", s.j.b})
	man := s.initialMan
	if s.finalMan != nil {
		man = s.finalMan
	}
	r.Files = append(r.Files, File{"manifest.json", man})
	for _, f := range s.files {
		if f.after <= s.keep {
			r.Files = append(r.Files, File{f.name, f.data})
		}
	}
	return r
}

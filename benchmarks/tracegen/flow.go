package tracegen

import (
	"strconv"
)

// The run's control flow follows packages/core/src/orchestrator/runners:
// l1.ts (plan, then per step: generate, apply), l2.ts (L1, verify, repair
// loop, escalation) and l3.ts (best-of-N candidates, judge, diagnosis).

const (
	maxL2Iterations = 5  // hard-coded in l2.ts
	maxEscalations  = 1  // escalation.maxEscalations default
	escalateAfter   = 2  // toL3AfterNonImprovingIterations / toL3AfterPatchApplyFailures
	maxStepAttempts = 6  // execution.maxStepAttempts default (L1)
	bestOfN         = 3  // l3.bestOfN default
	l3Rounds        = 3  // candidate rounds per L3 step (see runL3)
	diagnoseAfter   = 2  // l3.diagnosis.triggerOnRepeatedFailures
	maxIterBudget   = 10 // budget.iter as the summary reports it
)

func (s *sim) run() {
	cfg := s.cfg
	unfinished := s.chance(cfg.UnfinishedProb)
	cutFrac := s.rng.Float64()
	torn := unfinished && s.chance(cfg.TornLineProb)
	if s.chance(cfg.CancelProb) {
		s.cancelAt = 1 + s.rng.IntN(8)
	}
	s.setup()

	s.tick(30, 60)
	l := s.ev("RunStarted")
	l.w().kstr("taskId", s.id).kstr("goal", s.goal)
	l.done()
	s.tick(0, 2)
	s.manStarted = s.now
	s.initialMan = s.manifest(false)

	switch u := s.rng.Float64(); {
	case u < cfg.L1Prob:
		s.level = 1
	case u < cfg.L1Prob+cfg.StartAtL3Prob:
		s.level = 3
	default:
		s.level = 2
	}
	steps, ok := s.plan()
	switch {
	case !ok:
	case s.level == 1:
		s.runL1(steps, true)
	case s.level == 2:
		s.runL2(steps)
	default:
		s.runL3(steps)
	}
	s.cut(unfinished, cutFrac, torn)
}

func (s *sim) setup() {
	s.repo = pick(s.rng, repos)
	s.goal = pick(s.rng, goals)
	s.artifacts = s.repo.root + "/.orchestrator/runs/" + s.id
	s.budgetMs = pick(s.rng, []int64{600_000, 1_200_000, 1_800_000, 3_600_000})
	if s.chance(0.3) {
		s.costCap = pick(s.rng, []float64{1, 2.5, 5})
	}
	// One model per provider per run, as a config maps provider id to model.
	s.models = make([]model, len(providers))
	for i := range providers {
		s.models[i] = pick(s.rng, providers[i].models)
	}
	for r := range s.roles {
		i := s.rng.IntN(len(providers))
		s.roles[r] = roleProvider{p: &providers[i], model: s.models[i]}
	}
	s.pid = 1000 + s.rng.IntN(90000)
}

func (s *sim) planner() roleProvider  { return s.roles[0] }
func (s *sim) executor() roleProvider { return s.roles[1] }
func (s *sim) reviewer() roleProvider { return s.roles[2] }

// plan is resolveRoleProviders plus PlanService.generatePlan. It returns
// false if the run ended.
func (s *sim) plan() ([]string, bool) {
	for r, role := range []string{"planner", "executor", "reviewer"} {
		p := s.roles[r].p
		s.tick(0, 2)
		l := s.ev("ProviderSelected")
		w := l.w().kstr("role", role).kstr("providerId", p.id).key("capabilities").obj()
		w.kbool("supportsStreaming", p.streaming).kbool("supportsToolCalling", p.toolCalling)
		w.kbool("supportsJsonMode", p.jsonMode).kstr("modality", "text").kstr("latencyClass", p.latencyClass).end()
		l.done()
	}
	s.tick(0, 2)
	l := s.ev("PlanRequested")
	l.w().kstr("goal", s.goal)
	l.done()
	dur := s.between(15, 900)
	s.now += dur
	l = s.ev("RepoScan")
	l.w().knum("fileCount", s.between(40, 6000)).knum("durationMs", dur)
	l.done()
	dur = s.between(5, 300)
	s.now += dur
	l = s.ev("RepoSearch")
	l.w().kstr("query", s.goal).knum("matches", s.between(0, 60)).knum("durationMs", dur)
	l.done()
	s.contextBuilt()

	if s.chance(s.cfg.InterleaveProb) {
		k := s.rng.IntN(len(providers))
		research := roleProvider{p: &providers[k], model: s.models[k]}
		if !s.concurrent(s.planner(), research) {
			return nil, false
		}
	} else if !s.request(s.planner()) {
		return nil, false
	}
	var steps []string
	if !s.chance(s.cfg.EmptyPlanProb) {
		perm := s.rng.Perm(len(planSteps))
		for _, k := range perm[:pick(s.rng, stepCounts)] {
			steps = append(steps, planSteps[k])
		}
	}
	s.cliOutput(s.planner(), "plan", func() string { return planOutput(steps) })
	s.tick(0, 2)
	l = s.ev("PlanCreated")
	l.w().key("planSteps").strs(append([]string{}, steps...))
	l.done()
	if len(steps) == 0 {
		if s.level == 3 {
			s.finish("failure", "", "Planning failed to produce any steps.")
		} else {
			// l1.ts writes RunFinished and a summary itself here, without
			// touching the manifest.
			s.level = 1
			s.tick(0, 2)
			l := s.ev("RunFinished")
			l.w().kstr("status", "failure").kstr("summary", "Planning failed to produce any steps.")
			l.done()
			s.ended = true
			s.tick(1, 5)
			s.writeSummary("failure", "", false)
		}
		return nil, false
	}
	return steps, true
}

// stepCounts weights plans towards few steps.
var stepCounts = []int{1, 1, 1, 2, 2, 2, 3, 3, 4, 5}

func (s *sim) contextBuilt() {
	s.tick(1, 40)
	l := s.ev("ContextBuilt")
	l.w().knum("fileCount", s.between(1, 25)).knum("tokenEstimate", s.between(300, 24000))
	l.done()
}

func (s *sim) stepStarted(step string, index, total int) {
	s.tick(1, 5)
	l := s.ev("StepStarted")
	l.w().kstr("step", step).knum("index", int64(index)).knum("total", int64(total))
	l.done()
}

func (s *sim) stepFinished(step string, ok bool, errMsg, judgeReason string) {
	s.tick(1, 5)
	l := s.ev("StepFinished")
	w := l.w().kstr("step", step).kbool("success", ok)
	if !ok {
		w.kstr("error", errMsg)
	}
	if judgeReason != "" {
		w.kbool("judgeInvoked", true).kstr("judgeReason", judgeReason)
	}
	l.done()
}

func (s *sim) pickFiles() []string {
	n := 1 + s.rng.IntN(3)
	perm := s.rng.Perm(len(sourceFiles))
	files := make([]string, n)
	for i := range files {
		files[i] = sourceFiles[perm[i]]
	}
	return files
}

func (s *sim) touch(files []string) {
	for _, f := range files {
		seen := false
		for _, t := range s.touched {
			seen = seen || t == f
		}
		if !seen {
			s.touched = append(s.touched, f)
		}
	}
}

func (s *sim) patchApplied(desc string, files []string) {
	s.tick(5, 200)
	l := s.ev("PatchApplied")
	l.w().kstr("description", desc).key("filesChanged").strs(files)
	l.w().kbool("success", true)
	l.done()
	s.touch(files)
}

func (s *sim) overTime() bool { return s.now-s.startMs > s.budgetMs }

// runL1 runs the plan's steps. standalone is false when L2 drives it: then
// a failed step does not end the run, and L2 verifies what there is.
// alive is false if the run ended; failed reports a failed step.
func (s *sim) runL1(steps []string, standalone bool) (alive, failed bool) {
	for idx, step := range steps {
		if s.overTime() {
			s.finish("failure", "budget_exceeded", "Time budget exceeded ("+strconv.FormatInt(s.budgetMs, 10)+"ms)")
			return false, false
		}
		s.stepStarted(step, idx, len(steps))
		ok, lastErr, stop := false, "", ""
		applyFailed := false
		for attempt := 1; attempt <= maxStepAttempts && !ok; attempt++ {
			if !s.request(s.executor()) {
				return false, false
			}
			files := s.pickFiles()
			pApply := s.cfg.StepApplyFailProb
			if applyFailed {
				pApply = s.cfg.ReapplyFailProb
			}
			switch u := s.rng.Float64(); {
			case u < s.cfg.StepNoDiffProb:
				s.diffOutput(s.executor(), files, false)
				lastErr, stop = "Failed to extract diff from executor output", "invalid_output"
			case u < s.cfg.StepNoDiffProb+pApply:
				s.diffOutput(s.executor(), files, true)
				s.patchProposed(files)
				msg := pick(s.rng, applyErrors)
				s.tick(5, 200)
				l := s.ev("PatchApplyFailed")
				l.w().kstr("error", msg)
				l.done()
				lastErr, stop = msg, "repeated_failure"
				applyFailed = true
			default:
				s.diffOutput(s.executor(), files, true)
				s.patchProposed(files)
				s.patchApplied(step, files)
				s.patchPaths = append(s.patchPaths, s.artifacts+"/patches/step_"+strconv.Itoa(idx)+"_selected.patch")
				ok = true
			}
		}
		if !ok {
			s.stepFinished(step, false, lastErr, "")
			if standalone {
				s.finish("failure", stop, "Step failed: "+step+". Error: "+lastErr)
				return false, true
			}
			return true, true // L2 goes on to verify
		}
		s.stepFinished(step, true, "", "")
	}
	if standalone {
		s.finish("success", "", "L1 Plan Executed Successfully. "+strconv.Itoa(len(steps))+" steps.")
		return false, false
	}
	return true, false
}

func (s *sim) patchProposed(files []string) {
	s.tick(1, 20)
	l := s.ev("PatchProposed")
	l.w().key("filePaths").strs(files)
	l.w().kstr("diffPreview", truncateUTF8(diffText(s.rng, files[:1], 2), 160))
	l.done()
}

// runL2 is runners/l2.ts: the counters and their order of checks are the
// real code's, including its quirks (iteration 1 always counts as "same
// signature", so the non_improving stop fires before a non_improving
// escalation can).
func (s *sim) runL2(steps []string) {
	alive, l1Failed := s.runL1(steps, false)
	if !alive {
		return
	}

	var fails []failedCheck
	if l1Failed || s.chance(s.cfg.VerifyFailProb) {
		fails = s.newFails()
	}
	v := s.verify(fails, "verification_report_initial.json")
	if v.passed {
		s.verif = &summaryVerif{enabled: true, passed: true, failedChecks: -1}
		s.finish("success", "", "L2 Verified Success")
		return
	}

	loop := &l2Loop{v: v, failureSig: v.sig}
	for it := 1; it <= maxL2Iterations; it++ {
		if reason, due := loop.escalation(); due {
			loop.escalations++
			s.escalateToL3(reason)
			return
		}
		if s.l2Iteration(loop, it) {
			return
		}
	}
	s.verif = &summaryVerif{enabled: true, passed: false, failedChecks: len(loop.v.fails)}
	s.finish("failure", "budget_exceeded", "L2 failed to converge after "+strconv.Itoa(maxL2Iterations)+" iterations")
}

// l2Loop is the repair loop's state, as runners/l2.ts keeps it.
type l2Loop struct {
	v                                verification // the latest
	failureSig                       string       // the signature the loop compares with
	sameSig, applyFails, escalations int
}

// escalation is why the loop escalates to L3 before the next iteration,
// when it does.
func (l *l2Loop) escalation() (reason string, due bool) {
	if l.escalations >= maxEscalations || l.sameSig < escalateAfter && l.applyFails < escalateAfter {
		return "", false
	}
	if l.sameSig >= escalateAfter {
		return "non_improving", true
	}
	return "patch_apply_failure", true
}

func (s *sim) escalateToL3(reason string) {
	s.tick(1, 5)
	l := s.ev("RunEscalated")
	l.w().kstr("from", "L2").kstr("to", "L3").kstr("reason", reason)
	l.done()
	s.escalated = true
	s.level = 3
	if steps, ok := s.plan(); ok {
		s.runL3(steps)
	}
}

// l2Iteration is repair iteration it: a repair, its patch applied (or
// not) and verified. It reports whether the run ended.
func (s *sim) l2Iteration(loop *l2Loop, it int) (ended bool) {
	s.tick(1, 5)
	l := s.ev("IterationStarted")
	l.w().knum("iteration", int64(it)).kstr("goal", s.goal)
	l.done()
	if s.nonImprovingStop(loop) {
		return true
	}

	if !s.request(s.executor()) {
		return true
	}
	files := s.pickFiles()
	if path, none := s.noRepair(); none {
		s.repairAttempted(it, path)
		return false
	}
	patchPath := s.artifacts + "/patches/step_" + strconv.Itoa(100+it) + "_selected.patch"
	s.patchPaths = append(s.patchPaths, patchPath)
	if s.chance(0.25) { // runPatchReviewLoop asked the reviewer; its errors are non-fatal
		s.call(s.reviewer())
		if s.ended {
			return true
		}
	}
	s.repairAttempted(it, patchPath)

	next := s.applyRepair(loop, it, files)
	loop.v = s.verify(next, "verification_report_iter_"+strconv.Itoa(it)+".json")
	return s.iterationFinished(loop.v, it)
}

// nonImprovingStop counts a verification with the signature the loop
// compares with, and stops the run at the second; another signature
// becomes the one compared with.
func (s *sim) nonImprovingStop(loop *l2Loop) bool {
	if loop.failureSig == "" || loop.v.sig != loop.failureSig {
		loop.sameSig = 0
		loop.failureSig = loop.v.sig
		return false
	}
	loop.sameSig++
	if loop.sameSig < 2 {
		return false
	}
	s.verif = &summaryVerif{enabled: true, passed: false, failedChecks: len(loop.v.fails)}
	s.finish("failure", "non_improving", "Verification failure signature unchanged for 2 iterations")
	return true
}

// noRepair draws whether the executor proposed no diff or an empty one,
// and the patch path the loop then records.
func (s *sim) noRepair() (path string, none bool) {
	noDiff := s.chance(s.cfg.RepairNoDiffProb)
	emptyDiff := !noDiff && s.chance(s.cfg.RepairEmptyDiffProb)
	switch {
	case noDiff:
		return "none (no-diff)", true
	case emptyDiff:
		return "none (empty-diff)", true
	}
	return "", false
}

// applyRepair applies the repair's patch, or fails to, and returns the
// checks that fail after it.
func (s *sim) applyRepair(loop *l2Loop, it int, files []string) []failedCheck {
	if s.chance(s.cfg.RepairApplyFailProb) {
		loop.applyFails++
		s.l2ApplyFailed()
		if !s.chance(s.cfg.ApplyFailSameSigProb) {
			return s.newFails()
		}
		return loop.v.fails
	}
	loop.applyFails = 0
	s.patchApplied("L2 Repair Iteration "+strconv.Itoa(it), files)
	switch {
	case s.chance(s.cfg.RepairFixProb):
		return nil
	case s.chance(s.cfg.SameSignatureProb):
		return loop.v.fails
	default:
		return s.newFails()
	}
}

// iterationFinished ends iteration it with verification v, and the run
// when v passed; it reports whether the run ended.
func (s *sim) iterationFinished(v verification, it int) bool {
	s.tick(1, 5)
	l := s.ev("IterationFinished")
	result := "failure"
	if v.passed {
		result = "success"
	}
	l.w().knum("iteration", int64(it)).kstr("result", result)
	l.done()
	if !v.passed {
		return false
	}
	s.verif = &summaryVerif{enabled: true, passed: true, failedChecks: -1}
	s.finish("success", "", "L2 Verified Success after "+strconv.Itoa(it)+" iterations")
	return true
}

func (s *sim) repairAttempted(it int, path string) {
	s.tick(1, 20)
	l := s.ev("RepairAttempted")
	l.w().knum("iteration", int64(it)).kstr("patchPath", path)
	l.done()
}

func (s *sim) l2ApplyFailed() {
	e := pick(s.rng, l2ApplyErrors)
	s.tick(5, 200)
	l := s.ev("PatchApplyFailed")
	w := l.w().kstr("error", e.message).key("details").obj()
	w.kstr("type", e.typ).kstr("message", e.message).key("details").obj()
	if e.stderr != "" {
		w.kstr("stderr", e.stderr)
	}
	w.kstr("kind", e.kind).end().end()
	l.done()
}

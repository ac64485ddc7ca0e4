package tracegen

import (
	"strconv"
)

var judgeReasons = []struct {
	reason string
	weight float64
}{
	{"no_passing_candidates", 0.70},
	{"objective_near_tie", 0.25},
	{"verification_unavailable", 0.05},
}

// runL3 is runners/l3.ts. One liberty: l3.ts ends the run on the first
// failed apply, which leaves its repeated-failure diagnosis unreachable; we
// give each step up to l3Rounds rounds of candidates so that identical
// apply errors can repeat and trigger DiagnosisStarted as EVENTS.md describes.
func (s *sim) runL3(steps []string) {
	s.level = 3
	s.l3 = &l3Meta{}
	done := 0
	var applies applyFailures
	for _, step := range steps {
		if s.overTime() {
			s.finish("failure", "budget_exceeded", "Time budget exceeded ("+strconv.FormatInt(s.budgetMs, 10)+"ms)")
			return
		}
		s.stepStarted(step, done, len(steps))
		if !s.l3Step(step, done, &applies) {
			return
		}
		done++
	}
	s.finish("success", "", "L3 Plan Executed Successfully. "+strconv.Itoa(done)+" steps.")
}

// applyFailures counts equal apply errors in a row, across steps, for the
// repeated-failure diagnosis.
type applyFailures struct {
	n       int
	lastErr string
}

// l3Step runs step (the done-th): rounds of candidates until one applies.
// It reports whether the run goes on.
func (s *sim) l3Step(step string, done int, applies *applyFailures) bool {
	ok, lastErr, judgeReason := false, "", ""
	failedApply := false
	for round := 0; round < l3Rounds && !ok; round++ {
		valid := s.candidates(done)
		if s.ended {
			return false
		}
		if len(valid) == 0 {
			s.finish("failure", "invalid_output", "No valid candidates generated for step: "+step)
			return false
		}
		reason := s.selectCandidate(done, valid)
		if s.ended {
			return false
		}
		if reason != "" {
			judgeReason = reason
		}
		pFail := s.cfg.L3ApplyFailProb
		if failedApply {
			pFail = s.cfg.ReapplyFailProb
		}
		files := s.pickFiles()
		s.patchPaths = append(s.patchPaths, s.artifacts+"/patches/step_"+strconv.Itoa(done)+"_selected.patch")
		if s.chance(pFail) {
			failedApply = true
			msg, alive := s.l3ApplyFailed(done, applies)
			if !alive {
				return false
			}
			lastErr = msg
			continue
		}
		ok = true
		*applies = applyFailures{}
		s.l3Applied(step, done, files)
	}
	if !ok {
		s.stepFinished(step, false, lastErr, "")
		s.finish("failure", "repeated_failure", "Step failed: "+step+". Error: "+lastErr)
		return false
	}
	s.stepFinished(step, true, "", judgeReason)
	return true
}

// l3ApplyFailed fails to apply the selected candidate, diagnosing when
// the same error has repeated diagnoseAfter times. It returns the error,
// and whether the run goes on.
func (s *sim) l3ApplyFailed(step int, applies *applyFailures) (string, bool) {
	msg := pick(s.rng, applyErrors)
	if applies.lastErr != "" && s.chance(s.cfg.SameApplyErrorProb) {
		msg = applies.lastErr
	}
	s.tick(5, 200)
	l := s.ev("PatchApplyFailed")
	l.w().kstr("error", msg)
	l.done()
	// l3.ts compares sha256 hashes of the error text; equal text is equal
	// hash.
	if msg == applies.lastErr {
		applies.n++
	} else {
		applies.n, applies.lastErr = 1, msg
	}
	if applies.n >= diagnoseAfter {
		if !s.diagnose(step, msg) {
			return msg, false
		}
		applies.n = 0
	}
	return msg, true
}

// l3Applied applies the selected candidate and runs the step's final
// verification.
func (s *sim) l3Applied(step string, done int, files []string) {
	s.patchApplied(step, files)
	var fails []failedCheck
	if s.chance(s.cfg.FinalVerifyFailProb) {
		fails = s.newFails()
	}
	name := "verification_iter_" + strconv.Itoa(done) + "_final.json"
	v := s.verify(fails, name)
	s.l3.evalPaths = append(s.l3.evalPaths, s.artifacts+"/"+name)
	if !v.passed {
		// l3.ts emits a second VerificationFinished of its own here.
		s.tick(0, 2)
		s.verificationFinished(false, checkNames(v.fails))
	}
}

func checkNames(fs []failedCheck) []string {
	names := make([]string, len(fs))
	for i, f := range fs {
		names[i] = f.name
	}
	return names
}

// candidates generates bestOfN candidates sequentially, as
// CandidateGenerator.generateCandidates does, and returns the valid ones'
// indexes.
func (s *sim) candidates(step int) []int {
	var valid []int
	for i := range bestOfN {
		t0 := s.now
		if !s.request(s.executor()) {
			return nil
		}
		files := s.pickFiles()
		ok := s.chance(s.cfg.CandidateValidProb)
		s.tick(1, 10)
		l := s.ev("CandidateGenerated")
		w := l.w().knum("iteration", int64(step)).knum("candidateIndex", int64(i)).kbool("valid", ok)
		w.kstr("providerId", s.executor().p.id).knum("durationMs", s.now-t0)
		if ok {
			w.key("patchStats").obj().knum("filesChanged", int64(len(files)))
			w.knum("linesAdded", s.between(1, 120)).knum("linesDeleted", s.between(0, 60)).end()
			valid = append(valid, i)
		}
		l.done()
		s.l3.candidatesGenerated++
	}
	return valid
}

// selectCandidate evaluates the valid candidates and picks one: the
// smallest passing one, else the reviewer's and maybe the judge's choice.
// It returns the StepFinished judgeReason when the judge was invoked.
func (s *sim) selectCandidate(step int, valid []int) (reason string) {
	var passing []int
	for _, c := range valid {
		var fails []failedCheck
		if !s.chance(s.cfg.CandidatePassProb) {
			fails = s.newFails()
		} else {
			passing = append(passing, c)
		}
		s.verify(fails, "")
		s.l3.candidatesEvaluated++
	}
	if len(passing) > 0 {
		s.l3.passing = true
		s.l3.selected = strconv.Itoa(pick(s.rng, passing))
		return ""
	}
	winner := valid[0]
	if len(valid) > 1 {
		err := s.call(s.reviewer())
		if s.ended {
			return ""
		}
		if err == "" {
			s.l3.reviewer = true
		}
	}
	if !s.chance(s.cfg.JudgeProb) {
		s.l3.selected = strconv.Itoa(winner)
		return ""
	}
	why := judgeReasons[len(judgeReasons)-1].reason
	u := s.rng.Float64()
	for _, jr := range judgeReasons {
		if u < jr.weight {
			why = jr.reason
			break
		}
		u -= jr.weight
	}
	s.tick(1, 5)
	l := s.ev("JudgeInvoked")
	l.w().knum("iteration", int64(step)).kstr("reason", why).knum("candidateCount", int64(len(valid)))
	l.done()
	t0 := s.now
	err := s.call(s.reviewer())
	if s.ended {
		return ""
	}
	s.tick(1, 10)
	s.l3.judge = true
	if err != "" || s.chance(s.cfg.JudgeFailProb) {
		msg := pick(s.rng, judgeErrors)
		if err != "" {
			msg = "Provider request failed: " + err
		}
		l := s.ev("JudgeFailed")
		l.w().knum("iteration", int64(step)).kstr("error", msg).kstr("fallbackCandidateId", strconv.Itoa(winner))
		l.done()
		reason = why + ": Judge failed; fell back to candidate " + strconv.Itoa(winner) + "."
	} else {
		winner = pick(s.rng, valid)
		conf := float64(50+s.rng.IntN(50)) / 100
		l := s.ev("JudgeDecided")
		l.w().knum("iteration", int64(step)).kstr("winnerCandidateId", strconv.Itoa(winner))
		l.w().key("confidence").float(conf).knum("durationMs", s.now-t0)
		l.done()
		reason = why + ": Judge selected candidate " + strconv.Itoa(winner) + " with confidence " +
			strconv.FormatFloat(conf, 'f', -1, 64) + "."
	}
	s.l3.judgeReason = reason
	s.l3.selected = strconv.Itoa(winner)
	return reason
}

// diagnose is the Diagnoser's pass after repeated identical apply errors.
// It returns false if the run ended.
func (s *sim) diagnose(step int, errMsg string) bool {
	s.tick(1, 5)
	l := s.ev("DiagnosisStarted")
	l.w().knum("iteration", int64(step)).kstr("reason", "Repeated patch apply failure: "+errMsg)
	l.done()
	if !s.request(s.planner()) {
		return false
	}
	s.tick(1, 10)
	l = s.ev("DiagnosisCompleted")
	l.w().knum("iteration", int64(step)).kstr("selectedHypothesis", pick(s.rng, hypotheses))
	l.done()
	return true
}

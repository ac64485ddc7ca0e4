package tracegen

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// failedCheck identifies a failure by check and output variant: the same
// pair renders the same stderr and so the same failure signature, which is
// what the L2 loop compares.
type failedCheck struct {
	name    string
	variant uint64
}

type verification struct {
	passed bool
	fails  []failedCheck
	sig    string
}

// newFails draws a fresh failure: some non-empty subset of the repo's checks.
func (s *sim) newFails() []failedCheck {
	var fs []failedCheck
	for _, c := range s.repo.checks {
		if s.chance(0.5) {
			fs = append(fs, failedCheck{c, s.rng.Uint64()})
		}
	}
	if len(fs) == 0 {
		c := pick(s.rng, s.repo.checks)
		fs = append(fs, failedCheck{c, s.rng.Uint64()})
	}
	return fs
}

func failing(fs []failedCheck, name string) (failedCheck, bool) {
	for _, f := range fs {
		if f.name == name {
			return f, true
		}
	}
	return failedCheck{}, false
}

// verify runs the repo's checks the way VerificationRunner does, emitting
// VerificationStarted, per-check tool and subprocess lines, and
// VerificationFinished. With a report name it also writes the report file.
func (s *sim) verify(fs []failedCheck, report string) verification {
	s.tick(1, 10)
	l := s.ev("VerificationStarted")
	l.w().kstr("mode", "auto")
	l.done()

	results := s.runChecks(fs)
	v := verification{passed: len(fs) == 0, fails: fs}
	var names []string
	if !v.passed {
		names, v.sig = failureSignature(results)
	}
	s.tick(1, 5)
	s.verificationFinished(v.passed, names)

	if report != "" {
		s.writeVerificationReport(report, v, results, names)
	}
	return v
}

// checkResult is one check's run.
type checkResult struct {
	name, cmd, runID string
	exit             int
	dur              int64
	stderr           string
}

// runChecks runs each of the repo's checks, those in fs failing.
func (s *sim) runChecks(fs []failedCheck) []checkResult {
	var results []checkResult
	for _, c := range s.repo.checks {
		f, bad := failing(fs, c)
		r := checkResult{name: c, cmd: checkCommands[c], runID: s.uuid()}
		if bad {
			r.exit = 1
			if c == "typecheck" {
				r.exit = 2
			}
			r.stderr = stderrFor(c, f.variant)
		}
		r.dur = s.checkMs(c)
		s.subprocess([]string{"npm", "run", strings.TrimSuffix(c, "s")}, r.dur, r.exit, func() procOut {
			return procOut{stdout: stdoutFor(s.crng, c, !bad, s.chunkSize(1040)), stderr: r.stderr}
		})
		results = append(results, r)
	}
	return results
}

// failureSignature is the failed checks' names and their signature: the
// hash of each one's name and stderr tail.
func failureSignature(results []checkResult) (names []string, sig string) {
	parts := make([]string, 0, 2*len(results))
	for _, r := range results {
		if r.exit != 0 {
			names = append(names, r.name)
			parts = append(parts, "check:"+r.name, strings.TrimSpace(tailBytes(r.stderr, 2048)))
		}
	}
	sum := sha256.Sum256([]byte(strings.Join(parts, "|")))
	return names, hex.EncodeToString(sum[:])
}

// writeVerificationReport writes the report file of verification v.
func (s *sim) writeVerificationReport(report string, v verification, results []checkResult, failed []string) {
	j := jw{b: make([]byte, 0, 1024)}
	j.obj().kbool("passed", v.passed).key("checks").arr()
	for _, r := range results {
		j.obj().kstr("name", r.name).kstr("command", r.cmd).knum("exitCode", int64(r.exit))
		j.knum("durationMs", r.dur).kstr("stdoutPath", s.toolLog(r.runID, "stdout"))
		j.kstr("stderrPath", s.toolLog(r.runID, "stderr")).kbool("passed", r.exit == 0)
		j.kbool("truncated", false).end()
	}
	j.end()
	j.kstr("summary", "Verification "+map[bool]string{true: "Passed", false: "Failed"}[v.passed]+": "+
		strconv.Itoa(len(results)-len(failed))+" passed, "+strconv.Itoa(len(failed))+" failed.")
	if !v.passed {
		j.kstr("failureSignature", v.sig)
		writeFailureSummary(&j, results, failed)
	}
	j.end()
	path := s.artifacts + "/" + report
	s.reports = append(s.reports, path)
	s.addFile(report, indent(j.b, false))
}

// writeFailureSummary writes a failed verification's failureSummary: each
// failed check's key errors and stderr tail, the files they name, and
// what to do next.
func writeFailureSummary(j *jw, results []checkResult, failed []string) {
	j.key("failureSummary").obj().key("failedChecks").arr()
	var text strings.Builder
	for _, r := range results {
		if r.exit == 0 {
			continue
		}
		keys := keyErrors(r.stderr)
		tail := tailRunes(r.stderr, 2048)
		j.obj().kstr("name", r.name).knum("exitCode", int64(r.exit)).key("keyErrors").strs(keys)
		j.kstr("stderrTailSnippet", tail).end()
		text.WriteString(strings.Join(keys, "\n"))
		text.WriteString(tail)
	}
	j.end().key("suspectedFiles").strs(suspectedFiles(text.String()))
	j.key("suggestedNextActions").strs(nextActions(failed)).end()
}

func (s *sim) verificationFinished(passed bool, failed []string) {
	l := s.ev("VerificationFinished")
	if failed == nil {
		failed = []string{}
	}
	l.w().kbool("passed", passed).key("failedChecks").strs(failed)
	l.done()
}

func (s *sim) checkMs(c string) int64 {
	switch c {
	case "lint":
		return s.between(2500, 18000)
	case "typecheck":
		return s.between(4000, 40000)
	}
	return s.between(3000, 120000)
}

func (s *sim) toolLog(id, stream string) string {
	return s.artifacts + "/tool_logs/" + id + "." + stream + ".log"
}

func (s *sim) uuid() string {
	var b [36]byte
	for i := range b {
		switch i {
		case 8, 13, 18, 23:
			b[i] = '-'
		case 14:
			b[i] = '4'
		default:
			b[i] = hexDigits[s.rng.IntN(16)]
		}
	}
	return string(b[:])
}

// tailBytes is the last n bytes of s, moved forward to a rune boundary (the
// runner reads a byte tail; we avoid producing invalid UTF-8 from it).
func tailBytes(s string, n int) string {
	if len(s) <= n {
		return s
	}
	i := len(s) - n
	for i < len(s) && !utf8.RuneStart(s[i]) {
		i++
	}
	return s[i:]
}

// tailRunes approximates JavaScript's s.slice(-n), which counts UTF-16 units.
func tailRunes(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[len(r)-n:])
}

var stackLine = regexp.MustCompile(`^\s*at\s+|Error\s*:`)

// keyErrors mirrors FailureSummarizer.extractKeyErrors.
func keyErrors(out string) []string {
	lines := strings.Split(out, "\n")
	var errs []string
	for _, line := range lines {
		if len(errs) >= 10 {
			break
		}
		t := strings.TrimSpace(line)
		if t == "" {
			continue
		}
		if strings.Contains(t, "Error:") || strings.Contains(t, "error TS") || stackLine.MatchString(line) ||
			strings.Contains(line, "FAIL") {
			errs = append(errs, t)
		}
	}
	if len(errs) > 0 {
		return errs
	}
	var nonEmpty []string
	for _, line := range lines {
		if strings.TrimSpace(line) != "" {
			nonEmpty = append(nonEmpty, line)
		}
	}
	return nonEmpty[max(0, len(nonEmpty)-5):]
}

var filePattern = regexp.MustCompile(`((?:[A-Za-z]:)?[A-Za-z0-9_\-/.\\]+\.(?:ts|tsx|mts|cts|js|jsx|mjs|cjs|json|md))(?::\d+|\(\d+)`)

func suspectedFiles(text string) []string {
	seen := map[string]bool{}
	var out []string
	for _, m := range filePattern.FindAllStringSubmatch(text, -1) {
		if !seen[m[1]] && !strings.Contains(m[1], "node_modules") {
			seen[m[1]] = true
			out = append(out, m[1])
		}
	}
	slices.Sort(out)
	if out == nil {
		out = []string{}
	}
	return out
}

func nextActions(names []string) []string {
	out := []string{}
	for _, n := range names {
		switch {
		case strings.Contains(n, "lint"):
			out = append(out, "Fix lint errors in the suspected files.")
		case strings.Contains(n, "typecheck"):
			out = append(out, "Fix TypeScript type errors in the suspected files.")
		case strings.Contains(n, "test"):
			out = append(out, "Fix failing tests. Check stack traces in logs.")
		}
	}
	return out
}

// indent renders compact JSON as JSON.stringify(v, null, 2) does, with the
// trailing newline the orchestrator's manifest and summary writers add.
func indent(compact []byte, newline bool) []byte {
	var b bytes.Buffer
	b.Grow(len(compact) * 3 / 2)
	if err := json.Indent(&b, compact, "", "  "); err != nil {
		panic("tracegen: produced invalid JSON: " + err.Error())
	}
	if newline {
		b.WriteByte('\n')
	}
	return b.Bytes()
}

package retry

import (
	"crypto/sha256"
	"encoding/hex"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"
)

// Rule is one row of a classifier's table: text it matches names the
// failure's class. A rule matches when any one of its matchers does; a rule
// without matchers matches nothing.
type Rule struct {
	Class Class
	// Contains matches when the text holds one of these, ignoring case.
	Contains []string
	// Regexp matches when this RE2 expression finds a match, ignoring
	// case. An invalid expression matches nothing (Validate reports it).
	Regexp string
	// Status matches the HTTP status the text reports (see StatusCode):
	// "429" is that code, "5xx" any code from 500 to 599.
	Status []string
	// Equals matches when the whole text, trimmed, is one of these,
	// ignoring case: the factory's stage names.
	Equals []string
}

// Classifier is a table of rules; the first that matches names the class,
// and text no rule matches is ClassUnknown.
type Classifier struct {
	Rules []Rule
}

// Classify names the class of a failure's text.
func (c Classifier) Classify(text string) Class {
	m := matcher{text: text}
	for i := range c.Rules {
		if m.match(&c.Rules[i]) {
			return c.Rules[i].Class
		}
	}
	return ClassUnknown
}

// With returns a classifier whose rules are first, then c's: users' rules
// take precedence over the defaults.
func (c Classifier) With(first ...Rule) Classifier {
	return Classifier{Rules: append(slices.Clip(first), c.Rules...)}
}

// Validate reports every rule that can never match as written (an
// unknown class, no matcher, a bad status pattern, an invalid expression)
// as a *PolicyError, or nil.
func (c Classifier) Validate() error {
	var ps []Problem
	for i, r := range c.Rules {
		ps = append(ps, r.problems("classify["+strconv.Itoa(i)+"]")...)
	}
	if len(ps) > 0 {
		return &PolicyError{Problems: ps}
	}
	return nil
}

// compileRule compiles a rule's expression as Classify runs it: RE2,
// ignoring case.
func compileRule(expr string) (*regexp.Regexp, error) { return regexp.Compile("(?i)" + expr) }

// validStatus accepts 100–599 written as three digits, or a class such as
// 4xx or 5xx.
func validStatus(s string) bool {
	if len(s) != 3 || s[0] < '1' || s[0] > '5' {
		return false
	}
	if s[1] == 'x' || s[1] == 'X' {
		return s[2] == 'x' || s[2] == 'X'
	}
	return isDigit(s[1]) && isDigit(s[2])
}

// matcher holds what a classification computes once for all rules.
type matcher struct {
	text    string
	lower   string
	trimmed string
	lowered bool
	status  int
	statusK bool
}

func (m *matcher) lowerText() string {
	if !m.lowered {
		m.lower = strings.ToLower(m.text)
		m.trimmed = strings.TrimSpace(m.lower)
		m.lowered = true
	}
	return m.lower
}

func (m *matcher) statusCode() int {
	if !m.statusK {
		m.status, m.statusK = StatusCode(m.text), true
	}
	return m.status
}

func (m *matcher) match(r *Rule) bool {
	for _, s := range r.Contains {
		if s != "" && strings.Contains(m.lowerText(), strings.ToLower(s)) {
			return true
		}
	}
	if len(r.Equals) > 0 {
		m.lowerText()
		for _, s := range r.Equals {
			if m.trimmed == strings.ToLower(strings.TrimSpace(s)) {
				return true
			}
		}
	}
	if len(r.Status) > 0 {
		if code := m.statusCode(); code != 0 {
			for _, s := range r.Status {
				if statusMatches(s, code) {
					return true
				}
			}
		}
	}
	if r.Regexp != "" {
		if re := compiled(r.Regexp); re != nil && re.MatchString(m.text) {
			return true
		}
	}
	return false
}

func statusMatches(pattern string, code int) bool {
	if !validStatus(pattern) {
		return false
	}
	if pattern[1] == 'x' || pattern[1] == 'X' {
		return code/100 == int(pattern[0]-'0')
	}
	return code == int(pattern[0]-'0')*100+int(pattern[1]-'0')*10+int(pattern[2]-'0')
}

// Compiled expressions, shared by every classifier. The cache is bounded;
// past it, expressions are compiled on each use.
var (
	reCache   sync.Map // string → *regexp.Regexp, or nil for an invalid one
	reCacheN  int
	reCacheMu sync.Mutex
)

const reCacheMax = 1024

func compiled(expr string) *regexp.Regexp {
	if v, ok := reCache.Load(expr); ok {
		re, _ := v.(*regexp.Regexp)
		return re
	}
	re, err := compileRule(expr)
	if err != nil {
		re = nil
	}
	reCacheMu.Lock()
	if reCacheN < reCacheMax {
		if _, loaded := reCache.LoadOrStore(expr, re); !loaded {
			reCacheN++
		}
	}
	reCacheMu.Unlock()
	return re
}

// StatusCode finds the HTTP status (400–599) a provider error's text
// reports, or 0. Error messages carry no status field (spec/EVENTS.md), so
// this reads the text: a three-digit number counts only as a whole word in
// a status position, so "4000 tokens", "port 5000", "limit 500" or
// "src/a.ts:404:2" are not statuses. The positions are:
//   - the start of the text: "429 Too Many Requests", `529 {"type":...}`,
//     "404 model not found";
//   - after a colon and a space, followed by a capital letter, a brace or
//     bracket, or the end: "Provider request failed: 503 Service Unavailable";
//   - after the words status, status code, HTTP (HTTP/1.1), code or error:
//     "Request failed with status code 502", "Error code: 429 - {...}";
//   - before a reason phrase: "got 502 Bad Gateway", "503 service unavailable".
//
// The first number in such a position wins.
func StatusCode(text string) int {
	for i := 0; i+3 <= len(text); i++ {
		c := text[i]
		if c != '4' && c != '5' {
			continue
		}
		if !isDigit(text[i+1]) || !isDigit(text[i+2]) {
			continue
		}
		if i > 0 && (isWordByte(text[i-1]) || text[i-1] == '.') {
			continue
		}
		end := i + 3
		if end < len(text) && (isWordByte(text[end]) || text[end] == '.' && end+1 < len(text) && isDigit(text[end+1])) {
			continue
		}
		if statusPosition(text[:i], text[end:]) {
			return int(c-'0')*100 + int(text[i+1]-'0')*10 + int(text[i+2]-'0')
		}
	}
	return 0
}

func statusPosition(before, after string) bool {
	rest := strings.TrimLeft(after, " \t")
	// At the start of the text.
	if strings.TrimLeft(before, " \t\r\n\"'([") == "" {
		return true
	}
	// After ": ", followed by a capital, a brace or bracket, or the end.
	if t := strings.TrimRight(before, " \t"); len(t) < len(before) && strings.HasSuffix(t, ":") {
		if rest == "" || rest[0] >= 'A' && rest[0] <= 'Z' || rest[0] == '{' || rest[0] == '[' || rest[0] == '(' {
			return true
		}
	}
	// After a keyword.
	kw := strings.ToLower(strings.TrimRight(before, " \t:=#("))
	for _, k := range statusKeywords {
		if strings.HasSuffix(kw, k) && (len(kw) == len(k) || !isWordByte(kw[len(kw)-len(k)-1])) {
			return true
		}
	}
	// Before a reason phrase.
	lr := strings.ToLower(rest)
	for _, p := range reasonPhrases {
		if strings.HasPrefix(lr, p) {
			return true
		}
	}
	return false
}

var statusKeywords = []string{"status", "status code", "status_code", "statuscode", "http",
	"http/1.0", "http/1.1", "http/2", "http/2.0", "http/3", "code", "error"}

var reasonPhrases = []string{"bad request", "unauthorized", "unauthorised", "payment required",
	"forbidden", "not found", "method not allowed", "request timeout", "conflict", "gone",
	"payload too large", "request entity too large", "unprocessable", "too many requests",
	"internal server error", "not implemented", "bad gateway", "service unavailable",
	"gateway timeout", "overloaded"}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

func isWordByte(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '_'
}

// DefaultProvider classifies provider error text as the orchestrator
// writes it in ProviderRequestFinished.error (seed 000, spec/EVENTS.md),
// in this order:
//
//  1. A reported HTTP status (StatusCode): 429 is rate_limit, 401 and 403
//     auth, 5xx server, other 4xx client. 408 is client: the orchestrator
//     retries only 429 and 5xx by status, so 408 is not retried either.
//  2. Words: rate limits, then server failures named without a status
//     ("Bad Gateway", "overloaded"), then network errors, then timeouts,
//     then auth, client and abort.
//
// ETIMEDOUT is network, not timeout: seed 000 lists it under Network
// Error (ETIMEDOUT, ECONNRESET, ECONNREFUSED), the adapter's
// isRetriableError tests it with the other socket codes, and it is a
// connect timeout raised by the socket, not the adapter's TimeoutError
// ("Request timed out after N ms"). Both classes are retried, so the
// choice changes which class a failure counts under, not whether it is
// retried. "504 Gateway Timeout" is server, by its status.
var DefaultProvider = Classifier{Rules: []Rule{
	{Class: ClassRateLimit, Status: []string{"429"}},
	{Class: ClassAuth, Status: []string{"401", "403"}},
	{Class: ClassServer, Status: []string{"5xx"}},
	{Class: ClassClient, Status: []string{"4xx"}},
	{Class: ClassRateLimit, Contains: []string{"rate limit", "rate_limit", "ratelimit", "too many requests",
		"resource_exhausted", "resource has been exhausted"}},
	{Class: ClassServer, Contains: []string{"internal server error", "internalservererror", "bad gateway",
		"service unavailable", "gateway timeout", "overloaded", "server error", "server had an error"}},
	{Class: ClassNetwork, Regexp: `\b(econnreset|econnrefused|econnaborted|enotfound|etimedout|esockettimedout|eai_again|ehostunreach|enetunreach|epipe)\b`,
		Contains: []string{"socket hang up", "connection reset", "connection refused", "connection error",
			"connection closed", "network error", "fetch failed", "getaddrinfo", "apiconnectionerror"}},
	{Class: ClassTimeout, Contains: []string{"timed out", "timeout", "deadline exceeded"}},
	{Class: ClassAuth, Contains: []string{"invalid api key", "incorrect api key", "invalid x-api-key",
		"invalid_api_key", "api key not valid", "missing api key", "no api key", "authentication",
		"unauthorized", "unauthorised", "permission denied", "permission_denied", "forbidden", "configerror"}},
	{Class: ClassClient, Contains: []string{"bad request", "invalid_request", "invalidrequesterror",
		"invalid request", "not found", "notfounderror", "unprocessable", "context length",
		"context_length_exceeded", "prompt is too long"}},
	{Class: ClassAbort, Contains: []string{"aborterror"}, Regexp: `\b(abort|aborted|cancell?ed|cancellation)\b`},
}}

// DefaultFactory classifies the factory's failure_brief stage (seed 003):
// each allowed stage is its own class, and so is the older
// patch_apply_failed. The whole stage must match.
var DefaultFactory = Classifier{Rules: []Rule{
	{Class: ClassPreflight, Equals: []string{"preflight"}},
	{Class: ClassException, Equals: []string{"exception"}},
	{Class: ClassLLMOutputInvalid, Equals: []string{"llm_output_invalid"}},
	{Class: ClassWriteScopeViolation, Equals: []string{"write_scope_violation"}},
	{Class: ClassStaleContext, Equals: []string{"stale_context"}},
	{Class: ClassWriteFailed, Equals: []string{"write_failed"}},
	{Class: ClassVerifyFailed, Equals: []string{"verify_failed"}},
	{Class: ClassAcceptanceFailed, Equals: []string{"acceptance_failed"}},
	{Class: ClassPatchApplyFailed, Equals: []string{"patch_apply_failed"}},
}}

// ClassifyCommand names a failed command's class (seed 001's operations,
// seed 003's T2): a timeout is command_timeout, a command killed by a
// signal (signal named, or a negative exit code as Python reports one) is
// signal, and any other non-zero exit is logic_error. A command that
// exited 0 without timing out did not fail: the class is "".
// Exit codes of 128+N are left as logic errors: a shell reports a killed
// child that way, but programs exit with such codes too.
func ClassifyCommand(exitCode int, timedOut bool, signal string) Class {
	switch {
	case timedOut:
		return ClassCommandTimeout
	case signal != "" || exitCode < 0:
		return ClassSignal
	case exitCode != 0:
		return ClassLogicError
	}
	return ""
}

// FactoryTimedOut tells the factory's timeout apart from a logic error:
// run_command returns exit code -1 and appends "[TIMEOUT]" to stderr
// (seed 003, T2).
func FactoryTimedOut(exitCode int, stderr string) bool {
	return exitCode == -1 && strings.Contains(stderr, "[TIMEOUT]")
}

// ClassifyFactory names a factory failure's class from its stage and, for
// the two command stages, the command's result: a verify or acceptance
// command that timed out is command_timeout rather than verify_failed or
// acceptance_failed, which the factory itself conflates (seed 003, T2).
func ClassifyFactory(stage string, exitCode int, stderr string) Class {
	c := DefaultFactory.Classify(stage)
	if (c == ClassVerifyFailed || c == ClassAcceptanceFailed) && FactoryTimedOut(exitCode, stderr) {
		return ClassCommandTimeout
	}
	return c
}

// transientClasses are the provider classes a retry can outlast.
var transientClasses = map[Class]bool{ClassRateLimit: true, ClassTimeout: true, ClassServer: true, ClassNetwork: true}

// ExceptionTransient splits the factory's grab-bag "exception" stage (seed
// 003, F2) by the exception's text: rate limits, timeouts, 5xx and network
// errors are transient, a retry can outlast them. Everything else is
// permanent: a bad API key (auth), a model that does not exist or a module
// that is not installed (client: "model not found", ModuleNotFoundError),
// ImportError, and text nothing recognises. Unknown text counts as
// permanent because the audit's point is that the grab-bag retries
// deterministic failures; a policy that wants it retried does not mark the
// class transient-only.
func ExceptionTransient(text string) bool {
	if permanentException(text) {
		return false
	}
	return transientClasses[DefaultProvider.Classify(text)]
}

func permanentException(text string) bool {
	l := strings.ToLower(text)
	for _, s := range []string{"importerror", "modulenotfounderror", "no module named", "model not found",
		"model_not_found", "does not exist", "not installed"} {
		if strings.Contains(l, s) {
			return true
		}
	}
	return false
}

// Signature is a failure's signature: the sha256, in hex, of its parts
// normalised so that the same failure matches across attempts (seed 002
// halts on identical signatures). Each part is normalised, then the parts
// are joined with NUL bytes, so ("a b", "c") and ("a", "b c") differ.
// Normalising, in order:
//
//  1. lower case;
//  2. ISO-8601 timestamps become "<ts>", UUIDs "<uuid>", 0x addresses and
//     hex runs of 7 or more characters holding both digits and letters
//     (commit hashes, request ids) "<hex>";
//  3. every remaining run of digits becomes "#": line and column numbers
//     in paths (src/a.ts:42 → src/a.ts:#), durations, counts, ports, PIDs;
//  4. control characters count as white space, and runs of white space
//     become one space, trimmed at both ends.
//
// So failures that differ only in numbers share a signature: that is the
// point (the same test failing at another line after an unrelated edit is
// the same failure), and also the cost ("expected 3, got 4" and "expected
// 5, got 6" match).
func Signature(parts ...string) string {
	h := sha256.New()
	for i, p := range parts {
		if i > 0 {
			h.Write([]byte{0})
		}
		h.Write([]byte(NormalizeFailure(p)))
	}
	return hex.EncodeToString(h.Sum(nil))
}

var (
	tsRe   = regexp.MustCompile(`\d{4}-\d{2}-\d{2}[t ]\d{2}:\d{2}(?::\d{2}(?:[.,]\d+)?)?(?:z|[+-]\d{2}:?\d{2})?`)
	uuidRe = regexp.MustCompile(`\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b`)
	addrRe = regexp.MustCompile(`\b0x[0-9a-f]+\b`)
	hexRe  = regexp.MustCompile(`\b[0-9a-f]{7,}\b`)
	numRe  = regexp.MustCompile(`[0-9]+`)
)

// NormalizeFailure is the text Signature hashes for one part.
func NormalizeFailure(s string) string {
	if !utf8.ValidString(s) {
		s = strings.ToValidUTF8(s, "\uFFFD")
	}
	s = strings.ToLower(s)
	s = tsRe.ReplaceAllString(s, "<ts>")
	s = uuidRe.ReplaceAllString(s, "<uuid>")
	s = addrRe.ReplaceAllString(s, "<hex>")
	s = hexRe.ReplaceAllStringFunc(s, func(m string) string {
		if strings.ContainsAny(m, "0123456789") && strings.ContainsAny(m, "abcdef") {
			return "<hex>"
		}
		return m
	})
	s = numRe.ReplaceAllString(s, "#")
	var b strings.Builder
	b.Grow(len(s))
	space := false
	for _, r := range s {
		if unicode.IsSpace(r) || unicode.IsControl(r) {
			space = true
			continue
		}
		if space && b.Len() > 0 {
			b.WriteByte(' ')
		}
		space = false
		b.WriteRune(r)
	}
	return b.String()
}

// AllClasses lists every class, provider classes first, then the
// factory's, then commands', then unknown.
func AllClasses() []Class { return slices.Clone(allClasses) }

var allClasses = []Class{
	ClassRateLimit, ClassTimeout, ClassServer, ClassNetwork, ClassAuth, ClassClient, ClassAbort,
	ClassPreflight, ClassException, ClassLLMOutputInvalid, ClassWriteScopeViolation, ClassStaleContext,
	ClassWriteFailed, ClassVerifyFailed, ClassAcceptanceFailed, ClassPatchApplyFailed,
	ClassCommandTimeout, ClassLogicError, ClassSignal,
	ClassUnknown,
}

// Known reports whether c is one of the classes this package defines.
func (c Class) Known() bool { return slices.Contains(allClasses, c) }

func classNames() []string {
	out := make([]string, len(allClasses))
	for i, c := range allClasses {
		out[i] = string(c)
	}
	return out
}

package failure

import (
	"regexp"
	"slices"
	"strings"
	"sync"
)

// Rule is one row of a classifier's table: text it matches names the
// failure's class. A rule matches when any one of its matchers does; a rule
// without matchers matches nothing.
type Rule struct {
	Class Class
	// Contains matches when the text holds one of these, ignoring case.
	Contains []string
	// Regexp matches when this RE2 expression finds a match, ignoring
	// case. An invalid expression matches nothing (CompileRule tells it).
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

// CompileRule compiles a rule's expression as Classify runs it: RE2,
// ignoring case. Its error is what makes a rule's Regexp invalid.
func CompileRule(expr string) (*regexp.Regexp, error) { return regexp.Compile("(?i)" + expr) }

// ValidStatus reports whether a rule's Status pattern can match: 100–599
// written as three digits, or a class such as 4xx or 5xx.
func ValidStatus(s string) bool {
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
	if !ValidStatus(pattern) {
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
	re, err := CompileRule(expr)
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

// DefaultProvider classifies provider error text as the orchestrator
// writes it in ProviderRequestFinished.error (the orchestrator, spec/EVENTS.md),
// in this order:
//
//  1. A reported HTTP status (StatusCode): 429 is rate_limit, 401 and 403
//     auth, 5xx server, other 4xx client. 408 is client: the orchestrator
//     retries only 429 and 5xx by status, so 408 is not retried either.
//  2. Words: rate limits, then server failures named without a status
//     ("Bad Gateway", "overloaded"), then network errors, then timeouts,
//     then auth, client and abort.
//
// ETIMEDOUT is network, not timeout: the orchestrator lists it under Network
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

// DefaultFactory classifies the factory's failure_brief stage (the factory audit):
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

// ClassifyCommand names a failed command's class (the retry handler's operations,
// the factory audit's T2): a timeout is command_timeout, a command killed by a
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
// (the factory audit, T2).
func FactoryTimedOut(exitCode int, stderr string) bool {
	return exitCode == -1 && strings.Contains(stderr, "[TIMEOUT]")
}

// ClassifyFactory names a factory failure's class from its stage and, for
// the two command stages, the command's result: a verify or acceptance
// command that timed out is command_timeout rather than verify_failed or
// acceptance_failed, which the factory itself conflates (the factory audit, T2).
func ClassifyFactory(stage string, exitCode int, stderr string) Class {
	c := DefaultFactory.Classify(stage)
	if (c == ClassVerifyFailed || c == ClassAcceptanceFailed) && FactoryTimedOut(exitCode, stderr) {
		return ClassCommandTimeout
	}
	return c
}

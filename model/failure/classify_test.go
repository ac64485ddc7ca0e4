package failure

import (
	"encoding/hex"
	"strings"
	"testing"
)

// Provider error text as the orchestrator records it: the messages in
// ../shared/testdata-external and benchmarks/tracegen's catalog, the
// adapter's own errors, the SDKs' wording, and text that must not be
// mistaken for a status.
var providerCases = []struct {
	text string
	want Class
}{
	// rate_limit
	{"429 Too Many Requests", ClassRateLimit},
	{"Rate limit exceeded", ClassRateLimit},
	{`429 {"type":"error","error":{"type":"rate_limit_error","message":"Number of request tokens has exceeded your per-minute rate limit"}}`, ClassRateLimit},
	{"429 Rate limit reached for requests per min (RPM): Limit 500, Used 500, Requested 1. Please try again in 120ms.", ClassRateLimit},
	{"429 Resource has been exhausted (e.g. check quota).", ClassRateLimit},
	{"RateLimitError: too many requests", ClassRateLimit},
	{"Error code: 429 - {'error': {'message': 'You exceeded your current quota'}}", ClassRateLimit},
	{"Provider request failed: 429 Too Many Requests", ClassRateLimit},
	{"RESOURCE_EXHAUSTED: quota", ClassRateLimit},
	// server
	{"500 Internal Server Error", ClassServer},
	{"502 Bad Gateway", ClassServer},
	{"503 Service Unavailable", ClassServer},
	{"504 Gateway Timeout", ClassServer},
	{`529 {"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`, ClassServer},
	{"529 overloaded", ClassServer},
	{"500 The server had an error while processing your request. Sorry about that!", ClassServer},
	{"Provider request failed: 503 Service Unavailable", ClassServer},
	{"Request failed with status code 502", ClassServer},
	{"HTTP/1.1 503", ClassServer},
	{"status=500", ClassServer},
	{"upstream said: got 502 bad gateway", ClassServer},
	{"Bad Gateway", ClassServer},
	{"InternalServerError: boom", ClassServer},
	// timeout
	{"Request timed out after 60000ms", ClassTimeout},
	{"Request timed out.", ClassTimeout},
	{"TimeoutError: The operation was aborted due to timeout", ClassTimeout},
	{"APITimeoutError", ClassTimeout},
	{"context deadline exceeded", ClassTimeout},
	{"ReadTimeout: read timed out", ClassTimeout},
	// network (ETIMEDOUT is network: the orchestrator's Network Error row)
	{"read ECONNRESET", ClassNetwork},
	{"connect ETIMEDOUT 104.18.7.192:443", ClassNetwork},
	{"connect ECONNREFUSED 127.0.0.1:8787", ClassNetwork},
	{"request to provider failed, reason: socket hang up (ECONNRESET)", ClassNetwork},
	{"Embedding request failed: connect ECONNREFUSED 127.0.0.1:11434", ClassNetwork},
	{"getaddrinfo ENOTFOUND api.openai.com", ClassNetwork},
	{"TypeError: fetch failed", ClassNetwork},
	{"Connection error.", ClassNetwork},
	{"write EPIPE", ClassNetwork},
	{"ECONNABORTED", ClassNetwork},
	{"ConnectionResetError: [Errno 104] Connection reset by peer", ClassNetwork},
	// auth
	{`401 {"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"}}`, ClassAuth},
	{"401 Incorrect API key provided. You can find your API key in your account settings.", ClassAuth},
	{"401 Incorrect API key provided: sk-proj-****************************Xq2f. You can find your API key at https://platform.openai.com/account/api-keys.", ClassAuth},
	{"403 Forbidden: your organization does not have access to this model", ClassAuth},
	{"403 Permission denied: Consumer 'projects/acme-dev' has been suspended.", ClassAuth},
	{"ConfigError: Missing API key for provider anthropic", ClassAuth},
	{"Invalid API key", ClassAuth},
	{"Unauthorized", ClassAuth},
	// client
	{"400 Bad Request: prompt is too long: 214871 tokens > 200000 maximum", ClassClient},
	{"400 This model's maximum context length is 128000 tokens. However, your messages resulted in 131582 tokens.", ClassClient},
	{"400 Bad Request: input length and max_tokens exceed context limit: 251034 + 16000 > 272000", ClassClient},
	{"404 model not found", ClassClient},
	{"422 Unprocessable Entity", ClassClient},
	{"408 Request Timeout", ClassClient}, // not retried by status: the orchestrator retries only 429 and 5xx
	{"InvalidRequestError: context_length_exceeded", ClassClient},
	{"model gpt-9 not found", ClassClient},
	// abort
	{"AbortError: This operation was aborted", ClassAbort},
	{"Request was aborted.", ClassAbort},
	{"The user aborted a request.", ClassAbort},
	{"context canceled", ClassAbort},
	{"Run cancelled by user", ClassAbort},
	{"APIUserAbortError", ClassAbort},
	// numbers that are not statuses
	{"Prompt uses 4000 tokens", ClassUnknown},
	{"cannot bind port 5000", ClassUnknown},
	{"cannot bind port 500", ClassUnknown},
	{"only 500 credits left", ClassUnknown},
	{"error at src/a.ts:404:12", ClassUnknown},
	{"version 1.500 mismatch", ClassUnknown},
	{"took 500ms", ClassUnknown},
	{"Invalid winnerCandidateId: 3. Valid IDs: 0, 1", ClassUnknown},
	{"Patch apply failed: error: corrupt patch at line 14", ClassUnknown},
	{"", ClassUnknown},
	{"pipeline recipe", ClassUnknown}, // no EPIPE inside words
}

func TestDefaultProvider(t *testing.T) {
	for _, tt := range providerCases {
		if got := DefaultProvider.Classify(tt.text); got != tt.want {
			t.Errorf("Classify(%q) = %s, want %s", tt.text, got, tt.want)
		}
	}
}

func TestStatusCode(t *testing.T) {
	for _, tt := range []struct {
		text string
		want int
	}{
		{"429 Too Many Requests", 429},
		{"  503", 503},
		{`"503 Service Unavailable"`, 503},
		{"(500) oops", 500},
		{"404 model not found", 404},
		{`529 {"type":"error"}`, 529},
		{"Provider request failed: 503 Service Unavailable", 503},
		{"Provider request failed: 503", 503},
		{"Provider request failed: 503 {", 503},
		{"max_tokens: 400 exceeds the limit", 0}, // after ": " only before a capital, a brace or the end
		{"Request failed with status code 502", 502},
		{"status: 504", 504},
		{"statusCode=429", 429},
		{"status_code 401", 401},
		{"HTTP 500", 500},
		{"HTTP/1.1 502 Bad Gateway", 502},
		{"HTTP/2 503", 503},
		{"Error code: 429 - {...}", 429},
		{"error 500", 500},
		{"TypeError 500", 0}, // "error" must be a word of its own
		{"got 503 Service Unavailable", 503},
		{"proxy replied 502 bad gateway", 502},
		{"4000 tokens", 0},
		{"port 5000", 0},
		{"port 500", 0},
		{"limit 500, used 500", 0},
		{"src/a.ts:404:12", 0},
		{"1.500 seconds", 0},
		{"500.5 seconds", 0},
		{"x500 Internal Server Error", 0},
		{"500x Internal Server Error", 0},
		{"600 Something", 0},
		{"399 Something", 0},
		{"exit code 127", 0},
		{"status 200 then status 503", 503},
		{"5", 0},
		{"45", 0},
		{"", 0},
		{"429", 429},
	} {
		if got := StatusCode(tt.text); got != tt.want {
			t.Errorf("StatusCode(%q) = %d, want %d", tt.text, got, tt.want)
		}
	}
}

func TestDefaultFactory(t *testing.T) {
	want := map[string]Class{
		"preflight": ClassPreflight, "exception": ClassException, "llm_output_invalid": ClassLLMOutputInvalid,
		"write_scope_violation": ClassWriteScopeViolation, "stale_context": ClassStaleContext,
		"write_failed": ClassWriteFailed, "verify_failed": ClassVerifyFailed,
		"acceptance_failed": ClassAcceptanceFailed, "patch_apply_failed": ClassPatchApplyFailed,
		" Verify_Failed\n": ClassVerifyFailed,
		"":                 ClassUnknown, "verify": ClassUnknown, "verify_failed_twice": ClassUnknown,
		"exception: 429": ClassUnknown, // the stage must match whole
	}
	for stage, c := range want {
		if got := DefaultFactory.Classify(stage); got != c {
			t.Errorf("DefaultFactory.Classify(%q) = %s, want %s", stage, got, c)
		}
	}
	// Every factory class has a rule.
	for _, c := range []Class{ClassPreflight, ClassException, ClassLLMOutputInvalid, ClassWriteScopeViolation,
		ClassStaleContext, ClassWriteFailed, ClassVerifyFailed, ClassAcceptanceFailed, ClassPatchApplyFailed} {
		if got := DefaultFactory.Classify(string(c)); got != c {
			t.Errorf("stage %q classifies as %s", c, got)
		}
	}
}

func TestClassifyCommand(t *testing.T) {
	for _, tt := range []struct {
		exit     int
		timedOut bool
		signal   string
		want     Class
	}{
		{0, false, "", ""},
		{1, false, "", ClassLogicError},
		{2, false, "", ClassLogicError},
		{137, false, "", ClassLogicError},
		{-1, true, "", ClassCommandTimeout},
		{0, true, "", ClassCommandTimeout},
		{-1, false, "", ClassSignal},
		{-9, false, "", ClassSignal},
		{0, false, "SIGKILL", ClassSignal},
		{1, true, "SIGTERM", ClassCommandTimeout},
	} {
		if got := ClassifyCommand(tt.exit, tt.timedOut, tt.signal); got != tt.want {
			t.Errorf("ClassifyCommand(%d, %v, %q) = %q, want %q", tt.exit, tt.timedOut, tt.signal, got, tt.want)
		}
	}
	for _, tt := range []struct {
		exit   int
		stderr string
		want   bool
	}{
		{-1, "boom\n[TIMEOUT]", true},
		{-1, "boom", false},
		{1, "[TIMEOUT]", false},
		{-1, "[timeout]", false},
	} {
		if got := FactoryTimedOut(tt.exit, tt.stderr); got != tt.want {
			t.Errorf("FactoryTimedOut(%d, %q) = %v", tt.exit, tt.stderr, got)
		}
	}
	for _, tt := range []struct {
		stage  string
		exit   int
		stderr string
		want   Class
	}{
		{"verify_failed", -1, "[TIMEOUT]", ClassCommandTimeout},
		{"acceptance_failed", -1, "x [TIMEOUT]", ClassCommandTimeout},
		{"verify_failed", 1, "FAILED test_x", ClassVerifyFailed},
		{"acceptance_failed", -1, "no marker", ClassAcceptanceFailed},
		{"exception", -1, "[TIMEOUT]", ClassException},
		{"nonsense", -1, "[TIMEOUT]", ClassUnknown},
	} {
		if got := ClassifyFactory(tt.stage, tt.exit, tt.stderr); got != tt.want {
			t.Errorf("ClassifyFactory(%q, %d, %q) = %s, want %s", tt.stage, tt.exit, tt.stderr, got, tt.want)
		}
	}
}

func TestExceptionTransient(t *testing.T) {
	for _, tt := range []struct {
		text string
		want bool
	}{
		{"openai.RateLimitError: Error code: 429", true},
		{"openai.APITimeoutError: Request timed out.", true},
		{"openai.InternalServerError: Error code: 500", true},
		{"openai.APIConnectionError: Connection error.", true},
		{"httpx.ConnectError: [Errno 111] Connection refused", true},
		{"503 Service Unavailable", true},
		{"openai.AuthenticationError: Error code: 401 - invalid api key", false},
		{"Incorrect API key provided", false},
		{"openai.NotFoundError: Error code: 404 - The model `gpt-9` does not exist", false},
		{"model not found", false},
		{"ModuleNotFoundError: No module named 'openai'", false},
		{"ImportError: cannot import name 'OpenAI' from 'openai'", false},
		{"openai package not installed", false},
		{"ImportError while timed out", false}, // permanent wins
		{"json.decoder.JSONDecodeError: Expecting value", false},
		{"", false},
	} {
		if got := ExceptionTransient(tt.text); got != tt.want {
			t.Errorf("ExceptionTransient(%q) = %v, want %v", tt.text, got, tt.want)
		}
	}
}

func TestClassifierRules(t *testing.T) {
	user := []Rule{
		{Class: ClassRateLimit, Contains: []string{"Quota Exceeded"}},
		{Class: ClassServer, Regexp: `upstream\s+\d+`},
		{Class: ClassTimeout, Status: []string{"408"}},
		{Class: ClassNetwork, Status: []string{"4XX"}},
		{Class: ClassAbort, Equals: []string{"  STOP "}},
		{Class: ClassAuth, Regexp: `(`}, // invalid: matches nothing
		{Class: ClassClient},            // no matcher: matches nothing
	}
	c := DefaultProvider.With(user...)
	for _, tt := range []struct {
		text string
		want Class
	}{
		{"quota exceeded for project", ClassRateLimit},
		{"UPSTREAM   12 failed", ClassServer},
		{"408 Request Timeout", ClassTimeout},
		{"404 model not found", ClassNetwork},   // 4xx rule before the default 4xx
		{"429 Too Many Requests", ClassNetwork}, // user rules come first, 4xx included
		{"stop", ClassAbort},
		{"stop now", ClassUnknown}, // Equals is the whole text
		{"(", ClassUnknown},
		{"503 Service Unavailable", ClassServer},
	} {
		if got := c.Classify(tt.text); got != tt.want {
			t.Errorf("Classify(%q) = %s, want %s", tt.text, got, tt.want)
		}
	}
	// With leaves the defaults alone.
	if got := DefaultProvider.Classify("quota exceeded"); got != ClassUnknown {
		t.Errorf("defaults changed: %s", got)
	}
	if len(DefaultProvider.Rules) == len(c.Rules) {
		t.Errorf("With added no rules")
	}
}

func TestStatusPatterns(t *testing.T) {
	for _, tt := range []struct {
		pattern string
		code    int
		want    bool
	}{
		{"429", 429, true}, {"429", 430, false}, {"5xx", 503, true}, {"5XX", 599, true}, {"5xx", 499, false},
		{"4xx", 404, true}, {"4x9", 409, false}, {"bad", 400, false}, {"", 400, false}, {"6xx", 600, false},
	} {
		if got := statusMatches(tt.pattern, tt.code); got != tt.want {
			t.Errorf("statusMatches(%q, %d) = %v", tt.pattern, tt.code, got)
		}
	}
}

func TestNormalizeFailure(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{"Error: patch failed: src/cart/total.ts:42", "error: patch failed: src/cart/total.ts:#"},
		{"  FAIL\t\ttest_x \n\n at line 7  ", "fail test_x at line #"},
		{"at 2026-02-24T10:30:00.123Z failed", "at <ts> failed"},
		{"at 2026-02-24 10:30:00+01:00 failed", "at <ts> failed"},
		{"request 3f2c9a1e-1b2c-4d5e-8f90-0123456789ab failed", "request <uuid> failed"},
		{"segfault at 0x7ffe1234abcd", "segfault at <hex>"},
		{"commit 9fceb02d0ae598e95dc970b74767f19372d61af8 broke it", "commit <hex> broke it"},
		{"commit 9fceb02 broke it", "commit <hex> broke it"},
		{"deadbeefcafe is a word", "deadbeefcafe is a word"}, // letters only: not an id
		{"took 1234567ms", "took #ms"},
		{"pid 12345 exited", "pid # exited"},
		{"a\x00b\x01c", "a b c"},
		{"", ""},
		{"\xff\xfe", "\ufffd"}, // a run of invalid bytes is one replacement
	} {
		if got := NormalizeFailure(tt.in); got != tt.want {
			t.Errorf("NormalizeFailure(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestSignature(t *testing.T) {
	same := [][2][]string{
		{{"FAIL src/a.test.ts:42:7 expected 3"}, {"fail  src/a.test.ts:88:1\texpected 4"}},
		{{"lint", "error at 2026-01-01T00:00:00Z"}, {"LINT", "error at 2026-03-05T11:22:33Z"}},
		{{"x"}, {" x "}},
	}
	for _, s := range same {
		if a, b := Signature(s[0]...), Signature(s[1]...); a != b {
			t.Errorf("Signature(%q) != Signature(%q)", s[0], s[1])
		}
	}
	differ := [][2][]string{
		{{"a b", "c"}, {"a", "b c"}},
		{{"FAIL src/a.ts"}, {"FAIL src/b.ts"}},
		{{"x"}, {"x", ""}},
	}
	for _, s := range differ {
		if a, b := Signature(s[0]...), Signature(s[1]...); a == b {
			t.Errorf("Signature(%q) == Signature(%q)", s[0], s[1])
		}
	}
	sig := Signature("x")
	if b, err := hex.DecodeString(sig); err != nil || len(b) != 32 {
		t.Errorf("Signature is not sha256 hex: %q", sig)
	}
	// sha256("x") after normalisation is sha256("x").
	if sig != "2d711642b726b04401627ca9fbac32f5c8530fb1903cc4db02258717921a4881" {
		t.Errorf("Signature(x) = %s", sig)
	}
}

func TestClassesKnown(t *testing.T) {
	all := AllClasses()
	if len(all) != 20 {
		t.Errorf("%d classes", len(all))
	}
	seen := map[Class]bool{}
	for _, c := range all {
		if !c.Known() || seen[c] {
			t.Errorf("class %q: known %v, repeated %v", c, c.Known(), seen[c])
		}
		seen[c] = true
	}
	all[0] = "mutated"
	if AllClasses()[0] != ClassRateLimit {
		t.Error("AllClasses shares its slice")
	}
	for _, c := range []Class{"", "Rate_Limit", "quota"} {
		if c.Known() {
			t.Errorf("%q is known", c)
		}
	}
}

func FuzzClassify(f *testing.F) {
	for _, tt := range providerCases {
		f.Add(tt.text)
	}
	for _, s := range []string{"preflight", "verify_failed", "status 503", ": 404 X", "\xff429", "429\x00"} {
		f.Add(s)
	}
	user := DefaultProvider.With(Rule{Class: ClassRateLimit, Regexp: `quota\s+\d+`}, Rule{Class: ClassServer, Status: []string{"5xx"}})
	f.Fuzz(func(t *testing.T, text string) {
		for _, c := range []Classifier{DefaultProvider, DefaultFactory, user} {
			a, b := c.Classify(text), c.Classify(text)
			if a != b {
				t.Fatalf("not deterministic: %s then %s", a, b)
			}
			if !a.Known() {
				t.Fatalf("Classify(%q) = %q, not a known class", text, a)
			}
		}
		if code := StatusCode(text); code != 0 && (code < 400 || code > 599) {
			t.Fatalf("StatusCode(%q) = %d", text, code)
		} else if code != 0 && !strings.Contains(text, string(rune('0'+code/100))) {
			t.Fatalf("StatusCode(%q) = %d, not in the text", text, code)
		}
		if s1, s2 := Signature(text), Signature(text); s1 != s2 || len(s1) != 64 {
			t.Fatalf("Signature not deterministic or not sha256 hex: %q %q", s1, s2)
		}
		n := NormalizeFailure(text)
		if NormalizeFailure(n) != n {
			t.Fatalf("NormalizeFailure is not idempotent on %q: %q then %q", text, n, NormalizeFailure(n))
		}
		_ = ExceptionTransient(text)
	})
}

// go test ./model/failure -run - -bench Classify -benchmem
func BenchmarkClassify(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		for _, tt := range providerCases {
			DefaultProvider.Classify(tt.text)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(providerCases)), "ns/text")
}

package tracegen

// The fixed vocabulary runs draw from. Keeping it in tables keeps the flow
// code about control flow.

type model struct {
	name string
	// latency of one successful attempt, ms: median and spread factor
	medianMs float64
	// USD per million input and output tokens; 0 means unknown (null cost)
	inPerM, outPerM float64
}

type provider struct {
	id           string
	latencyClass string
	streaming    bool
	toolCalling  bool
	jsonMode     bool
	models       []model
}

var providers = []provider{
	{id: "anthropic", latencyClass: "medium", streaming: true, toolCalling: true, jsonMode: false, models: []model{
		{"claude-sonnet-4-5", 9000, 3, 15},
		{"claude-opus-4-1", 16000, 15, 75},
		{"claude-3-5-haiku-latest", 3500, 0.8, 4},
	}},
	{id: "openai", latencyClass: "medium", streaming: true, toolCalling: true, jsonMode: true, models: []model{
		{"gpt-4.1", 7000, 2, 8},
		{"gpt-4o", 6000, 2.5, 10},
		{"o3-mini", 12000, 1.1, 4.4},
		{"gpt-5", 14000, 1.25, 10},
	}},
	{id: "google", latencyClass: "fast", streaming: true, toolCalling: true, jsonMode: true, models: []model{
		{"gemini-2.5-pro", 11000, 1.25, 10},
		{"gemini-2.5-flash", 3000, 0.3, 2.5},
		{"gemini-2.0-flash-exp", 2500, 0, 0},
	}},
}

type repo struct {
	root   string
	checks []string // verification checks the repo's package.json has
}

var repos = []repo{
	{"/home/dev/src/acme-web", []string{"lint", "typecheck", "tests"}},
	{"/home/dev/src/billing-service", []string{"typecheck", "tests"}},
	{"/Users/maria/code/orchestrator", []string{"lint", "typecheck", "tests"}},
	{"/workspace/ledger-api", []string{"tests"}},
	{"/srv/ci/work/design-system", []string{"lint", "tests"}},
	{"/home/runner/work/mobile-app/mobile-app", []string{"typecheck", "tests"}},
}

var checkCommands = map[string]string{
	"lint":      "npm run lint",
	"typecheck": "npm run typecheck",
	"tests":     "npm run test",
}

var goals = []string{
	"Add retry with exponential backoff to the HTTP client",
	"Fix flaky test in src/exec/service.test.ts",
	"Migrate config loader from yaml to zod schemas",
	"Add --json output to the status command",
	"Handle ECONNRESET in the webhook dispatcher",
	"Rename UserRecord to AccountRecord across the codebase",
	"Add pagination to GET /v1/invoices",
	"Fix off-by-one in date range filter",
	"Remove deprecated lodash helpers",
	"Add unit tests for the diff extractor",
	"Support Windows paths (C:\\Users\\...) in path normaliser",
	"Make \"dry-run\" mode skip network calls",
	"Upgrade vitest to v3 and fix broken mocks",
	"Add i18n strings for the checkout page (日本語, Deutsch)",
	"Cache repo scan results between runs",
	"Fix race in the job queue shutdown",
	"Add README section on configuration",
	"Tighten eslint rules for no-floating-promises",
}

var planSteps = []string{
	"Locate the relevant module and its tests",
	"Add a failing test that reproduces the issue",
	"Implement the change in the core module",
	"Update call sites to the new API",
	"Handle the error path and add logging",
	"Update types and exported interfaces",
	"Adjust configuration defaults",
	"Update documentation and changelog",
	"Run the test suite and fix regressions",
	"Refactor helper functions for reuse",
}

var sourceFiles = []string{
	"src/index.ts", "src/client/http.ts", "src/client/retry.ts", "src/exec/service.ts",
	"src/config/loader.ts", "src/config/schema.ts", "src/routes/invoices.ts",
	"src/queue/worker.ts", "src/utils/path.ts", "src/utils/date.ts",
	"src/webhooks/dispatcher.ts", "src/cli/status.ts", "packages/core/src/plan.ts",
	"packages/shared/src/types.ts", "README.md", "package.json",
}

var testFiles = []string{
	"src/client/http.test.ts", "src/exec/service.test.ts", "src/config/loader.test.ts",
	"src/routes/invoices.test.ts", "src/utils/date.test.ts", "src/queue/worker.test.ts",
	"packages/core/src/plan.test.ts",
}

// Retried error messages, as the SDKs and the adapter word them. orchstat
// classifies from this text only.
var retriedErrors = []struct {
	weight float64
	msgs   []string
	// attemptMs is how long a failing attempt of this kind takes
	minMs, maxMs int64
}{
	{0.45, []string{ // 429
		"429 Too Many Requests",
		"Rate limit exceeded",
		`429 {"type":"error","error":{"type":"rate_limit_error","message":"Number of request tokens has exceeded your per-minute rate limit"}}`,
		"429 Rate limit reached for requests per min (RPM): Limit 500, Used 500, Requested 1. Please try again in 120ms.",
		"429 Resource has been exhausted (e.g. check quota).",
	}, 80, 900},
	{0.25, []string{ // 5xx
		"500 Internal Server Error",
		"502 Bad Gateway",
		"503 Service Unavailable",
		"504 Gateway Timeout",
		`529 {"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`,
		"500 The server had an error while processing your request. Sorry about that!",
	}, 200, 3000},
	{0.10, []string{ // timeouts
		"Request timed out after 60000ms",
		"Request timed out.",
	}, 60000, 60000},
	{0.20, []string{ // network
		"read ECONNRESET",
		"connect ETIMEDOUT 104.18.7.192:443",
		"connect ECONNREFUSED 127.0.0.1:8787",
		"request to provider failed, reason: socket hang up (ECONNRESET)",
	}, 5, 20000},
}

var fatalErrors = []string{
	`401 {"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"}}`,
	"401 Incorrect API key provided. You can find your API key in your account settings.",
	"403 Forbidden: your organization does not have access to this model",
	"400 Bad Request: prompt is too long: 214871 tokens > 200000 maximum",
	"400 This model's maximum context length is 128000 tokens. However, your messages resulted in 131582 tokens.",
	"404 model not found",
}

// applyErrors are ExecutionService.applyPatch's messages (L1 and L3).
var applyErrors = []string{
	"error: patch failed: src/client/http.ts:42\nerror: src/client/http.ts: patch does not apply",
	"error: corrupt patch at line 27",
	"error: src/config/schema.ts: No such file or directory",
	"Patch touches 7 files, exceeding maxFilesChanged (5)",
}

type l2ApplyError struct {
	typ, kind, message, stderr string
}

var l2ApplyErrors = []l2ApplyError{
	{"execution", "HUNK_FAILED", "Patch failed to apply: hunk #2 FAILED at 57", "error: patch failed: src/queue/worker.ts:57\nerror: src/queue/worker.ts: patch does not apply\n"},
	{"execution", "CORRUPT_PATCH", "Patch failed to apply: corrupt patch", "error: corrupt patch at line 31\n"},
	{"execution", "FILE_NOT_FOUND", "Patch failed to apply: file not found", "error: src/utils/dates.ts: No such file or directory\n"},
	{"validation", "INVALID_PATCH", "Invalid unified diff: missing file headers", ""},
	{"security", "UNKNOWN", "Patch modifies a path outside the repository: ../.ssh/config", ""},
	{"limit", "UNKNOWN", "Patch exceeds maxFilesChanged (5): 8 files", ""},
	{"execution", "WHITESPACE", "Patch failed to apply: whitespace errors", "error: 3 lines add whitespace errors.\n"},
}

var hypotheses = []string{
	"The patch was generated against a stale version of the file; re-read it before diffing.",
	"Hunk headers have wrong line counts; regenerate with full context.",
	"The target file was renamed in an earlier step.",
	"Line endings differ (CRLF in the working tree).",
}

var judgeErrors = []string{
	"Judge output was not valid JSON",
	"Judge selected unknown candidate id",
	"Provider request failed: 503 Service Unavailable",
}

package policyfile

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/orchstat/orchstat/model/failure"
	"github.com/orchstat/orchstat/rules/retry"
)

const briefExample = `name: fewer-retries
extends: orchestrator          # a preset
max_retries: 5
backoff: {initial: 1s, max: 10s, factor: 2, jitter: full}
retriable: [rate_limit, server, network]   # replaces the set
no_retry: [rate_limit]                      # removes from the set
per_operation: {test: 3, build: 1}
max_attempts: 10
signature_halt: 3
global_cap: 15
budget: {ratio: 0.1, max_tokens: 10}
cascade: {threshold: 3, window: 5}
escalation: {non_improving: 1, patch_apply_failures: 2, max_escalations: 1}
max_iterations: 5
non_improving_stop: 2
diagnosis_after: 2
adaptive: {window: 10, threshold: 0.2, max_retries: 3, strategies: {implement: [simplify-prompt, incremental]}}
classify: [{class: rate_limit, contains: ["quota exceeded"]}]
`

func TestParsePolicyExample(t *testing.T) {
	got, err := Parse("p.yaml", []byte(briefExample))
	if err != nil {
		t.Fatal(err)
	}
	seed, _ := retry.Preset("adaptive")
	strategies := seed.Adaptive.Strategies
	strategies["implement"] = []string{"simplify-prompt", "incremental"}
	want := &retry.Policy{
		Name:             "fewer-retries",
		Backoff:          retry.Backoff{Initial: time.Second, Max: 10 * time.Second, Factor: 2, Jitter: retry.JitterFull, Spread: 0.1},
		MaxRetries:       5,
		PerOperation:     map[string]int{"test": 3, "build": 1},
		Retriable:        map[failure.Class]bool{failure.ClassServer: true, failure.ClassNetwork: true},
		MaxAttempts:      10,
		SignatureHalt:    3,
		GlobalCap:        15,
		MaxIterations:    5,
		NonImprovingStop: 2,
		Escalation:       retry.Escalation{NonImproving: 1, PatchApplyFailures: 2, MaxEscalations: 1},
		DiagnosisAfter:   2,
		Budget:           &retry.Budget{MaxTokens: 10, Ratio: 0.1},
		Cascade:          &retry.Cascade{Threshold: 3, Window: 5},
		Adaptive:         &retry.Adaptive{Window: 10, Threshold: 0.2, MaxRetries: 3, Strategies: strategies},
		Classify:         []failure.Rule{{Class: failure.ClassRateLimit, Contains: []string{"quota exceeded"}}},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got\n%+v\nwant\n%+v", got, want)
	}
	if c := got.Classifier(failure.DefaultProvider).Classify("Quota exceeded for project x"); c != failure.ClassRateLimit {
		t.Errorf("the file's classify rule: %s", c)
	}
}

// What a file does not set keeps the preset's value; what it sets
// replaces, merges or removes as documented.
func TestParsePolicyCompose(t *testing.T) {
	preset := func(name string) *retry.Policy { p, _ := retry.Preset(name); return p }
	tests := []struct {
		name string
		path string
		src  string
		want func() *retry.Policy
	}{
		{"no extends starts from nothing", "dir/mine.yaml", "max_retries: 2\n",
			func() *retry.Policy { return &retry.Policy{Name: "mine", MaxRetries: 2} }},
		{"name defaults to the file's", "x/fewer.yml", "extends: orchestrator\n",
			func() *retry.Policy { p := preset("orchestrator"); p.Name = "fewer"; return p }},
		{"a partial backoff keeps the rest", "p.yaml", "extends: orchestrator\nbackoff: {max: 30s}\n",
			func() *retry.Policy {
				p := preset("orchestrator")
				p.Name = "p"
				p.Backoff.Max = 30 * time.Second
				return p
			}},
		{"a named backoff replaces it", "p.yaml", "extends: orchestrator\nbackoff: aws-decorrelated\n",
			func() *retry.Policy {
				p := preset("orchestrator")
				p.Name = "p"
				p.Backoff, _ = retry.BackoffPreset("aws-decorrelated")
				return p
			}},
		{"proportional jitter takes 10%", "p.yaml", "backoff: {initial: 500ms, jitter: proportional}\n",
			func() *retry.Policy {
				return &retry.Policy{Name: "p", Backoff: retry.Backoff{Initial: 500 * time.Millisecond, Jitter: retry.JitterProportional, Spread: 0.1}}
			}},
		{"an explicit spread stays", "p.yaml", "backoff: {initial: 500ms, jitter: proportional, spread: 0}\n",
			func() *retry.Policy {
				return &retry.Policy{Name: "p", Backoff: retry.Backoff{Initial: 500 * time.Millisecond, Jitter: retry.JitterProportional}}
			}},
		{"zero needs no unit", "p.yaml", "extends: orchestrator\nbackoff: {initial: 0, max: 0, factor: 1, jitter: none}\n",
			func() *retry.Policy {
				p := preset("orchestrator")
				p.Name = "p"
				p.Backoff = retry.Backoff{Factor: 1, Spread: 0.1}
				return p
			}},
		{"null removes a rule", "p.yaml", "extends: retry-handler\ncascade: ~\nbudget: null\nadaptive:\n",
			func() *retry.Policy { p := preset("retry-handler"); p.Name = "p"; p.Cascade = nil; return p }},
		{"an empty section takes the seeds' values", "p.yaml", "budget: {}\ncascade: {}\nadaptive: {}\n",
			func() *retry.Policy {
				return &retry.Policy{Name: "p", Budget: &retry.Budget{MaxTokens: 10, Ratio: 0.1}, Cascade: &retry.Cascade{Threshold: 3, Window: 5},
					Adaptive: preset("adaptive").Adaptive}
			}},
		{"a partial section keeps the preset's fields", "p.yaml", "extends: retry-handler\ncascade: {window: 10}\n",
			func() *retry.Policy { p := preset("retry-handler"); p.Name = "p"; p.Cascade.Window = 10; return p }},
		{"adaptive strategies replace the stages named", "p.yaml", "extends: adaptive\nadaptive: {threshold: 0.5, strategies: {cass: [x], deploy: []}}\n",
			func() *retry.Policy {
				p := preset("adaptive")
				p.Name, p.Adaptive.Threshold = "p", 0.5
				p.Adaptive.Strategies["cass"], p.Adaptive.Strategies["deploy"] = []string{"x"}, []string{}
				return p
			}},
		{"per_operation merges", "p.yaml", "extends: retry-handler\nper_operation: {test: 5, lint: 1}\n",
			func() *retry.Policy {
				p := preset("retry-handler")
				p.Name, p.PerOperation["test"], p.PerOperation["lint"] = "p", 5, 1
				return p
			}},
		{"no_retry applies after retriable wherever it is written", "p.yaml", "no_retry: [server]\nretriable: [server, network]\n",
			func() *retry.Policy {
				return &retry.Policy{Name: "p", Retriable: map[failure.Class]bool{failure.ClassNetwork: true}}
			}},
		{"no_retry alone trims the preset's set", "p.yaml", "extends: orchestrator\nno_retry: [rate_limit, auth]\n",
			func() *retry.Policy {
				p := preset("orchestrator")
				p.Name = "p"
				delete(p.Retriable, failure.ClassRateLimit)
				return p
			}},
		{"an empty list retries nothing", "p.yaml", "extends: orchestrator\nretriable: []\n",
			func() *retry.Policy {
				p := preset("orchestrator")
				p.Name = "p"
				p.Retriable = map[failure.Class]bool{}
				return p
			}},
		{"transient_only", "p.yaml", "extends: factory\ntransient_only: [exception]\n",
			func() *retry.Policy {
				p := preset("factory")
				p.Name, p.TransientOnly = "p", map[failure.Class]bool{failure.ClassException: true}
				return p
			}},
		{"escalation keeps the fields not set", "p.yaml", "extends: orchestrator\nescalation: {max_escalations: 0}\n",
			func() *retry.Policy {
				p := preset("orchestrator")
				p.Name = "p"
				p.Escalation.MaxEscalations = 0
				return p
			}},
		{"classify rules in every spelling", "p.yaml", `classify:
  - class: server
    status: [5xx, 418]
  - {class: client, status: 4xx}
  - {class: abort, contains: stop, equals: [halt], regexp: 'user\s+quit'}
`,
			func() *retry.Policy {
				return &retry.Policy{Name: "p", Classify: []failure.Rule{{Class: failure.ClassServer, Status: []string{"5xx", "418"}},
					{Class: failure.ClassClient, Status: []string{"4xx"}},
					{Class: failure.ClassAbort, Contains: []string{"stop"}, Equals: []string{"halt"}, Regexp: `user\s+quit`}}}
			}},
		{"anchors, aliases and merge keys", "p.yaml", `x-ops: &ops {test: 4}
per_operation: *ops
retriable: &r [server]
transient_only: *r
escalation: {<<: [{non_improving: 1}, {patch_apply_failures: 3}], non_improving: 2}
`,
			func() *retry.Policy { return nil }}, // x-ops is an unknown key: see below
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Parse(tt.path, []byte(tt.src))
			want := tt.want()
			if want == nil {
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("got\n%+v\nwant\n%+v", got, want)
			}
			if err := got.Validate(); err != nil {
				t.Errorf("a parsed policy does not validate: %v", err)
			}
		})
	}
	// Aliases and merge keys, with the anchors in known keys.
	got, err := Parse("p.yaml", []byte(`per_operation: &ops {test: 4}
retriable: &r [server]
transient_only: *r
escalation: {<<: [{non_improving: 1}, {patch_apply_failures: 3}], non_improving: 2}
budget: {<<: {ratio: 0.5}}
`))
	if err != nil {
		t.Fatal(err)
	}
	want := &retry.Policy{Name: "p", PerOperation: map[string]int{"test": 4}, Retriable: map[failure.Class]bool{failure.ClassServer: true},
		TransientOnly: map[failure.Class]bool{failure.ClassServer: true}, Escalation: retry.Escalation{NonImproving: 2, PatchApplyFailures: 3},
		Budget: &retry.Budget{MaxTokens: 10, Ratio: 0.5}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("aliases: got\n%+v\nwant\n%+v", got, want)
	}
	// Parsing does not touch the presets.
	if p, _ := retry.Preset("retry-handler"); p.PerOperation["test"] != 2 || p.Cascade.Window != 5 {
		t.Errorf("a policy file changed its preset: %+v", p)
	}
}

var (
	allowedTop   = "(allowed: name, extends, max_retries, backoff, retriable, no_retry, transient_only, per_operation, max_attempts, signature_halt, global_cap, budget, cascade, escalation, max_iterations, non_improving_stop, diagnosis_after, adaptive, classify)"
	allClassList = "(rate_limit, timeout, server, network, auth, client, abort, preflight, exception, llm_output_invalid, write_scope_violation, stale_context, write_failed, verify_failed, acceptance_failed, patch_apply_failed, command_timeout, logic_error, signal, unknown)"
)

// Every problem, each with the file, line, column and field.
func TestParsePolicyProblems(t *testing.T) {
	tests := []struct {
		src  string
		want []string
	}{
		{"max_retires: 3\nbackof: none\n", []string{
			`p.yaml:1:1: max_retires: unknown key; did you mean "max_retries"? ` + allowedTop,
			`p.yaml:2:1: backof: unknown key; did you mean "backoff"? ` + allowedTop}},
		{"max_retries: \"3\"\nmax_attempts: 1.5\nsignature_halt: -2\nglobal_cap: true\nmax_iterations: [1]\nnon_improving_stop: {a: 1}\ndiagnosis_after: 99999999999\n", []string{
			`p.yaml:1:14: max_retries: must be a whole number, got "3"`,
			`p.yaml:2:15: max_attempts: must be a whole number, got 1.5`,
			`p.yaml:3:17: signature_halt: must not be negative, got -2`,
			`p.yaml:4:13: global_cap: must be a whole number, got a boolean`,
			`p.yaml:5:17: max_iterations: must be a whole number, got a list`,
			`p.yaml:6:21: non_improving_stop: must be a whole number, got a mapping`,
			`p.yaml:7:18: diagnosis_after: 99999999999 is out of range`}},
		{"backoff:\n  initial: 1000\n  max: 1 sec\n  factor: 0.5\n  jitter: fulll\n  spread: 2\n  cap: 1s\n", []string{
			`p.yaml:2:12: backoff.initial: 1000 has no unit: write a duration such as 500ms or 1s`,
			`p.yaml:3:8: backoff.max: "1 sec" is not a duration (write 500ms, 1s, 1m30s)`,
			`p.yaml:4:11: backoff.factor: must be 1 or more (1 is a constant wait), got 0.5`,
			`p.yaml:5:11: backoff.jitter: unknown jitter "fulll"; did you mean "full"? (none, proportional, full, equal, decorrelated)`,
			`p.yaml:6:11: backoff.spread: must be between 0 and 1, got 2`,
			`p.yaml:7:3: backoff.cap: unknown key; did you mean "max"? (allowed: initial, max, factor, jitter, spread)`}},
		{"extends: orchestrator\nmax_retries: 5\nbackoff: {initial: 1s, max: 10s, factor: 2, jitter: fulll}\n", []string{
			`p.yaml:3:53: backoff.jitter: unknown jitter "fulll"; did you mean "full"? (none, proportional, full, equal, decorrelated)`}},
		{"backoff: [1]\n", []string{
			`p.yaml:1:10: backoff: backoff is a schedule's name (none, orchestrator, aws-full, aws-equal, aws-decorrelated, constant) or a mapping of initial, max, factor, jitter, spread`}},
		{"backoff: aws-ful\n", []string{
			`p.yaml:1:10: backoff: unknown backoff "aws-ful"; did you mean "aws-full"? (none, orchestrator, aws-full, aws-equal, aws-decorrelated, constant, or a mapping of initial, max, factor, jitter, spread)`}},
		{"backoff: {initial: -1s, jitter: 3}\n", []string{
			`p.yaml:1:20: backoff.initial: must not be negative, got -1s`,
			`p.yaml:1:33: backoff.jitter: must be a string, got 3`}},
		{"extends: orchestrator\nbackoff: {max: 500ms}\n", []string{
			`p.yaml:2:16: backoff.max: 500ms is below backoff.initial 1s`}},
		{"backoff: {initial: 2s, max: 1s}\nextends: orchestrator\n", []string{
			`p.yaml:1:29: backoff.max: 1s is below backoff.initial 2s`}},
		{"retriable: [rate_limt, server, 3]\nno_retry: rate_limit\ntransient_only: [exeption]\n", []string{
			`p.yaml:1:13: retriable[0]: unknown class "rate_limt"; did you mean "rate_limit"? ` + allClassList,
			`p.yaml:1:32: retriable[2]: must be a class name, got 3`,
			`p.yaml:2:11: no_retry: must be a list, got "rate_limit"`,
			`p.yaml:3:18: transient_only[0]: unknown class "exeption"; did you mean "exception"? ` + allClassList}},
		{"budget: {ratio: 0, max_tokens: .inf, burst: 1}\ncascade: {threshold: 0}\n", []string{
			`p.yaml:1:17: budget.ratio: must be more than 0, got 0`,
			`p.yaml:1:32: budget.max_tokens: must be a finite number, got .inf`,
			`p.yaml:1:38: budget.burst: unknown key (allowed: max_tokens, ratio)`,
			`p.yaml:2:22: cascade.threshold: must be at least 1, got 0`}},
		{"budget: {max_tokens: 0}\n", []string{`p.yaml:1:22: budget.max_tokens: must be more than 0, got 0`}},
		{"budget: {ratio: -0.1}\n", []string{`p.yaml:1:17: budget.ratio: must be more than 0, got -0.1`}},
		{"cascade: {threshold: 6, window: 5}\nescalation: {non_improving: -1, max_escalation: 1}\n", []string{
			`p.yaml:1:22: cascade.threshold: 6 failures cannot fit in a window of 5 items`,
			`p.yaml:2:29: escalation.non_improving: must not be negative, got -1`,
			`p.yaml:2:33: escalation.max_escalation: unknown key; did you mean "max_escalations"? (allowed: non_improving, patch_apply_failures, max_escalations)`}},
		{"cascade: {window: -1}\n", []string{`p.yaml:1:19: cascade.window: must not be negative, got -1`}},
		{"adaptive: {window: -1, threshold: 1.5, max_retries: x, strategies: {cass: simplify}}\n", []string{
			`p.yaml:1:20: adaptive.window: must not be negative, got -1`,
			`p.yaml:1:35: adaptive.threshold: must be between 0 and 1, got 1.5`,
			`p.yaml:1:53: adaptive.max_retries: must be a whole number, got "x"`,
			`p.yaml:1:75: adaptive.strategies.cass: must be a list, got "simplify"`}},
		{"adaptive:\n  strategies:\n    cass: [ok, \"\", 3]\n", []string{
			`p.yaml:3:16: adaptive.strategies.cass[1]: empty strategy`,
			`p.yaml:3:20: adaptive.strategies.cass[2]: must be a string, got 3`}},
		{"adaptive: {mode: x}\n", []string{
			`p.yaml:1:12: adaptive.mode: unknown key (allowed: window, threshold, max_retries, strategies)`}},
		{"classify:\n  - {class: rate_limt, contains: [\"\"]}\n  - {contains: x}\n  - {class: server, regexp: \"((\", status: [5xy, 503, 600]}\n  - {class: server, equals: [\" \"], colour: red}\n  - 42\n  - {class: server}\n", []string{
			`p.yaml:2:13: classify[0].class: unknown class "rate_limt"; did you mean "rate_limit"? ` + allClassList,
			`p.yaml:2:35: classify[0].contains[0]: an empty string would match everything`,
			`p.yaml:3:5: classify[1].class: a rule needs a class ` + allClassList,
			"p.yaml:4:29: classify[2].regexp: error parsing regexp: missing closing ): `(?i)((`",
			`p.yaml:4:44: classify[2].status[0]: "5xy" is not a status like 429 or a class like 5xx`,
			`p.yaml:4:54: classify[2].status[2]: "600" is not a status like 429 or a class like 5xx`,
			`p.yaml:5:30: classify[3].equals[0]: an empty string matches only empty text`,
			`p.yaml:5:36: classify[3].colour: unknown key (allowed: class, contains, regexp, status, equals)`,
			`p.yaml:6:5: classify[4]: a classify rule is a mapping of class and contains, regexp, status or equals`,
			`p.yaml:7:5: classify[5]: a rule needs contains, regexp, status or equals`}},
		{"classify: {class: server}\n", []string{`p.yaml:1:11: classify: must be a list, got a mapping`}},
		{"classify: [{class: server, status: [[1]]}]\n", []string{
			`p.yaml:1:37: classify[0].status[0]: must be a status like 429 or 5xx, got a list`}},
		{"per_operation: {test: -1, \"\": 2, build: x}\n", []string{
			`p.yaml:1:23: per_operation.test: must not be negative, got -1`,
			`p.yaml:1:27: per_operation: an operation needs a name`,
			`p.yaml:1:41: per_operation.build: must be a whole number, got "x"`}},
		{"per_operation: [test]\n", []string{
			`p.yaml:1:16: per_operation: per_operation is a mapping of operation: retries, such as {test: 3, build: 1}`}},
		{"max_retries: 1\nmax_retries: 2\n", []string{`p.yaml:2:1: YAML: mapping key "max_retries" already defined at [1:1]`}},
		{"extends: orchestrater\nname: \"\"\n", []string{
			`p.yaml:1:10: extends: unknown preset "orchestrater"; did you mean "orchestrator"? (orchestrator, retry-handler, auto-retry, factory, factory-audited, adaptive, claude-code, codex, none, aws-full, aws-equal, aws-decorrelated, constant)`,
			`p.yaml:2:7: name: must not be empty`}},
		{"extends: [orchestrator]\nname: 3\n", []string{
			`p.yaml:1:10: extends: must be a string, got a list`,
			`p.yaml:2:7: name: must be a string, got 3`}},
		{"max_retries: 1\n---\nmax_retries: 2\n", []string{`p.yaml:3:1: a policy file holds one YAML document; this is another`}},
		{"- a\n", []string{`p.yaml:1:1: a policy file is a mapping of keys such as extends and max_retries`}},
		{"max_retries: [1\n", []string{`p.yaml:1:14: YAML: sequence end token ']' not found`}},
		{"  \n", []string{`p.yaml: an empty policy file: write at least extends: <preset>`}},
		{"", []string{`p.yaml: an empty policy file: write at least extends: <preset>`}},
		{"escalation: {<<: 3}\n", []string{`p.yaml:1:18: escalation: << merges a mapping, or a list of them`}},
		{"x: &a {non_improving: 1}\nescalation: {<<: *a, max_escalations: -1}\n", []string{
			`p.yaml:1:1: x: unknown key ` + allowedTop,
			`p.yaml:2:39: escalation.max_escalations: must not be negative, got -1`}},
	}
	for _, tt := range tests {
		t.Run(strings.SplitN(tt.src, "\n", 2)[0], func(t *testing.T) {
			p, err := Parse("p.yaml", []byte(tt.src))
			if p != nil || err == nil {
				t.Fatalf("no error; got %+v", p)
			}
			var pe *retry.PolicyError
			if !errors.As(err, &pe) {
				t.Fatalf("error %T, not a *PolicyError", err)
			}
			got := make([]string, len(pe.Problems))
			for i, pr := range pe.Problems {
				got[i] = pr.String()
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("problems:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tt.want, "\n"))
			}
			if err.Error() != strings.Join(tt.want, "\n") {
				t.Errorf("Error() = %q", err.Error())
			}
		})
	}
}

func TestParsePolicyTooManyProblems(t *testing.T) {
	var b strings.Builder
	for i := range 300 {
		fmt.Fprintf(&b, "k%d: 1\n", i)
	}
	_, err := Parse("p.yaml", []byte(b.String()))
	var pe *retry.PolicyError
	if !errors.As(err, &pe) {
		t.Fatal(err)
	}
	if n := len(pe.Problems); n != maxProblems+1 || pe.Problems[n-1].Message != "too many problems; stopping here" {
		t.Errorf("%d problems, last %+v", n, pe.Problems[len(pe.Problems)-1])
	}
}

func TestParsePolicyTooLarge(t *testing.T) {
	data := []byte("max_retries: 1\n# " + strings.Repeat("x", maxPolicyFile) + "\n")
	_, err := Parse("p.yaml", data)
	if err == nil || !strings.Contains(err.Error(), "a policy file is at most 1048576 bytes") {
		t.Errorf("error %v", err)
	}
}

// Aliases can make a small file stand for a huge tree: merge keys nine
// deep and nine wide, and a thousand rules each aliasing a thousand
// strings. Reading them stops early instead of hanging.
func TestParsePolicyAliasBombs(t *testing.T) {
	var merges strings.Builder
	merges.WriteString("m0: &m0 {non_improving: 1}\n")
	for i := 1; i <= 9; i++ {
		fmt.Fprintf(&merges, "m%d: &m%d {<<: [", i, i)
		for j := range 9 {
			if j > 0 {
				merges.WriteString(", ")
			}
			fmt.Fprintf(&merges, "*m%d", i-1)
		}
		merges.WriteString("]}\n")
	}
	merges.WriteString("escalation: {<<: *m9}\n")

	var lists strings.Builder
	lists.WriteString("big: &big [")
	for i := range 1000 {
		if i > 0 {
			lists.WriteString(", ")
		}
		lists.WriteString("s")
	}
	lists.WriteString("]\nclassify:\n")
	for range 1000 {
		lists.WriteString("  - {class: server, contains: *big}\n")
	}

	var seqs strings.Builder
	seqs.WriteString("a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n")
	for i := 1; i <= 8; i++ {
		fmt.Fprintf(&seqs, "a%d: &a%d [*a%d, *a%d, *a%d, *a%d, *a%d, *a%d, *a%d, *a%d, *a%d, *a%d]\n", i, i, i-1, i-1, i-1, i-1, i-1, i-1, i-1, i-1, i-1, i-1)
	}
	seqs.WriteString("retriable: *a8\nadaptive: {strategies: {cass: *a8}}\nclassify: [{class: server, contains: *a8, status: *a8}]\n")

	for _, tt := range []struct{ name, src, want string }{
		{"merges", merges.String(), "escalation: merge keys expand to more than 1000 mappings"},
		{"lists", lists.String(), "the file expands (through aliases) to more than 200000 values"},
		{"sequences", seqs.String(), "retriable[0]: must be a class name, got a list"},
	} {
		name, src := tt.name, tt.src
		t.Run(name, func(t *testing.T) {
			start := time.Now()
			_, err := Parse("bomb.yaml", []byte(src))
			if err == nil {
				t.Fatal("no error")
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("no %q in %.300s", tt.want, err)
			}
			if d := time.Since(start); d > 5*time.Second {
				t.Errorf("took %v", d)
			}
			t.Logf("%d bytes, %v: %.200s", len(src), time.Since(start), err)
		})
	}
}

func FuzzParsePolicy(f *testing.F) {
	f.Add([]byte(briefExample))
	for _, s := range []string{
		"extends: orchestrator\n", "extends: factory-audited\nclassify: [{class: exception, regexp: 'x+'}]\n",
		"backoff: aws-full\nbudget: {}\n", "x: &a {ratio: 1}\nbudget: {<<: *a}\n", "a: &a [*a]\n",
		"classify: [{class: server, status: [5xx, 429, '4xx']}]\n", "max_retries: !!str 3\n", "? max_retries\n: 3\n",
		"backoff: {initial: 1s, max: 10s, factor: .nan}\n", "adaptive: {strategies: {cass: [a, b]}}\n",
		"max_retries: 0x10\n", "max_retries: 1e3\n", "name: |\n  block\n", "{max_retries: 1, max_retries: 2}",
		"per_operation: {? test : 1}\n", "&a max_retries: 1\n", "*a: 1\n", "[", "{", "\t", "%YAML 1.2\n---\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := Parse("f.yaml", data)
		p2, err2 := Parse("f.yaml", data)
		if (err == nil) != (err2 == nil) || err != nil && err.Error() != err2.Error() || !reflect.DeepEqual(p, p2) {
			t.Fatalf("not deterministic: %v / %v", err, err2)
		}
		if err != nil {
			if p != nil {
				t.Fatal("a policy and an error")
			}
			var pe *retry.PolicyError
			if !errors.As(err, &pe) || len(pe.Problems) == 0 {
				t.Fatalf("error %T %v", err, err)
			}
			for _, pr := range pe.Problems {
				if pr.File != "f.yaml" || pr.Message == "" || pr.Line < 0 || pr.Column < 0 {
					t.Fatalf("problem %+v", pr)
				}
			}
			return
		}
		if p == nil {
			t.Fatal("no policy and no error")
		}
		if err := p.Validate(); err != nil {
			t.Fatalf("parsed a policy that does not validate: %v", err)
		}
		if err := retry.ValidateClassifier(p.Classifier(failure.DefaultProvider)); err != nil {
			t.Fatalf("parsed rules that do not validate: %v", err)
		}
		if !reflect.DeepEqual(p.Clone(), p) {
			t.Fatal("Clone differs")
		}
		// The policy works.
		tr := retry.NewTracker(p, fixed(0.5))
		for k := 1; k <= 5; k++ {
			d := tr.Failed(retry.Failure{Class: failure.ClassServer, Attempt: k, Signature: "s"})
			if d.Wait < 0 {
				t.Fatalf("negative wait %v", d.Wait)
			}
			if !d.Retry {
				break
			}
		}
		_ = retry.ReplayL2(p, []retry.L2Iteration{{Signature: "A"}, {Signature: "B", PatchApplyFailed: true}, {Signature: "B"}, {Signature: "C"}})
	})
}

// fixed is a Rand that always draws f.
type fixed float64

func (f fixed) Float64() float64 { return float64(f) }

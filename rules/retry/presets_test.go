package retry

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/orchstat/orchstat/model/failure"
)

func every() map[failure.Class]bool {
	m := map[failure.Class]bool{}
	for _, c := range failure.AllClasses() {
		m[c] = true
	}
	return m
}

func without(m map[failure.Class]bool, cs ...failure.Class) map[failure.Class]bool {
	for _, c := range cs {
		delete(m, c)
	}
	return m
}

var providerRetriable = map[failure.Class]bool{failure.ClassRateLimit: true, failure.ClassTimeout: true, failure.ClassServer: true, failure.ClassNetwork: true}

// Every field of every preset, written out.
func TestPresetValues(t *testing.T) {
	l2 := func(p Policy) Policy {
		p.MaxIterations, p.NonImprovingStop, p.DiagnosisAfter = 5, 2, 2
		p.Escalation = Escalation{NonImproving: 2, PatchApplyFailures: 2, MaxEscalations: 1}
		return p
	}
	s, ms := time.Second, time.Millisecond
	want := map[string]Policy{
		"orchestrator": l2(Policy{Name: "orchestrator", MaxRetries: 3, Retriable: providerRetriable,
			Backoff: Backoff{Initial: 1000 * ms, Max: 10000 * ms, Factor: 2, Jitter: JitterProportional, Spread: 0.1}}),
		"retry-handler": {Name: "retry-handler", MaxRetries: 2, PerOperation: map[string]int{"test": 2, "review": 1, "build": 0},
			Retriable: every(), Cascade: &Cascade{Threshold: 3, Window: 5}},
		"auto-retry": {Name: "auto-retry", MaxRetries: 10, MaxAttempts: 11, SignatureHalt: 3, GlobalCap: 15, Retriable: every()},
		"factory":    {Name: "factory", MaxRetries: 4, MaxAttempts: 5, Retriable: every()},
		"factory-audited": {Name: "factory-audited", MaxRetries: 4, MaxAttempts: 5,
			Retriable:     without(every(), failure.ClassPreflight, failure.ClassWriteFailed),
			TransientOnly: map[failure.Class]bool{failure.ClassException: true}},
		"adaptive": {Name: "adaptive", MaxRetries: 3, Retriable: every(), Adaptive: &Adaptive{Window: 10, Threshold: 0.2, MaxRetries: 3,
			Strategies: map[string][]string{
				"alex": {"simplify-prompt", "add-context"}, "cass": {"reduce-stories", "simplify-prompt"},
				"nigel": {"simplify-tests", "add-context"}, "codey-plan": {"add-context", "simplify-prompt"},
				"codey-implement": {"incremental", "rollback"}}}},
		"claude-code": {Name: "claude-code", MaxRetries: 10, Retriable: providerRetriable,
			Backoff: Backoff{Initial: 500 * ms, Max: 32 * s, Factor: 2, Jitter: JitterProportional, Spread: 0.25}},
		"codex": {Name: "codex", MaxRetries: 4, Retriable: providerRetriable,
			Backoff: Backoff{Initial: 200 * ms, Factor: 2, Jitter: JitterProportional, Spread: 0.1}},
		"none": {Name: "none"},
		"aws-full": l2(Policy{Name: "aws-full", MaxRetries: 3, Retriable: providerRetriable,
			Backoff: Backoff{Initial: s, Max: 10 * s, Factor: 2, Jitter: JitterFull}}),
		"aws-equal": l2(Policy{Name: "aws-equal", MaxRetries: 3, Retriable: providerRetriable,
			Backoff: Backoff{Initial: s, Max: 10 * s, Factor: 2, Jitter: JitterEqual}}),
		"aws-decorrelated": l2(Policy{Name: "aws-decorrelated", MaxRetries: 3, Retriable: providerRetriable,
			Backoff: Backoff{Initial: s, Max: 10 * s, Jitter: JitterDecorrelated}}),
		"constant": l2(Policy{Name: "constant", MaxRetries: 3, Retriable: providerRetriable, Backoff: Backoff{Initial: s}}),
	}
	names := PresetNames()
	if len(names) != len(want) {
		t.Errorf("PresetNames() = %v, want %d names", names, len(want))
	}
	for _, name := range names {
		w, ok := want[name]
		if !ok {
			t.Errorf("preset %q is not tested", name)
			continue
		}
		got, err := Preset(name)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(*got, w) {
			t.Errorf("Preset(%q) =\n%+v\nwant\n%+v", name, *got, w)
		}
		if err := got.Validate(); err != nil {
			t.Errorf("Preset(%q) does not validate: %v", name, err)
		}
	}
	if got, _ := Preset("orchestrator"); got.Backoff != Orchestrator {
		t.Errorf("orchestrator backoff %+v is not Orchestrator", got.Backoff)
	}
}

func TestPresetIsFresh(t *testing.T) {
	for _, name := range PresetNames() {
		before, _ := Preset(name)
		a, _ := Preset(name)
		a.MaxRetries = 99
		if a.PerOperation != nil {
			a.PerOperation["test"] = 99
		}
		if a.Retriable != nil {
			a.Retriable[failure.ClassAuth] = !a.Retriable[failure.ClassAuth]
			delete(a.Retriable, failure.ClassRateLimit)
		}
		if a.Cascade != nil {
			a.Cascade.Threshold = 99
		}
		if a.Adaptive != nil {
			a.Adaptive.Strategies["cass"][0] = "mutated"
			a.Adaptive.Window = 99
		}
		if a.TransientOnly != nil {
			a.TransientOnly[failure.ClassServer] = true
		}
		if after, _ := Preset(name); !reflect.DeepEqual(before, after) {
			t.Errorf("Preset(%q) shares state with an earlier copy:\n%+v\n%+v", name, before, after)
		}
	}
}

func TestPresetUnknown(t *testing.T) {
	_, err := Preset("orchestrater")
	if err == nil {
		t.Fatal("no error")
	}
	want := `unknown policy preset "orchestrater"; did you mean "orchestrator"? (orchestrator, retry-handler, auto-retry, factory, factory-audited, adaptive, claude-code, codex, none, aws-full, aws-equal, aws-decorrelated, constant)`
	if err.Error() != want {
		t.Errorf("error %q\nwant %q", err, want)
	}
	if _, err := Preset("zzzzzzzz"); err == nil || strings.Contains(err.Error(), "did you mean") {
		t.Errorf("far-off name: %v", err)
	}
}

func TestBackoffPreset(t *testing.T) {
	want := map[string]Backoff{
		"none":             {},
		"orchestrator":     Orchestrator,
		"aws-full":         {Initial: time.Second, Max: 10 * time.Second, Factor: 2, Jitter: JitterFull},
		"aws-equal":        {Initial: time.Second, Max: 10 * time.Second, Factor: 2, Jitter: JitterEqual},
		"aws-decorrelated": {Initial: time.Second, Max: 10 * time.Second, Jitter: JitterDecorrelated},
		"constant":         {Initial: time.Second},
	}
	if names := BackoffNames(); len(names) != len(want) {
		t.Errorf("BackoffNames() = %v", names)
	}
	for _, name := range BackoffNames() {
		b, err := BackoffPreset(name)
		if err != nil || b != want[name] {
			t.Errorf("BackoffPreset(%q) = %+v, %v; want %+v", name, b, err, want[name])
		}
	}
	if _, err := BackoffPreset("aws-ful"); err == nil || !strings.Contains(err.Error(), `did you mean "aws-full"?`) {
		t.Errorf("BackoffPreset(aws-ful): %v", err)
	}
}

func TestClone(t *testing.T) {
	p, _ := Preset("adaptive")
	p.Budget = &Budget{MaxTokens: 10, Ratio: 0.1}
	p.Cascade = &Cascade{Threshold: 3, Window: 5}
	p.PerOperation = map[string]int{"test": 3}
	p.TransientOnly = map[failure.Class]bool{failure.ClassException: true}
	p.Classify = []failure.Rule{{Class: failure.ClassServer, Contains: []string{"x"}, Status: []string{"5xx"}, Equals: []string{"y"}}}
	c := p.Clone()
	if !reflect.DeepEqual(p, c) {
		t.Fatalf("Clone differs:\n%+v\n%+v", p, c)
	}
	c.Budget.Ratio = 9
	c.Cascade.Window = 9
	c.PerOperation["test"] = 9
	c.TransientOnly[failure.ClassServer] = true
	c.Retriable[failure.ClassAuth] = false
	c.Classify[0].Contains[0] = "z"
	c.Classify[0].Status[0] = "4xx"
	c.Classify[0].Equals[0] = "z"
	c.Adaptive.Strategies["cass"][0] = "z"
	c.Adaptive.Threshold = 9
	if p.Budget.Ratio == 9 || p.Cascade.Window == 9 || p.PerOperation["test"] == 9 || p.TransientOnly[failure.ClassServer] ||
		!p.Retriable[failure.ClassAuth] || p.Classify[0].Contains[0] == "z" || p.Classify[0].Status[0] == "4xx" ||
		p.Classify[0].Equals[0] == "z" || p.Adaptive.Strategies["cass"][0] == "z" || p.Adaptive.Threshold == 9 {
		t.Errorf("Clone shares state: %+v", p)
	}
	var nilp *Policy
	if nilp.Clone() != nil {
		t.Error("Clone of nil")
	}
}

// policyClassifier is a policy's rules over the defaults.
func TestPolicyClassifier(t *testing.T) {
	p := &Policy{Classify: []failure.Rule{{Class: failure.ClassRateLimit, Contains: []string{"quota exceeded"}}}}
	c := p.Classifier(failure.DefaultProvider)
	if got := c.Classify("Quota exceeded for today"); got != failure.ClassRateLimit {
		t.Errorf("user rule: %s", got)
	}
	if got := c.Classify("503 Service Unavailable"); got != failure.ClassServer {
		t.Errorf("default rule: %s", got)
	}
	if got := (&Policy{}).Classifier(failure.DefaultFactory).Classify("preflight"); got != failure.ClassPreflight {
		t.Errorf("no rules: %s", got)
	}
}

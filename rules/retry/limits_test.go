package retry

import (
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"strconv"
	"testing"
	"time"

	"github.com/orchstat/orchstat/model/episode"
	"github.com/orchstat/orchstat/model/failure"
)

// exhaust fails one item attempt after attempt until the tracker stops
// retrying, and returns the waits it granted and why it stopped.
func exhaust(tr *Tracker, f Failure, sig func(k int) string) ([]time.Duration, string) {
	tr.StartItem()
	var waits []time.Duration
	for k := 1; k <= 1000; k++ {
		f.Attempt = k
		if sig != nil {
			f.Signature = sig(k)
		}
		d := tr.Failed(f)
		if !d.Retry {
			if d.Wait != 0 {
				panic("a stop with a wait")
			}
			return waits, d.Reason
		}
		waits = append(waits, d.Wait)
	}
	return waits, "endless"
}

func distinct(k int) string { return "sig" + strconv.Itoa(k) }

func secs(fs ...float64) []time.Duration {
	out := make([]time.Duration, len(fs))
	for i, f := range fs {
		out[i] = time.Duration(f * float64(time.Second))
	}
	return out
}

// Each preset, one always-failing item at a time, with the draw fixed at
// 0.5 so jittered waits are exact.
func TestPresetBehaviour(t *testing.T) {
	tests := []struct {
		preset string
		f      Failure
		sig    func(int) string
		waits  []time.Duration
		reason string
	}{
		// orchestrator (the orchestrator): 3 retries of the four transient classes, 1 s doubling.
		{"orchestrator", Failure{Class: failure.ClassRateLimit}, nil, secs(1, 2, 4), "max_retries"},
		{"orchestrator", Failure{Class: failure.ClassTimeout}, nil, secs(1, 2, 4), "max_retries"},
		{"orchestrator", Failure{Class: failure.ClassServer}, nil, secs(1, 2, 4), "max_retries"},
		{"orchestrator", Failure{Class: failure.ClassNetwork}, nil, secs(1, 2, 4), "max_retries"},
		{"orchestrator", Failure{Class: failure.ClassAuth}, nil, nil, "class"},
		{"orchestrator", Failure{Class: failure.ClassClient}, nil, nil, "class"},
		{"orchestrator", Failure{Class: failure.ClassAbort}, nil, nil, "class"},
		{"orchestrator", Failure{Class: failure.ClassUnknown}, nil, nil, "class"},
		{"orchestrator", Failure{}, nil, nil, "class"}, // no class is unknown
		// retry-handler (the retry handler): attempts test 3, review
		// 2, build 1.
		{"retry-handler", Failure{Class: failure.ClassLogicError, Operation: "test"}, nil, secs(0, 0), "max_retries"},
		{"retry-handler", Failure{Class: failure.ClassLogicError, Operation: "review"}, nil, secs(0), "max_retries"},
		{"retry-handler", Failure{Class: failure.ClassLogicError, Operation: "build"}, nil, nil, "max_retries"},
		{"retry-handler", Failure{Class: failure.ClassCommandTimeout, Operation: "custom"}, nil, secs(0, 0), "max_retries"},
		// auto-retry: 10 retries, halted by 3 identical signatures.
		{"auto-retry", Failure{Class: failure.ClassUnknown}, distinct, make([]time.Duration, 10), "max_retries"},
		{"auto-retry", Failure{Class: failure.ClassUnknown}, func(int) string { return "same" }, secs(0, 0), "signature_halt"},
		{"auto-retry", Failure{Class: failure.ClassUnknown}, func(k int) string { return []string{"", "a", "b", "b", "b"}[min(k, 4)] }, secs(0, 0, 0), "signature_halt"},
		// factory (the factory audit): 5 attempts of anything.
		{"factory", Failure{Class: failure.ClassVerifyFailed}, nil, make([]time.Duration, 4), "max_retries"},
		{"factory", Failure{Class: failure.ClassPreflight}, nil, make([]time.Duration, 4), "max_retries"},
		{"factory", Failure{Class: failure.ClassWriteFailed}, nil, make([]time.Duration, 4), "max_retries"},
		{"factory", Failure{Class: failure.ClassException, Message: "401 invalid api key"}, nil, make([]time.Duration, 4), "max_retries"},
		// factory-audited: deterministic stages and permanent exceptions stop at once.
		{"factory-audited", Failure{Class: failure.ClassPreflight}, nil, nil, "class"},
		{"factory-audited", Failure{Class: failure.ClassWriteFailed}, nil, nil, "class"},
		{"factory-audited", Failure{Class: failure.ClassException, Message: "AuthenticationError: 401 invalid api key"}, nil, nil, "class"},
		{"factory-audited", Failure{Class: failure.ClassException, Message: "ModuleNotFoundError: No module named 'openai'"}, nil, nil, "class"},
		{"factory-audited", Failure{Class: failure.ClassException, Message: ""}, nil, nil, "class"},
		{"factory-audited", Failure{Class: failure.ClassException, Message: "RateLimitError: Error code: 429"}, nil, make([]time.Duration, 4), "max_retries"},
		{"factory-audited", Failure{Class: failure.ClassException, Message: "APIConnectionError: Connection error."}, nil, make([]time.Duration, 4), "max_retries"},
		{"factory-audited", Failure{Class: failure.ClassVerifyFailed}, nil, make([]time.Duration, 4), "max_retries"},
		{"factory-audited", Failure{Class: failure.ClassAcceptanceFailed}, nil, make([]time.Duration, 4), "max_retries"},
		{"factory-audited", Failure{Class: failure.ClassCommandTimeout}, nil, make([]time.Duration, 4), "max_retries"},
		{"factory-audited", Failure{Class: failure.ClassLLMOutputInvalid}, nil, make([]time.Duration, 4), "max_retries"},
		// adaptive (orchestr8's adaptive retry spec): 3 retries.
		{"adaptive", Failure{Class: failure.ClassUnknown, Operation: "cass"}, nil, secs(0, 0, 0), "max_retries"},
		// generic.
		{"none", Failure{Class: failure.ClassRateLimit}, nil, nil, "class"},
		{"none", Failure{Class: failure.ClassUnknown}, nil, nil, "class"},
		{"aws-full", Failure{Class: failure.ClassServer}, nil, secs(0.5, 1, 2), "max_retries"},
		{"aws-equal", Failure{Class: failure.ClassServer}, nil, secs(0.75, 1.5, 3), "max_retries"},
		{"aws-decorrelated", Failure{Class: failure.ClassServer}, nil, secs(2, 3.5, 5.75), "max_retries"},
		{"aws-decorrelated", Failure{Class: failure.ClassAuth}, nil, nil, "class"},
		{"constant", Failure{Class: failure.ClassServer}, nil, secs(1, 1, 1), "max_retries"},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%s/%s/%s", tt.preset, tt.f.Class, tt.f.Operation), func(t *testing.T) {
			p, err := Preset(tt.preset)
			if err != nil {
				t.Fatal(err)
			}
			waits, reason := exhaust(NewTracker(p, fixed(0.5)), tt.f, tt.sig)
			if len(waits) == 0 {
				waits = nil
			}
			if !reflect.DeepEqual(waits, tt.waits) || reason != tt.reason {
				t.Errorf("waits %v, stopped by %q; want %v, %q", waits, reason, tt.waits, tt.reason)
			}
		})
	}
}

// Per-operation maximum retries (the retry handler's operations).
func TestLimitPerOperation(t *testing.T) {
	p := &Policy{Retriable: every(), MaxRetries: 5, PerOperation: map[string]int{"test": 3, "review": 2, "build": 1, "never": 0}}
	for op, want := range map[string]int{"test": 3, "review": 2, "build": 1, "never": 0, "custom": 5, "": 5} {
		waits, reason := exhaust(NewTracker(p, fixed(0)), Failure{Class: failure.ClassLogicError, Operation: op}, nil)
		if len(waits) != want || reason != "max_retries" {
			t.Errorf("operation %q: %d retries (%s), want %d", op, len(waits), reason, want)
		}
	}
}

// Per-item maximum attempts (auto-retry: 10 at an issue).
func TestLimitMaxAttempts(t *testing.T) {
	for _, tt := range []struct {
		maxAttempts, maxRetries, retries int
		reason                           string
	}{
		{10, 100, 9, "max_attempts"},
		{10, 9, 9, "max_retries"}, // max_retries is checked first
		{10, 3, 3, "max_retries"},
		{1, 100, 0, "max_attempts"},
		{0, 4, 4, "max_retries"}, // 0 is off
		{11, 10, 10, "max_retries"},
	} {
		p := &Policy{Retriable: every(), MaxRetries: tt.maxRetries, MaxAttempts: tt.maxAttempts}
		waits, reason := exhaust(NewTracker(p, fixed(0)), Failure{Class: failure.ClassServer}, distinct)
		if len(waits) != tt.retries || reason != tt.reason {
			t.Errorf("MaxAttempts %d, MaxRetries %d: %d retries (%s), want %d (%s)", tt.maxAttempts, tt.maxRetries, len(waits), reason, tt.retries, tt.reason)
		}
	}
}

// Failure-signature halting (auto-retry: 3 identical in a row).
func TestLimitSignatureHalt(t *testing.T) {
	for _, tt := range []struct {
		halt   int
		sigs   string // one letter per attempt; '.' is no signature
		haltAt int    // the attempt that halts; 0: none within sigs
	}{
		{3, "AAA", 3},
		{3, "ABBB", 4},
		{3, "AABBAAA", 7},
		{3, "ABABABAB", 0},
		{3, "AA.AA.A", 0}, // no signature breaks the run and never counts
		{3, "...", 0},
		{2, "AA", 2},
		{1, "A", 1},
		{0, "AAAAA", 0}, // off
	} {
		p := &Policy{Retriable: every(), MaxRetries: 100, SignatureHalt: tt.halt}
		tr := NewTracker(p, fixed(0))
		tr.StartItem()
		haltAt := 0
		for k, c := range tt.sigs {
			sig := string(c)
			if c == '.' {
				sig = ""
			}
			if d := tr.Failed(Failure{Class: failure.ClassUnknown, Attempt: k + 1, Signature: sig}); !d.Retry {
				if d.Reason != "signature_halt" {
					t.Errorf("%q: stopped by %s", tt.sigs, d.Reason)
				}
				haltAt = k + 1
				break
			}
		}
		if haltAt != tt.haltAt {
			t.Errorf("SignatureHalt %d over %q: halted at %d, want %d", tt.halt, tt.sigs, haltAt, tt.haltAt)
		}
	}
	// A new item starts counting again.
	p := &Policy{Retriable: every(), MaxRetries: 100, SignatureHalt: 3}
	tr := NewTracker(p, fixed(0))
	tr.StartItem()
	tr.Failed(Failure{Attempt: 1, Signature: "A"})
	tr.Failed(Failure{Attempt: 2, Signature: "A"})
	tr.StartItem()
	if d := tr.Failed(Failure{Attempt: 1, Signature: "A"}); !d.Retry {
		t.Errorf("the count carried over to a new item: %+v", d)
	}
}

// A global cap per run (auto-retry: 15), shared by the run's items.
func TestLimitGlobalCap(t *testing.T) {
	p := &Policy{Retriable: every(), MaxRetries: 4, GlobalCap: 15}
	tr := NewTracker(p, fixed(0))
	var got []int
	var reasons []string
	for item := 0; item < 5; item++ {
		waits, reason := exhaust(tr, Failure{Class: failure.ClassServer}, nil)
		got, reasons = append(got, len(waits)), append(reasons, reason)
	}
	if want := []int{4, 4, 4, 3, 0}; !reflect.DeepEqual(got, want) {
		t.Errorf("retries per item %v, want %v", got, want)
	}
	if want := []string{"max_retries", "max_retries", "max_retries", "global_cap", "global_cap"}; !reflect.DeepEqual(reasons, want) {
		t.Errorf("reasons %v, want %v", reasons, want)
	}
	if tr.RunRetries() != 15 {
		t.Errorf("RunRetries %d", tr.RunRetries())
	}
	// A new tracker is a new run.
	if waits, _ := exhaust(NewTracker(p, fixed(0)), Failure{Class: failure.ClassServer}, nil); len(waits) != 4 {
		t.Errorf("a new run starts capped: %d", len(waits))
	}
	// auto-retry's cap: 10 + 5.
	ar, _ := Preset("auto-retry")
	tr = NewTracker(ar, fixed(0))
	a, _ := exhaust(tr, Failure{Class: failure.ClassUnknown}, distinct)
	b, reason := exhaust(tr, Failure{Class: failure.ClassUnknown}, distinct)
	if len(a) != 10 || len(b) != 5 || reason != "global_cap" {
		t.Errorf("auto-retry: %d then %d retries (%s), want 10 then 5 (global_cap)", len(a), len(b), reason)
	}
}

// The budget is gRPC's token bucket; the steps are gRPC's own
// retry_throttle_test (max 4 tokens, ratio 1.6).
func TestLimitBudgetSteps(t *testing.T) {
	p := &Policy{Retriable: every(), MaxRetries: 100, Budget: &Budget{MaxTokens: 4, Ratio: 1.6}}
	tr := NewTracker(p, fixed(0))
	if tr.Tokens() != 4 {
		t.Fatalf("starts with %v tokens, want the full 4", tr.Tokens())
	}
	fail := func() bool { return tr.Failed(Failure{Class: failure.ClassServer, Attempt: 1}).Retry }
	steps := []struct {
		op     string
		retry  bool
		tokens float64
	}{
		{"fail", true, 3},
		{"ok", false, 4}, // capped at the maximum
		{"fail", true, 3},
		{"fail", false, 2}, // at max/2: throttled
		{"ok", false, 3.6},
		{"fail", true, 2.6},
		{"fail", false, 1.6},
		{"fail", false, 0.6},
		{"fail", false, 0}, // never below 0
		{"fail", false, 0},
		{"ok", false, 1.6},
		{"ok", false, 3.2},
		{"fail", true, 2.2},
	}
	for i, s := range steps {
		if s.op == "ok" {
			tr.Success()
		} else if got := fail(); got != s.retry {
			t.Errorf("step %d: retry %v, want %v", i, got, s.retry)
		}
		if math.Abs(tr.Tokens()-s.tokens) > 1e-9 {
			t.Errorf("step %d (%s): %v tokens, want %v", i, s.op, tr.Tokens(), s.tokens)
		}
	}
	// Failures the policy never retries take no token; failures other
	// limits stop still do.
	p = &Policy{Retriable: map[failure.Class]bool{failure.ClassServer: true}, MaxRetries: 0, Budget: &Budget{MaxTokens: 10, Ratio: 0.1}}
	tr = NewTracker(p, fixed(0))
	if d := tr.Failed(Failure{Class: failure.ClassAuth, Attempt: 1}); d.Reason != "class" || tr.Tokens() != 10 {
		t.Errorf("non-retriable failure: %+v, %v tokens", d, tr.Tokens())
	}
	if d := tr.Failed(Failure{Class: failure.ClassServer, Attempt: 1}); d.Reason != "max_retries" || tr.Tokens() != 9 {
		t.Errorf("retriable failure stopped by max_retries: %+v, %v tokens", d, tr.Tokens())
	}
	if (&Tracker{Policy: &Policy{}}).Tokens() != 0 {
		t.Error("tokens without a budget")
	}
}

// The SRE book's 10%: over a long run the retries are at most a tenth of
// the requests (plus half the bucket), however often attempts fail, and a
// rare failure is not throttled.
func TestLimitBudgetTenPercent(t *testing.T) {
	const requests = 200000
	for _, q := range []float64{0.01, 0.05, 0.1, 0.15, 0.2, 0.3, 0.5, 0.9, 1} {
		run := func(b *Budget) float64 {
			p := &Policy{Retriable: every(), MaxRetries: 3, Budget: b}
			r := rand.New(rand.NewPCG(7, math.Float64bits(q)))
			tr := NewTracker(p, r)
			retries := 0
			for range requests {
				tr.StartItem()
				for k := 1; ; k++ {
					if r.Float64() >= q {
						tr.Success()
						break
					}
					if !tr.Failed(Failure{Class: failure.ClassServer, Attempt: k}).Retry {
						break
					}
					retries++
				}
				if tr.Tokens() < 0 || tr.Tokens() > 10 {
					t.Fatalf("tokens %v out of [0, 10]", tr.Tokens())
				}
			}
			return float64(retries) / requests
		}
		with, without := run(&Budget{MaxTokens: 10, Ratio: 0.1}), run(nil)
		t.Logf("failure rate %.2f: retries/requests %.4f with the budget, %.4f without", q, with, without)
		if bound := 0.1 + 5.0/requests; with > bound {
			t.Errorf("failure rate %v: retries/requests %.4f > %.4f", q, with, bound)
		}
		switch {
		case q == 1 && with != 3.0/requests:
			// 10 tokens: the first request's failures leave 9, 8, 7 (retried)
			// and 6 (its 3 retries are spent); the next leaves 5, throttled.
			t.Errorf("all failing: %v retries, want 3", with*requests)
		case q == 0.01 && math.Abs(with-without) > 1e-9:
			t.Errorf("rare failures throttled: %.4f, unthrottled %.4f", with, without)
		case q >= 0.2 && with > without/5:
			// Every failure takes a token and a success gives back 0.1, so
			// past about 1 failure in 11 the bucket stays low.
			t.Errorf("failure rate %v: %.4f with the budget, %.4f without; the budget should bind", q, with, without)
		}
	}
}

func TestCascadeDetect(t *testing.T) {
	for _, tt := range []struct {
		c    Cascade
		seq  string // F failed, s succeeded, oldest first
		want bool
	}{
		{Cascade{3, 5}, "FFF", true},
		{Cascade{3, 5}, "FsFsF", true},
		{Cascade{3, 5}, "FFsss", false},
		{Cascade{3, 5}, "FFsssF", false}, // the first F left the window
		{Cascade{3, 5}, "FsssFF", false},
		{Cascade{3, 5}, "FssFF", true},
		{Cascade{3, 5}, "FF", false},
		{Cascade{3, 5}, "", false},
		{Cascade{3, 5}, "FFFFF", true},
		{Cascade{3, 0}, "FssssssFsssF", true}, // window 0: every item
		{Cascade{0, 5}, "FFFFF", false},       // threshold 0: off
		{Cascade{1, 1}, "sF", true},
		{Cascade{1, 1}, "Fs", false},
	} {
		failed := make([]bool, len(tt.seq))
		for i, c := range tt.seq {
			failed[i] = c == 'F'
		}
		if got := tt.c.Detect(failed); got != tt.want {
			t.Errorf("%+v.Detect(%s) = %v", tt.c, tt.seq, got)
		}
		// The tracker's running detector agrees at every step, and stays
		// fired once it has.
		tr := NewTracker(&Policy{Retriable: every(), MaxRetries: 3, Cascade: &tt.c}, fixed(0))
		sticky := false
		for i, f := range failed {
			sticky = sticky || tt.c.Detect(failed[:i+1])
			if got := tr.EndItem(f); got != sticky || tr.Cascaded() != sticky {
				t.Errorf("%+v over %s: EndItem at %d = %v, want %v", tt.c, tt.seq, i, got, sticky)
			}
		}
	}
	// Once a cascade fires the run stays paused, and later failures stop.
	p, _ := Preset("retry-handler")
	tr := NewTracker(p, fixed(0))
	for i, f := range []bool{true, false, true} {
		if tr.EndItem(f) {
			t.Fatalf("cascade at item %d", i)
		}
	}
	if d := tr.Failed(Failure{Class: failure.ClassLogicError, Operation: "test", Attempt: 1}); !d.Retry {
		t.Errorf("before the cascade: %+v", d)
	}
	if !tr.EndItem(true) || !tr.EndItem(false) || !tr.EndItem(false) || !tr.Cascaded() {
		t.Error("the cascade did not fire or did not stay")
	}
	tr.StartItem()
	if d := tr.Failed(Failure{Class: failure.ClassLogicError, Operation: "test", Attempt: 1}); d.Retry || d.Reason != "cascade" {
		t.Errorf("after the cascade: %+v", d)
	}
	if NewTracker(&Policy{}, nil).EndItem(true) {
		t.Error("a cascade without a Cascade")
	}
}

func TestAdaptiveRecommend(t *testing.T) {
	preset, _ := Preset("adaptive")
	a := *preset.Adaptive
	h := func(s string) []episode.StageOutcome { // "c" failed at cass, "n" at nigel, "." succeeded
		var out []episode.StageOutcome
		for _, c := range s {
			switch c {
			case 'c':
				out = append(out, episode.StageOutcome{Stage: "cass", Failed: true})
			case 'n':
				out = append(out, episode.StageOutcome{Stage: "nigel", Failed: true})
			default:
				out = append(out, episode.StageOutcome{Stage: "cass"})
			}
		}
		return out
	}
	for _, tt := range []struct {
		a       Adaptive
		stage   string
		attempt int
		history string
		want    string
	}{
		// The pipeline's own tests (T-SR-1..5, T-SH-2/3).
		{a, "cass", 1, ".c.c.", "reduce-stories"}, // rate 0.4
		{a, "cass", 2, ".c.c.", "simplify-prompt"},
		{a, "cass", 4, ".c.c.", "abort-recommended"},
		{a, "cass", 1, "", "retry"},           // no history
		{a, "cass", 1, "c.........", "retry"}, // 0.1 < 0.2
		{a, "alex", 1, "", "retry"},
		// Rule 1 comes first, history or not.
		{a, "cass", 4, "", "abort-recommended"},
		{a, "cass", 3, "cc", "simplify-prompt"}, // clamped to the last strategy
		// The threshold is strict: 2 of 10 is not above 0.2.
		{a, "cass", 1, "cc........", "retry"},
		{a, "cass", 1, "ccc.......", "reduce-stories"},
		// Only the last Window runs count.
		{a, "cass", 1, "cccccc..........", "retry"},
		{a, "cass", 1, "..........ccc", "reduce-stories"},
		// Failures at other stages do not count.
		{a, "cass", 1, "nnnnn", "retry"},
		{a, "nigel", 1, "nnnnn", "simplify-tests"},
		{a, "nigel", 2, "nnnnn", "add-context"},
		// A stage without strategies, and attempt 0.
		{a, "deploy", 1, "cccc", "retry"},
		{a, "cass", 0, "cccc", "retry"},
		// Window 0 is every run; MaxRetries 0 advises abort at once.
		{Adaptive{Threshold: 0.2, MaxRetries: 3, Strategies: map[string][]string{"cass": {"x"}}}, "cass", 1, "cc........", "retry"},
		{Adaptive{Threshold: 0.2, MaxRetries: 3, Strategies: map[string][]string{"cass": {"x"}}}, "cass", 1, "ccc.......", "x"},
		{Adaptive{Window: 10, Threshold: 0.2}, "cass", 1, "", "abort-recommended"},
		{Adaptive{Window: 10, Threshold: 0.2, MaxRetries: 3, Strategies: map[string][]string{"cass": {}}}, "cass", 1, "ccc", "retry"},
		{Adaptive{Window: 10, Threshold: 0.2, MaxRetries: 3, Strategies: map[string][]string{"cass": {""}}}, "cass", 1, "ccc", "retry"},
	} {
		if got := tt.a.Recommend(tt.stage, tt.attempt, h(tt.history)); got != tt.want {
			t.Errorf("Recommend(%s, %d, %q) with window %d = %q, want %q", tt.stage, tt.attempt, tt.history, tt.a.Window, got, tt.want)
		}
	}
	// Advise says which case applied, on what numbers, and agrees with
	// Recommend.
	for _, tt := range []struct {
		a       Adaptive
		stage   string
		attempt int
		history string
		want    Advice
	}{
		{a, "cass", 4, ".c.c.", Advice{Strategy: "abort-recommended", Rule: AdvicePastMaxRetries, Rate: 0.4, Failed: 2, Runs: 5}},
		{a, "cass", 2, ".c.c.", Advice{Strategy: "simplify-prompt", Rule: AdviceStrategy, Rate: 0.4, Failed: 2, Runs: 5, Step: 2}},
		{a, "cass", 3, "cc", Advice{Strategy: "simplify-prompt", Rule: AdviceStrategy, Rate: 1, Failed: 2, Runs: 2, Step: 2}},
		{Adaptive{Window: 10, Threshold: 0.2, MaxRetries: 3, Strategies: map[string][]string{"cass": {}}}, "cass", 1, "ccc",
			Advice{Strategy: "retry", Rule: AdviceNoStrategy, Rate: 1, Failed: 3, Runs: 3}},
		{a, "cass", 1, "", Advice{Strategy: "retry", Rule: AdviceNoHistory}},
		{a, "cass", 1, "..........ccc", Advice{Strategy: "reduce-stories", Rule: AdviceStrategy, Rate: 0.3, Failed: 3, Runs: 10, Step: 1}},
		{a, "cass", 1, "cc........", Advice{Strategy: "retry", Rule: AdviceBelowThreshold, Rate: 0.2, Failed: 2, Runs: 10}},
		{a, "cass", 0, "cccc", Advice{Strategy: "retry", Rule: AdviceStrategy, Rate: 1, Failed: 4, Runs: 4, Step: 1}},
	} {
		got := tt.a.Advise(tt.stage, tt.attempt, h(tt.history))
		if got != tt.want {
			t.Errorf("Advise(%s, %d, %q) = %+v, want %+v", tt.stage, tt.attempt, tt.history, got, tt.want)
		}
		if r := tt.a.Recommend(tt.stage, tt.attempt, h(tt.history)); r != got.Strategy {
			t.Errorf("Advise(%s, %d, %q) says %s, Recommend %s", tt.stage, tt.attempt, tt.history, got.Strategy, r)
		}
	}
	if r := a.FailureRate("cass", h(".c.c.")); r != 0.4 {
		t.Errorf("FailureRate = %v, want 0.4", r)
	}
	if r := a.FailureRate("cass", nil); r != 0 {
		t.Errorf("FailureRate of nothing = %v", r)
	}
}

func l2(spec ...string) []L2Iteration {
	// Each item: signature, then flags: "+" passed, "!" patch failed to
	// apply, "-" no patch.
	var out []L2Iteration
	for _, s := range spec {
		var it L2Iteration
		for len(s) > 0 && (s[len(s)-1] == '+' || s[len(s)-1] == '!' || s[len(s)-1] == '-') {
			switch s[len(s)-1] {
			case '+':
				it.Passed = true
			case '!':
				it.PatchApplyFailed = true
			case '-':
				it.NoPatch = true
			}
			s = s[:len(s)-1]
		}
		it.Signature = s
		out = append(out, it)
	}
	return out
}

func TestReplayL2(t *testing.T) {
	orch, _ := Preset("orchestrator")
	with := func(f func(p *Policy)) *Policy {
		p := orch.Clone()
		f(p)
		return p
	}
	tests := []struct {
		name string
		p    *Policy
		its  []L2Iteration
		want L2Outcome
	}{
		{"no record", orch, nil, L2Outcome{Stopped: L2NoRecord}},
		{"initial pass: no L2", orch, l2("+"), L2Outcome{Stopped: L2Passed}},
		{"passes at 1", orch, l2("A", "+"), L2Outcome{Iterations: 1, Stopped: L2Passed}},
		{"passes at 3", orch, l2("A", "B", "C", "+"), L2Outcome{Iterations: 3, Stopped: L2Passed}},
		// The first iteration compares the initial verification with
		// itself: an unchanged signature after it stops at iteration 2.
		{"non-improving at 2", orch, l2("A", "A", "A"), L2Outcome{Iterations: 2, Stopped: L2NonImproving}},
		{"non-improving after a change", orch, l2("A", "B", "B", "B"), L2Outcome{Iterations: 4, Stopped: L2NonImproving}},
		{"a change resets", orch, l2("A", "B", "A", "B", "A", "B"), L2Outcome{Iterations: 5, Stopped: L2MaxIterations}},
		{"max iterations", orch, l2("A", "B", "C", "D", "E", "F", "G"), L2Outcome{Iterations: 5, Stopped: L2MaxIterations}},
		{"escalates on patch failures", orch, l2("A", "B!", "C!", "D"), L2Outcome{Iterations: 2, Escalated: true, EscalationReason: "patch_apply_failure", Stopped: L2Escalated}},
		{"an applied patch resets", orch, l2("A", "B!", "C", "D!", "E", "F!"), L2Outcome{Iterations: 5, Stopped: L2MaxIterations}},
		{"a failed patch still verifies", orch, l2("A", "B!", "+!"), L2Outcome{Iterations: 2, Stopped: L2Passed}},
		{"no patch keeps the verification", orch, l2("A", "X-"), L2Outcome{Iterations: 2, Stopped: L2NonImproving}},
		{"no patch keeps the failure count", orch, l2("A", "B!", "X-", "C!", "D"), L2Outcome{Iterations: 3, Escalated: true, EscalationReason: "patch_apply_failure", Stopped: L2Escalated}},
		{"no patch cannot pass", orch, l2("A", "B", "+-", "C", "D", "E"), L2Outcome{Iterations: 5, Stopped: L2MaxIterations}},
		{"beyond the record", orch, l2("A", "B"), L2Outcome{Iterations: 2, Stopped: L2BeyondRecord}},
		{"beyond at once", orch, l2("A"), L2Outcome{Iterations: 1, Stopped: L2BeyondRecord}},
		{"no signatures never stop", orch, l2("", "", "", "", "", ""), L2Outcome{Iterations: 5, Stopped: L2MaxIterations}},
		{"a lost signature resets", orch, l2("A", "", "A", "A"), L2Outcome{Iterations: 4, Stopped: L2BeyondRecord}},
		// Other policies.
		{"escalation off", with(func(p *Policy) { p.Escalation.MaxEscalations = 0 }), l2("A", "B!", "C!", "D!", "E!", "F!"), L2Outcome{Iterations: 5, Stopped: L2MaxIterations}},
		{"patch threshold off", with(func(p *Policy) { p.Escalation.PatchApplyFailures = 0 }), l2("A", "B!", "C!", "D!", "E!", "F!"), L2Outcome{Iterations: 5, Stopped: L2MaxIterations}},
		{"patch threshold 1", with(func(p *Policy) { p.Escalation.PatchApplyFailures = 1 }), l2("A", "B!"), L2Outcome{Iterations: 1, Escalated: true, EscalationReason: "patch_apply_failure", Stopped: L2Escalated}},
		{"non-improving escalation once the stop allows it", with(func(p *Policy) { p.NonImprovingStop = 3 }), l2("A", "A", "A"),
			L2Outcome{Iterations: 2, Escalated: true, EscalationReason: "non_improving", Stopped: L2Escalated}},
		{"non-improving escalation 1", with(func(p *Policy) { p.Escalation.NonImproving = 1 }), l2("A", "A"),
			L2Outcome{Iterations: 1, Escalated: true, EscalationReason: "non_improving", Stopped: L2Escalated}},
		{"both triggers name non_improving", with(func(p *Policy) { p.NonImprovingStop = 0 }), l2("A", "A!", "A!"),
			L2Outcome{Iterations: 2, Escalated: true, EscalationReason: "non_improving", Stopped: L2Escalated}},
		{"stop off", with(func(p *Policy) { p.NonImprovingStop, p.Escalation.NonImproving = 0, 0 }), l2("A", "A", "A", "A", "A", "A"), L2Outcome{Iterations: 5, Stopped: L2MaxIterations}},
		{"more iterations run past the record", with(func(p *Policy) { p.MaxIterations = 8 }), l2("A", "B", "C", "D", "E", "F"), L2Outcome{Iterations: 6, Stopped: L2BeyondRecord}},
		{"fewer iterations cut the record", with(func(p *Policy) { p.MaxIterations = 2 }), l2("A", "B", "C", "+"), L2Outcome{Iterations: 2, Stopped: L2MaxIterations}},
		{"stop at 3", with(func(p *Policy) { p.NonImprovingStop, p.Escalation.NonImproving = 3, 0 }), l2("A", "A", "A", "A"), L2Outcome{Iterations: 3, Stopped: L2NonImproving}},
		{"none preset runs nothing", nil, l2("A", "+"), L2Outcome{Stopped: L2MaxIterations}},
		{"none preset, passed at once", nil, l2("+"), L2Outcome{Stopped: L2Passed}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := tt.p
			if p == nil {
				p, _ = Preset("none")
			}
			if got := ReplayL2(p, tt.its); got != tt.want {
				t.Errorf("ReplayL2 = %+v, want %+v", got, tt.want)
			}
		})
	}
}

// As spec/EVENTS.md says, with the orchestrator's values the
// non-improving stop always fires before the non-improving escalation.
func TestReplayL2OrchestratorNeverEscalatesNonImproving(t *testing.T) {
	orch, _ := Preset("orchestrator")
	r := rand.New(rand.NewPCG(3, 4))
	for range 20000 {
		its := make([]L2Iteration, 1+r.IntN(7))
		for i := range its {
			its[i] = L2Iteration{Signature: string(rune('A' + r.IntN(3))), PatchApplyFailed: r.IntN(3) == 0,
				NoPatch: r.IntN(5) == 0, Passed: r.IntN(8) == 0}
		}
		o := ReplayL2(orch, its)
		if o.EscalationReason == "non_improving" {
			t.Fatalf("%+v escalated as non-improving", its)
		}
		if o.Iterations > 5 || o.Iterations < 0 {
			t.Fatalf("%+v: %d iterations", its, o.Iterations)
		}
	}
}

func TestDiagnosisDue(t *testing.T) {
	orch, _ := Preset("orchestrator")
	for _, tt := range []struct {
		after int
		errs  []string
		want  []int
	}{
		{2, []string{"e1", "e1"}, []int{1}},
		{2, []string{"e1", "e2", "e2"}, []int{2}},
		{2, []string{"e1", "e1", "e1"}, []int{1}}, // the count resets after a diagnosis
		{2, []string{"e1", "e1", "e1", "e1"}, []int{1, 3}},
		{2, []string{"e1", "", "e1"}, nil},
		{2, []string{"e1", "e2", "e1"}, nil},
		{1, []string{"e1", "e2"}, []int{0, 1}},
		{0, []string{"e1", "e1"}, nil},
		{2, nil, nil},
	} {
		p := orch.Clone()
		p.DiagnosisAfter = tt.after
		if got := DiagnosisDue(p, tt.errs); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("DiagnosisDue(%d, %q) = %v, want %v", tt.after, tt.errs, got, tt.want)
		}
	}
}

// The checks run in a fixed order; the first that stops names the reason.
func TestDecisionOrder(t *testing.T) {
	p := &Policy{Retriable: every(), MaxRetries: 0, MaxAttempts: 1, SignatureHalt: 1, GlobalCap: 0,
		Budget: &Budget{MaxTokens: 1, Ratio: 0.1}, Cascade: &Cascade{Threshold: 1, Window: 1}}
	// Each step lifts the limit that stopped the one before.
	steps := []struct {
		lift func(p *Policy)
		want string
	}{
		{func(p *Policy) {}, "cascade"},
		{func(p *Policy) { p.Cascade = nil }, "max_retries"},
		{func(p *Policy) { p.MaxRetries = 5 }, "max_attempts"},
		{func(p *Policy) { p.MaxAttempts = 0 }, "signature_halt"},
		{func(p *Policy) { p.SignatureHalt, p.GlobalCap = 0, 1 }, "global_cap"},
		{func(p *Policy) { p.GlobalCap = 0 }, "budget"},
		{func(p *Policy) { p.Budget = nil }, ""},
	}
	for i, s := range steps {
		s.lift(p)
		tr := NewTracker(p, fixed(0))
		tr.EndItem(true)
		tr.runRetries = 1
		d := tr.Failed(Failure{Class: failure.ClassServer, Attempt: 1, Signature: "s"})
		if d.Retry != (s.want == "") || d.Reason != s.want {
			t.Errorf("step %d: %+v, want %q", i, d, s.want)
		}
		// The class is checked before all of them.
		if d := NewTracker(p, fixed(0)).Failed(Failure{Class: "nonesuch", Attempt: 1}); d.Reason != "class" {
			t.Errorf("step %d: an unlisted class stopped by %q", i, d.Reason)
		}
	}
	// Attempt 0 counts as the first attempt.
	tr := NewTracker(&Policy{Retriable: every(), MaxRetries: 0}, fixed(0))
	if d := tr.Failed(Failure{Class: failure.ClassServer}); d.Retry || d.Reason != "max_retries" {
		t.Errorf("attempt 0 under no retries: %+v", d)
	}
	tr = NewTracker(&Policy{Retriable: every(), MaxRetries: 1, Backoff: Backoff{Initial: time.Second, Factor: 2}}, fixed(0))
	if d := tr.Failed(Failure{Class: failure.ClassServer, Attempt: -3}); !d.Retry || d.Wait != time.Second {
		t.Errorf("attempt -3: %+v", d)
	}
}

// A tracker replays identically from the same seed: every decision and
// wait, across items sharing a run's cap and budget.
func TestTrackerSeededReplay(t *testing.T) {
	p, _ := Preset("aws-decorrelated")
	p.GlobalCap = 40
	p.Budget = &Budget{MaxTokens: 10, Ratio: 0.2}
	p.SignatureHalt = 3
	classes := failure.AllClasses()
	run := func(seed uint64) []Decision {
		tr := NewTracker(p, rand.New(rand.NewPCG(seed, 1)))
		events := rand.New(rand.NewPCG(99, 99)) // the same failures each time
		var out []Decision
		for range 300 {
			tr.StartItem()
			for k := 1; ; k++ {
				if events.IntN(3) == 0 {
					tr.Success()
					break
				}
				d := tr.Failed(Failure{Class: classes[events.IntN(len(classes))], Attempt: k, Signature: strconv.Itoa(events.IntN(2))})
				out = append(out, d)
				if !d.Retry {
					break
				}
			}
		}
		return out
	}
	a, b, c := run(1), run(1), run(2)
	if !reflect.DeepEqual(a, b) {
		t.Fatal("the same seed replayed differently")
	}
	retried := 0
	for _, d := range a {
		if d.Retry {
			retried++
		}
	}
	if retried == 0 {
		t.Fatal("nothing was retried; the test tests nothing")
	}
	if reflect.DeepEqual(a, c) {
		t.Error("another seed gave the same waits")
	}
}

// Cascaded reports whether cascade detection has paused the run.
func (t *Tracker) Cascaded() bool { return t.cascaded }

// RunRetries is the number of retries granted in this run so far.
func (t *Tracker) RunRetries() int { return t.runRetries }

// Tokens is the budget's token count (the full bucket before any
// attempt); 0 without a Budget.
func (t *Tracker) Tokens() float64 {
	if t.Policy.Budget == nil {
		return 0
	}
	t.initTokens()
	return t.tokens
}

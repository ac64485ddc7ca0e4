package replay

import (
	"reflect"
	"testing"

	"github.com/orchstat/orchstat/model/episode"
	"github.com/orchstat/orchstat/model/failure"
	"github.com/orchstat/orchstat/rules/retry"
)

// TestPolicyReadsEveryField: each field of retry.Policy is declared once
// in policyReads, and only fields are. A new field fails here until it is
// said which episode kinds read it (or that none does).
func TestPolicyReadsEveryField(t *testing.T) {
	typ := reflect.TypeFor[retry.Policy]()
	listed := map[string]int{}
	for _, r := range policyReads {
		listed[r.field]++
		if _, ok := typ.FieldByName(r.field); !ok {
			t.Errorf("policyReads lists %q, which retry.Policy does not have", r.field)
		}
		for _, k := range r.kinds {
			if k != episode.KindProvider && k != episode.KindL2 && k != episode.KindL3 {
				t.Errorf("policyReads: %s is read by unknown kind %q", r.field, k)
			}
		}
	}
	for i := range typ.NumField() {
		name := typ.Field(i).Name
		switch listed[name] {
		case 0:
			t.Errorf("retry.Policy.%s is in no list of policyReads: say which episode kinds read it", name)
		case 1:
		default:
			t.Errorf("retry.Policy.%s is listed %d times in policyReads", name, listed[name])
		}
	}
}

// TestTouches changes each field of a policy in turn and checks that only
// the kinds declared to read it count as touched.
func TestTouches(t *testing.T) {
	base, err := retry.Preset("orchestrator")
	if err != nil {
		t.Fatal(err)
	}
	change := map[string]func(p *retry.Policy){
		"Name": func(p *retry.Policy) { p.Name = "other" },
		"Classify": func(p *retry.Policy) {
			p.Classify = append(p.Classify, failure.Rule{Class: failure.ClassRateLimit, Contains: []string{"quota"}})
		},
		"Backoff":          func(p *retry.Policy) { p.Backoff.Jitter = retry.JitterFull },
		"MaxRetries":       func(p *retry.Policy) { p.MaxRetries++ },
		"PerOperation":     func(p *retry.Policy) { p.PerOperation = map[string]int{"test": 1} },
		"Retriable":        func(p *retry.Policy) { delete(p.Retriable, failure.ClassRateLimit) },
		"MaxAttempts":      func(p *retry.Policy) { p.MaxAttempts = 9 },
		"SignatureHalt":    func(p *retry.Policy) { p.SignatureHalt = 3 },
		"GlobalCap":        func(p *retry.Policy) { p.GlobalCap = 15 },
		"Budget":           func(p *retry.Policy) { p.Budget = &retry.Budget{MaxTokens: 10, Ratio: 0.1} },
		"Cascade":          func(p *retry.Policy) { p.Cascade = &retry.Cascade{Threshold: 3, Window: 5} },
		"Adaptive":         func(p *retry.Policy) { p.Adaptive = &retry.Adaptive{Window: 10} },
		"TransientOnly":    func(p *retry.Policy) { p.TransientOnly = map[failure.Class]bool{failure.ClassException: true} },
		"MaxIterations":    func(p *retry.Policy) { p.MaxIterations++ },
		"NonImprovingStop": func(p *retry.Policy) { p.NonImprovingStop++ },
		"Escalation":       func(p *retry.Policy) { p.Escalation.MaxEscalations++ },
		"DiagnosisAfter":   func(p *retry.Policy) { p.DiagnosisAfter++ },
	}
	if got := Touches(base.Clone(), base); got[episode.KindProvider] || got[episode.KindL2] || got[episode.KindL3] {
		t.Errorf("the baseline touches itself: %v", got)
	}
	for _, r := range policyReads {
		f, ok := change[r.field]
		if !ok {
			t.Errorf("no change for %s: add one", r.field)
			continue
		}
		p := base.Clone()
		f(p)
		got := Touches(p, base)
		for _, k := range []episode.Kind{episode.KindProvider, episode.KindL2, episode.KindL3} {
			want := false
			for _, rk := range r.kinds {
				want = want || rk == k
			}
			if got[k] != want {
				t.Errorf("changing %s: touches %s = %v, want %v", r.field, k, got[k], want)
			}
		}
	}
}

package retry

import (
	"strings"
	"testing"

	"github.com/orchstat/orchstat/model/failure"
)

func TestQuickApply(t *testing.T) {
	base, err := Preset("orchestrator")
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name    string
		q       Quick
		want    string // the policy's name; "" for none
		wantErr string
		check   func(t *testing.T, p *Policy)
	}{
		{name: "nothing set", q: Quick{MaxRetries: -1}},
		{name: "max retries", q: Quick{MaxRetries: 5}, want: "orchestrator with max-retries 5",
			check: func(t *testing.T, p *Policy) {
				if p.MaxRetries != 5 || p.PerOperation != nil {
					t.Errorf("MaxRetries %d, PerOperation %v", p.MaxRetries, p.PerOperation)
				}
			}},
		{name: "attempts alone lift retries", q: Quick{MaxRetries: -1, MaxAttempts: 9}, want: "orchestrator with max-attempts 9",
			check: func(t *testing.T, p *Policy) {
				if p.MaxAttempts != 9 || p.MaxRetries != max(base.MaxRetries, 9) {
					t.Errorf("MaxAttempts %d, MaxRetries %d", p.MaxAttempts, p.MaxRetries)
				}
			}},
		{name: "no retry of a class", q: Quick{MaxRetries: -1, NoRetry: []string{"rate_limit"}, SignatureHalt: 2},
			want: "orchestrator with signature-halt 2, no retry of rate_limit",
			check: func(t *testing.T, p *Policy) {
				if p.Retriable[failure.ClassRateLimit] || p.SignatureHalt != 2 {
					t.Errorf("Retriable %v, SignatureHalt %d", p.Retriable, p.SignatureHalt)
				}
			}},
		{name: "unknown class", q: Quick{MaxRetries: -1, NoRetry: []string{"rate-limit"}}, wantErr: `--no-retry-class: unknown class "rate-limit"`},
		{name: "unknown backoff", q: Quick{MaxRetries: -1, Backoff: "sideways"}, wantErr: "--backoff: "},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p, err := tt.q.Apply(base)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if tt.want == "" {
				if p != nil {
					t.Fatalf("a policy %q with nothing set", p.Name)
				}
				return
			}
			if p.Name != tt.want {
				t.Errorf("name %q, want %q", p.Name, tt.want)
			}
			if tt.check != nil {
				tt.check(t, p)
			}
			if !base.Retriable[failure.ClassRateLimit] || base.Name != "orchestrator" {
				t.Error("the baseline changed")
			}
		})
	}
}

func TestWithRetries(t *testing.T) {
	base := &Policy{Name: "b", MaxRetries: 3}
	p := base.WithRetries("test", 1)
	if p.PerOperation["test"] != 1 || base.PerOperation != nil || p.MaxRetries != 3 {
		t.Errorf("got %v (base %v)", p.PerOperation, base.PerOperation)
	}
}

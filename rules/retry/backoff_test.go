package retry

import (
	"math/rand/v2"
	"testing"
	"time"
)

// fixed returns the same draw every time.
type fixed float64

func (f fixed) Float64() float64 { return float64(f) }

func TestBackoffDelays(t *testing.T) {
	ms := time.Millisecond
	tests := []struct {
		name string
		b    Backoff
		r    fixed
		want []time.Duration // retries 1, 2, ...
	}{
		{"orchestrator, no draw offset", Orchestrator, 0.5, []time.Duration{1000 * ms, 2000 * ms, 4000 * ms, 8000 * ms, 10000 * ms, 10000 * ms}},
		{"orchestrator, lowest draw", Orchestrator, 0, []time.Duration{900 * ms, 1800 * ms, 3600 * ms, 7200 * ms, 9000 * ms}},
		{"orchestrator, near highest draw", Orchestrator, 0.999, []time.Duration{1099800 * time.Microsecond}},
		{"none", Backoff{Initial: 5 * ms, Max: 2000 * ms, Factor: 2}, 0.3, []time.Duration{5 * ms, 10 * ms, 20 * ms}},
		{"full", Backoff{Initial: 100 * ms, Factor: 2, Jitter: JitterFull}, 0.25, []time.Duration{25 * ms, 50 * ms, 100 * ms}},
		{"equal", Backoff{Initial: 100 * ms, Factor: 2, Jitter: JitterEqual}, 0.5, []time.Duration{75 * ms, 150 * ms}},
		{"constant", Backoff{Initial: 300 * ms}, 0.9, []time.Duration{300 * ms, 300 * ms, 300 * ms}},
		{"zero", Backoff{}, 0.9, []time.Duration{0, 0}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for i, want := range tt.want {
				if got := tt.b.Delay(i+1, tt.r); got != want {
					t.Errorf("retry %d: got %v, want %v", i+1, got, want)
				}
			}
		})
	}
}

// Seeded schedules repeat exactly, and huge attempt numbers neither
// overflow nor exceed the cap plus its spread.
func TestBackoffSeededAndBounded(t *testing.T) {
	a, b := rand.New(rand.NewPCG(1, 2)), rand.New(rand.NewPCG(1, 2))
	for n := 1; n < 200; n++ {
		da, db := Orchestrator.Delay(n, a), Orchestrator.Delay(n, b)
		if da != db {
			t.Fatalf("retry %d: %v vs %v from the same seed", n, da, db)
		}
		if da < 0 || da > 11*time.Second {
			t.Fatalf("retry %d: %v outside [0, 11s]", n, da)
		}
	}
	if d := (Backoff{Initial: time.Hour, Factor: 10}).Delay(1000, fixed(0)); d <= 0 {
		t.Fatalf("uncapped huge retry overflowed to %v", d)
	}
}

func TestDecorrelated(t *testing.T) {
	ms := time.Millisecond
	b := Backoff{Initial: 5 * ms, Max: 2000 * ms, Jitter: JitterDecorrelated}
	// Uniform in [Initial, 3×prev], capped.
	for _, tt := range []struct {
		prev time.Duration
		r    fixed
		want time.Duration
	}{
		{0, 0, 5 * ms}, {0, 0.5, 10 * ms}, {100 * ms, 0.5, 152500 * time.Microsecond}, {1000 * ms, 0.999, 2000 * ms},
	} {
		if got := b.Next(2, tt.prev, tt.r); got != tt.want {
			t.Errorf("Next(prev %v, r %v) = %v, want %v", tt.prev, tt.r, got, tt.want)
		}
	}
	if got := b.Delay(1, fixed(0.5)); got != 10*ms {
		t.Errorf("Delay = %v", got)
	}
}

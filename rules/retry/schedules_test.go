package retry

import (
	"strings"
	"testing"
)

// WithSchedule switches a backoff's jitter or growth and keeps its base,
// cap and factor; every name ScheduleNames lists is one it takes.
func TestWithSchedule(t *testing.T) {
	base := Backoff{Initial: 500_000_000, Max: 8_000_000_000, Factor: 3, Jitter: JitterProportional, Spread: 0.25}
	for _, name := range ScheduleNames() {
		b, err := WithSchedule(name, base)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		switch name {
		case "none":
			if b != (Backoff{}) {
				t.Errorf("none: %+v", b)
			}
		case "constant":
			if b.Factor != 1 || b.Jitter != JitterNone || b.Initial != base.Initial {
				t.Errorf("constant: %+v", b)
			}
		default:
			if b.Initial != base.Initial || b.Max != base.Max || b.Factor != 3 {
				t.Errorf("%s keeps neither base, cap nor factor: %+v", name, b)
			}
		}
	}
	if b, _ := WithSchedule("full", Backoff{}); b.Initial != Orchestrator.Initial || b.Jitter != JitterFull || b.Factor == 0 {
		t.Errorf("full from no wait: %+v", b)
	}
	if _, err := WithSchedule("fulll", base); err == nil || !strings.Contains(err.Error(), `unknown schedule "fulll" (none, constant`) {
		t.Errorf("unknown: %v", err)
	}
}

package alerting

import (
	"fmt"
	"testing"
)

// A rule past its threshold but short of the samples its guard asks for
// says so, so check can show why it is inactive; a healthy rule, one that
// holds, and a condition whose guard cannot be split off say nothing.
func TestShortOfSamples(t *testing.T) {
	for _, tc := range []struct {
		cond       string
		value, den float64
		want       string // "" for not short
	}{
		{"value > threshold && denominator >= 5", 1, 4, "≥ 5"},
		{"value > threshold && denominator >= 5", 1, 5, ""},   // holds
		{"value > threshold && denominator >= 5", 0.2, 4, ""}, // under the threshold
		{"denominator > 10 && value > threshold", 0.9, 10, "> 10"},
		{"value > threshold and denominator >= 20", 0.9, 3, "≥ 20"},
		{"value < threshold && denominator >= 20", 0.1, 19, "≥ 20"},
		{"value > threshold || labels.x == 'y' && denominator >= 5", 1, 1, ""}, // || binds looser: no guard
		{"value >= threshold", 9, 0, ""},
	} {
		t.Run(tc.cond, func(t *testing.T) {
			f, err := Parse("x.yaml", []byte(fmt.Sprintf("rules:\n  - name: r\n    metric: provider_retry_rate\n    threshold: 0.5\n    condition: %s\n", tc.cond)))
			if err != nil {
				t.Fatal(err)
			}
			need, short := f.Rules[0].ShortOfSamples(Sample{Value: f64(tc.value), Numerator: f64(tc.den), Denominator: f64(tc.den)})
			if short != (tc.want != "") || need != tc.want {
				t.Errorf("value %v over %v: ShortOfSamples = %q, %v; want %q", tc.value, tc.den, need, short, tc.want)
			}
		})
	}
}

package render

import "testing"

// A counter's value does not move with the order a float sum was made in,
// and whole counts print whole.
func TestCounterValue(t *testing.T) {
	for _, tt := range []struct {
		v    float64
		want string
	}{
		{0.0167505, "0.0167505"},
		{0.016750499999999998, "0.0167505"},
		{0.016750500000000002, "0.0167505"},
		{12, "12"},
		{1234567890123, "1234567890123"},
		{0, "0"},
		{2.5e-7, "2.5e-07"},
	} {
		if got := counterValue(tt.v); got != tt.want {
			t.Errorf("counterValue(%v) = %q, want %q", tt.v, got, tt.want)
		}
	}
}

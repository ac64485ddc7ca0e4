package names

import (
	"strings"
	"testing"
)

func TestSuggest(t *testing.T) {
	known := []string{"rate_limit", "timeout", "server"}
	for _, tt := range []struct{ got, want string }{
		{"rate_limt", `; did you mean "rate_limit"?`},
		{"sever", `; did you mean "server"?`},
		{"server", ""},     // the name itself
		{"quota", ""},      // nothing within two edits
		{"timeoutxyz", ""}, // three edits
		{"", ""},
	} {
		if got := Suggest(tt.got, known); got != tt.want {
			t.Errorf("Suggest(%q) = %q, want %q", tt.got, got, tt.want)
		}
	}
}

func TestDistance(t *testing.T) {
	for _, tt := range []struct {
		a, b string
		d    int
	}{
		{"", "", 0}, {"a", "", 1}, {"kitten", "sitting", 3}, {"héllo", "hello", 1},
		{strings.Repeat("a", 65), "a", 64},
	} {
		if d := Distance(tt.a, tt.b); d != tt.d {
			t.Errorf("Distance(%q, %q) = %d, want %d", tt.a, tt.b, d, tt.d)
		}
	}
}

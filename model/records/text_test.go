package records

import (
	"fmt"
	"testing"
)

func TestLines(t *testing.T) {
	b := []byte(BOM + "{\"a\":1}\r\n\n  \n{\"b\":2}\n{\"c\":3}")
	var got []string
	for _, l := range Lines(b) {
		got = append(got, fmt.Sprintf("%d@%d:%s", l.No, l.Off, l.B))
	}
	want := `[1@3:{"a":1} 4@16:{"b":2} 5@24:{"c":3}]`
	if fmt.Sprint(got) != want {
		t.Errorf("Lines = %v, want %s", got, want)
	}
}

func TestExcerpt(t *testing.T) {
	for _, tt := range []struct {
		s    string
		n    int
		want string
	}{
		{"  short  ", 10, "short"},
		{"héllo", 2, "h"}, // é is two bytes: not split
		{"héllo", 3, "hé"},
	} {
		if got := Excerpt(tt.s, tt.n); got != tt.want {
			t.Errorf("Excerpt(%q, %d) = %q, want %q", tt.s, tt.n, got, tt.want)
		}
	}
}

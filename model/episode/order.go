package episode

import (
	"slices"
	"strings"
	"time"
)

// Order is episodes' order: by Time, then ID, then Kind (a tie that
// cannot happen between kinds' ID shapes).
func Order(a, b Episode) int {
	if c := a.Time.Compare(b.Time); c != 0 {
		return c
	}
	if c := strings.Compare(a.ID, b.ID); c != 0 {
		return c
	}
	return strings.Compare(string(a.Kind), string(b.Kind))
}

// MergeInto merges b into a, both in Order, in place from the back: b is
// short and a can hold millions of episodes, so no second copy of a is
// made when its capacity allows.
func MergeInto(a, b []Episode) []Episode {
	i, j := len(a)-1, len(b)-1
	a = slices.Grow(a, len(b))[:len(a)+len(b)]
	for k := len(a) - 1; j >= 0; k-- {
		if i >= 0 && Order(a[i], b[j]) > 0 {
			a[k], i = a[i], i-1
		} else {
			a[k], j = b[j], j-1
		}
	}
	return a
}

// later is the later of two times.
func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

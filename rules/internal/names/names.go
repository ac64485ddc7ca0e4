// Package names suggests the known name closest to a misspelt one, for
// messages such as `unknown class "rate_limt"; did you mean "rate_limit"?`.
// It is plain Go, so the retry engine and the configuration readers can
// share it without linking a YAML parser.
package names

import "fmt"

// Suggest is "; did you mean "x"?" for the known name closest to got
// (within two edits), or "".
func Suggest(got string, known []string) string {
	best := Closest(got, known)
	if best == "" {
		return ""
	}
	return fmt.Sprintf("; did you mean %q?", best)
}

// Closest is the known name within two edits of got, the nearest, or ""
// when none is (or got is known).
func Closest(got string, known []string) string {
	best, bestD := "", 3
	for _, k := range known {
		if d := Distance(got, k); d < bestD {
			best, bestD = k, d
		}
	}
	if best == got {
		return ""
	}
	return best
}

// Distance is the Levenshtein distance between a and b in runes, for
// names: past 64 runes either way it is 64, so a hostile name costs
// little.
func Distance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	if len(ra) > 64 || len(rb) > 64 {
		return 64
	}
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(rb)]
}

package failure

import (
	"crypto/sha256"
	"encoding/hex"
	"regexp"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Signature is a failure's signature: the sha256, in hex, of its parts
// normalised so that the same failure matches across attempts (auto-retry
// halts on identical signatures). Each part is normalised, then the parts
// are joined with NUL bytes, so ("a b", "c") and ("a", "b c") differ.
// Normalising, in order:
//
//  1. lower case;
//  2. ISO-8601 timestamps become "<ts>", UUIDs "<uuid>", 0x addresses and
//     hex runs of 7 or more characters holding both digits and letters
//     (commit hashes, request ids) "<hex>";
//  3. every remaining run of digits becomes "#": line and column numbers
//     in paths (src/a.ts:42 → src/a.ts:#), durations, counts, ports, PIDs;
//  4. control characters count as white space, and runs of white space
//     become one space, trimmed at both ends.
//
// So failures that differ only in numbers share a signature: that is the
// point (the same test failing at another line after an unrelated edit is
// the same failure), and also the cost ("expected 3, got 4" and "expected
// 5, got 6" match).
func Signature(parts ...string) string {
	h := sha256.New()
	for i, p := range parts {
		if i > 0 {
			h.Write([]byte{0})
		}
		h.Write([]byte(NormalizeFailure(p)))
	}
	return hex.EncodeToString(h.Sum(nil))
}

var (
	tsRe   = regexp.MustCompile(`\d{4}-\d{2}-\d{2}[t ]\d{2}:\d{2}(?::\d{2}(?:[.,]\d+)?)?(?:z|[+-]\d{2}:?\d{2})?`)
	uuidRe = regexp.MustCompile(`\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b`)
	addrRe = regexp.MustCompile(`\b0x[0-9a-f]+\b`)
	hexRe  = regexp.MustCompile(`\b[0-9a-f]{7,}\b`)
	numRe  = regexp.MustCompile(`[0-9]+`)
)

// NormalizeFailure is the text Signature hashes for one part.
func NormalizeFailure(s string) string {
	if !utf8.ValidString(s) {
		s = strings.ToValidUTF8(s, "\uFFFD")
	}
	s = strings.ToLower(s)
	s = tsRe.ReplaceAllString(s, "<ts>")
	s = uuidRe.ReplaceAllString(s, "<uuid>")
	s = addrRe.ReplaceAllString(s, "<hex>")
	s = hexRe.ReplaceAllStringFunc(s, func(m string) string {
		if strings.ContainsAny(m, "0123456789") && strings.ContainsAny(m, "abcdef") {
			return "<hex>"
		}
		return m
	})
	s = numRe.ReplaceAllString(s, "#")
	var b strings.Builder
	b.Grow(len(s))
	space := false
	for _, r := range s {
		if unicode.IsSpace(r) || unicode.IsControl(r) {
			space = true
			continue
		}
		if space && b.Len() > 0 {
			b.WriteByte(' ')
		}
		space = false
		b.WriteRune(r)
	}
	return b.String()
}

package rows

import (
	"strconv"
	"strings"
	"unicode/utf8"
)

// DuckDB's VARCHAR holds UTF-8 only: a string that is not (a run folder
// named with a stray byte, a file name in Latin-1) failed the whole
// transaction, and so every later ingest. Such a string is stored in an
// escaped form, which is also how it is shown: the prefix, then the
// bytes, with each byte that is not part of valid UTF-8 written as \xHH
// and each backslash as \\. Stored paths otherwise begin with "/" or "<",
// so the prefix cannot be mistaken for a real one, and every string that
// was valid is stored as it always was.
const BytesPrefix = "bytes:"

// StoreString is s as it can be stored. A valid string that happens to
// begin with the prefix is escaped too, so reading back is never unsure.
func StoreString(s string) string {
	if utf8.ValidString(s) && !strings.HasPrefix(s, BytesPrefix) {
		return s
	}
	return Escaped(s)
}

// Escaped is s in the escaped form whether it needs it or not: how a
// folder's path begins in the stored path of a file in it whose name
// needed escaping, though the folder's own stored path is plain.
func Escaped(s string) string {
	var b strings.Builder
	b.WriteString(BytesPrefix)
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n <= 1:
			b.WriteString(`\x`)
			b.WriteString(strconv.FormatUint(uint64(s[i])>>4, 16))
			b.WriteString(strconv.FormatUint(uint64(s[i])&0xf, 16))
		case r == '\\':
			b.WriteString(`\\`)
		default:
			b.WriteString(s[i : i+n])
		}
		i += n
	}
	return b.String()
}

// ReadString reverses StoreString.
func ReadString(stored string) string {
	rest, ok := strings.CutPrefix(stored, BytesPrefix)
	if !ok {
		return stored
	}
	var b strings.Builder
	for i := 0; i < len(rest); i++ {
		if rest[i] != '\\' || i+1 >= len(rest) {
			b.WriteByte(rest[i])
			continue
		}
		if rest[i+1] == '\\' {
			b.WriteByte('\\')
			i++
			continue
		}
		if rest[i+1] == 'x' && i+3 < len(rest) {
			if v, err := strconv.ParseUint(rest[i+2:i+4], 16, 8); err == nil {
				b.WriteByte(byte(v))
				i += 3
				continue
			}
		}
		b.WriteByte(rest[i])
	}
	return b.String()
}

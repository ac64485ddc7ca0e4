package trace

import (
	"bytes"
	"encoding/binary"
	"errors"
)

// A hand-written validator is used instead of encoding/json because ingest
// must validate every byte of ~650 MB of traces yet only decode five
// top-level keys: skipping a value while checking its grammar is several
// times faster than json.Valid followed by json.Unmarshal. It accepts exactly
// the documents json.Valid accepts (FuzzScanMatchesValid checks this).

const maxDepth = 10000 // encoding/json's nesting limit

var errSyntax = errors.New("invalid JSON")

// errTooDeep is JSON nested past maxDepth: valid, perhaps, but refused.
var errTooDeep = errors.New("nested too deep")

type scanner struct {
	b     []byte
	i     int
	depth int
	// trusted is set for bytes a validating scan already accepted
	// (ParsePayload): strings are then skipped to their closing quote
	// without checking their escapes or characters again, which for the
	// kilobyte prompts and outputs of provider requests was a second
	// byte-by-byte pass over every payload.
	trusted bool
}

// strSafe[c] is true for bytes that can appear unescaped inside a string
// without ending it or needing a check.
var strSafe = func() (t [256]bool) {
	for c := 0x20; c < 256; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

func (s *scanner) ws() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

// Eight bytes at a time: stopper(x) is non-zero when one of the bytes of x
// is a quote, a backslash or a control character (below 0x20), the bytes
// that end a string's plain run. Each term is the classic "has a zero
// byte" (or "has a byte less than n") test, exact as to whether such a
// byte exists; the byte loop then finds which one.
const (
	lsb = 0x0101010101010101
	msb = 0x8080808080808080
)

func stopper(x uint64) uint64 {
	q := x ^ (lsb * '"')
	bs := x ^ (lsb * '\\')
	return ((q-lsb)&^q | (bs-lsb)&^bs | (x-lsb*0x20)&^x) & msb
}

// str scans a string starting at the opening quote and returns its contents
// (without quotes) and whether it contains escapes.
func (s *scanner) str() (raw []byte, escaped bool, err error) {
	if s.trusted {
		return s.trustedStr()
	}
	s.i++ // opening quote
	start := s.i
	b := s.b
	for {
		i := s.i
		// A byte at a time, this loop was the validating parser's
		// largest cost on long strings (prompts, outputs, diffs).
		for i+8 <= len(b) && stopper(binary.LittleEndian.Uint64(b[i:])) == 0 {
			i += 8
		}
		for i < len(b) && strSafe[b[i]] {
			i++
		}
		s.i = i
		if i >= len(b) {
			return nil, false, errSyntax
		}
		switch c := b[i]; {
		case c == '"':
			s.i++
			return b[start:i], escaped, nil
		case c == '\\':
			escaped = true
			if i+1 >= len(b) {
				return nil, false, errSyntax
			}
			switch b[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				s.i = i + 2
			case 'u':
				if i+6 > len(b) || !isHex(b[i+2]) || !isHex(b[i+3]) || !isHex(b[i+4]) || !isHex(b[i+5]) {
					return nil, false, errSyntax
				}
				s.i = i + 6
			default:
				return nil, false, errSyntax
			}
		default: // control character
			return nil, false, errSyntax
		}
	}
}

// trustedStr is str over validated bytes: the closing quote is the first
// quote not escaped, that is, not after an odd run of backslashes.
func (s *scanner) trustedStr() (raw []byte, escaped bool, err error) {
	start := s.i + 1
	rest := s.b[start:]
	j := 0
	for {
		k := bytes.IndexByte(rest[j:], '"')
		if k < 0 {
			return nil, false, errSyntax
		}
		j += k
		n := 0
		for n < j && rest[j-1-n] == '\\' {
			n++
		}
		if n%2 == 0 {
			break
		}
		j++
	}
	raw = rest[:j]
	s.i = start + j + 1
	return raw, bytes.IndexByte(raw, '\\') >= 0, nil
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

func (s *scanner) number() error {
	b := s.b
	i := s.i
	if i < len(b) && b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case i < len(b) && '1' <= b[i] && b[i] <= '9':
		for i < len(b) && isDigit(b[i]) {
			i++
		}
	default:
		return errSyntax
	}
	if i < len(b) && b[i] == '.' {
		i++
		if i >= len(b) || !isDigit(b[i]) {
			return errSyntax
		}
		for i < len(b) && isDigit(b[i]) {
			i++
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		if i >= len(b) || !isDigit(b[i]) {
			return errSyntax
		}
		for i < len(b) && isDigit(b[i]) {
			i++
		}
	}
	s.i = i
	return nil
}

func (s *scanner) literal(lit string) error {
	if len(s.b)-s.i < len(lit) || string(s.b[s.i:s.i+len(lit)]) != lit {
		return errSyntax
	}
	s.i += len(lit)
	return nil
}

// value skips one JSON value, validating it. Leading whitespace must already
// be consumed.
func (s *scanner) value() error {
	if s.i >= len(s.b) {
		return errSyntax
	}
	switch c := s.b[s.i]; {
	case c == '"':
		_, _, err := s.str()
		return err
	case c == '{':
		return s.object(nil)
	case c == '[':
		return s.array()
	case c == 't':
		return s.literal("true")
	case c == 'f':
		return s.literal("false")
	case c == 'n':
		return s.literal("null")
	case c == '-' || isDigit(c):
		return s.number()
	}
	return errSyntax
}

func (s *scanner) array() error {
	s.depth++
	if s.depth > maxDepth {
		return errTooDeep
	}
	s.i++ // [
	s.ws()
	if s.i < len(s.b) && s.b[s.i] == ']' {
		s.i++
		s.depth--
		return nil
	}
	for {
		s.ws()
		if err := s.value(); err != nil {
			return err
		}
		s.ws()
		if s.i >= len(s.b) {
			return errSyntax
		}
		switch s.b[s.i] {
		case ',':
			s.i++
		case ']':
			s.i++
			s.depth--
			return nil
		default:
			return errSyntax
		}
	}
}

// object skips an object. When member is non-nil it is called for every
// key with the value's start offset, after the value has been skipped, so
// the caller can slice s.b[start:s.i].
func (s *scanner) object(member func(key []byte, escaped bool, start int)) error {
	s.depth++
	if s.depth > maxDepth {
		return errTooDeep
	}
	s.i++ // {
	s.ws()
	if s.i < len(s.b) && s.b[s.i] == '}' {
		s.i++
		s.depth--
		return nil
	}
	for {
		s.ws()
		if s.i >= len(s.b) || s.b[s.i] != '"' {
			return errSyntax
		}
		key, esc, err := s.str()
		if err != nil {
			return err
		}
		s.ws()
		if s.i >= len(s.b) || s.b[s.i] != ':' {
			return errSyntax
		}
		s.i++
		s.ws()
		start := s.i
		if err := s.value(); err != nil {
			return err
		}
		if member != nil {
			member(key, esc, start)
		}
		s.ws()
		if s.i >= len(s.b) {
			return errSyntax
		}
		switch s.b[s.i] {
		case ',':
			s.i++
		case '}':
			s.i++
			s.depth--
			return nil
		default:
			return errSyntax
		}
	}
}

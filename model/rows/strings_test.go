package rows

import (
	"testing"
	"unicode/utf8"
)

func TestStoreStringRoundTrips(t *testing.T) {
	for _, s := range []string{"/a/b", "", "/runs/zz\xff", "/r/a\\b\xfe\xff/c", "<stdin:a\xffb>", "/ok/é/ü", "\xff\\x41", "/r/\xc3", "bytes:x"} {
		stored := StoreString(s)
		if !utf8.ValidString(stored) {
			t.Errorf("%q is stored as %q, not UTF-8", s, stored)
		}
		if utf8.ValidString(s) && s != "bytes:x" && stored != s {
			t.Errorf("valid %q is stored changed, as %q", s, stored)
		}
		if back := ReadString(stored); back != s {
			t.Errorf("%q: stored %q, read back %q", s, stored, back)
		}
	}
}

func FuzzStoreString(f *testing.F) {
	f.Add("/runs/zz\xff")
	f.Add("/r/a\\b")
	f.Fuzz(func(t *testing.T, s string) {
		stored := StoreString(s)
		if !utf8.ValidString(stored) || ReadString(stored) != s {
			t.Fatalf("%q: stored %q, read back %q", s, stored, ReadString(stored))
		}
	})
}

package ingest

import "testing"

func TestParseBytes(t *testing.T) {
	for in, want := range map[string]int64{"64MB": 64e6, "1GiB": 1 << 30, "512 MiB": 512 << 20, "1000": 1000, "2.5GB": 25e8} {
		if got, err := parseBytes(in); err != nil || got != want {
			t.Errorf("%q: %d, %v; want %d", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "lots", "-5MB", "0"} {
		if _, err := parseBytes(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

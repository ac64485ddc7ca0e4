package main

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// TestTimesAreUTCInEveryZone: the store's times are UTC without a zone,
// and DuckDB's ICU compares them with a TIMESTAMPTZ (now(), a literal with
// a zone, or a time.Time, which duckdb-go binds as one) in the session's
// zone, which is the machine's unless orchstat sets it. A query must select
// the same runs wherever the machine is.
func TestTimesAreUTCInEveryZone(t *testing.T) {
	endToEnd(t, "runs orchstat against a real store")
	t.Parallel()
	db := bundledStore(t)
	// Seven runs start from 08:55 to 23:46 UTC on 2025-11-04. Read as
	// Kolkata's or Los Angeles's time, three of them fall outside.
	const q = `SELECT count(*) FROM runs WHERE started_at >= TIMESTAMPTZ '2025-11-04 08:00:00Z'
		AND started_at < TIMESTAMPTZ '2025-11-05 00:00:00Z'`
	for _, tz := range []string{"UTC", "Asia/Kolkata", "America/Los_Angeles"} {
		cmd := exec.Command(binary, "--db", db, "sql", "-f", "csv", q)
		cmd.Env = append(os.Environ(), "TZ="+tz)
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("sql with TZ=%s: %v", tz, err)
		}
		if got := strings.TrimSpace(string(out)); !strings.HasSuffix(got, "\n7") {
			t.Errorf("with TZ=%s: %q, want 7 runs", tz, got)
		}
	}
}

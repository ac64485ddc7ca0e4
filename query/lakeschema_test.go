package query

import "testing"

func TestRunnerIDs(t *testing.T) {
	for _, c := range []struct{ host, runner string }{
		{"ci-linux-7", "ci-linux-7"},
		{"build box.local", "build-box.local"},
		{"_hidden", "hidden"},
		{"ümlaut", "mlaut"},
		{"", "runner"},
		{"...", "runner"},
		{string(make([]byte, 80)), "runner"},
	} {
		got := RunnerFromHost(c.host)
		if got != c.runner {
			t.Errorf("RunnerFromHost(%q) = %q, want %q", c.host, got, c.runner)
		}
		if err := CheckRunner(got); err != nil {
			t.Errorf("RunnerFromHost(%q) = %q, which CheckRunner refuses: %v", c.host, got, err)
		}
	}
	for _, bad := range []string{"", "-x", ".x", "a/b", "a b", "a:b", string(make([]byte, 65))} {
		if CheckRunner(bad) == nil {
			t.Errorf("CheckRunner(%q) accepted it", bad)
		}
	}
}

// Partition values are escaped as Hive and DuckDB read them back; the
// keys' other parts are the lake's own.
func TestLakeKey(t *testing.T) {
	for _, c := range []struct{ system, key string }{
		{"orchestrator", "calls/system=orchestrator/day=2026-11-24/runner=r1/part-r1.parquet"},
		{"claude-code", "calls/system=claude-code/day=2026-11-24/runner=r1/part-r1.parquet"},
		{"a/b c=d%", "calls/system=a%2Fb%20c%3Dd%25/day=2026-11-24/runner=r1/part-r1.parquet"},
	} {
		if got := lakeKey("calls", c.system, "2026-11-24", "r1"); got != c.key {
			t.Errorf("lakeKey(%q) = %q, want %q", c.system, got, c.key)
		}
	}
}

package query

import (
	"context"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/orchstat/orchstat/rules/retry"
)

func TestExecInvocations(t *testing.T) {
	ctx := context.Background()
	db := filepath.Join(t.TempDir(), "orchstat.duckdb")
	st, err := Open(ctx, db, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()

	if got, err := recentExecOutcomes(ctx, st.conn, "go test ./...", "/src", 5); err != nil || len(got) != 0 {
		t.Fatalf("empty store: %v, %v", got, err)
	}
	t0 := time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)
	c := retry.Cascade{Threshold: 3, Window: 5}
	// pass, fail, fail, pass, fail: the third failure is a cascade (3 of
	// the last 5), and one more pass keeps it (still 3 of the last 5).
	outcomes := []bool{true, false, false, true, false, true}
	var last []bool
	var cascades []bool
	for i, ok := range outcomes {
		inv := ExecInvocation{StartedAt: t0.Add(time.Duration(i) * time.Minute), FinishedAt: t0.Add(time.Duration(i)*time.Minute + time.Second),
			RunID: "r", Op: "test", Command: "go test ./...", Dir: "/src", Success: ok, Attempts: 3, Reason: "max_retries"}
		last, err = st.RecordExecInvocation(ctx, inv, c.Window)
		if err != nil {
			t.Fatal(err)
		}
		cascades = append(cascades, c.Detect(last))
	}
	if want := []bool{false, true, true, false, true, false}; !slices.Equal(last, want[1:]) {
		t.Errorf("last 5 failed = %v, want %v", last, want[1:])
	}
	if want := []bool{false, false, false, false, true, true}; !slices.Equal(cascades, want) {
		t.Errorf("cascade after each = %v, want %v", cascades, want)
	}
	all, err := recentExecOutcomes(ctx, st.conn, "go test ./...", "/src", 0)
	if err != nil || len(all) != len(outcomes) {
		t.Fatalf("every invocation: %v, %v", all, err)
	}

	// Invocations finishing at the same instant count in the order they
	// were recorded; one that finished earlier but was recorded later (a
	// slow store lock) counts where it finished.
	same := t0.Add(time.Hour)
	for _, ok := range []bool{false, true, false} {
		if _, err := st.RecordExecInvocation(ctx, ExecInvocation{StartedAt: same, FinishedAt: same, Success: ok}, 0); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := st.RecordExecInvocation(ctx, ExecInvocation{StartedAt: t0, FinishedAt: same.Add(-time.Minute), Success: true}, 0); err != nil {
		t.Fatal(err)
	}
	got, err := recentExecOutcomes(ctx, st.conn, "", "", 4)
	if want := []bool{false, true, false, true}; err != nil || !slices.Equal(got, want) {
		t.Errorf("ties: %v, %v; want %v", got, err, want)
	}

	var n int
	var cmd string
	if err := st.conn.QueryRowContext(ctx, `SELECT count(*), max(command) FROM exec_invocations`).Scan(&n, &cmd); err != nil || n != 10 || cmd != "go test ./..." {
		t.Errorf("stored %d rows, command %q, %v", n, cmd, err)
	}
}

// The row survives closing and reopening: it is checkpointed, not only
// in the log.
func TestExecInvocationDurable(t *testing.T) {
	ctx := context.Background()
	db := filepath.Join(t.TempDir(), "orchstat.duckdb")
	st, err := Open(ctx, db, Options{})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	if _, err := st.RecordExecInvocation(ctx, ExecInvocation{StartedAt: now, FinishedAt: now, Op: "build", Success: false}, 5); err != nil {
		t.Fatal(err)
	}
	st.Close()
	st, err = Open(ctx, db, Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	got, err := recentExecOutcomes(ctx, st.conn, "", "", 5)
	if err != nil || !slices.Equal(got, []bool{true}) {
		t.Fatalf("after reopening: %v, %v", got, err)
	}
}

// A cascade is a command failing again and again where it runs: three
// unrelated failures made every later exec a cascade (issue 11). Each
// command and directory keeps its own window, and a reset forgets one
// command's, or every command's.
func TestExecCascadePerCommandAndDir(t *testing.T) {
	ctx := context.Background()
	st, err := Open(ctx, filepath.Join(t.TempDir(), "orchstat.duckdb"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	t0 := time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)
	record := func(i int, cmd, dir string, ok bool) []bool {
		t.Helper()
		at := t0.Add(time.Duration(i) * time.Minute)
		got, err := st.RecordExecInvocation(ctx, ExecInvocation{StartedAt: at, FinishedAt: at, Command: cmd, Dir: dir, Success: ok}, 5)
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	c := retry.Cascade{Threshold: 3, Window: 5}
	for i, cmd := range []string{"make", "go test ./...", "false"} {
		record(i, cmd, "/a", false)
	}
	if got := record(3, "true", "/a", false); c.Detect(got) || !slices.Equal(got, []bool{true}) {
		t.Errorf("a fourth unrelated command sees %v", got)
	}
	for i := range 2 {
		record(10+i, "make", "/b", false)
	}
	if got := record(20, "make", "/a", false); c.Detect(got) || len(got) != 2 {
		t.Errorf("make in /a after two failures in /b sees %v", got)
	}
	if got := record(21, "make", "/b", false); !c.Detect(got) || len(got) != 3 {
		t.Errorf("the third failure of make in /b sees %v", got)
	}

	if n, err := st.ResetExecCascade(ctx, "make", "/b"); err != nil || n != 3 {
		t.Fatalf("reset make in /b: %d, %v", n, err)
	}
	if got, err := recentExecOutcomes(ctx, st.conn, "make", "/b", 0); err != nil || len(got) != 0 {
		t.Errorf("after the reset: %v, %v", got, err)
	}
	if got, _ := recentExecOutcomes(ctx, st.conn, "make", "/a", 0); len(got) != 2 {
		t.Errorf("the reset of /b touched /a: %v", got)
	}
	if n, err := st.ResetExecCascade(ctx, "", ""); err != nil || n != 5 {
		t.Errorf("reset all: %d, %v", n, err)
	}
}

// A store whose exec_invocations predates its dir column gets one when it
// is opened, and its old rows count for no command.
func TestExecInvocationsOldStore(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "orchstat.duckdb")
	old, err := Open(ctx, path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{`DROP TABLE exec_invocations`,
		`CREATE TABLE exec_invocations (started_at TIMESTAMP, finished_at TIMESTAMP, run_id VARCHAR, op VARCHAR, command VARCHAR, success BOOLEAN, attempts INTEGER, reason VARCHAR)`,
		`INSERT INTO exec_invocations VALUES (now(), now(), 'r', 'build', 'make', false, 1, 'max_retries')`,
		// As an older orchstat's schema left it.
		`UPDATE meta SET value = 'older' WHERE key = 'schema_hash'`} {
		if _, err := old.conn.ExecContext(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	old.Close()
	st, err := Open(ctx, path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	now := time.Now()
	got, err := st.RecordExecInvocation(ctx, ExecInvocation{StartedAt: now, FinishedAt: now, Command: "make", Dir: "/a"}, 5)
	if err != nil || !slices.Equal(got, []bool{true}) {
		t.Errorf("%v, %v", got, err)
	}
}

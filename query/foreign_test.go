package query

import (
	"bufio"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// TestMain lets the test binary act as a foreign DuckDB client (one that
// does not take orchstat's lock) holding a database with a live WAL.
func TestMain(m *testing.M) {
	if path := os.Getenv("ORCHSTAT_TEST_FOREIGN"); path != "" {
		c, err := NewConnector(path)
		if err != nil {
			fmt.Println("error:", err)
			os.Exit(1)
		}
		db := sql.OpenDB(c)
		// Committed but not checkpointed: it lives in the WAL.
		if _, err := db.Exec(`SET checkpoint_threshold = '1GB'; CREATE TABLE mine AS SELECT 42 AS x`); err != nil {
			fmt.Println("error:", err)
			os.Exit(1)
		}
		fmt.Println("ready")
		io.Copy(io.Discard, os.Stdin)
		db.Close()
		os.Exit(0)
	}
	code := m.Run()
	for _, f := range AfterTests {
		f()
	}
	os.Exit(code)
}

// startForeign makes a store at path, then starts the foreign client on it
// and waits until its table is committed. Closing stdin lets it close
// cleanly; killing the process leaves its log behind.
func startForeign(t *testing.T, path string) (*exec.Cmd, io.WriteCloser) {
	t.Helper()
	st, err := Open(context.Background(), path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	st.Close()
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), "ORCHSTAT_TEST_FOREIGN="+path)
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	if line, _ := bufio.NewReader(stdout).ReadString('\n'); line != "ready\n" {
		t.Fatalf("foreign client: %q", line)
	}
	return cmd, stdin
}

func TestLiveForeignLogIsNotSetAside(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a second process; go test ./... runs it (skipped under -short)")
	}
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "shared.duckdb")
	cmd, stdin := startForeign(t, path)
	defer func() { stdin.Close(); cmd.Wait() }()
	if _, err := os.Stat(path + ".wal"); err != nil {
		t.Fatalf("the foreign client has no WAL to protect: %v", err)
	}

	_, err := Open(ctx, path, Options{LockTimeout: 300 * time.Millisecond})
	var le *LockError
	if !errors.As(err, &le) {
		t.Fatalf("got %v, want a LockError naming the foreign process", err)
	}
	if _, err := os.Stat(path + ".wal"); err != nil {
		t.Fatal("the foreign client's live WAL was set aside")
	}

	// Once it has closed cleanly, its table is there.
	stdin.Close()
	cmd.Wait()
	st, err := Open(ctx, path, Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	var x int
	if err := st.conn.QueryRowContext(ctx, `SELECT x FROM mine`).Scan(&x); err != nil || x != 42 {
		t.Fatalf("foreign data lost: %v %v", x, err)
	}
}

// A DuckDB client killed before checkpointing leaves its committed work in
// the log. That log is not orchstat's (no write mark), so DuckDB replays it.
func TestForeignCrashLogIsReplayed(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a second process; go test ./... runs it (skipped under -short)")
	}
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "shared.duckdb")
	cmd, _ := startForeign(t, path)
	cmd.Process.Kill()
	cmd.Wait()

	st, err := Open(ctx, path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if st.Recovered {
		t.Error("a foreign log was treated as orchstat's")
	}
	var x int
	if err := st.conn.QueryRowContext(ctx, `SELECT x FROM mine`).Scan(&x); err != nil || x != 42 {
		t.Fatalf("the foreign client's committed table is gone: %v %v", x, err)
	}
}

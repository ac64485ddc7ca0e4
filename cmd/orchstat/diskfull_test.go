package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"

	"github.com/orchstat/orchstat/model/disk"
)

// smallDisk mounts a tmpfs of size bytes for the test. Mounting needs
// root; CI runs as root and sets ORCHSTAT_REQUIRE_TMPFS=1, so the tests
// that need it cannot skip there.
func smallDisk(t *testing.T, size int64) string {
	t.Helper()
	dir := t.TempDir()
	err := syscall.Mount("tmpfs", dir, "tmpfs", 0, fmt.Sprintf("size=%d", size))
	if err != nil {
		if os.Getenv("ORCHSTAT_REQUIRE_TMPFS") == "1" {
			t.Fatalf("mounting a tmpfs: %v", err)
		}
		t.Skipf("mounting a tmpfs needs root: %v", err)
	}
	t.Cleanup(func() { syscall.Unmount(dir, syscall.MNT_DETACH) })
	return dir
}

// fill leaves about free bytes free on the file system holding dir.
func fill(t *testing.T, dir string, free int64) string {
	t.Helper()
	have, ok := disk.FreeBytes(dir)
	if !ok {
		t.Fatal("cannot read free space")
	}
	name := filepath.Join(dir, "filler")
	f, err := os.Create(name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	buf := make([]byte, 64<<10)
	for n := have - free; n > 0; n -= int64(len(buf)) {
		if _, err := f.Write(buf[:min(int64(len(buf)), n)]); err != nil {
			if errors.Is(err, syscall.ENOSPC) {
				// A process under test wrote to the disk since its free
				// space was read: it is full sooner, which is what the
				// filler is for.
				return name
			}
			t.Fatal(err)
		}
	}
	return name
}

func listDir(t *testing.T, dir string) []string {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range es {
		names = append(names, e.Name())
	}
	sort.Strings(names)
	return names
}

// TestDiskFull: ingesting into a store on a full disk fails with the file
// system's own words and the store's directory, exit status 1, no crash,
// nothing left behind, and the store as it was; once there is room, the
// next ingest is exact. DuckDB 1.1.2 aborted the process instead
// ("terminate called without an active exception", exit 2) and left its
// spill file behind.
func TestDiskFull(t *testing.T) {
	endToEnd(t, "fills a real disk")
	disk := smallDisk(t, 48<<20)
	c := newCorpus(t, 60, 300)
	db := filepath.Join(disk, "store", "orchstat.duckdb")
	if err := os.Mkdir(filepath.Dir(db), 0o755); err != nil { // --db makes no directory
		t.Fatal(err)
	}
	runs := listDir(t, c.dir)
	ingestRun := func(run string) (int, string) {
		cmd := runOrchstat("ingest", "--quiet", "--db", db, filepath.Join(c.dir, run))
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		cmd.Run()
		return cmd.ProcessState.ExitCode(), stderr.String()
	}
	if code, msg := ingestRun(runs[0]); code != 0 {
		t.Fatalf("first ingest: exit %d: %s", code, msg)
	}
	filler := fill(t, disk, 1536<<10)
	failed := false
	for _, run := range runs[1:] {
		before := listDir(t, filepath.Dir(db))
		code, msg := ingestRun(run)
		if code == 0 {
			continue
		}
		failed = true
		if code != exitError || !strings.Contains(msg, "no space left on device: "+filepath.Dir(db)) ||
			strings.Contains(msg, "goroutine") || strings.Contains(msg, "internal error") {
			t.Fatalf("ingest on a full disk: exit %d, stderr:\n%s", code, msg)
		}
		if after := listDir(t, filepath.Dir(db)); strings.Join(after, " ") != strings.Join(before, " ") {
			t.Fatalf("a failed ingest left files behind: %v, before %v", after, before)
		}
		break
	}
	if !failed {
		t.Fatal("every run fitted: the disk never filled")
	}
	os.Remove(filler)
	cmd := runOrchstat("ingest", "--quiet", "--db", db, c.dir)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("ingest after freeing space: %v\n%s", err, out)
	}
	c.verify(t, db)
}

// TestCrashOnAFullDiskSaysSo: should DuckDB still die while the disk is
// full, the supervisor says what happened in the file system's words, and
// removes the spill files the dead process left.
func TestCrashOnAFullDiskSaysSo(t *testing.T) {
	endToEnd(t, "starts the binary on a full disk")
	disk := smallDisk(t, 16<<20)
	db := filepath.Join(disk, "orchstat.duckdb")
	cmd, child, stdin, stderr := startWaiting(t, db, "ingest")
	defer stdin.Close()
	os.MkdirAll(db+".tmp", 0o755)
	os.WriteFile(filepath.Join(db+".tmp", "duckdb_temp_storage-0.tmp"), make([]byte, 1<<20), 0o644)
	fill(t, disk, 1<<20)
	if err := syscall.Kill(child, syscall.SIGABRT); err != nil {
		t.Fatal(err)
	}
	if got := exitCode(t, cmd); got != exitError {
		t.Fatalf("exit %d, want %d; stderr:\n%s", got, exitError, stderr)
	}
	if !strings.Contains(stderr.String(), "no space left on device: "+disk) {
		t.Fatalf("the full disk is not named:\n%s", stderr)
	}
	if _, err := os.Stat(db + ".tmp"); !os.IsNotExist(err) {
		t.Fatalf("the dead process's spill files are still there (%v)", err)
	}
}

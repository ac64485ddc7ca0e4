package main

import (
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// Many tests need a store of the bundled runs to read and ingest nothing
// new into. Making a store and ingesting ../../testdata/runs costs about
// half a CPU-second; copying a finished store costs a few milliseconds.
// So each is ingested once per test binary, for each clock a test ingests
// at (ingest records its time), and copied per test. The store keeps the
// runs' absolute paths, which are the same for every test, so a copy is
// the store the test would have made. Tests of ingest itself, its output
// or its progress still ingest.

var bundled = struct {
	sync.Mutex
	dir    string
	stores map[int64]string
}{stores: map[int64]string{}}

// bundledStore is a new store of ../../testdata/runs, ingested at fixedNow.
func bundledStore(t *testing.T) string {
	t.Helper()
	return bundledStoreAt(t, fixedNow)
}

// bundledStoreAt is a new store of ../../testdata/runs ingested at now,
// at <t.TempDir()>/orchstat.duckdb.
func bundledStoreAt(t *testing.T, now time.Time) string {
	t.Helper()
	db := filepath.Join(t.TempDir(), "orchstat.duckdb")
	copyStore(t, bundledTemplate(t, now), db)
	return db
}

// bundledTemplate is the store ingested at now, made on first use.
func bundledTemplate(t *testing.T, now time.Time) string {
	t.Helper()
	bundled.Lock()
	defer bundled.Unlock()
	if p, ok := bundled.stores[now.UnixNano()]; ok {
		return p
	}
	if bundled.dir == "" {
		dir, err := os.MkdirTemp("", "orchstat-bundled")
		if err != nil {
			t.Fatal(err)
		}
		bundled.dir = dir
		afterTests = append(afterTests, func() { os.RemoveAll(dir) })
	}
	runs, err := filepath.Abs("../../testdata/runs")
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(bundled.dir, now.Format("20060102T150405.000000000")+".duckdb")
	if code, _, stderr := runCLIAt(t, now, "", "--db", p, "ingest", "-q", runs); code != 0 {
		t.Fatalf("ingest of the bundled runs: exit %d: %s", code, stderr)
	}
	bundled.stores[now.UnixNano()] = p
	return p
}

// copyStore copies a closed store's file; a closed store has no log.
func copyStore(t *testing.T, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(from + ".wal"); err == nil {
		t.Fatalf("%s has a log: it was not closed", from)
	}
	if err := os.WriteFile(to, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// afterTests run once every test has: TestMain calls them.
var afterTests []func()

// The lake tests whose runners' files do not change start from the same
// stores: each runner's files ingested into its own store and, a then b,
// into a union store. They are ingested once per test binary, against
// runs folders no test writes to, and copied per test.
var lakeStores = struct {
	sync.Mutex
	a, b  *lakeRunner
	union string
}{}

// ingestedLakeRunners is newLakeRunners with each runner's store and the
// union store already ingested; the runs folders are shared and must not
// be written to.
func ingestedLakeRunners(t *testing.T) (a, b *lakeRunner, union string) {
	t.Helper()
	lakeStores.Lock()
	if lakeStores.a == nil {
		dir, err := os.MkdirTemp("", "orchstat-lake")
		if err != nil {
			t.Fatal(err)
		}
		afterTests = append(afterTests, func() { os.RemoveAll(dir) })
		ta, tb := lakeRunnersIn(t, dir)
		u := filepath.Join(dir, "union.duckdb")
		for _, r := range []*lakeRunner{ta, tb} {
			r.ingestInto(t, r.db)
			r.ingestInto(t, u)
		}
		lakeStores.a, lakeStores.b, lakeStores.union = ta, tb, u
	}
	ta, tb, tu := *lakeStores.a, *lakeStores.b, lakeStores.union
	lakeStores.Unlock()
	dir := t.TempDir()
	a, b, union = &ta, &tb, filepath.Join(dir, "union.duckdb")
	for _, r := range []*lakeRunner{a, b} {
		from := r.db
		r.db = filepath.Join(dir, filepath.Base(from))
		copyStore(t, from, r.db)
	}
	copyStore(t, tu, union)
	return a, b, union
}

// endToEnd skips, under go test -short, a test that runs orchstat's
// commands against real DuckDB stores (an ingest, a report, a check, a
// lake, real processes): each costs a store's opening and checkpoints, and
// together they are most of the suite's time. The fast lane keeps this
// package's unit tests (flags, help, docs); go test ./... runs these. See
// "Tests" in docs/CONTRIBUTING.md.
func endToEnd(t *testing.T, what string) {
	t.Helper()
	if testing.Short() {
		t.Skipf("end-to-end: %s; go test ./... runs it (skipped under -short)", what)
	}
}

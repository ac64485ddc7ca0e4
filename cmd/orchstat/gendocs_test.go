package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"sort"
	"testing"
)

// generatedDocs lists the files gen-docs owns under dir, relative to it.
func generatedDocs(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	for _, pattern := range []string{"cli/*.md", "cli/man/*.1", "schema.md"} {
		m, err := filepath.Glob(filepath.Join(dir, pattern))
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range m {
			rel, _ := filepath.Rel(dir, f)
			out = append(out, filepath.ToSlash(rel))
		}
	}
	sort.Strings(out)
	return out
}

// The CLI reference and the schema page are generated from the code; this
// fails when the checked-in copies in docs/ no longer match it.
func TestGenDocsUpToDate(t *testing.T) {
	t.Setenv("ORCHSTAT_DB", "/somewhere/else.duckdb") // must not leak into the docs
	fresh := t.TempDir()
	if err := genDocs(context.Background(), fresh); err != nil {
		t.Fatal(err)
	}
	const docs = "../../docs"
	want, have := generatedDocs(t, fresh), generatedDocs(t, docs)
	if len(want) < 10 {
		t.Fatalf("gen-docs wrote only %v", want)
	}
	haveSet := map[string]bool{}
	for _, f := range have {
		haveSet[f] = true
	}
	for _, f := range want {
		got, err := os.ReadFile(filepath.Join(docs, f))
		if err != nil {
			t.Errorf("docs/%s is missing; run %s", f, genDocsCommand)
			continue
		}
		delete(haveSet, f)
		exp, err := os.ReadFile(filepath.Join(fresh, f))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, exp) {
			t.Errorf("docs/%s is stale; run %s", f, genDocsCommand)
		}
	}
	for f := range haveSet {
		t.Errorf("docs/%s documents nothing gen-docs writes any more; run %s", f, genDocsCommand)
	}
}

// Generating twice gives the same bytes: no date, no machine-dependent
// default.
func TestGenDocsDeterministic(t *testing.T) {
	a, b := t.TempDir(), t.TempDir()
	for _, d := range []string{a, b} {
		if err := genDocs(context.Background(), d); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range generatedDocs(t, a) {
		x, _ := os.ReadFile(filepath.Join(a, f))
		y, _ := os.ReadFile(filepath.Join(b, f))
		if !bytes.Equal(x, y) {
			t.Errorf("%s differs between two runs of gen-docs", f)
		}
	}
}

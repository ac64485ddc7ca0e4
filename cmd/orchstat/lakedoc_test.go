package main

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/orchstat/orchstat/query"
)

// lakeDocPlaceholder is the lake docs/lake.md's statements read; the test
// puts its own lake in its place.
const lakeDocPlaceholder = "/data/lake"

// lakeDocDuckDBMark is the first line of the docs/lake.md blocks that
// claim to have been run on DuckDB. Blocks for other engines, or for
// DuckDB over S3, start otherwise and are not run.
const lakeDocDuckDBMark = "-- DuckDB"

// docs/lake.md says its DuckDB statements were run, on a lake of the
// bundled traces: this runs them, so the claim stays true. They run on a
// plain DuckDB in memory, as a user's DuckDB CLI would: not through
// orchstat sql, which opens the store with external access switched off
// and so cannot read the lake's files (the doc says so; checked below).
func TestLakeDocDuckDBQueries(t *testing.T) {
	endToEnd(t, "runs the lake doc's DuckDB queries on a real lake")
	t.Parallel()
	b, err := os.ReadFile("../../docs/lake.md")
	if err != nil {
		t.Fatal(err)
	}
	blocks := duckDBBlocks(string(b))
	// The doc promises at least these: retry rate by day and runner, runs
	// by runner and status, and a join to files.
	if len(blocks) < 3 {
		t.Fatalf("docs/lake.md has %d sql blocks starting %q; want at least 3", len(blocks), lakeDocDuckDBMark)
	}
	db, lake := bundledStore(t), filepath.Join(t.TempDir(), "lake")
	if code, stdout, stderr := runCLI(t, "", "--db", db, "export", "--no-ingest", "--lake", lake, "--runner", "ci-1"); code != 0 {
		t.Fatalf("export: exit %d\n%s%s", code, stdout, stderr)
	}

	connector, err := query.NewConnector("")
	if err != nil {
		t.Fatal(err)
	}
	duck := sql.OpenDB(connector)
	defer duck.Close()
	for i, block := range blocks {
		q := strings.ReplaceAll(block, lakeDocPlaceholder, lake)
		n, err := countRows(duck, q)
		switch {
		case err != nil:
			t.Errorf("docs/lake.md's DuckDB block %d fails: %v\n%s", i+1, err, block)
		case n == 0:
			t.Errorf("docs/lake.md's DuckDB block %d returns no rows on a lake of testdata/runs:\n%s", i+1, block)
		}
	}

	// The doc tells users to take these to the DuckDB CLI, as orchstat sql
	// cannot read files outside the store.
	q := strings.ReplaceAll(blocks[0], lakeDocPlaceholder, lake)
	if code, stdout, _ := runCLI(t, "", "--db", db, "sql", q); code == 0 {
		t.Errorf("orchstat sql read the lake, which docs/lake.md says it cannot:\n%s", stdout)
	}
}

// duckDBBlocks returns the ```sql blocks of doc whose first line is
// lakeDocDuckDBMark, without their fences.
func duckDBBlocks(doc string) []string {
	var out []string
	rest := doc
	for {
		i := strings.Index(rest, "```sql\n")
		if i < 0 {
			return out
		}
		rest = rest[i+len("```sql\n"):]
		j := strings.Index(rest, "\n```")
		if j < 0 {
			return out
		}
		block := rest[:j+1]
		rest = rest[j+len("\n```"):]
		first, _, _ := strings.Cut(block, "\n")
		if strings.TrimSpace(first) == lakeDocDuckDBMark {
			out = append(out, block)
		}
	}
}

// countRows runs q, which may be several statements (the last returns the
// rows), and counts the rows of its result.
func countRows(db *sql.DB, q string) (int, error) {
	rows, err := db.QueryContext(context.Background(), q)
	if err != nil {
		return 0, err
	}
	defer rows.Close()
	n := 0
	for rows.Next() {
		n++
	}
	if err := rows.Err(); err != nil {
		return n, fmt.Errorf("reading the result: %w", err)
	}
	return n, nil
}

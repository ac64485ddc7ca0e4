// Command readjson is the baseline for the ingest benchmark: it loads every
// trace.jsonl under a runs directory into a NEW DuckDB database file with
// one CREATE TABLE ... AS SELECT * FROM read_json(...), on the same
// duckdb-go (and so the same DuckDB, 1.5.6) that orchstat uses.
//
// It does only what DuckDB does for free: no summary.json, no validation,
// no quarantine, no incremental bookkeeping, no derived tables. That is the
// point of a baseline: orchstat ingest is compared against the cheapest way
// to get the same events into DuckDB.
//
//	-mode auto     DuckDB's auto-detecting reader (types sampled from the data)
//	-mode columns  the five top-level fields given explicitly, payload as JSON
//	-mode objects  the first step of a design where DuckDB does ingest's
//	               parsing (issue 12): read_ndjson_objects splits every
//	               file into lines and validates each, and the envelope is
//	               extracted in SQL; no line numbers, no typed tables
//
// It prints the statement, the row count and the elapsed time, and exits
// non-zero if the load failed or loaded fewer rows than -expect.
package main

import (
	"context"
	"database/sql"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	_ "github.com/duckdb/duckdb-go/v2"
)

// explicitColumns is the event envelope of a trace line.
const explicitColumns = `{type: 'VARCHAR', schemaVersion: 'INTEGER', timestamp: 'VARCHAR', runId: 'VARCHAR', payload: 'JSON'}`

func main() {
	var (
		dir     = flag.String("dir", "", "runs directory holding <runId>/trace.jsonl (required)")
		dbPath  = flag.String("db", "", "database file to create; must not exist unless -force (required)")
		force   = flag.Bool("force", false, "remove an existing -db file (and its .wal) first")
		mode    = flag.String("mode", "auto", "auto: auto-detected columns; columns: explicit envelope columns with payload as JSON; objects: read_ndjson_objects, envelope extracted in SQL")
		extra   = flag.String("opts", "", "extra read_json options appended verbatim, e.g. \"union_by_name=true\"")
		threads = flag.Int("threads", 0, "DuckDB threads (0 = DuckDB's default, the number of cores)")
		expect  = flag.Int64("expect", 0, "fail unless exactly this many rows were loaded (0 = don't check)")
		quiet   = flag.Bool("quiet", false, "print only the one result line")
	)
	flag.Parse()
	if *dir == "" || *dbPath == "" {
		fmt.Fprintln(os.Stderr, "readjson: -dir and -db are required")
		flag.Usage()
		os.Exit(2)
	}
	stmt, err := buildSQL(*dir, *mode, *extra)
	if err != nil {
		fmt.Fprintln(os.Stderr, "readjson:", err)
		os.Exit(2)
	}
	if err := prepareDB(*dbPath, *force); err != nil {
		fmt.Fprintln(os.Stderr, "readjson:", err)
		os.Exit(1)
	}
	if !*quiet {
		fmt.Println(stmt)
	}
	start := time.Now()
	rows, cols, err := load(context.Background(), *dbPath, stmt, *threads)
	elapsed := time.Since(start)
	if err != nil {
		fmt.Fprintf(os.Stderr, "readjson: mode %s failed after %.2fs: %v\n", *mode, elapsed.Seconds(), err)
		os.Exit(1)
	}
	fmt.Printf("readjson mode=%s rows=%d elapsed=%.3fs\n", *mode, rows, elapsed.Seconds())
	if !*quiet {
		fmt.Println("columns:")
		for _, c := range cols {
			fmt.Println("  " + c)
		}
	}
	if *expect > 0 && rows != *expect {
		fmt.Fprintf(os.Stderr, "readjson: loaded %d rows, expected %d\n", rows, *expect)
		os.Exit(1)
	}
}

// buildSQL returns the CREATE TABLE statement for a mode.
func buildSQL(dir, mode, extra string) (string, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	glob := sqlString(filepath.Join(abs, "*", "trace.jsonl"))
	// Options both modes need on this corpus:
	//  - format: every file is newline-delimited JSON;
	//  - maximum_object_size: the default (16 MB) is a per-line limit; the
	//    generator's chunked-output lines are far below it, but real traces
	//    can carry big tool outputs, so allow 64 MB like orchstat's reader.
	opts := []string{"format='newline_delimited'", "maximum_object_size=67108864"}
	switch mode {
	case "auto":
		// Plain auto-detection. DuckDB samples sample_size (default 20480)
		// rows from the first files and infers payload as a STRUCT of the
		// keys it saw, or JSON when the payloads are too heterogeneous.
	case "columns":
		opts = append(opts, "columns="+explicitColumns)
	case "objects":
		// read_ndjson_objects takes no format option: it is the format.
		opts = []string{"filename=true", "maximum_object_size=67108864"}
		if e := strings.TrimSpace(extra); e != "" {
			opts = append(opts, e)
		}
		return fmt.Sprintf(`CREATE TABLE events AS SELECT filename AS file, json->>'$.type' AS type,
		  json->>'$.schemaVersion' AS schema_version, json->>'$.timestamp' AS timestamp,
		  json->>'$.runId' AS run_id, json->'$.payload' AS payload
		FROM read_ndjson_objects(%s, %s)`, glob, strings.Join(opts, ", ")), nil
	default:
		return "", fmt.Errorf("unknown -mode %q (want auto, columns or objects)", mode)
	}
	if strings.TrimSpace(extra) != "" {
		opts = append(opts, extra)
	}
	return fmt.Sprintf("CREATE TABLE events AS SELECT * FROM read_json(%s, %s)", glob, strings.Join(opts, ", ")), nil
}

func sqlString(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

func prepareDB(path string, force bool) error {
	for _, p := range []string{path, path + ".wal"} {
		_, err := os.Stat(p)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return err
		}
		if !force {
			return fmt.Errorf("%s exists; the baseline loads into a new database (use -force to remove it)", p)
		}
		if err := os.Remove(p); err != nil {
			return err
		}
	}
	return nil
}

// load runs the statement and returns the loaded row count and the table's
// column descriptions. The database is closed (and so checkpointed) before
// it returns, so the elapsed time includes getting the data to disk, as an
// orchstat ingest's does.
func load(ctx context.Context, path, stmt string, threads int) (int64, []string, error) {
	db, err := sql.Open("duckdb", path)
	if err != nil {
		return 0, nil, err
	}
	closed := false
	defer func() {
		if !closed {
			db.Close()
		}
	}()
	if threads > 0 {
		if _, err := db.ExecContext(ctx, fmt.Sprintf("SET threads = %d", threads)); err != nil {
			return 0, nil, err
		}
	}
	if _, err := db.ExecContext(ctx, stmt); err != nil {
		return 0, nil, err
	}
	var n int64
	if err := db.QueryRowContext(ctx, "SELECT count(*) FROM events").Scan(&n); err != nil {
		return 0, nil, err
	}
	var cols []string
	rs, err := db.QueryContext(ctx, "SELECT column_name, data_type FROM information_schema.columns WHERE table_name = 'events' ORDER BY ordinal_position")
	if err != nil {
		return 0, nil, err
	}
	for rs.Next() {
		var name, typ string
		if err := rs.Scan(&name, &typ); err != nil {
			rs.Close()
			return 0, nil, err
		}
		if len(typ) > 120 {
			typ = typ[:117] + "..."
		}
		cols = append(cols, name+" "+typ)
	}
	rs.Close()
	if err := rs.Err(); err != nil {
		return 0, nil, err
	}
	if _, err := db.ExecContext(ctx, "CHECKPOINT"); err != nil {
		return 0, nil, err
	}
	closed = true
	if err := db.Close(); err != nil {
		return 0, nil, err
	}
	return n, cols, nil
}

package query

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
)

// LakeVersion is the version of the lake's layout and table schemas. It
// changes only when a column is renamed, retyped or removed: adding a
// column keeps it, as readers take files' columns by name and read a
// column an older file lacks as NULL.
const LakeVersion = 1

// A lake's tables are the store's file tables and files, each partitioned
// by system, day and runner:
//
//	<table>/system=<system>/day=<YYYY-MM-DD>/runner=<runner>/part-<runner>.parquet
//
// A runner owns its partitions' files and replaces each one whole; no
// file is shared, and none is ever deleted.

// LakeFiles is the lake's files table: the store's files view, less what
// only ingest needs.
var LakeFiles = Table{"files", "one row per source file the runner ingested", cols(
	"file_id INTEGER, path VARCHAR, kind VARCHAR, run_dir VARCHAR, size BIGINT, mtime TIMESTAMP, byte_offset BIGINT, lines BIGINT, " +
		"events BIGINT, quarantined BIGINT, ingested_at TIMESTAMP, state_seq BIGINT")}

// LakeTables lists the lake's tables, files first: export publishes them
// in this order, so a reader that joins on files never meets rows of a
// file it cannot name.
func LakeTables() []Table { return append([]Table{LakeFiles}, FileTables...) }

// lakeColumns are the columns a lake table's files hold: the table's, less
// system, which is a partition key.
func lakeColumns(t Table) []Column {
	var out []Column
	for _, c := range t.Columns {
		if c.Name != "system" {
			out = append(out, c)
		}
	}
	return out
}

func hasSystem(t Table) bool {
	for _, c := range t.Columns {
		if c.Name == "system" {
			return true
		}
	}
	return false
}

// OrchestratorSystem is the system partition of rows that name none: the
// orchestrator's traces, summaries and verification reports.
const OrchestratorSystem = "orchestrator"

// runnerRe is what a runner id may be: it names directories and files on
// every engine's filesystem and object store, unescaped.
var runnerRe = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`)

// CheckRunner explains what is wrong with a runner id, if anything.
func CheckRunner(id string) error {
	if !runnerRe.MatchString(id) {
		return fmt.Errorf("runner id %q: use 1 to 64 letters, digits, '.', '_' or '-', starting with a letter or digit", id)
	}
	return nil
}

// RunnerFromHost makes a runner id of a host name.
func RunnerFromHost(host string) string {
	b := []byte(host)
	for i, c := range b {
		if !plainByte(c) {
			b[i] = '-'
		}
	}
	s := strings.TrimLeft(string(b), "._-")
	if len(s) > 64 {
		s = s[:64]
	}
	if s == "" {
		return "runner"
	}
	return s
}

// plainByte is a byte every engine's paths take as it is: a letter, a
// digit, '.', '_' or '-'.
func plainByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-'
}

// hiveValue escapes a partition value the way Hive and DuckDB read it
// back: every byte but letters, digits and ._- as %XX.
func hiveValue(v string) string {
	var b strings.Builder
	for i := 0; i < len(v); i++ {
		if c := v[i]; plainByte(c) {
			b.WriteByte(c)
		} else {
			fmt.Fprintf(&b, "%%%02X", v[i])
		}
	}
	return b.String()
}

// lakeKey is where a runner's file of one partition lives.
func lakeKey(table, system, day, runner string) string {
	return fmt.Sprintf("%s/system=%s/day=%s/runner=%s/part-%s.parquet", table, hiveValue(system), day, runner, runner)
}

// LakeSchemaJSON describes the lake's tables for _orchstat/lake.json, so
// a person or a program meeting the lake learns its version and columns.
func LakeSchemaJSON() []byte {
	type col struct {
		Name string `json:"name"`
		Type string `json:"type"`
	}
	type table struct {
		Name      string   `json:"name"`
		Holds     string   `json:"holds"`
		Columns   []col    `json:"columns"`
		Partition []string `json:"partitioned_by"`
	}
	doc := struct {
		Version int     `json:"orchstat_lake_version"`
		Layout  string  `json:"layout"`
		Tables  []table `json:"tables"`
	}{Version: LakeVersion, Layout: "<table>/system=<system>/day=<YYYY-MM-DD>/runner=<runner>/part-<runner>.parquet"}
	for _, t := range LakeTables() {
		tb := table{Name: t.Name, Holds: t.Comment, Partition: []string{"system VARCHAR", "day DATE", "runner VARCHAR"}}
		for _, c := range lakeColumns(t) {
			tb.Columns = append(tb.Columns, col{c.Name, c.Type})
		}
		doc.Tables = append(doc.Tables, tb)
	}
	b, _ := json.MarshalIndent(doc, "", "  ")
	return append(b, '\n')
}

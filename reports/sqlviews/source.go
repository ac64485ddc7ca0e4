package sqlviews

import (
	"fmt"
	"path"
	"strings"
)

// Table is a lake table as the views read it: its name and its files'
// columns with their DuckDB types (query.LakeTables, handed in by the
// command, as this package stays on the pure floor).
type Table struct {
	Name    string
	Columns []Column
	// Absent marks a table the lake holds no file of (the command knows
	// it of a local lake only): DuckDB's read_parquet and ClickHouse's
	// file() fail on a glob that matches nothing, so those dialects make
	// it an empty view of its columns, and the output says so.
	Absent bool
}

// Column is one column of a lake table.
type Column struct{ Name, Type string }

// Partition keys are in every lake file's path, not in the file.
var partitionKeys = []Column{{"system", "VARCHAR"}, {"day", "DATE"}, {"runner", "VARCHAR"}}

// Location is where the lake is: an absolute local folder, or an S3
// bucket and prefix.
type Location struct {
	Dir            string
	Bucket, Prefix string
}

// ParseLocation reads --lake's value: s3://BUCKET[/PREFIX], or a folder,
// which must be absolute, as the engines read it from wherever they run.
func ParseLocation(s string) (Location, error) {
	if rest, ok := strings.CutPrefix(s, "s3://"); ok {
		bucket, prefix, _ := strings.Cut(rest, "/")
		if bucket == "" {
			return Location{}, fmt.Errorf("lake %q: no bucket after s3://", s)
		}
		return Location{Bucket: bucket, Prefix: strings.Trim(prefix, "/")}, nil
	}
	if !path.IsAbs(s) {
		return Location{}, fmt.Errorf("lake %q: give an absolute folder or s3://BUCKET/PREFIX, as the engine reads it from where it runs", s)
	}
	if strings.ContainsAny(s, "'\\") {
		return Location{}, fmt.Errorf("lake %q: a quote or backslash in the path would have to be escaped differently by each engine; use a path without one", s)
	}
	return Location{Dir: path.Clean(s)}, nil
}

// under is the location of a table's folder with scheme, the S3 scheme
// an engine names (s3, s3a) and the local one (file://).
func (l Location) under(table, s3Scheme, fileScheme string) string {
	if l.Bucket == "" {
		return fileScheme + l.Dir + "/" + table
	}
	p := l.Bucket
	if l.Prefix != "" {
		p += "/" + l.Prefix
	}
	return s3Scheme + "://" + p + "/" + table
}

// glob is every file of a table: one level per partition key.
const glob = "/*/*/*/*.parquet"

func viewName(name string) string { return "orchstat_" + name }

func duckDBSource(d Dialect, t Table, loc Location) string {
	if t.Absent {
		return emptySource(d, t)
	}
	return fmt.Sprintf(`CREATE OR REPLACE VIEW %s AS
SELECT * FROM read_parquet('%s',
  hive_partitioning = true, union_by_name = true,
  hive_types = {'system': VARCHAR, 'day': DATE, 'runner': VARCHAR});`, viewName(t.Name), loc.under(t.Name, "s3", "")+glob)
}

// columnList declares a table's columns and then its partition keys, as
// Trino's and Spark's partitioned tables want them, in the dialect's types.
func columnList(d Dialect, t Table) string {
	var b []string
	for _, c := range append(append([]Column{}, t.Columns...), partitionKeys...) {
		b = append(b, "  "+d.quote(c.Name)+" "+d.typeOf(c.Type))
	}
	return strings.Join(b, ",\n")
}

// TrinoSchema is the schema the Trino views are made in: the Hive
// procedure that registers partitions names its schema, so the output
// assumes this one (USE <catalog>.orchstat).
const TrinoSchema = "orchstat"

func trinoSource(d Dialect, t Table, loc Location) string {
	return fmt.Sprintf(`CREATE TABLE IF NOT EXISTS %[1]s (
%[2]s)
WITH (external_location = '%[3]s', format = 'PARQUET',
      partitioned_by = ARRAY['system', 'day', 'runner']);
CALL system.sync_partition_metadata(schema_name => '%[4]s', table_name => '%[1]s', mode => 'FULL');`,
		viewName(t.Name), columnList(d, t), loc.under(t.Name, "s3", "file://"), TrinoSchema)
}

func sparkSource(d Dialect, t Table, loc Location) string {
	return fmt.Sprintf(`CREATE TABLE IF NOT EXISTS %[1]s (
%[2]s)
USING parquet
PARTITIONED BY (system, day, runner)
LOCATION '%[3]s';
MSCK REPAIR TABLE %[1]s;`, viewName(t.Name), columnList(d, t), loc.under(t.Name, "s3a", "file:"))
}

// ClickHouse reads the files where they are on every query, through the
// file() or s3() table function; use_hive_partitioning makes the path's
// keys columns.
func clickHouseSource(d Dialect, t Table, loc Location) string {
	if t.Absent {
		return emptySource(d, t)
	}
	from := fmt.Sprintf("file('%s', 'Parquet')", loc.under(t.Name, "", "")+glob)
	if loc.Bucket != "" {
		p := loc.Bucket + ".s3.amazonaws.com"
		if loc.Prefix != "" {
			p += "/" + loc.Prefix
		}
		from = fmt.Sprintf("s3('https://%s/%s%s', 'Parquet')", p, t.Name, glob)
	}
	return fmt.Sprintf(`CREATE OR REPLACE VIEW %s AS
SELECT *, system, day, runner FROM %s
SETTINGS use_hive_partitioning = 1;`, viewName(t.Name), from)
}

// emptySource is the view of a table the lake holds no file of: its
// columns and no row, until sql-views is run again.
func emptySource(d Dialect, t Table) string {
	var cols []string
	for _, c := range append(append([]Column{}, t.Columns...), partitionKeys...) {
		cols = append(cols, "CAST(NULL AS "+d.typeOf(c.Type)+") AS "+d.quote(c.Name))
	}
	return fmt.Sprintf(`-- The lake holds no file of %[1]s yet: an empty view of its columns; run sql-views again once it has one.
CREATE OR REPLACE VIEW %[2]s AS
SELECT %[3]s
WHERE 1 = 0;`, t.Name, viewName(t.Name), strings.Join(cols, ",\n  "))
}

package sqlviews

import (
	"fmt"
	"strings"
)

// Dialect is what differs between the engines the views are written for:
// how a lake table is made readable, how an identifier is quoted, how a
// conditional count or sum and a lagged value are written, and the type a
// metric's value is cast to. Everything else the views use (SELECT
// DISTINCT, GROUP BY, IN over a subquery, row_number() and max() over a
// window, CASE, coalesce, substr, trim) is written once, in SQL all four
// engines take.
type Dialect struct {
	Name string
	// CheckedAgainst says what the dialect's output was run or parsed
	// with; it heads the output, so whoever runs it knows how far to
	// trust it.
	CheckedAgainst string
	quote          func(string) string
	countIf        func(cond string) string
	sum            func(expr string) string
	sumIf          func(expr, cond string) string
	lag            func(expr, window string) string
	double         string // the type a metric's value is cast to
	// joinNulls ends a query whose outer joins must give NULL, not the
	// type's default, where a row has no match.
	joinNulls string
	source    func(d Dialect, t Table, loc Location) string
	typeOf    func(duckType string) string
}

// Dialects are the engines sql-views writes for, by name.
var Dialects = map[string]Dialect{
	"duckdb":     duckDB,
	"trino":      trino,
	"spark":      spark,
	"clickhouse": clickHouse,
}

// DialectNames lists Dialects' names in the order the docs give them.
var DialectNames = []string{"duckdb", "trino", "spark", "clickhouse"}

// Lookup is the dialect named name, or an error naming the known ones.
func Lookup(name string) (Dialect, error) {
	d, ok := Dialects[strings.ToLower(name)]
	if !ok {
		return Dialect{}, fmt.Errorf("unknown dialect %q: use %s", name, strings.Join(DialectNames, ", "))
	}
	return d, nil
}

func doubleQuote(s string) string { return `"` + strings.ReplaceAll(s, `"`, `""`) + `"` }
func backQuote(s string) string   { return "`" + strings.ReplaceAll(s, "`", "``") + "`" }

// filterCount is the SQL standard's conditional count, which DuckDB takes.
func filterCount(cond string) string { return "count(*) FILTER (WHERE " + cond + ")" }

// caseCount is the conditional count every engine takes: Spark SQL has
// FILTER only from 3.2 on, and count_if from 3.0.
func caseCount(cond string) string { return "sum(CASE WHEN " + cond + " THEN 1 ELSE 0 END)" }

func plainSum(expr string) string { return "sum(" + expr + ")" }

// caseSum sums expr over the rows where cond holds; rows where it does
// not are NULL, which sum skips, so no matching row gives NULL, as
// sum(…) FILTER (…) does.
func caseSum(expr, cond string) string { return "sum(CASE WHEN " + cond + " THEN " + expr + " END)" }

func sqlLag(expr, window string) string { return "lag(" + expr + ") OVER (" + window + ")" }

var duckDB = Dialect{
	Name:           "duckdb",
	CheckedAgainst: "run on DuckDB 1.5.6 over a lake of testdata/ (and the real samples of testdata-external) exported by two or three runners, every metric and split equal to report --lake (TestSQLViewsDuckDB)",
	quote:          doubleQuote,
	countIf:        filterCount,
	sum:            plainSum,
	sumIf:          func(expr, cond string) string { return "sum(" + expr + ") FILTER (WHERE " + cond + ")" },
	lag:            sqlLag,
	double:         "DOUBLE",
	typeOf:         func(t string) string { return t },
	source:         duckDBSource,
}

var trino = Dialect{
	Name:           "trino",
	CheckedAgainst: "nothing yet: no Trino engine or parser was available where it was written",
	quote:          doubleQuote,
	countIf:        func(cond string) string { return "count_if(" + cond + ")" },
	sum:            plainSum,
	sumIf:          caseSum,
	lag:            sqlLag,
	double:         "double",
	typeOf:         trinoType,
	source:         trinoSource,
}

var spark = Dialect{
	Name:           "spark",
	CheckedAgainst: "nothing yet: no Spark engine or parser was available where it was written",
	quote:          backQuote,
	countIf:        caseCount,
	sum:            plainSum,
	sumIf:          caseSum,
	lag:            sqlLag,
	double:         "DOUBLE",
	typeOf:         sparkType,
	source:         sparkSource,
}

// ClickHouse's sum of no row is 0, not NULL (unless the setting
// aggregate_functions_null_for_empty is on), so sums use the OrNull
// combinator to keep "nothing recorded" apart from 0; lag is lagInFrame,
// whose frame must be the whole partition to look back.
var clickHouse = Dialect{
	Name:           "clickhouse",
	CheckedAgainst: "nothing yet: Debian bookworm's ClickHouse (18.16) predates Parquet, window functions and use_hive_partitioning, and no newer one was available",
	quote:          backQuote,
	countIf:        func(cond string) string { return "countIf(" + cond + ")" },
	sum:            func(expr string) string { return "sumOrNull(" + expr + ")" },
	sumIf:          func(expr, cond string) string { return "sumOrNullIf(" + expr + ", " + cond + ")" },
	lag: func(expr, window string) string {
		return "lagInFrame(" + expr + ") OVER (" + window + " ROWS BETWEEN UNBOUNDED PRECEDING AND UNBOUNDED FOLLOWING)"
	},
	double:    "Nullable(Float64)",
	joinNulls: "\nSETTINGS join_use_nulls = 1",
	typeOf:    clickHouseType,
	source:    clickHouseSource,
}

func trinoType(t string) string {
	switch t {
	case "VARCHAR":
		return "varchar"
	case "TIMESTAMP":
		return "timestamp"
	}
	return strings.ToLower(t)
}

func sparkType(t string) string {
	switch t {
	case "VARCHAR":
		return "STRING"
	case "INTEGER":
		return "INT"
	case "TIMESTAMP":
		return "TIMESTAMP_NTZ"
	}
	return t
}

// clickHouseType is every column as Nullable, as ClickHouse reads
// Parquet's optional columns.
func clickHouseType(t string) string {
	ch := map[string]string{"INTEGER": "Int32", "BIGINT": "Int64", "DOUBLE": "Float64", "BOOLEAN": "Bool",
		"VARCHAR": "String", "TIMESTAMP": "DateTime64(6)", "DATE": "Date"}[t]
	if ch == "" {
		ch = t
	}
	return "Nullable(" + ch + ")"
}

package query

import (
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// docs/lake.md is written by hand, for people setting up engines over the
// lake, who copy its column lists into CREATE TABLE statements: a column
// missing there, or named with the wrong type, breaks their tables. This
// keeps every lake table's section in step with lakeColumns, and the
// version and Parquet details with what export writes.
func TestLakeDocNamesEveryColumn(t *testing.T) {
	t.Parallel()
	doc := readLakeDoc(t)
	sections := lakeDocSections(doc)
	partitionKeys := []Column{{"system", "VARCHAR"}, {"day", "DATE"}, {"runner", "VARCHAR"}}
	var missing []string
	known := map[string]bool{}
	for _, tb := range LakeTables() {
		known[tb.Name] = true
		section, ok := sections[tb.Name]
		if !ok {
			missing = append(missing, fmt.Sprintf("table %s: no section (### `%s`)", tb.Name, tb.Name))
			continue
		}
		want := append(lakeColumns(tb), partitionKeys...)
		for _, c := range want {
			if !columnNamed(section, c) {
				missing = append(missing, fmt.Sprintf("table %s: column `%s` %s", tb.Name, c.Name, c.Type))
			}
		}
		// A column the doc lists but the files do not hold is as wrong
		// as one it leaves out: a user's CREATE TABLE would read NULLs.
		have := map[string]bool{}
		for _, c := range want {
			have[c.Name] = true
		}
		for _, m := range docColumnRe.FindAllStringSubmatch(section, -1) {
			if !have[m[1]] {
				missing = append(missing, fmt.Sprintf("table %s: the doc names column `%s` %s, which the lake's files do not hold", tb.Name, m[1], m[2]))
			}
		}
	}
	for name := range sections {
		if !known[name] {
			missing = append(missing, fmt.Sprintf("section ### `%s` names no lake table", name))
		}
	}
	if len(missing) > 0 {
		t.Errorf("docs/lake.md's schema is out of step with LakeTables():\n  %s", strings.Join(missing, "\n  "))
	}
}

// The version, and the Parquet details a user's engine settings depend
// on, are stated as export writes them.
func TestLakeDocStatesVersionAndParquetDetails(t *testing.T) {
	t.Parallel()
	doc := readLakeDoc(t)
	if want := fmt.Sprintf("The lake's version is **%d**", LakeVersion); !strings.Contains(doc, want) {
		t.Errorf("docs/lake.md does not state the lake's version: want %q", want)
	}
	opts := (&export{runner: "r"}).parquetOptions(LakeFiles)
	m := regexp.MustCompile(`ROW_GROUP_SIZE (\d+)`).FindStringSubmatch(opts)
	if m == nil {
		t.Fatalf("no ROW_GROUP_SIZE in the export's Parquet options %q", opts)
	}
	n, _ := strconv.Atoi(m[1])
	if want := fmt.Sprintf("row groups of up to %s rows", thousands(n)); !strings.Contains(doc, want) {
		t.Errorf("docs/lake.md does not state the row group size: want %q", want)
	}
	if want := "or up to " + strings.TrimSuffix(rowGroupBytes, "MB") + " MB"; !strings.Contains(doc, want) {
		t.Errorf("docs/lake.md does not state the row groups' bytes: want %q", want)
	}
	for _, want := range []string{"COMPRESSION zstd", "orchstat_lake_version", "orchstat_table", "orchstat_runner"} {
		if !strings.Contains(opts, want) {
			t.Errorf("the export's Parquet options %q lack %q, which docs/lake.md states", opts, want)
		}
	}
	for _, want := range []string{"zstd-compressed", "`orchstat_lake_version`", "`orchstat_table`", "`orchstat_runner`"} {
		if !strings.Contains(doc, want) {
			t.Errorf("docs/lake.md does not state %s", want)
		}
	}
}

func readLakeDoc(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile("../docs/lake.md")
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// docColumnRe is how the doc names a column with its type: `name` TYPE.
var docColumnRe = regexp.MustCompile("`([a-z_0-9]+)` ([A-Z][A-Z0-9]*(?:\\[\\])?)")

// columnNamed reports whether section names c with its type, and not
// with a longer type that starts with it (INTEGER[] is not INTEGER).
func columnNamed(section string, c Column) bool {
	for _, m := range docColumnRe.FindAllStringSubmatch(section, -1) {
		if m[1] == c.Name && m[2] == c.Type {
			return true
		}
	}
	return false
}

// lakeDocSections maps each "### `table`" heading of the doc's schema
// section to its text, up to the next heading.
func lakeDocSections(doc string) map[string]string {
	out := map[string]string{}
	start := strings.Index(doc, "\n## Schema and version")
	if start < 0 {
		return out
	}
	rest := doc[start+1:]
	if end := strings.Index(rest[2:], "\n## "); end >= 0 {
		rest = rest[:end+2]
	}
	heading := regexp.MustCompile("(?m)^### `([a-z_0-9]+)`$")
	locs := heading.FindAllStringSubmatchIndex(rest, -1)
	for i, l := range locs {
		end := len(rest)
		if i+1 < len(locs) {
			end = locs[i+1][0]
		}
		out[rest[l[2]:l[3]]] = rest[l[1]:end]
	}
	return out
}

// thousands writes n with commas, as the docs write numbers.
func thousands(n int) string {
	s := strconv.Itoa(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

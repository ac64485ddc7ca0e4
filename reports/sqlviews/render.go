package sqlviews

import (
	"fmt"
	"slices"
	"strings"
	"text/template"

	"github.com/orchstat/orchstat/model/reports"
)

// LeftOutMetric is a catalog metric the views do not compute, and why.
type LeftOutMetric struct{ Metric, Why string }

// Views is what Render writes: the statements, and the metrics they
// leave out, which the statements also name (as comments and as the
// view orchstat_metrics_left_out).
type Views struct {
	SQL     string
	LeftOut []LeftOutMetric
	// Absent are the tables the views read that the lake holds no file
	// of (Table.Absent).
	Absent []string
}

// Render writes, in dialect d, the statements that make the lake at loc
// readable (its tables, of which lake lists the columns) and the views
// orchstat_metrics and orchstat_metrics_left_out over it, from the
// catalog (model/reports) and Families.
func Render(d Dialect, loc Location, lake []Table) (Views, error) {
	metrics, leftOut, err := metricRows(d)
	if err != nil {
		return Views{}, err
	}
	used := map[string]bool{}
	var views []string
	for _, f := range Families {
		for _, r := range f.Relations {
			body, err := expand(d, r.SQL, used)
			if err != nil {
				return Views{}, fmt.Errorf("relation %s: %w", r.Name, err)
			}
			views = append(views, "-- "+r.Doc+"\nCREATE OR REPLACE VIEW "+viewName(r.Name)+" AS\n"+body+";")
		}
		counts, err := countsView(d, f, used)
		if err != nil {
			return Views{}, err
		}
		views = append(views, counts)
		split := f
		if f.SplitCounts != nil {
			split.Counts = f.SplitCounts
		}
		for _, keys := range f.Groups {
			grouped, err := groupedViews(d, split, keys, used)
			if err != nil {
				return Views{}, err
			}
			views = append(views, grouped...)
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "-- orchstat sql-views --dialect %s: the report's metrics as views over the lake at %s.\n", d.Name, loc)
	fmt.Fprintf(&b, "-- Generated from orchstat's metric catalog; orchstat_metrics has one row per metric, as `report --lake` computes it over every run.\n")
	fmt.Fprintf(&b, "-- Checked: %s.\n", d.CheckedAgainst)
	for _, l := range leftOut {
		fmt.Fprintf(&b, "-- Left out: %s: %s.\n", l.Metric, l.Why)
	}
	b.WriteString("\n-- The lake's tables.\n")
	var absent []string
	for _, t := range lake {
		if used[t.Name] {
			if t.Absent {
				absent = append(absent, t.Name)
			}
			b.WriteString(d.source(d, t, loc) + "\n\n")
			delete(used, t.Name)
		}
	}
	if len(used) > 0 {
		return Views{}, fmt.Errorf("the views read tables the lake does not declare: %s", strings.Join(sortedKeys(used), ", "))
	}
	b.WriteString("-- What the report's counts are made of.\n")
	for _, v := range views {
		b.WriteString(v + "\n\n")
	}
	b.WriteString("-- One row per metric: value, and for a ratio its numerator and denominator (no value when the denominator is 0).\n")
	b.WriteString("CREATE OR REPLACE VIEW orchstat_metrics AS\n" + strings.Join(metrics, "\nUNION ALL\n") + ";\n\n")
	b.WriteString("-- The catalog's metrics these views leave out, and why.\n")
	b.WriteString("CREATE OR REPLACE VIEW orchstat_metrics_left_out AS\n" + leftOutRows(d, leftOut) + ";\n")
	return Views{SQL: b.String(), LeftOut: leftOut, Absent: absent}, nil
}

func (l Location) String() string {
	if l.Bucket != "" {
		return l.under("", "s3", "")[:len(l.under("", "s3", ""))-1]
	}
	return l.Dir
}

func sortedKeys(m map[string]bool) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// expand renders a relation's or a predicate's template in d, noting the
// lake tables it reads in used.
func expand(d Dialect, text string, used map[string]bool) (string, error) {
	funcs := template.FuncMap{
		"t":         func(name string) string { used[name] = true; return viewName(name) },
		"v":         viewName,
		"q":         d.quote,
		"lag":       d.lag,
		"countIf":   d.countIf,
		"sum":       d.sum,
		"joinNulls": func() string { return d.joinNulls },
	}
	tp, err := template.New("").Funcs(funcs).Option("missingkey=error").Parse(text)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	if err := tp.Execute(&b, nil); err != nil {
		return "", err
	}
	// A dialect's conditional aggregate wraps a condition that may quote
	// identifiers itself: expand what it returned once more.
	if out := b.String(); strings.Contains(out, "{{") && out != text {
		return expand(d, out, used)
	}
	return b.String(), nil
}

// aggregate renders a count's aggregate over its relation's rows.
func aggregate(d Dialect, c Count, used map[string]bool) (string, error) {
	where, err := expand(d, c.Where, used)
	if err != nil {
		return "", err
	}
	if c.Expr, err = expand(d, c.Expr, used); err != nil {
		return "", err
	}
	var s string
	switch c.Agg {
	case Rows:
		s = "count(*)"
		if where != "" {
			s = d.countIf(where)
		}
	case Distinct:
		s = "count(DISTINCT " + c.Expr + ")"
		if where != "" {
			s = "count(DISTINCT CASE WHEN " + where + " THEN " + c.Expr + " END)"
		}
	case Sum:
		s = d.sum(c.Expr)
		if where != "" {
			s = d.sumIf(c.Expr, where)
		}
	default:
		return "", fmt.Errorf("count %s: aggregate %d has no relation", c.Name, c.Agg)
	}
	if c.Zero {
		s = "coalesce(" + s + ", 0)"
	}
	// A conditional count by sum(CASE …) is NULL over no row; a count is 0.
	if c.Agg == Rows && where != "" {
		s = "coalesce(" + s + ", 0)"
	}
	return s, nil
}

// countsView renders orchstat_<family>_counts: one row, a column per
// count, each relation aggregated once.
func countsView(d Dialect, f Family, used map[string]bool) (string, error) {
	var froms, names []string
	var rel string
	var aggs []string
	flush := func() {
		if rel != "" {
			froms = append(froms, fmt.Sprintf("(SELECT %s\n   FROM %s) %s", strings.Join(aggs, ",\n     "), viewName(rel), rel))
		}
		aggs = nil
	}
	for _, c := range f.Counts {
		if c.Agg == Derived {
			names = append(names, c.Expr+" AS "+c.Name)
			continue
		}
		if c.From != rel {
			flush()
			rel = c.From
		}
		a, err := aggregate(d, c, used)
		if err != nil {
			return "", err
		}
		aggs = append(aggs, a+" AS "+c.Name)
		names = append(names, c.Name)
	}
	flush()
	return fmt.Sprintf("-- The %s family's counts: one row.\nCREATE OR REPLACE VIEW %s AS\nSELECT %s\nFROM %s;",
		f.Family, countsName(f.Family), strings.Join(names, ", "), strings.Join(froms, "\nCROSS JOIN ")), nil
}

func countsName(f reports.Family) string { return viewName(string(f) + "_counts") }

// labelled reports whether s can be split by every one of keys.
func labelled(s reports.MetricSpec, keys []string) bool {
	for _, k := range keys {
		if !slices.Contains(s.Labels, k) {
			return false
		}
	}
	return true
}

func groupSuffix(keys []string) string { return "_by_" + strings.Join(keys, "_") }

// groupedViews renders orchstat_<family>_counts_by_<keys> and
// orchstat_<family>_metrics_by_<keys>: the counts and metrics per value
// of the label columns keys, a missing value as ” (as the report groups
// them). The family's first relation has every group; the others' counts
// of a group they lack are 0, or NULL for a sum of nothing.
func groupedViews(d Dialect, f Family, keys []string, used map[string]bool) ([]string, error) {
	var keyExprs, keyCols, keyNames []string
	for _, k := range keys {
		e := "coalesce(" + d.quote(k) + ", '')"
		keyExprs = append(keyExprs, e)
		keyCols = append(keyCols, e+" AS "+d.quote(k))
		keyNames = append(keyNames, d.quote(k))
	}
	var rels []string
	aggs := map[string][]string{}
	for _, c := range f.Counts {
		if c.Agg == Derived {
			continue
		}
		if !slices.Contains(rels, c.From) {
			rels = append(rels, c.From)
		}
		a, err := aggregate(d, c, used)
		if err != nil {
			return nil, err
		}
		aggs[c.From] = append(aggs[c.From], a+" AS "+c.Name)
	}
	var cols []string
	for _, k := range keyNames {
		cols = append(cols, rels[0]+"."+k)
	}
	for _, c := range f.Counts {
		switch {
		case c.Agg == Derived:
			cols = append(cols, c.Expr+" AS "+c.Name)
		case c.From != rels[0] && (c.Agg != Sum || c.Zero):
			cols = append(cols, "coalesce("+c.From+"."+c.Name+", 0) AS "+c.Name)
		default:
			cols = append(cols, c.From+"."+c.Name)
		}
	}
	from := ""
	for i, r := range rels {
		sub := fmt.Sprintf("(SELECT %s,\n     %s\n   FROM %s GROUP BY %s) %s", strings.Join(keyCols, ", "),
			strings.Join(aggs[r], ",\n     "), viewName(r), strings.Join(keyExprs, ", "), r)
		if i == 0 {
			from = sub
			continue
		}
		var on []string
		for _, k := range keyNames {
			on = append(on, rels[0]+"."+k+" = "+r+"."+k)
		}
		from += "\nLEFT JOIN " + sub + " ON " + strings.Join(on, " AND ")
	}
	counts := viewName(string(f.Family) + "_counts" + groupSuffix(keys))
	out := []string{fmt.Sprintf("-- The %s family's counts by %s.\nCREATE OR REPLACE VIEW %s AS\nSELECT %s\nFROM %s%s;",
		f.Family, strings.Join(keys, ", "), counts, strings.Join(cols, ", "), from, d.joinNulls)}
	var rows []string
	for _, s := range reports.Catalog {
		if s.Family != f.Family || !labelled(s, keys) {
			continue
		}
		why, err := f.missing(s)
		if err != nil {
			return nil, err
		}
		if why != "" {
			continue // said once, in orchstat_metrics_left_out
		}
		rows = append(rows, "SELECT "+strings.Join(keyNames, ", ")+", "+strings.TrimPrefix(metricRowFrom(d, s, counts), "SELECT "))
	}
	out = append(out, fmt.Sprintf("-- The %s family's metrics by %s, as the report splits them.\nCREATE OR REPLACE VIEW %s AS\n%s;",
		f.Family, strings.Join(keys, ", "), viewName(string(f.Family)+"_metrics"+groupSuffix(keys)), strings.Join(rows, "\nUNION ALL\n")))
	return out, nil
}

// metricRows renders a SELECT per catalog metric the families compute,
// and lists those they leave out; a metric naming a count no family
// declares or leaves out is an error, so a new catalog entry cannot be
// skipped in silence.
func metricRows(d Dialect) ([]string, []LeftOutMetric, error) {
	var rows []string
	var out []LeftOutMetric
	for _, s := range reports.Catalog {
		f, ok := familyOf(s.Family)
		if !ok {
			return nil, nil, fmt.Errorf("metric %s: no family %q in the views", s.Name, s.Family)
		}
		why, err := f.missing(s)
		if err != nil {
			return nil, nil, err
		}
		if why != "" {
			out = append(out, LeftOutMetric{s.Name, why})
			continue
		}
		rows = append(rows, metricRow(d, s))
	}
	return rows, out, nil
}

func familyOf(name reports.Family) (Family, bool) {
	for _, f := range Families {
		if f.Family == name {
			return f, true
		}
	}
	return Family{}, false
}

// missing says why the family cannot compute s ("" when it can), or
// errs when s names a count it neither declares nor leaves out.
func (f Family) missing(s reports.MetricSpec) (string, error) {
	for _, name := range []string{s.Num, s.Den, s.Unpriced} {
		if name == "" {
			continue
		}
		if why, ok := f.LeftOut[name]; ok {
			return why, nil
		}
		if !slices.ContainsFunc(f.Counts, func(c Count) bool { return c.Name == name }) {
			return "", fmt.Errorf("metric %s: the %s family declares no count %q", s.Name, f.Family, name)
		}
	}
	return "", nil
}

func metricRow(d Dialect, s reports.MetricSpec) string {
	return metricRowFrom(d, s, countsName(s.Family))
}

// metricRowFrom renders the metric s from the counts view counts.
func metricRowFrom(d Dialect, s reports.MetricSpec, counts string) string {
	cast := func(e string) string { return "CAST(" + e + " AS " + d.double + ")" }
	null := cast("NULL")
	value, num, den := cast(s.Num), null, null
	if s.Kind.Ratio() {
		num, den = cast(s.Num), cast(s.Den)
		value = "CASE WHEN " + s.Den + " = 0 THEN " + null + " ELSE " + cast(s.Num) + " / " + cast(s.Den) + " END"
	}
	return fmt.Sprintf("SELECT '%s' AS metric, '%s' AS family, '%s' AS kind, %s AS value, %s AS numerator, %s AS denominator FROM %s",
		s.Name, s.Family, s.Kind, value, num, den, counts)
}

func leftOutRows(d Dialect, l []LeftOutMetric) string {
	if len(l) == 0 {
		return "SELECT CAST(NULL AS " + d.typeOf("VARCHAR") + ") AS metric, CAST(NULL AS " + d.typeOf("VARCHAR") + ") AS why WHERE 1 = 0"
	}
	var rows []string
	for _, m := range l {
		rows = append(rows, "SELECT "+quoteString(m.Metric)+" AS metric, "+quoteString(m.Why)+" AS why")
	}
	return strings.Join(rows, "\nUNION ALL\n")
}

package render

import (
	"fmt"
	"slices"
	"strings"

	"github.com/orchstat/orchstat/model/reports"
)

// Options are how a report is drawn beyond its format.
type Options struct {
	// Width is the terminal's width; 0 draws every cell in full.
	Width int
	// ASCII draws the summary's sparklines and marks in ASCII.
	ASCII bool
	// Sections names the sections the table, markdown and HTML formats
	// draw (SectionNames); "all" draws every one, with data or not. None:
	// the summary, then every section with data, and a line naming the
	// rest.
	Sections []string
}

func (o Options) wants(name string) bool {
	return len(o.Sections) == 0 || slices.Contains(o.Sections, name) || slices.Contains(o.Sections, "all")
}

// SectionNames are the names --section takes: the summary, then the
// report's sections in their order ("all" takes every one).
func SectionNames() []string {
	names := []string{"summary"}
	for _, s := range reportSections(&reports.Report{FactoryAudit: &reports.FactoryAudit{}}, 0) {
		if s.title != "" && !slices.Contains(names, s.name) {
			names = append(names, s.name)
		}
	}
	return names
}

// ParseSections checks --section's names.
func ParseSections(names []string) ([]string, error) {
	valid := SectionNames()
	var out []string
	for _, n := range names {
		for _, p := range strings.Split(n, ",") {
			p = strings.TrimSpace(p)
			if p == "" {
				continue
			}
			if p != "all" && !slices.Contains(valid, p) {
				return nil, fmt.Errorf("--section %q: give all, or some of %s", p, strings.Join(valid, ", "))
			}
			out = append(out, p)
		}
	}
	return out, nil
}

// leftOut is what the default view leaves out for want of data.
type leftOut struct {
	sections []section
	metrics  []string
	fields   []string // overview fields
}

// chooseSections picks the sections to draw and says what it left out.
// Named sections are drawn whatever they hold; by default a section
// without rows is left out, and so are the metric rows with no value (or
// a zero count of something that did not happen) and the overview's
// empty counts and the filters, which the footer says.
func chooseSections(r *reports.Report, o Options) ([]section, leftOut) {
	all := reportSections(r, o.Width)
	var out []section
	var left leftOut
	if slices.Contains(o.Sections, "all") {
		return withGrids(all), left
	}
	if len(o.Sections) > 0 {
		for _, s := range all {
			if slices.Contains(o.Sections, s.name) {
				if s.grid == nil {
					s.grid = &grid{title: s.title}
				}
				out = append(out, s)
			}
		}
		return out, left
	}
	for _, s := range all {
		if s.grid == nil {
			if s.title != "" {
				left.sections = append(left.sections, s)
			}
			continue
		}
		switch s.name {
		case "overview":
			s.grid, left.fields = trimOverview(s.grid)
		case "metrics":
			s.grid, left.metrics = trimMetrics(r, s.grid)
		}
		if len(s.grid.rows) == 0 {
			left.sections = append(left.sections, s)
			continue
		}
		out = append(out, s)
	}
	return out, left
}

// withGrids gives every section a grid, so --section all shows the empty
// ones as "(none)".
func withGrids(ss []section) []section {
	var out []section
	for _, s := range ss {
		if s.grid == nil {
			if s.title == "" {
				continue // CSV only
			}
			s.grid = &grid{title: s.title}
		}
		out = append(out, s)
	}
	return out
}

// footerFields are the overview's rows the footer says instead.
var footerFields = map[string]bool{
	"database": true, "generated_at": true, "filter_since": true, "filter_until": true, "filter_runs": true, "filter_provider": true,
}

func trimOverview(g *grid) (*grid, []string) {
	c := *g
	c.rows = nil
	var left []string
	for _, row := range g.rows {
		switch {
		case footerFields[row[0]]:
		case row[1] == "-" || row[1] == "0":
			left = append(left, row[0])
		default:
			c.rows = append(c.rows, row)
		}
	}
	return &c, left
}

// zeroBase names, for a count that is zero when nothing of its kind
// happened, the count that says so: a zero there is no news, while zero
// failed runs out of seven is.
var zeroBase = map[string]string{
	"runs": "runs", "provider_requests": "provider_requests", "provider_retries_total": "provider_requests",
	"l2_runs": "l2_runs", "l3_steps": "l3_steps", "failed_runs": "runs", "record_runs": "record_runs",
	"calls": "calls", "call_retries_total": "calls", "calls_attempts_unknown": "calls",
}

func trimMetrics(r *reports.Report, g *grid) (*grid, []string) {
	c := *g
	c.rows = nil
	var left []string
	zero := func(n string) bool {
		v := r.Metrics[n].Value
		return v != nil && *v == 0
	}
	for _, row := range g.rows {
		n := row[0]
		m, ok := r.Metrics[n]
		noValue := ok && m.Value == nil
		if base, counted := zeroBase[n]; noValue || counted && zero(n) && zero(base) {
			left = append(left, n)
			continue
		}
		c.rows = append(c.rows, row)
	}
	return &c, left
}

// sectionGroups name the sections that come and go together, by what
// holds their data: when every one of a group is left out, the line says
// the group's name once rather than each title.
var sectionGroups = []struct {
	name     string
	sections []string
}{
	{"the orchestrator's breakdowns", []string{"by_provider", "by_day", "worst_runs_by_retries", "worst_runs_by_iterations",
		"stop_reasons", "escalation_reasons", "judge_reasons", "candidate_validity"}},
	{"other systems' runs and stages", []string{"systems", "failures_by_stage", "stages"}},
	{"agents' model calls", []string{"calls", "calls_by_provider_model"}},
	{"the factory audit", []string{"factory_audit", "factory_audit_stages", "factory_audit_deterministic",
		"factory_audit_repeats", "factory_audit_exceptions", "factory_audit_timeouts"}},
}

// leftSectionNames names the sections left out: a group's name when all
// of it is, else each section's title.
func leftSectionNames(left []section) []string {
	var out []string
	done := map[string]bool{}
	isLeft := func(name string) bool {
		return slices.ContainsFunc(left, func(s section) bool { return s.name == name })
	}
	for _, g := range sectionGroups {
		all := true
		for _, name := range g.sections {
			all = all && isLeft(name)
		}
		if all {
			out = append(out, g.name)
			for _, name := range g.sections {
				done[name] = true
			}
		}
	}
	for _, s := range left {
		if !done[s.name] {
			out = append(out, s.title)
		}
	}
	return out
}

// leftOutLine says what the default view left out, and how to see it.
func leftOutLine(l leftOut) string {
	var parts []string
	if len(l.sections) > 0 {
		parts = append(parts, "sections: "+strings.Join(leftSectionNames(l.sections), ", "))
	}
	if len(l.metrics) > 0 {
		parts = append(parts, "metrics: "+strings.Join(l.metrics, ", "))
	}
	if len(l.fields) > 0 {
		parts = append(parts, "overview counts: "+strings.Join(l.fields, ", "))
	}
	if len(parts) == 0 {
		return ""
	}
	return "Left out, with no data in scope: " + strings.Join(parts, "; ") +
		". --section all shows every section, --section NAME,... the ones named; --format json and csv keep every field."
}

// footerLine says when the report was made and over which filters.
func footerLine(r *reports.Report) string {
	var filters []string
	if r.Filters.Since != nil {
		filters = append(filters, "since "+timeText(*r.Filters.Since))
	}
	if r.Filters.Until != nil {
		filters = append(filters, "until "+timeText(*r.Filters.Until))
	}
	if len(r.Filters.Runs) > 0 {
		filters = append(filters, "runs "+strings.Join(r.Filters.Runs, ","))
	}
	if r.Filters.Provider != nil {
		filters = append(filters, "provider "+*r.Filters.Provider)
	}
	f := "none"
	if len(filters) > 0 {
		f = strings.Join(filters, ", ")
	}
	return "Generated " + timeText(r.GeneratedAt) + " from " + r.Database + "; filters: " + f + "."
}

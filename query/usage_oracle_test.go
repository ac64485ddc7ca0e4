package query

import (
	"cmp"
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/orchstat/orchstat/model/devices"
	"github.com/orchstat/orchstat/model/reports"
)

// The summation CallUsageWith did in Go until issue 40, kept as the
// oracle TestUsageEngine holds the engine's one query to: every call read
// in time order and summed here, period by period, in Go's time zones.

// CallUsageGo is the oracle: CallUsageWith as Go summed it.
func (s *Store) CallUsageGo(ctx context.Context, f Filter, o UsageOptions) (*reports.Usage, error) {
	by, loc := o.By, o.Loc
	if loc == nil {
		loc = time.UTC
	}
	if !slices.Contains(reports.UsageBy, by) {
		return nil, fmt.Errorf("cannot group calls by %q (only by %s)", by, strings.Join(reports.UsageBy, ", "))
	}
	u := &reports.Usage{By: by, Timezone: loc.String(), Rows: []reports.UsageRow{}, NoPrice: []reports.NoPriceModel{},
		Total: reports.UsageRow{Key: "total"}, Devices: []reports.UsageDevice{}}
	if ok, err := hasCalls(ctx, s.conn); err != nil || !ok {
		u.Total.Models = []reports.UsageRow{}
		return u, err
	}
	if err := s.priced(ctx); err != nil {
		return nil, err
	}
	q, args, err := s.oracleUsageQuery(ctx, f)
	if err != nil {
		return nil, err
	}
	paths, err := callFilePaths(ctx, s.conn)
	if err != nil {
		return nil, err
	}
	g := newUsageGroups(u, loc, o.Devices, paths)
	err = eachRow(ctx, s.conn, "grouping agents' calls", q, args, func(rs *sql.Rows) error {
		var c usageCall
		var fileID, copies int64
		var cwd string
		var files any
		if err := rs.Scan(&c.ts, &c.session, &c.provider, &c.model, &c.success, &c.attempts,
			&c.input, &c.read, &c.write, &c.output, &c.reasoning, &c.cost, &c.costSource, &c.failedCost, &c.noPrice,
			&fileID, &cwd, &files, &copies); err != nil {
			return err
		}
		g.add(c, fileID, cwd, files, copies)
		return nil
	})
	if err != nil {
		return nil, err
	}
	g.finish()
	return u, nil
}

// oracleUsageQuery is the query CallUsageWith reads the calls f selects with,
// in time order, and its arguments.
func (s *Store) oracleUsageQuery(ctx context.Context, f Filter) (string, []any, error) {
	runs := f
	runs.Since, runs.Until = nil, nil
	cte, args := runs.callScope("''")
	where := "true"
	if f.Since != nil {
		where += " AND ts >= ?"
		args = append(args, f.Since.UTC())
	}
	if f.Until != nil {
		where += " AND ts < ?"
		args = append(args, f.Until.UTC())
	}
	// cs.copies counts the rows the store holds of each call (callsOnce),
	// in scope or not; cp lists, for each call held in several files, those
	// files (the kept copy's among them); pj is each file's run's working
	// folder, as Claude Code and Codex record it (OpenTelemetry has none),
	// for a call that states none itself (a store opened read-only before
	// calls had cwd: it has no such column).
	callCwd := "NULL"
	if ok, err := hasColumn(ctx, s.conn, "calls", "cwd"); err != nil {
		return "", nil, err
	} else if ok {
		callCwd = "cs.cwd"
	}
	q := "WITH " + cte + `,
cp AS (SELECT system, session, call_id, list(DISTINCT file_id ORDER BY file_id) AS files
  FROM priced_calls WHERE call_id IS NOT NULL GROUP BY ALL HAVING count(*) > 1),
pj AS (SELECT file_id, system, run_id, any_value(json_extract_string(detail, '$.cwd')) AS cwd
  FROM record_runs GROUP BY ALL)
SELECT cs.ts, coalesce(cs.session, cs.run_id, ''), coalesce(cs.provider, ''), coalesce(cs.model, ''), cs.success, cs.attempts,
  cs.input_tokens, cs.cache_read_tokens, cs.cache_write_tokens, cs.output_tokens, cs.reasoning_tokens,
  cs.cost_usd, cs.cost_source, cs.failed_cost_usd, coalesce(cs.no_price, false),
  cs.file_id, coalesce(nullif(` + callCwd + `, ''), pj.cwd, ''), cp.files, cs.copies
FROM cs
LEFT JOIN cp ON cp.system = cs.system AND cp.session IS NOT DISTINCT FROM cs.session AND cp.call_id = cs.call_id
LEFT JOIN pj ON pj.file_id = cs.file_id AND pj.system = cs.system AND pj.run_id = cs.run_id
WHERE ` + where + ` ORDER BY cs.ts NULLS LAST, cs.system, cs.session, cs.line`
	return q, args, nil
}

// usageGroups sums calls, one at a time, into a Usage's rows, total,
// devices, copies and models without a price.
type usageGroups struct {
	u       *reports.Usage
	loc     *time.Location
	namer   devices.Namer
	paths   map[int64]string
	byFile  map[int64]namedDevice
	devs    map[string]*reports.UsageDevice
	rows    map[string]*reports.UsageRow
	models  map[string]map[[2]string]*reports.UsageRow
	total   map[[2]string]*reports.UsageRow
	noPrice map[[2]string]int64
}

func newUsageGroups(u *reports.Usage, loc *time.Location, namer devices.Namer, paths map[int64]string) *usageGroups {
	return &usageGroups{u: u, loc: loc, namer: namer, paths: paths, byFile: map[int64]namedDevice{},
		devs: map[string]*reports.UsageDevice{}, rows: map[string]*reports.UsageRow{},
		models: map[string]map[[2]string]*reports.UsageRow{}, total: map[[2]string]*reports.UsageRow{},
		noPrice: map[[2]string]int64{}}
}

// device names the device of file fileID and its folder. A file's device
// is named once: a store holds far fewer files than calls.
func (g *usageGroups) device(fileID int64) (string, string) {
	d, ok := g.byFile[fileID]
	if !ok {
		d.name, d.folder = g.namer.Device(g.paths[fileID])
		g.byFile[fileID] = d
	}
	return d.name, d.folder
}

// add sums call c, read from file fileID in folder cwd, of which the
// store holds copies copies in files.
func (g *usageGroups) add(c usageCall, fileID int64, cwd string, files any, copies int64) {
	u := g.u
	name, folder := g.device(fileID)
	d := g.devs[name]
	if d == nil {
		d = &reports.UsageDevice{Name: name}
		g.devs[name] = d
	}
	if !slices.Contains(d.Folders, folder) {
		d.Folders = append(d.Folders, folder)
	}
	d.Calls++
	if copies > 1 {
		u.Copies.LeftOut += copies - 1
		if elsewhere(g.device, name, files) {
			u.Copies.OnSeveralDevices++
			d.Shared++
		} else {
			u.Copies.WithinOneDevice++
		}
	}
	key := g.key(c, name, cwd)
	r := g.rows[key]
	if r == nil {
		r = &reports.UsageRow{Key: key}
		g.rows[key] = r
		g.models[key] = map[[2]string]*reports.UsageRow{}
	}
	m := [2]string{c.provider, c.model}
	mr := g.models[key][m]
	if mr == nil {
		mr = &reports.UsageRow{Key: key, Provider: c.provider, Model: c.model}
		g.models[key][m] = mr
	}
	tm := g.total[m]
	if tm == nil {
		tm = &reports.UsageRow{Key: "total", Provider: c.provider, Model: c.model}
		g.total[m] = tm
	}
	for _, row := range []*reports.UsageRow{r, mr, &u.Total, tm} {
		c.addTo(row)
	}
	if c.noPrice {
		g.noPrice[m]++
	}
}

// key is the row call c counts in: its session, model, device (name),
// project (from cwd), or period; an undated call's period is noTime.
func (g *usageGroups) key(c usageCall, name, cwd string) string {
	switch by := g.u.By; {
	case by == "session":
		return c.session
	case by == "model":
		return c.model
	case by == "device":
		return name
	case by == "project":
		return devices.Project(cwd)
	case !c.ts.Valid:
		g.u.Undated++
		return noTime
	default:
		return periodOf(c.ts.Time.In(g.loc), by)
	}
}

// finish puts the sums into the Usage, each list in its order.
func (g *usageGroups) finish() {
	u, by := g.u, g.u.By
	for key, r := range g.rows {
		r.Models = sortedModels(g.models[key])
		u.Rows = append(u.Rows, *r)
	}
	u.Total.Models = sortedModels(g.total)
	slices.SortFunc(u.Rows, func(a, b reports.UsageRow) int {
		if (a.Key == noTime) != (b.Key == noTime) {
			return boolOrder(a.Key == noTime, b.Key == noTime)
		}
		if by == "session" {
			if c := compareTimes(a.First, b.First); c != 0 {
				return c
			}
		}
		return cmp.Compare(a.Key, b.Key)
	})
	// Other views than by device name no device: their JSON does not
	// depend on where the files are.
	if by == "device" {
		for _, d := range g.devs {
			slices.Sort(d.Folders)
			u.Devices = append(u.Devices, *d)
		}
	}
	slices.SortFunc(u.Devices, func(a, b reports.UsageDevice) int { return cmp.Compare(a.Name, b.Name) })
	for m, n := range g.noPrice {
		u.NoPrice = append(u.NoPrice, reports.NoPriceModel{Provider: m[0], Model: m[1], Calls: n})
	}
	slices.SortFunc(u.NoPrice, func(a, b reports.NoPriceModel) int {
		return cmp.Or(cmp.Compare(a.Model, b.Model), cmp.Compare(a.Provider, b.Provider))
	})
}

// elsewhere says some file of files (DuckDB's list of file ids) is on
// another device than name.
func elsewhere(device func(int64) (string, string), name string, files any) bool {
	list, _ := files.([]any)
	for _, f := range list {
		id, ok := toInt64(f)
		if !ok {
			continue
		}
		if other, _ := device(id); other != name {
			return true
		}
	}
	return false
}

// toInt64 reads a file id DuckDB handed back in a list.
func toInt64(v any) (int64, bool) {
	switch x := v.(type) {
	case int32:
		return int64(x), true
	case int64:
		return x, true
	case int:
		return int64(x), true
	}
	return 0, false
}

// usageCall is one call as CallUsage reads it.
type usageCall struct {
	ts                                          sql.NullTime
	session, provider, model                    string
	success                                     sql.NullBool
	attempts                                    sql.NullInt64
	input, read, write, output, reasoning, cost sql.NullFloat64
	costSource                                  sql.NullString
	failedCost                                  sql.NullFloat64
	noPrice                                     bool
}

func (c usageCall) addTo(r *reports.UsageRow) {
	r.Calls++
	if c.ts.Valid {
		t := c.ts.Time.UTC()
		if r.First == nil || t.Before(*r.First) {
			r.First = &t
		}
		if r.Last == nil || t.After(*r.Last) {
			l := t
			r.Last = &l
		}
	}
	if c.success.Valid && !c.success.Bool {
		r.Failed++
	}
	if c.attempts.Valid {
		r.WithAttempts++
		r.Attempts += c.attempts.Int64
		if c.attempts.Int64 > 1 {
			r.Retried++
		}
	}
	addTo(&r.InputTokens, c.input)
	addTo(&r.CacheReadTokens, c.read)
	addTo(&r.CacheWriteTokens, c.write)
	addTo(&r.OutputTokens, c.output)
	addTo(&r.ReasoningTokens, c.reasoning)
	addTo(&r.CostUSD, c.cost)
	addTo(&r.FailedCostUSD, c.failedCost)
	switch c.costSource.String {
	case "record":
		r.CostFromRecord++
	case "price":
		r.CostFromPrice++
	}
	if c.noPrice {
		r.NoPriceCalls++
	}
}

// addTo adds v to a sum that stays nil until some value is added.
func addTo(sum **float64, v sql.NullFloat64) {
	if !v.Valid {
		return
	}
	if *sum == nil {
		*sum = new(float64)
	}
	**sum += v.Float64
}

// periodOf is the day, week (its Monday) or month of a local time.
func periodOf(t time.Time, by string) string {
	switch by {
	case "week":
		d := time.Date(t.Year(), t.Month(), t.Day(), 12, 0, 0, 0, time.UTC)
		return d.AddDate(0, 0, -((int(d.Weekday()) + 6) % 7)).Format("2006-01-02")
	case "month":
		return t.Format("2006-01")
	}
	return t.Format("2006-01-02")
}

func sortedModels(m map[[2]string]*reports.UsageRow) []reports.UsageRow {
	out := make([]reports.UsageRow, 0, len(m))
	for _, r := range m {
		out = append(out, *r)
	}
	slices.SortFunc(out, func(a, b reports.UsageRow) int {
		return cmp.Or(cmp.Compare(a.Model, b.Model), cmp.Compare(a.Provider, b.Provider))
	})
	return out
}

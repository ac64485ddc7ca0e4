package query

import (
	"cmp"
	"context"
	"database/sql"
	"slices"
	"time"

	"github.com/orchstat/orchstat/model/devices"
	"github.com/orchstat/orchstat/model/reports"
)

// usageOrder is the order calls were summed in when Go read them one by
// one (the oracle in usage_oracle_test.go): costs are summed in it, so
// that a sum of floating-point costs is the same to its last bit. Each
// call's rank in it is numbered once (k.rk): ordering the sums by the
// four columns themselves took DuckDB 1.7 times the CPU of the whole
// query (issue 40, benchmarks/EARLIER.md), by one number next to none.
const usageOrder = "c.ts NULLS LAST, c.system, c.session, c.line"

// usageAggregates are one group's sums, in the order usageSums.scan reads
// them. Token counts are whole numbers, whose sum no order changes.
const usageAggregates = `count(*), min(ts), max(ts),
  count(*) FILTER (WHERE success = false),
  count(attempts), coalesce(sum(attempts), 0)::BIGINT, count(*) FILTER (WHERE attempts > 1),
  sum(input_tokens), sum(cache_read_tokens), sum(cache_write_tokens), sum(output_tokens), sum(reasoning_tokens),
  sum(cost_usd ORDER BY rk),
  count(*) FILTER (WHERE cost_source = 'record'), count(*) FILTER (WHERE cost_source = 'price'),
  count(*) FILTER (WHERE no_price),
  sum(failed_cost_usd ORDER BY rk),
  count(*) FILTER (WHERE copies > 1 AND elsewhere), count(*) FILTER (WHERE copies > 1 AND NOT elsewhere),
  coalesce(sum(copies - 1), 0)::BIGINT, count(*) FILTER (WHERE ts IS NULL)`

// The grouping sets of usageQuery, as grouping(key, provider, model,
// file_id) numbers them: a bit is set for each column not grouped by.
const (
	setKeyModel = 0b0001 // a row's model
	setKey      = 0b0111 // a row
	setModel    = 0b1001 // the total's model
	setTotal    = 0b1111 // the total
	setFile     = 0b1110 // a file, for the devices
)

// usageKey is the SQL of the row a call c counts in, by by: days, weeks
// and months cut in the zone of the query's first argument (ICU's
// timezone(), from the UTC the store keeps), weeks from their Monday.
func usageKey(by string) string {
	local := "timezone(?, timezone('UTC', c.ts))"
	switch by {
	case "session":
		return "coalesce(c.session, c.run_id, '')"
	case "model":
		return "coalesce(c.model, '')"
	case "device":
		return "coalesce(fd.device, ?)"
	case "project":
		return "coalesce(pr.project, ?)"
	case "week":
		return "CASE WHEN c.ts IS NULL THEN '" + noTime + "' ELSE strftime(date_trunc('week', " + local + "), '%Y-%m-%d') END"
	case "month":
		return "CASE WHEN c.ts IS NULL THEN '" + noTime + "' ELSE strftime(" + local + ", '%Y-%m') END"
	}
	return "CASE WHEN c.ts IS NULL THEN '" + noTime + "' ELSE strftime(" + local + ", '%Y-%m-%d') END"
}

// usageQuery is the one query that sums the calls f selects by by, and
// its arguments: each row, each row's models, the total and its models,
// and for --by device each file's calls, as grouping sets of one scan.
//
// Each call counts once, as callsOnce counts it, but without its two
// windows over every call (the costliest steps of the query, issue 40):
// d groups the calls held in several files (system, session, call id),
// with how many rows hold each, whether those rows' files are on more
// than one device, and the copy kept (callsOnce's order: the session's
// own run first, then the file and line read first); every other row of
// them is left out, the calls with one row pass as they are. Most calls
// have one row: dh finds the few that may not by a hash of the three
// (one number to group by, not three strings), and d groups those by the
// strings themselves, so that two calls whose hashes collide are still
// two. Both read calls, not priced_calls: a copy is a row of calls, and
// pricing it twice more cost as much as the rest.
func (s *Store) usageQuery(ctx context.Context, f Filter, by string, loc *time.Location, fd *fileDevices) (string, []any, error) {
	runs := f
	runs.Since, runs.Until, runs.Provider = nil, nil, ""
	cte, args := runs.recordScope("NULL")
	q := "WITH " + cte + `,
fd AS (SELECT unnest(?::BIGINT[]) AS file_id, unnest(?::VARCHAR[]) AS device),
dh AS (SELECT hash(system, session, call_id) AS h FROM calls
  WHERE call_id IS NOT NULL GROUP BY h HAVING count(*) > 1),
d AS (SELECT p.system, p.session, p.call_id, count(*) AS n,
    count(DISTINCT coalesce(fd.device, ?)) > 1 AS elsewhere,
    min((p.run_id IS DISTINCT FROM p.session, p.file_id, p.line)) AS keep
  FROM calls p LEFT JOIN fd ON fd.file_id = p.file_id
  WHERE p.call_id IS NOT NULL AND hash(p.system, p.session, p.call_id) IN (SELECT h FROM dh)
  GROUP BY ALL HAVING count(*) > 1)`
	args = append(args, fd.ids, fd.names, fd.unknown.name)
	joins := ""
	if by == "project" {
		cte, callCwd, pjArgs, err := s.projectJoin(ctx)
		if err != nil {
			return "", nil, err
		}
		q += cte
		args = append(args, pjArgs...)
		joins = `
  LEFT JOIN pj ON pj.file_id = c.file_id AND pj.system = c.system AND pj.run_id = c.run_id
  LEFT JOIN pr ON pr.cwd = coalesce(nullif(` + callCwd + `, ''), pj.cwd, '')`
	}
	switch {
	case isPeriod(by):
		args = append(args, loc.String())
	case by == "device":
		args = append(args, fd.unknown.name)
	case by == "project":
		args = append(args, devices.NoProject)
	}
	where := "(d.keep IS NULL OR (c.run_id IS DISTINCT FROM c.session, c.file_id, c.line) = d.keep)"
	if f.Provider != "" {
		where += " AND lower(c.provider) = lower(?)"
		args = append(args, f.Provider)
	}
	if f.Since != nil {
		where += " AND c.ts >= ?"
		args = append(args, f.Since.UTC())
	}
	if f.Until != nil {
		where += " AND c.ts < ?"
		args = append(args, f.Until.UTC())
	}
	q += `,
k AS (SELECT c.*, ` + usageKey(by) + ` AS key, coalesce(c.provider, '') AS prov, coalesce(c.model, '') AS mdl,
    coalesce(d.n, 1) AS copies, coalesce(d.elsewhere, false) AS elsewhere,
    row_number() OVER (ORDER BY ` + usageOrder + `) AS rk
  FROM priced_calls c JOIN rs USING (system, run_id)
  LEFT JOIN d ON d.system = c.system AND d.session IS NOT DISTINCT FROM c.session AND d.call_id = c.call_id
  LEFT JOIN fd ON fd.file_id = c.file_id` + joins + `
  WHERE ` + where + `)
SELECT ` + fileSet(by, "grouping(key, prov, mdl, file_id), key, prov, mdl, file_id",
		"grouping(key, prov, mdl) * 2 + 1, key, prov, mdl, NULL::BIGINT") + `, ` + usageAggregates + `
FROM k GROUP BY GROUPING SETS ((key, prov, mdl), (key), (prov, mdl), ()` + fileSet(by, ", (file_id)", "") + `)`
	return q, args, nil
}

// fileSet is device when by is device, else other: only --by device
// groups by file, the other views number their sets as it did.
func fileSet(by, device, other string) string {
	if by == "device" {
		return device
	}
	return other
}

// projectJoin is the CTEs pj, each file's run's working folder as
// Claude Code and Codex record it, for a call that states none itself,
// and pr, each folder's project (devices.Project, named in Go once per
// folder); and the calls' own folder's column, "NULL" in a store opened
// read-only before calls had one.
func (s *Store) projectJoin(ctx context.Context) (string, string, []any, error) {
	callCwd := "NULL"
	if ok, err := hasColumn(ctx, s.conn, "calls", "cwd"); err != nil {
		return "", "", nil, err
	} else if ok {
		callCwd = "c.cwd"
	}
	folders := `SELECT DISTINCT json_extract_string(detail, '$.cwd') AS cwd FROM record_runs`
	if callCwd != "NULL" {
		folders += " UNION SELECT DISTINCT cwd FROM calls"
	}
	cwds := []string{""}
	err := eachRow(ctx, s.conn, "naming the calls' projects", folders, nil, func(rs *sql.Rows) error {
		var cwd sql.NullString
		if err := rs.Scan(&cwd); err != nil {
			return err
		}
		if cwd.Valid && cwd.String != "" {
			cwds = append(cwds, cwd.String)
		}
		return nil
	})
	if err != nil {
		return "", "", nil, err
	}
	projects := make([]string, len(cwds))
	for i, c := range cwds {
		projects[i] = devices.Project(c)
	}
	return `,
pj AS (SELECT file_id, system, run_id, any_value(json_extract_string(detail, '$.cwd')) AS cwd
  FROM record_runs GROUP BY ALL),
pr AS (SELECT unnest(?::VARCHAR[]) AS cwd, unnest(?::VARCHAR[]) AS project)`, callCwd, []any{cwds, projects}, nil
}

// usageSums folds usageQuery's rows into a Usage: the sums are DuckDB's,
// and only their order and the devices' folders are left to Go.
type usageSums struct {
	u      *reports.Usage
	files  *fileDevices
	rows   map[string]*reports.UsageRow
	models map[string][]reports.UsageRow
	devs   map[string]*reports.UsageDevice
}

func newUsageSums(u *reports.Usage, files *fileDevices) *usageSums {
	return &usageSums{u: u, files: files, rows: map[string]*reports.UsageRow{},
		models: map[string][]reports.UsageRow{}, devs: map[string]*reports.UsageDevice{}}
}

// usageCounts are a group's counts of copies and undated calls.
type usageCounts struct{ several, within, leftOut, undated int64 }

// scan reads one grouping set's row.
func (g *usageSums) scan(rs *sql.Rows) error {
	var set int
	var key, prov, mdl sql.NullString
	var fileID sql.NullInt64
	var r reports.UsageRow
	var first, last sql.NullTime
	var c usageCounts
	if err := rs.Scan(&set, &key, &prov, &mdl, &fileID, &r.Calls, &first, &last, &r.Failed,
		&r.WithAttempts, &r.Attempts, &r.Retried,
		&r.InputTokens, &r.CacheReadTokens, &r.CacheWriteTokens, &r.OutputTokens, &r.ReasoningTokens,
		&r.CostUSD, &r.CostFromRecord, &r.CostFromPrice, &r.NoPriceCalls, &r.FailedCostUSD,
		&c.several, &c.within, &c.leftOut, &c.undated); err != nil {
		return err
	}
	if first.Valid {
		t := first.Time.UTC()
		r.First = &t
	}
	if last.Valid {
		t := last.Time.UTC()
		r.Last = &t
	}
	r.Key = key.String
	switch set {
	case setKeyModel:
		r.Provider, r.Model = prov.String, mdl.String
		g.models[r.Key] = append(g.models[r.Key], r)
	case setKey:
		g.rows[r.Key] = &r
	case setModel:
		r.Key, r.Provider, r.Model = "total", prov.String, mdl.String
		g.u.Total.Models = append(g.u.Total.Models, r)
	case setTotal:
		r.Key, r.Models = "total", g.u.Total.Models
		g.u.Total = r
		g.u.Copies = reports.UsageCopies{OnSeveralDevices: c.several, WithinOneDevice: c.within, LeftOut: c.leftOut}
		if isPeriod(g.u.By) {
			g.u.Undated = c.undated
		}
	case setFile:
		g.addFile(fileID.Int64, r.Calls, c.several)
	}
	return nil
}

// addFile counts a file's calls under its device, with its folder.
func (g *usageSums) addFile(id, calls, shared int64) {
	nd := g.files.of(id)
	d := g.devs[nd.name]
	if d == nil {
		d = &reports.UsageDevice{Name: nd.name}
		g.devs[nd.name] = d
	}
	if !slices.Contains(d.Folders, nd.folder) {
		d.Folders = append(d.Folders, nd.folder)
	}
	d.Calls += calls
	d.Shared += shared
}

// finish puts the rows, their models and the devices in their order.
func (g *usageSums) finish() {
	u := g.u
	for key, r := range g.rows {
		r.Models = g.models[key]
		slices.SortFunc(r.Models, modelOrder)
		u.Rows = append(u.Rows, *r)
	}
	// The total's models are scanned apart from the total, in any order.
	u.Total.Models = slices.Clone(u.Total.Models)
	if u.Total.Models == nil {
		u.Total.Models = []reports.UsageRow{}
	}
	slices.SortFunc(u.Total.Models, modelOrder)
	for _, m := range u.Total.Models {
		if m.NoPriceCalls > 0 {
			u.NoPrice = append(u.NoPrice, reports.NoPriceModel{Provider: m.Provider, Model: m.Model, Calls: m.NoPriceCalls})
		}
	}
	slices.SortFunc(u.Rows, func(a, b reports.UsageRow) int {
		if (a.Key == noTime) != (b.Key == noTime) {
			return boolOrder(a.Key == noTime, b.Key == noTime)
		}
		if u.By == "session" {
			if c := compareTimes(a.First, b.First); c != 0 {
				return c
			}
		}
		return cmp.Compare(a.Key, b.Key)
	})
	for _, d := range g.devs {
		slices.Sort(d.Folders)
		u.Devices = append(u.Devices, *d)
	}
	slices.SortFunc(u.Devices, func(a, b reports.UsageDevice) int { return cmp.Compare(a.Name, b.Name) })
}

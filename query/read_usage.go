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

// noTime is the period of calls without a recorded time.
const noTime = "(no time)"

// CallUsage groups the calls f selects by by (one of reports.UsageBy):
// days, weeks and months are cut at midnight in loc. Unlike the report's
// other figures, f's time window selects calls by their own time, not by
// their run's start, as a day's usage must hold that day's calls of a
// session begun the day before; a call with no time is then left out.
//
// DuckDB cuts the periods and sums the calls, in one query (usageQuery):
// a year of calls is a million rows, which Go read one by one in seconds.
func (s *Store) CallUsage(ctx context.Context, f Filter, by string, loc *time.Location) (*reports.Usage, error) {
	return s.CallUsageWith(ctx, f, UsageOptions{By: by, Loc: loc})
}

// UsageOptions are how CallUsageWith groups calls.
type UsageOptions struct {
	// By is one of reports.UsageBy; Loc the zone days are cut in, which
	// DuckDB's ICU must know by its IANA name (time.Local is refused:
	// its caller names it).
	By  string
	Loc *time.Location
	// Devices names the device of each call's file (see model/devices).
	Devices devices.Namer
}

// CallUsageWith is CallUsage with the devices named. Each call counts
// once (callsOnce: one system, session and call id is one call, in
// whatever file and on whatever device it was read), under the device of
// the copy kept; the copies left out are counted in Usage.Copies, split
// by whether they were on other devices or on the same one.
//
// Go keeps what SQL cannot do well, each over a store's files or folders,
// never its calls: naming each file's device and each folder's project
// (model/devices), and putting the summed rows in order.
func (s *Store) CallUsageWith(ctx context.Context, f Filter, o UsageOptions) (*reports.Usage, error) {
	by, loc := o.By, o.Loc
	if loc == nil {
		loc = time.UTC
	}
	if !slices.Contains(reports.UsageBy, by) {
		return nil, fmt.Errorf("cannot group calls by %q (only by %s)", by, strings.Join(reports.UsageBy, ", "))
	}
	u := &reports.Usage{By: by, Timezone: loc.String(), Rows: []reports.UsageRow{}, NoPrice: []reports.NoPriceModel{},
		Total: reports.UsageRow{Key: "total", Models: []reports.UsageRow{}}, Devices: []reports.UsageDevice{}}
	if ok, err := hasCalls(ctx, s.conn); err != nil || !ok {
		return u, err
	}
	if isPeriod(by) {
		if err := s.knowsZone(ctx, loc); err != nil {
			return nil, err
		}
	}
	if err := s.priced(ctx); err != nil {
		return nil, err
	}
	paths, err := callFilePaths(ctx, s.conn)
	if err != nil {
		return nil, err
	}
	files := newFileDevices(o.Devices, paths)
	q, args, err := s.usageQuery(ctx, f, by, loc, files)
	if err != nil {
		return nil, err
	}
	sums := newUsageSums(u, files)
	err = eachRow(ctx, s.conn, "summing agents' calls", q, args, sums.scan)
	if err != nil {
		return nil, err
	}
	sums.finish()
	return u, nil
}

// isPeriod says by cuts time: a day, a week or a month.
func isPeriod(by string) bool { return by == "day" || by == "week" || by == "month" }

// knowsZone checks that DuckDB's ICU knows loc by its name, so that an
// unknown zone is refused by name rather than inside the query.
func (s *Store) knowsZone(ctx context.Context, loc *time.Location) error {
	name := loc.String()
	if name == "Local" {
		return fmt.Errorf("time zone: the local zone must be named (Europe/Paris) for DuckDB to cut days in it")
	}
	var t time.Time
	err := s.conn.QueryRowContext(ctx, "SELECT timezone(?, TIMESTAMPTZ '2000-01-01 00:00:00+00')", name).Scan(&t)
	if err != nil {
		return fmt.Errorf("time zone %q: DuckDB's time zone database (ICU) does not know it: %w", name, cleanDuckErr(err))
	}
	return nil
}

// fileDevices are the calls' files' devices, named in Go once per file.
type fileDevices struct {
	ids     []int64
	names   []string
	byID    map[int64]namedDevice
	unknown namedDevice
}

// namedDevice is a file's device and the folder the device names.
type namedDevice struct{ name, folder string }

func newFileDevices(namer devices.Namer, paths map[int64]string) *fileDevices {
	fd := &fileDevices{byID: make(map[int64]namedDevice, len(paths))}
	// A file the files table lacks is named as its path were empty, as
	// the calls it holds must still count somewhere.
	fd.unknown.name, fd.unknown.folder = namer.Device("")
	for id, p := range paths {
		var d namedDevice
		d.name, d.folder = namer.Device(p)
		fd.byID[id] = d
		fd.ids, fd.names = append(fd.ids, id), append(fd.names, d.name)
	}
	return fd
}

func (fd *fileDevices) of(id int64) namedDevice {
	if d, ok := fd.byID[id]; ok {
		return d
	}
	return fd.unknown
}

// callFilePaths maps the files that hold calls to their paths (in a
// lake's replica, "runner:path").
func callFilePaths(ctx context.Context, q querier) (map[int64]string, error) {
	out := map[int64]string{}
	err := eachRow(ctx, q, "naming the calls' files", `SELECT file_id, path FROM files
  WHERE file_id IN (SELECT DISTINCT file_id FROM calls)`, nil, func(rs *sql.Rows) error {
		var id int64
		var p string
		if err := rs.Scan(&id, &p); err != nil {
			return err
		}
		out[id] = p
		return nil
	})
	return out, err
}

// compareTimes orders times, nil last.
func compareTimes(a, b *time.Time) int {
	switch {
	case a == nil && b == nil:
		return 0
	case a == nil:
		return 1
	case b == nil:
		return -1
	}
	return a.Compare(*b)
}

// boolOrder puts false before true.
func boolOrder(a, b bool) int {
	switch {
	case a == b:
		return 0
	case a:
		return 1
	}
	return -1
}

// modelOrder orders a row's models by name, then provider.
func modelOrder(a, b reports.UsageRow) int {
	return cmp.Or(cmp.Compare(a.Model, b.Model), cmp.Compare(a.Provider, b.Provider))
}

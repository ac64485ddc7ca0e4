package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	// --timezone names zones by IANA name on machines without a zone
	// database too (Windows, slim containers).
	_ "time/tzdata"

	"github.com/orchstat/orchstat/model/devices"
	"github.com/orchstat/orchstat/model/reports"
	"github.com/orchstat/orchstat/query"
	"github.com/orchstat/orchstat/reports/render"
)

// usageRun is `orchstat report --by`: agents' calls by period, session
// or model (see query.CallUsage).
func usageRun(ctx context.Context, o *reportOptions) error {
	format, _ := render.ParsePageFormat(o.Format)
	now := o.g.io.Now().UTC()
	loc := time.Local
	if o.Timezone != "" {
		var err error
		if loc, err = time.LoadLocation(o.Timezone); err != nil {
			return usageError{fmt.Errorf("--timezone %q: not an IANA time zone name (Europe/Paris, UTC, Local): %v", o.Timezone, err)}
		}
	}
	local := loc == time.Local
	if local {
		loc = namedLocal(localZoneName(os.Getenv, os.Readlink, now), now)
	}
	// A date means midnight where the days are cut, not in UTC.
	since, until := inZone(o.Since, loc), inZone(o.Until, loc)
	f, err := buildFilter(now, since, until, o.Runs, o.Provider)
	if err != nil {
		return err
	}
	st, scope, unread, err := o.openPriced(ctx, &f)
	if err != nil {
		return err
	}
	defer st.Close()
	namer, err := o.deviceNamer(os.UserHomeDir)
	if err != nil {
		return err
	}
	u, err := st.CallUsageWith(ctx, f, query.UsageOptions{By: o.By, Loc: loc, Devices: namer})
	if err != nil {
		return err
	}
	if local {
		u.Timezone = localZoneName(os.Getenv, os.Readlink, now)
	}
	db, filters := o.viewHead(f)
	r := &reports.UsageReport{GeneratedAt: now, Database: db, Scope: scope, Filters: filters, Usage: *u}
	err = withOutput(o.g.io, o.Output, func(io *IO) error { return render.RenderUsage(io.Out, r, format, io.OutWidth) })
	if err != nil {
		return err
	}
	if unread {
		return silentError{exitError}
	}
	return nil
}

// viewHead is what an agents' view says it read, above its figures: the
// store or lake, and the filters applied.
func (o *reportOptions) viewHead(f query.Filter) (string, reports.Filters) {
	db := o.g.dbPath(o.Paths)
	if o.Lake != "" {
		db = "lake " + o.lakeName
	}
	filters := reports.Filters{Since: f.Since, Until: f.Until, Runs: f.Runs}
	if f.Provider != "" {
		p := f.Provider
		filters.Provider = &p
	}
	return db, filters
}

// deviceNamer is --device's names, their paths absolute as the store
// keeps files' paths ("~/" read as the home folder, which a quoted flag
// leaves to us), in a lake "RUNNER:PATH" as given. Names made from
// paths write the home folder as "~".
func (o *reportOptions) deviceNamer(homeDir func() (string, error)) (devices.Namer, error) {
	home, _ := homeDir()
	n := devices.Namer{Home: home, Lake: o.Lake != ""}
	for _, spec := range o.Devices {
		d, err := devices.ParseNamed(spec)
		if err != nil {
			return n, usageError{fmt.Errorf("--device %v", err)}
		}
		if rest, ok := strings.CutPrefix(d.Path, "~/"); ok && home != "" {
			d.Path = filepath.Join(home, rest)
		}
		if !n.Lake {
			if d.Path, err = filepath.Abs(d.Path); err != nil {
				return n, usageError{fmt.Errorf("--device %s: %v", spec, err)}
			}
		}
		n.Named = append(n.Named, d)
	}
	return n, nil
}

// namedLocal is the local zone by its IANA name, which DuckDB's ICU
// cuts days in (it knows no "Local"): a zone without changes of offset,
// as a machine without a zone database has (UTC), by its Etc/ name;
// time.Local when it has none, which the store refuses, saying so.
func namedLocal(name string, now time.Time) *time.Location {
	if loc, err := time.LoadLocation(name); err == nil {
		return loc
	}
	t := now.In(time.Local)
	_, off := t.Zone()
	if start, end := t.ZoneBounds(); start.IsZero() && end.IsZero() && off%3600 == 0 {
		if off == 0 {
			return time.UTC
		}
		// Etc/GMT+5 is five hours behind UTC: POSIX's sign.
		if loc, err := time.LoadLocation(fmt.Sprintf("Etc/GMT%+d", -off/3600)); err == nil {
			return loc
		}
	}
	return time.Local
}

// inZone reads a bare date (2026-11-01) as midnight in loc, as RFC 3339;
// anything else is left to parseWhen.
func inZone(s string, loc *time.Location) string {
	d, err := time.ParseInLocation("2006-01-02", s, loc)
	if err != nil {
		return s
	}
	return d.Format(time.RFC3339)
}

// localZoneName names the local time zone as a person would set it: $TZ,
// else the zone /etc/localtime links to (Europe/Paris), else its offset
// from UTC. Go names it "Local", which says nothing on a shared runner.
func localZoneName(getenv func(string) string, readlink func(string) (string, error), now time.Time) string {
	if tz := strings.TrimPrefix(getenv("TZ"), ":"); tz != "" {
		return tz
	}
	if target, err := readlink("/etc/localtime"); err == nil {
		if _, name, ok := strings.Cut(target, "zoneinfo/"); ok && name != "" {
			return name
		}
	} else if errors.Is(err, syscall.EINVAL) {
		// A copy of a zone's file, not a link to it, as some container
		// images have: DuckDB's ICU needs the zone's name to cut days.
		if name := zoneOfCopy("/etc/localtime", "/usr/share/zoneinfo"); name != "" {
			return name
		}
	}
	name, offset := now.In(time.Local).Zone()
	return fmt.Sprintf("local %s, UTC%+03d:%02d", name, offset/3600, absInt(offset%3600)/60)
}

func absInt(n int) int {
	if n < 0 {
		return -n
	}
	return n
}

// zoneOfCopy names the zone whose file under root holds the same bytes as
// the file at path, preferring an Area/City name to an alias (UTC, CET);
// "" when none does.
func zoneOfCopy(path, root string) string {
	want, err := os.ReadFile(path)
	if err != nil || len(want) == 0 {
		return ""
	}
	var alias, found string
	filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || found != "" {
			return filepath.SkipDir
		}
		if d.IsDir() {
			if n := d.Name(); p != root && (n == "posix" || n == "right") {
				return filepath.SkipDir // the same zones again, or with leap seconds
			}
			return nil
		}
		if info, err := d.Info(); err != nil || info.Size() != int64(len(want)) {
			return nil
		}
		if b, err := os.ReadFile(p); err == nil && bytes.Equal(b, want) {
			name, _ := filepath.Rel(root, p)
			if strings.Contains(name, "/") && !strings.HasPrefix(name, "Etc/") {
				found = name
			} else if alias == "" {
				alias = name
			}
		}
		return nil
	})
	if found != "" {
		return found
	}
	return alias
}

package main

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/orchstat/orchstat/model/reports"
	"github.com/orchstat/orchstat/reports/render"
)

// byBlock is `report --by block`: Claude Code's billing blocks, apart
// from reports.UsageBy's groupings because a block is cut from the
// sequence of calls, not from each call alone.
const byBlock = "block"

// blocksRun is `orchstat report --by block` (see query.CallBlocks). Now
// is the injected clock's, so the active block, its burn rate and its
// projection are what a test sets.
func blocksRun(ctx context.Context, o *reportOptions) error {
	format, _ := render.ParsePageFormat(o.Format)
	now := o.g.io.Now().UTC()
	loc := time.Local
	if o.Timezone != "" {
		var err error
		if loc, err = time.LoadLocation(o.Timezone); err != nil {
			return usageError{fmt.Errorf("--timezone %q: not an IANA time zone name (Europe/Paris, UTC, Local): %v", o.Timezone, err)}
		}
	}
	var weekReset *time.Time
	if o.WeekReset != "" {
		t, err := time.Parse(time.RFC3339, inZone(o.WeekReset, loc))
		if err != nil {
			return usageError{fmt.Errorf("--week-reset %q: give a time as 2026-11-30T09:00:00+01:00 (RFC 3339) or a date", o.WeekReset)}
		}
		weekReset = &t
	}
	since, until := inZone(o.Since, loc), inZone(o.Until, loc)
	f, err := buildFilter(now, since, until, o.Runs, o.Provider)
	if err != nil {
		return err
	}
	// Blocks are cut from every call whatever the window (query.CallBlocks
	// keeps those that start in it), so the store is read whole.
	window := f
	window.Since, window.Until = nil, nil
	st, scope, unread, err := o.openPriced(ctx, &window)
	if err != nil {
		return err
	}
	defer st.Close()
	f.Paths = window.Paths
	b, err := st.CallBlocks(ctx, f, now, loc, weekReset)
	if err != nil {
		return err
	}
	if loc == time.Local {
		b.Timezone = localZoneName(os.Getenv, os.Readlink, now)
	}
	db, filters := o.viewHead(f)
	r := &reports.BlocksReport{GeneratedAt: now, Database: db, Scope: scope, Filters: filters, Blocks: *b}
	err = withOutput(o.g.io, o.Output, func(io *IO) error { return render.RenderBlocks(io.Out, r, format, io.OutWidth) })
	if err != nil {
		return err
	}
	if unread {
		return silentError{exitError}
	}
	return nil
}

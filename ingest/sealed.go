package ingest

import (
	"context"
	"path/filepath"
	"time"
)

// Sealed runs: a cron ingest's cost follows what changed, not the
// history. A run directory whose run has ended (its summary.json is
// written, at the end of a run) and that was read to the end of every
// file, with nothing written in it for sealQuiet, is recorded as sealed
// with its mtime. Later ingests stat the directory and, while its mtime
// is the one recorded, look at none of its files and load none of their
// states. What this can miss, until the next full pass (--full, or any
// ingest once the last full pass is FullEvery old): a file of a sealed run
// changed in place without the directory changing, which the
// orchestrator does not do once the run has ended (docs/ingest.md). A
// file added, removed or renamed in the directory changes its mtime, and
// the run is read as any other.

// sealQuiet is how long a run directory must have been left alone before
// it is sealed: an orchestrator that writes its summary and then a last
// line is not cut short.
const sealQuiet = 10 * time.Minute

// settleAge is how long a sealed run's folder must have been left alone
// before cron passes stop stat'ing it: one stat per finished run was most
// of a cron pass at 30,000 runs, and a year of runs would make every pass
// slower. A file added to such a folder is seen by the next full pass
// (FullEvery), as a file changed in place in a sealed run is
// (docs/ingest.md). A run finished within the last day is still stat'ed,
// so a tool that adds a report to a run it just finished is seen at once.
const settleAge = 24 * time.Hour

// defaultFullEvery is how often an ingest looks at every file, sealed runs'
// too, when Options.FullEvery is not set.
const defaultFullEvery = 24 * time.Hour

// lastFullPass is the meta key of when the last full pass ended.
const lastFullPass = "last_full_pass"

// fullPassDue says whether this ingest must look at sealed runs' files
// too: the last full pass is older than opts.FullEvery, or there was none.
func fullPassDue(ctx context.Context, st Store, opts Options) (bool, error) {
	every := opts.FullEvery
	if every <= 0 {
		every = defaultFullEvery
	}
	v, ok, err := st.Setting(ctx, lastFullPass)
	if err != nil || !ok {
		return true, err
	}
	last, err := time.Parse(time.RFC3339Nano, v)
	return err != nil || opts.Now().Sub(last) >= every, nil
}

// sealable picks the run directories this ingest can seal: listed, not
// sealed already, holding a summary and a trace, every file of them read
// to its end (final holds the states this ingest committed; the others are
// as before), none failed, and all left alone for sealQuiet.
func sealable(p *plan, final map[int32]readTo, errs []FileError, now time.Time) []listing {
	failed := map[string]bool{}
	for _, e := range errs {
		failed[filepath.Dir(e.Path)] = true
		failed[e.Path] = true
	}
	type dir struct {
		ids            []int32
		summary, trace bool
		unsealable     bool
		// written is set when this ingest wrote a state of one of its
		// files.
		written bool
	}
	dirs := map[string]*dir{}
	for _, l := range p.lists {
		if !l.sealed && !l.mtime.IsZero() && !failed[l.dir] && now.Sub(l.mtime) >= sealQuiet {
			dirs[l.dir] = &dir{}
		}
	}
	if len(dirs) == 0 {
		return nil
	}
	for _, t := range p.tasks {
		d := dirs[filepath.Dir(t.src.path)]
		if d == nil {
			continue
		}
		d.ids = append(d.ids, t.id)
		s, ok := final[t.id]
		d.written = d.written || ok
		if !ok && t.prev != nil {
			s, ok = readToOf(*t.prev), true
		}
		switch {
		case !ok || failed[t.src.path] || s.offset != s.size || now.Sub(s.mtime) < sealQuiet:
			d.unsealable = true
		case t.src.kind == KindSummary:
			d.summary = true
		case t.src.kind == KindTrace:
			d.trace = true
		}
	}
	var out []listing
	for _, l := range p.lists {
		d := dirs[l.dir]
		if d == nil || !d.summary || !d.trace || d.unsealable {
			continue
		}
		if s, ok := p.known.sealed[l.dir]; ok && s.MTime.Equal(l.mtime) && int(s.Files) == len(d.ids) && !d.written {
			continue // a full pass found it as it was sealed
		}
		out = append(out, listing{dir: l.dir, mtime: l.mtime, sealed: true, files: len(d.ids), ids: d.ids})
	}
	return out
}

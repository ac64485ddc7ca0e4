package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/orchstat/orchstat/ingest"
	"github.com/orchstat/orchstat/model/reports"
	"github.com/orchstat/orchstat/query"
	"github.com/orchstat/orchstat/query/lake"
)

// ingestFirst is what the commands that read the store share (report,
// check, rules backtest, simulate, recommend, export): PATH arguments to
// ingest before they read the store, the scope they cover, and the flags
// around that.
type ingestFirst struct {
	Paths []string
	// All covers the whole store even when PATHs are named.
	All       bool
	NoIngest  bool
	Quiet     bool
	StdinName string
	Tuning    tuning
	// Lake, when set, is read instead of the store (see lakeFlag), within
	// Window when the command has a time filter.
	Lake   string
	Window query.LakeOptions
	// lakeName is the lake's location as the lake names itself, once read.
	lakeName string
}

// lakeFlag adds --lake, for the commands that can read a lake.
func (i *ingestFirst) lakeFlag(cmd *cobra.Command) {
	cmd.Flags().StringVar(&i.Lake, "lake", "", "read this Parquet lake (a directory, or s3://bucket/prefix) instead of the store; see docs/lake.md")
}

// openLake loads the lake into a store in memory.
func (i *ingestFirst) openLake(ctx context.Context, g *globals) (*query.Store, error) {
	if len(i.Paths) > 0 {
		return nil, usageError{fmt.Errorf("--lake reads the runners' exports; PATH arguments name local files: give one or the other")}
	}
	lk, err := lake.Open(ctx, i.Lake, g.deps.lake)
	if err != nil {
		return nil, err
	}
	i.lakeName = lk.Location()
	o := i.Window
	o.LockTimeout = g.lockTimeout
	// Without a cache folder the lake is read whole, into memory.
	if o.Replica, err = lake.ReplicaPath(g.deps.lake, lk.Key()); err != nil {
		fmt.Fprintf(g.io.Err, "orchstat: %v; reading the whole lake into memory\n", err)
	}
	st, read, err := query.OpenLake(ctx, lk, o)
	warnAll(g.io.Err, read.Warnings)
	if err == nil {
		i.buildReplicaAfter(g, read, o.Replica)
	}
	return st, err
}

func (i *ingestFirst) flags(cmd *cobra.Command, noIngestHelp string) {
	cmd.Flags().BoolVar(&i.NoIngest, "no-ingest", false, noIngestHelp)
	cmd.Flags().BoolVar(&i.All, "all", false, "cover every run in the store, not only the runs found under the PATHs named")
	addIngestFlags(cmd, &i.Quiet, &i.StdinName, &i.Tuning)
}

// scopePaths are the paths whose runs the command covers, as the store
// names them; nil means the whole store (no PATH, or --all).
func (i *ingestFirst) scopePaths() []string {
	if i.All || len(i.Paths) == 0 {
		return nil
	}
	out := make([]string, 0, len(i.Paths))
	for _, p := range i.Paths {
		out = append(out, ingest.ScopePaths(p, i.StdinName)...)
	}
	return out
}

// scopeOf counts what the command's scope covers in st, and returns the
// paths its queries filter on: none when the scope leaves no run out, as
// filtering by path then changes nothing and costs a join on every query.
// shown is false when no one will read the counts (check --quiet), which
// spares the whole store's count.
func (i *ingestFirst) scopeOf(ctx context.Context, st *query.Store, shown bool) (reports.Scope, []string, error) {
	named := i.scopePaths()
	if len(named) == 0 && !shown {
		return reports.Scope{Paths: []string{}}, nil, nil
	}
	sc, err := st.ScopeOf(ctx, named)
	if err != nil {
		return sc, nil, err
	}
	if err := missingPaths(ctx, st, named); err != nil {
		return sc, nil, err
	}
	if sc.RunsLeftOut == 0 {
		return sc, nil, nil
	}
	return sc, sc.Paths, nil
}

// missingPaths fails for a named path that is not on disk and under which
// the store holds no run: a mistyped path, which without --no-ingest
// fails to ingest. Runs whose files were since removed are still the
// store's to report.
func missingPaths(ctx context.Context, st *query.Store, named []string) error {
	for _, p := range named {
		if strings.HasPrefix(p, "<stdin:") {
			continue
		}
		if _, err := os.Stat(p); err == nil || !errors.Is(err, fs.ErrNotExist) {
			continue
		}
		sc, err := st.ScopeOf(ctx, []string{p})
		if err != nil {
			return err
		}
		if sc.RunsInStore-sc.RunsLeftOut == 0 {
			return fmt.Errorf("%s: no such file or directory, and the store holds no run under it", p)
		}
	}
	return nil
}

// narrow limits f to the runs under the named PATHs, and warns of filters
// (a run ID, a provider) that match nothing; it returns the scope to show.
func (i *ingestFirst) narrow(ctx context.Context, g *globals, st *query.Store, f *query.Filter) (reports.Scope, error) {
	scope, paths, err := i.scopeOf(ctx, st, true)
	if err != nil {
		return scope, err
	}
	scope.Lake = i.lakeName
	f.Paths = paths
	return scope, warnUnmatched(ctx, g.io.Err, st, *f)
}

// open ingests first unless told not to, and returns the store and whether
// some file could not be read. The store is read-only unless write is set
// or an ingest runs. Named PATHs with nothing to read are an error, and
// no store is created for them.
func (i *ingestFirst) open(ctx context.Context, g *globals, write bool) (*query.Store, bool, error) {
	if i.Lake != "" {
		st, err := i.openLake(ctx, g)
		return st, false, err
	}
	paths := i.Paths
	if i.NoIngest {
		st, err := g.open(ctx, g.dbPath(paths), !write)
		return st, false, err
	}
	if err := checkFormat(i.Tuning.Format); err != nil {
		return nil, false, err
	}
	if len(paths) == 0 {
		runs := defaultRuns()
		if _, err := os.Stat(runs); err != nil {
			db := g.dbPath(nil)
			if _, derr := os.Stat(db); derr == nil {
				// No runs here, but a store exists: use it as it is.
				st, err := g.open(ctx, db, !write)
				return st, false, err
			}
			return nil, false, fmt.Errorf("no runs at %s and no store at %s: name the data to read (a runs folder, a run folder or a file), or pass --db", runs, db)
		}
		paths = []string{runs}
	}
	if err := checkPaths(paths); err != nil {
		return nil, false, err
	}
	db := g.dbPath(paths)
	found, err := somethingToRead(g, db, paths, i.Tuning, i.Quiet)
	if err != nil {
		return nil, false, err
	}
	st, err := g.open(ctx, db, false)
	if err != nil {
		return nil, false, err
	}
	res, err := doIngest(ctx, g, st, paths, found, i.Quiet, i.StdinName, i.Tuning)
	if err == nil && !i.Quiet {
		// What was read and not counted is said before the report, as
		// ingest says it.
		reportIgnored(g.io, res.Ignored)
	}
	if err == nil && nothingFound(paths, res) {
		err = nothingToRead(paths, i.Tuning.Format, "the store is unchanged")
	}
	if err != nil {
		st.Close()
		return nil, false, err
	}
	return st, len(res.Errors) > 0, nil
}

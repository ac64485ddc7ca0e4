package query

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/orchstat/orchstat/model/disk"
	"github.com/orchstat/orchstat/query/lake"
)

// LakeOptions narrow what OpenLake reads.
type LakeOptions struct {
	// Since and Until, when set, keep the orchestrator's event tables to
	// the partitions that hold runs starting in [Since, Until): the
	// report's time window. Runs outside it may be read too; the report's
	// own filter still applies.
	Since, Until *time.Time
	// Replica, when set, is the file the lake's rows are kept in between
	// reads, so a read loads only what changed since the last (see
	// lakesync.go). Without it they are read into memory, all of them.
	Replica string
	// LockTimeout bounds the wait for another orchstat reading the lake
	// into the same replica.
	LockTimeout time.Duration
	// All reads every column of every table, for users' SQL (a rule's
	// sql). Otherwise what no report reads is left out: the events table
	// (the trace lines' payloads) and the whole-file copies of summaries
	// and verification reports (raw), which are most of the lake's bytes.
	All bool
	// Memory bounds DuckDB while a read fills a replica; empty is
	// lakeReadMemory.
	Memory string
}

// LakeRead is what OpenLake read.
type LakeRead struct {
	Runners     int
	Files       int // lake files read
	FilesPruned int // lake files the time window left unread
	SourceFiles int // source files the runners ingested
	// Warnings say what the read did other than asked, for the user.
	Warnings []string
	// BuildReplica says the read was answered from the lake's files, as
	// its replica is still to be built: the caller starts BuildReplica
	// apart (see lakereplica.go).
	BuildReplica bool
}

// lakeReadMemory bounds DuckDB while a read brings a replica level with
// the lake. The read is one transaction (a reader killed midway leaves the
// replica as it was), whose rows DuckDB keeps partly in memory until the
// commit, so it needs more than an export: the first read of a 30,000-run
// lake peaked at 0.40 GB with 256MB, 0.66 GB without a bound; with 128MB
// DuckDB ran out of memory.
const lakeReadMemory = "256MB"

// syncBounded is sync in one transaction, within o.Memory (or
// lakeReadMemory) when the store is a replica on disk, which can spill (a
// store in memory holds every row anyway). The bound is lifted after the
// transaction ends: DuckDB refuses a SET in a transaction that failed.
func (l *lakeSync) syncBounded(ctx context.Context, objs map[string][]lakeObject, o LakeOptions) error {
	sync := func() error {
		return l.st.inTransaction(ctx, "reading lake "+l.lk.Location(), func() error { return l.sync(ctx, objs, o) })
	}
	if o.Replica == "" {
		return sync()
	}
	_, restore, err := l.st.boundMemory(ctx, cmp.Or(o.Memory, lakeReadMemory))
	if err != nil {
		return err
	}
	err = sync()
	restore()
	return err
}

// lakeObject is one lake file, with its partition.
type lakeObject struct {
	lake.Object
	system, day, runner string
}

// prunable are the tables whose partitions a time window can skip: the
// orchestrator's event tables (and events, when read), each of whose rows
// belongs to a run that run_spans places in its file. The others are read
// whole; they are small.
var prunable = map[string]bool{}

func init() {
	for _, t := range []Table{RunEvents, Escalations, ProviderSelections, ProviderStarts, ProviderFinishes, L2Events,
		PatchEvents, VerificationEvents, Steps, L3Candidates, Diagnoses, JudgeCalls} {
		prunable[t.Name] = true
	}
}

// OpenLake opens a lake as one store holding every runner's rows would
// hold them, so reports, checks and simulations run on it unchanged: its
// replica (LakeOptions.Replica), brought level with the lake, or, when
// there is none yet or none is asked for, a store in memory over the
// lake's files (lakeviews.go). Each runner's file ids are renumbered
// (ordered by runner, then id) and its paths prefixed with "runner:". The
// events table, the trace lines' payloads, is read only when asked
// (LakeOptions.All).
func OpenLake(ctx context.Context, lk lake.Lake, o LakeOptions) (*Store, LakeRead, error) {
	var got LakeRead
	objs, err := listLake(ctx, lk)
	if err != nil {
		return nil, got, err
	}
	if o.Replica == "" || ReplicaMissing(o.Replica) {
		st, err := openLakeViews(ctx, lk, objs, o, &got)
		got.BuildReplica = o.Replica != ""
		return st, got, err
	}
	st, err := openReplica(ctx, o)
	if err != nil {
		return nil, got, err
	}
	if err := syncReplica(ctx, st, lk, objs, o, &got); err != nil {
		st.Close()
		return nil, got, err
	}
	return st, got, nil
}

// syncReplica brings the replica st level with the lake, within
// o.Memory; when more changed than that holds in one transaction, it
// reads it again with the store's own limit, and says so, on a new
// instance (one that failed for want of memory, at a commit above all, is
// not to be trusted: see Reopen).
func syncReplica(ctx context.Context, st *Store, lk lake.Lake, objs map[string][]lakeObject, o LakeOptions, got *LakeRead) error {
	l := &lakeSync{st: st, lk: lk, read: got}
	err := l.syncBounded(ctx, objs, o)
	if !disk.IsOutOfMemory(err) {
		return err
	}
	if rerr := st.Reopen(ctx); rerr != nil {
		return errors.Join(err, rerr)
	}
	*got = LakeRead{Warnings: []string{fmt.Sprintf("reading the lake's changes into its replica did not fit in %s of memory; read them with DuckDB's own limit instead: %v", cmp.Or(o.Memory, lakeReadMemory), err)}}
	l = &lakeSync{st: st, lk: lk, read: got}
	return st.inTransaction(ctx, "reading lake "+lk.Location(), func() error { return l.sync(ctx, objs, o) })
}

// openReplica opens the lake's replica. It is a cache: one that cannot be
// opened as a store of this orchstat (an older one's, or damaged) is
// made anew.
func openReplica(ctx context.Context, o LakeOptions) (*Store, error) {
	st, err := Open(ctx, o.Replica, Options{LockTimeout: o.LockTimeout})
	var lock *LockError
	if err == nil || errors.As(err, &lock) {
		return st, err
	}
	for _, suffix := range []string{"", ".wal", ".writing"} {
		os.Remove(o.Replica + suffix)
	}
	return Open(ctx, o.Replica, Options{LockTimeout: o.LockTimeout})
}

// listLake lists every table's files, after checking the lake's version.
func listLake(ctx context.Context, lk lake.Lake) (map[string][]lakeObject, error) {
	meta, err := lk.List(ctx, "_orchstat/lake.json")
	if err != nil {
		return nil, err
	}
	if len(meta) == 0 {
		return nil, fmt.Errorf("lake %s holds no export (no _orchstat/lake.json): run orchstat export --lake %s on a runner first", lk.Location(), lk.Location())
	}
	paths, err := lk.Local(ctx, meta[:1])
	if err != nil {
		return nil, err
	}
	// The lake is others' data: its description is read only as far as
	// a description goes.
	f, err := os.Open(paths[0])
	if err != nil {
		return nil, err
	}
	b, err := io.ReadAll(io.LimitReader(f, 1<<20))
	f.Close()
	if err != nil {
		return nil, err
	}
	var v struct {
		Version int `json:"orchstat_lake_version"`
	}
	if err := json.Unmarshal(b, &v); err != nil {
		return nil, fmt.Errorf("lake %s: _orchstat/lake.json: %w", lk.Location(), err)
	}
	if v.Version > LakeVersion {
		return nil, fmt.Errorf("lake %s has version %d, newer than this orchstat reads (%d); upgrade orchstat", lk.Location(), v.Version, LakeVersion)
	}
	out := map[string][]lakeObject{}
	for _, t := range LakeTables() {
		list, err := lk.List(ctx, t.Name+"/")
		if err != nil {
			return nil, err
		}
		for _, ob := range list {
			if p, ok := parseLakeKey(t.Name, ob); ok {
				out[t.Name] = append(out[t.Name], p)
			}
		}
	}
	return out, nil
}

// parseLakeKey reads a lake file's partition from its key; other files
// (a user's notes, a Spark _SUCCESS) are not the lake's and are skipped.
func parseLakeKey(table string, ob lake.Object) (lakeObject, bool) {
	seg := strings.Split(ob.Key, "/")
	if len(seg) != 5 || seg[0] != table || !strings.HasSuffix(seg[4], ".parquet") {
		return lakeObject{}, false
	}
	o := lakeObject{Object: ob}
	for i, dst := range []*string{&o.system, &o.day, &o.runner} {
		k, v, ok := strings.Cut(seg[i+1], "=")
		if !ok || k != [...]string{"system", "day", "runner"}[i] {
			return lakeObject{}, false
		}
		*dst = v
	}
	return o, true
}

// readParquet renders DuckDB's reader over local files of the lake.
func readParquet(paths []string) string {
	q := make([]string, len(paths))
	for i, p := range paths {
		q[i] = quoteSQL(p)
	}
	return `read_parquet([` + strings.Join(q, ", ") + `], hive_partitioning = true, union_by_name = true,
		hive_types = {'system': VARCHAR, 'day': DATE, 'runner': VARCHAR})`
}

func (s *Store) exec(ctx context.Context, q string, args ...any) error {
	_, err := s.conn.ExecContext(ctx, q, args...)
	return cleanDuckErr(err)
}

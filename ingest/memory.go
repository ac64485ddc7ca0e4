package ingest

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/orchstat/orchstat/model/disk"
)

// learnedLimitKey names the meta row that remembers the memory limit the
// last ingest needed, so a store that has grown past the default starts
// there instead of failing and retrying at every cron round.
const learnedLimitKey = "ingest_memory_limit"

// What counts as DuckDB running out of memory is disk.IsOutOfMemory's:
// a commit's failure does not say "Out of Memory" (see there). A buffer
// pool that must spill where the disk is nearly full fails too, and a
// larger pool needs no spill, so that is retried the same way (tempFull
// tells it apart).
//
// tempFull matches DuckDB's failure to spill to its temporary directory.
var tempFull = regexp.MustCompile(`(?i)failed to offload|max_temp_directory_size`)

// Run ingests opts.Paths into st.
//
// DuckDB's memory limit is kept small while ingesting (see
// defaultMemoryLimit), but what a commit needs grows with the store: DuckDB
// appends to a table's last row group, and the pages it keeps pinned while
// committing grow with the tables. A limit that is too small fails the
// commit, which rolls back whole, and would fail the same way at every
// later ingest. So a failure for want of memory is retried with the limit
// raised, up to what the machine has; the store is exactly as before the
// failed transaction, and the retry reads the same lines again. The limit
// that worked is remembered in the store for the next ingest.
func Run(ctx context.Context, st Store, opts Options) (*Result, error) {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Hook == nil {
		opts.Hook = func(string) {}
	}
	if !opts.Full {
		due, err := fullPassDue(ctx, st, opts)
		if err != nil {
			return nil, err
		}
		opts.Full = due
	}
	if opts.Scratch {
		res, _, err := runOnce(ctx, st, opts, 0)
		return res, err
	}
	limit, learned, ceiling, err := memoryLimits(ctx, st, opts)
	if err != nil {
		return nil, err
	}

	// RESET does not restore the previous limit in DuckDB 1.1.2, so the
	// old value is put back by hand for the queries that follow.
	before, err := st.MemoryLimit(ctx)
	if err != nil {
		return nil, err
	}
	restore := func() { st.SetMemoryLimit(context.WithoutCancel(ctx), before) }

	var done tally // committed by attempts that then failed
	var replaced, moved []Replacement
	txns := 0
	for {
		res, committed, err := runOnce(ctx, st, opts, limit)
		if err == nil || !disk.IsOutOfMemory(err) || limit >= ceiling || ctx.Err() != nil {
			if res != nil {
				res.merge(done, replaced, moved, txns)
			}
			if err == nil && limit > learned {
				err = saveLearnedLimit(ctx, st, limit)
			}
			if err == nil && opts.Full && res.Files > 0 {
				err = st.SaveSetting(ctx, lastFullPass, opts.Now().UTC().Format(time.RFC3339Nano))
			}
			oom := disk.IsOutOfMemory(err)
			if oom && tempFull.MatchString(err.Error()) {
				err = noRoomToSpill(st, limit, err)
			} else if oom {
				err = fmt.Errorf("%w (DuckDB's memory limit was %s, the most this machine allows orchstat; "+
					"set ORCHSTAT_MEMORY_LIMIT higher to try anyway)", err, disk.FormatBytes(limit))
				if rerr := st.Reopen(ctx); rerr != nil {
					return res, errors.Join(err, rerr)
				}
			} else {
				restore()
			}
			return res, err
		}
		// The instance that failed is not used again (see Store.Reopen).
		if err := st.Reopen(ctx); err != nil {
			return nil, err
		}
		// What committed before the failure stays in the store, and the
		// next attempt skips it, so it is counted here.
		done.add(committed)
		if res != nil && committed != (tally{}) {
			replaced = append(replaced, res.Replaced...)
			moved = append(moved, res.Moved...)
			txns += res.Transactions
		}
		opts.Hook("memory-retry")
		limit = min(2*limit, ceiling)
	}
}

// memoryLimits are the memory limit Run's first attempt takes (the
// default or ORCHSTAT_MEMORY_LIMIT, or the limit the store learned if
// higher), the limit learned, and the ceiling a retry may raise it to.
func memoryLimits(ctx context.Context, st Store, opts Options) (limit, learned, ceiling int64, err error) {
	limit = int64(defaultMemoryLimit)
	if env := os.Getenv("ORCHSTAT_MEMORY_LIMIT"); env != "" {
		if limit, err = parseBytes(env); err != nil {
			return 0, 0, 0, fmt.Errorf("ORCHSTAT_MEMORY_LIMIT: %w", err)
		}
	}
	learned, err = learnedLimit(ctx, st)
	if err != nil {
		return 0, 0, 0, err
	}
	limit = max(limit, learned)
	ceiling = max(limit, opts.MemoryCeiling)
	if opts.MemoryCeiling <= 0 {
		ceiling = max(limit, memoryCeiling())
	}
	return limit, learned, ceiling, nil
}

// noRoomToSpill is err, DuckDB's failure to spill to its temporary
// directory with a memory limit of limit, in the words of a full disk.
func noRoomToSpill(st Store, limit int64, err error) error {
	dir := filepath.Dir(st.DBPath())
	free, _ := disk.FreeBytes(dir)
	return fmt.Errorf("no space left on device: %s (%s free): DuckDB could not spill to %s.tmp with a memory limit of %s; "+
		"free space there (a spill needs tens of MiB), or set ORCHSTAT_MEMORY_LIMIT higher so that it need not spill; the store is unchanged (%w)",
		dir, disk.FormatBytes(free), filepath.Base(st.DBPath()), disk.FormatBytes(limit), err)
}

// merge adds the work that earlier, failed attempts committed. Files they
// read are unchanged for the attempt that succeeded.
func (r *Result) merge(done tally, replaced, moved []Replacement, txns int) {
	r.Events += done.events
	r.Quarantined += done.quarantined
	r.Bytes += done.bytes
	r.Read += done.filesRead
	r.Unchanged = max(0, r.Unchanged-done.filesRead)
	r.Transactions += txns
	r.Replaced = append(replaced, r.Replaced...)
	r.Moved = append(moved, r.Moved...)
}

func learnedLimit(ctx context.Context, st Store) (int64, error) {
	v, ok, err := st.Setting(ctx, learnedLimitKey)
	if err != nil {
		return 0, fmt.Errorf("reading ingest state: %w", err)
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if !ok || err != nil || n < 0 {
		return 0, nil // not ours to fail on: the default applies
	}
	return n, nil
}

func saveLearnedLimit(ctx context.Context, st Store, n int64) error {
	if err := st.SaveSetting(ctx, learnedLimitKey, strconv.FormatInt(n, 10)); err != nil {
		return fmt.Errorf("saving the memory limit ingest needed: %w", err)
	}
	return nil
}

// memoryCeiling is the most memory an ingest may give DuckDB: DuckDB's own
// default, 80% of the memory this process may use (the machine's, or its
// cgroup's when that is smaller).
func memoryCeiling() int64 {
	total := memTotal()
	if b, err := os.ReadFile("/sys/fs/cgroup/memory.max"); err == nil {
		if n, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64); err == nil && n > 0 && n < total {
			total = n
		}
	}
	return total / 10 * 8
}

// memTotal reads MemTotal from /proc/meminfo; elsewhere it assumes 4 GiB.
func memTotal() int64 {
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		return 4 << 30
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "MemTotal:"); ok {
			fields := strings.Fields(rest)
			if len(fields) >= 1 {
				if kb, err := strconv.ParseInt(fields[0], 10, 64); err == nil && kb > 0 {
					return kb << 10
				}
			}
		}
	}
	return 4 << 30
}

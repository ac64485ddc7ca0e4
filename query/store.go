// Package query owns orchstat's DuckDB store: opening it safely alongside
// other orchstat processes, its schema, and the SQL behind every report.
//
// It has two rooms, told apart by file name:
//
//   - The engine: opening and locks (store.go, lock*.go, snapshot.go,
//     membound.go, disk.go), the schema and its migrations (schema*.go,
//     migrate_*.go), writing (write.go, feed.go, ingeststate.go,
//     clear.go), prices (pricing.go), the lake (lake*.go), and the user's
//     own SQL (sql.go, readonly.go, values.go).
//   - The read models, in read_*.go: each an exported method of Store
//     beside its SQL (Metrics, Report, Episodes, ScopeOf, …), computing
//     the model/ types the stages above draw and decide on. The few a
//     report runs on connections of its own (concurrent.go) also have a
//     lower-case form taking any querier.
//
// What check, exec and notifications keep (alert states, invocations,
// deliveries) is in alerts.go, exec.go and notify.go: rows they write and
// read back.
package query

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/duckdb/duckdb-go/v2"

	"github.com/orchstat/orchstat/model/records/prices"
)

// Options control how a store is opened.
type Options struct {
	ReadOnly bool
	// LockTimeout bounds how long Open waits while another process holds
	// the database. Zero means fail at once.
	LockTimeout time.Duration
	// Sleep and Now are injected so lock backoff can be tested without
	// waiting; nil means the real clock.
	Sleep func(time.Duration)
	Now   func() time.Time
	// Waiting, when set, is called once if Open has to wait for a lock.
	Waiting func(holder string)
	// Snapshot, for a read-only open, reads a private copy of the store
	// taken when it was opened, so a long query holds no lock and keeps
	// no writer waiting. Where a copy would cost too much (see
	// takeSnapshot), the store is read in place.
	Snapshot bool
	asIs     bool // read an outdated store without upgrading it; see Open
}

// Store is an open orchstat database. DuckDB transactions belong to a
// connection, so everything goes through the one conn, which the store
// keeps to itself: other packages read through its read models and write
// through a Tx.
type Store struct {
	Path string
	db   *sql.DB
	conn *sql.Conn
	// Recovered is set when Open found and set aside the unfinished work
	// of an older orchstat's crashed writer (see setAsideWAL).
	Recovered bool
	// Reread counts the agents' files whose rows the schema's upgrade
	// forgot as this store was opened, to be read again: they were kept
	// in an older form (see rereadCalls). A read without an ingest lacks
	// them until then.
	Reread   int64
	lock     *flock
	ticket   *ticket
	snapshot *snapshot
	dsn      string
	readOnly bool
	memory   bool // a lake's rows, held in memory (OpenLake)
	// figures is set when run_figures holds every run's figures, made by
	// this orchstat's definition; reads compute them from the events
	// otherwise (see runfigures.go).
	figures bool
	hook    func(string)
	// priceTable prices the calls (nil: the built-in table); priceSetup
	// makes priced_calls on a connection, and pricedOn says it is made on
	// conn (see pricing.go).
	priceTable *prices.Table
	priceSetup []stmt
	pricedOn   bool
	fed        *sql.Conn // the conn whose database has feedFunc (feed.go)
}

// LockError reports that another process kept the database locked.
type LockError struct {
	Path   string
	Holder string
	Waited time.Duration
}

func (e *LockError) Error() string {
	return fmt.Sprintf("database %s is locked by %s; gave up after waiting %s (raise --lock-timeout to wait longer)",
		e.Path, e.Holder, e.Waited.Round(time.Millisecond))
}

// ErrNoDatabase is returned when a read-only open finds no database file.
var ErrNoDatabase = errors.New("no orchstat database")

var lockHolder = regexp.MustCompile(`Conflicting lock is held in (.*) \(PID (\d+)\)`)

// Open opens (creating if needed, unless read-only) the database at path.
//
// A read-only open of a store an older orchstat made upgrades it in place
// first, as a write would, so every command reads the schema this one
// expects. If the upgrade cannot be made (a file or directory without
// write permission, say), the store is read as it is.
func Open(ctx context.Context, path string, opts Options) (*Store, error) {
	st, err := openStore(ctx, path, opts)
	if !errors.Is(err, errOutdated) {
		return st, err
	}
	w := opts
	w.ReadOnly, w.Snapshot = false, false
	var reread int64
	if up, err := openStore(ctx, path, w); err == nil {
		reread = up.Reread
		up.Close()
	}
	opts.asIs = true
	st, err = openStore(ctx, path, opts)
	if st != nil {
		st.Reread = reread
	}
	return st, err
}

// errOutdated stops a read-only open of a store whose schema is older than
// this orchstat's; see Open.
var errOutdated = errors.New("the store's schema is outdated")

func openStore(ctx context.Context, path string, opts Options) (*Store, error) {
	o, err := newOpening(ctx, path, opts)
	if err != nil {
		return nil, err
	}
	// Readers share the store unless an older orchstat's crashed writer
	// left a log to set aside first, which takes the store to oneself.
	o.shared = opts.ReadOnly && !crashedWriter(o.abs)
	if o.tk, err = enqueue(o.abs, o.shared, o.now()); err != nil {
		return nil, err
	}
	st, err := o.run()
	if err != nil {
		o.tk.leave()
	}
	return st, err
}

// opening is one Open on its way: its place in the queue of processes
// that want the store, and how long it has waited.
type opening struct {
	ctx      context.Context
	abs, dsn string
	opts     Options
	sleep    func(time.Duration)
	now      func() time.Time
	start    time.Time
	delay    time.Duration
	warned   bool
	shared   bool
	tk       *ticket
}

func newOpening(ctx context.Context, path string, opts Options) (*opening, error) {
	o := &opening{ctx: ctx, opts: opts, sleep: opts.Sleep, now: opts.Now, delay: 25 * time.Millisecond}
	if o.sleep == nil {
		o.sleep = time.Sleep
	}
	if o.now == nil {
		o.now = time.Now
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, err
	}
	if opts.ReadOnly {
		if _, err := os.Stat(abs); err != nil {
			return nil, fmt.Errorf("%w at %s (run `orchstat ingest` first)", ErrNoDatabase, abs)
		}
	} else if err := os.MkdirAll(filepath.Dir(abs), 0o755); err != nil {
		return nil, fmt.Errorf("creating the database directory: %w", err)
	}
	o.abs, o.dsn = abs, abs
	if opts.ReadOnly {
		o.dsn += "?access_mode=READ_ONLY"
	}
	o.start = o.now()
	return o, nil
}

// wait sleeps before the next attempt, or says why it will not.
func (o *opening) wait(holder string) error {
	waited := o.now().Sub(o.start)
	if waited >= o.opts.LockTimeout {
		return &LockError{Path: o.abs, Holder: holder, Waited: waited}
	}
	if !o.warned && o.opts.Waiting != nil {
		o.opts.Waiting(holder)
		o.warned = true
	}
	if err := o.ctx.Err(); err != nil {
		return err
	}
	// Bounded exponential backoff: the holder is usually an ingest that
	// finishes in seconds, so poll quickly at first.
	o.sleep(min(o.delay, o.opts.LockTimeout-waited))
	o.delay = nextLockPoll(o.delay)
	return nil
}

// run takes orchstat's lock, in turn, and opens DuckDB, waiting while
// another process holds either.
func (o *opening) run() (*Store, error) {
	for {
		if holder, blocked := o.tk.ahead(); blocked {
			if err := o.wait(holder); err != nil {
				return nil, err
			}
			continue
		}
		lk, holder, err := tryLock(o.abs+".lock", o.shared)
		if err != nil {
			return nil, err
		}
		if lk == nil {
			if err := o.wait(holder); err != nil {
				return nil, err
			}
			continue
		}
		if o.shared && crashedWriter(o.abs) {
			// A writer ahead of this reader died: queue again, alone.
			lk.unlock()
			o.tk.leave()
			o.shared = false
			if o.tk, err = enqueue(o.abs, false, o.now()); err != nil {
				return nil, err
			}
			continue
		}
		st, holder, err := o.openLocked(lk)
		if st != nil || err != nil {
			return st, err
		}
		if err := o.wait(holder); err != nil {
			return nil, err
		}
	}
}

// openLocked opens DuckDB once orchstat's lock is held. When another
// program (the DuckDB CLI, say) has the file open, it returns no store and
// that program, to wait for.
func (o *opening) openLocked(lk *flock) (st *Store, holder string, err error) {
	recovered := false
	if !o.shared {
		if recovered, err = setAsideWAL(o.abs); err != nil {
			lk.unlock()
			return nil, "", err
		}
	}
	// Spill files of a process that died are never read again. The
	// directory is rarely there, so the costlier check is rarely made.
	if _, err := os.Stat(o.abs + ".tmp"); err == nil && !o.opts.ReadOnly && !heldElsewhere(o.abs) {
		removeTemp(o.abs)
	}
	dsn := o.dsn
	var snap *snapshot
	if o.opts.Snapshot && o.opts.ReadOnly {
		if snap = takeSnapshot(o.abs); snap != nil {
			lk.unlock()
			o.tk.leave()
			lk, o.tk = nil, nil
			dsn = snap.path + "?access_mode=READ_ONLY"
		}
	}
	connector, err := NewConnector(dsn)
	if err != nil {
		lk.unlock()
		snap.remove()
		m := lockHolder.FindStringSubmatch(err.Error())
		if m == nil {
			return nil, "", fmt.Errorf("opening database %s: %w", o.abs, cleanDuckErr(err))
		}
		return nil, describeHolder(m[2], m[1]), nil
	}
	st, err = open(o.ctx, o.abs, connector, o.opts.ReadOnly, o.opts.asIs)
	if err != nil {
		connector.Close()
		lk.unlock()
		snap.remove()
		return nil, "", err
	}
	st.lock, st.ticket, st.snapshot, st.Recovered, st.dsn, st.readOnly = lk, o.tk, snap, recovered, dsn, o.opts.ReadOnly
	return st, "", nil
}

// NewConnector opens DuckDB at dsn with every connection's session in UTC.
// The store's timestamps are UTC without a zone. DuckDB 1.5.6 has ICU built
// in, and compares such a timestamp with a TIMESTAMPTZ (now(), a literal
// with a zone, a time.Time the driver binds where no type is implied) in
// the session's zone, which would otherwise be the machine's.
func NewConnector(dsn string) (*duckdb.Connector, error) {
	return duckdb.NewConnector(dsn, func(c driver.ExecerContext) error {
		_, err := c.ExecContext(context.Background(), "SET TimeZone = 'UTC'", nil)
		return err
	})
}

// EngineVersion is the version of the DuckDB library linked in, such as
// "v1.5.6", read from an in-memory database.
func EngineVersion(ctx context.Context) (string, error) {
	c, err := NewConnector("")
	if err != nil {
		return "", err
	}
	db := sql.OpenDB(c)
	defer db.Close()
	var v string
	if err := db.QueryRowContext(ctx, "SELECT version()").Scan(&v); err != nil {
		return "", err
	}
	return v, nil
}

// setAsideWAL deals with a write-ahead log left by an orchstat older than
// the move to DuckDB 1.5.6 that died while writing (Open only calls it
// while holding the lock, so no live writer owns it). Those versions, on
// DuckDB 1.1.2, could not trust DuckDB to replay such a log (killed
// mid-write it reported a corrupt WAL, killed mid-checkpoint it could
// replay committed rows a second time), so they marked the store
// (orchstat.duckdb.writing) while writing and checkpointed every commit,
// and the log of a marked store was set aside, rolling rows and read
// positions back together to the last checkpoint. This orchstat leaves no
// mark: DuckDB 1.5.6 replays its log (benchmarks/RESULTS.md has the kill -9
// runs, and setting the log aside there once left a corrupt file). A mark
// an older orchstat left is honoured once, as it would have been.
func setAsideWAL(db string) (bool, error) {
	wal, mark := db+".wal", db+".writing"
	_, markErr := os.Stat(mark)
	if _, err := os.Stat(wal); err != nil || markErr != nil {
		if markErr == nil {
			os.Remove(mark) // a crash after the checkpoint: nothing to undo
		}
		return false, nil
	}
	if heldElsewhere(db) {
		return false, nil // a live log: DuckDB's own lock makes Open wait
	}
	if err := os.Rename(wal, wal+".discarded"); err != nil {
		return false, fmt.Errorf("setting aside the unfinished log of %s: %w", db, err)
	}
	os.Remove(mark)
	return true, nil
}

// crashedWriter reports whether an orchstat writer died leaving its log.
func crashedWriter(db string) bool {
	_, walErr := os.Stat(db + ".wal")
	_, markErr := os.Stat(db + ".writing")
	return walErr == nil && markErr == nil
}

// describeHolder names the process DuckDB says holds the lock, using its
// command line when /proc shows it.
func describeHolder(pid, exe string) string {
	desc := fmt.Sprintf("process %s (%s)", pid, exe)
	if n, err := strconv.Atoi(pid); err == nil {
		if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", n)); err == nil && len(b) > 0 {
			args := strings.Split(strings.TrimRight(string(b), "\x00"), "\x00")
			args[0] = filepath.Base(args[0])
			desc = fmt.Sprintf("process %d (%s)", n, strings.Join(args, " "))
		}
	}
	return desc
}

func open(ctx context.Context, path string, connector *duckdb.Connector, readOnly, asIs bool) (*Store, error) {
	db := sql.OpenDB(connector)
	conn, err := db.Conn(ctx)
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("opening database %s: %w", path, cleanDuckErr(err))
	}
	st := &Store{Path: path, db: db, conn: conn}
	if err := st.migrate(ctx, readOnly, asIs); err != nil {
		st.Close()
		return nil, err
	}
	if st.figures, err = st.figuresCurrent(ctx); err != nil {
		st.Close()
		return nil, fmt.Errorf("opening database %s: %w", path, cleanDuckErr(err))
	}
	return st, nil
}

func (s *Store) migrate(ctx context.Context, readOnly, asIs bool) error {
	want := schemaHash()
	var version, hash string
	err := s.conn.QueryRowContext(ctx, `SELECT
		coalesce(max(value) FILTER (WHERE key = 'schema_version'), ''),
		coalesce(max(value) FILTER (WHERE key = 'schema_hash'), '') FROM meta`).Scan(&version, &hash)
	switch {
	case err == nil:
		n, _ := strconv.Atoi(version)
		if n > SchemaVersion {
			return fmt.Errorf("database %s has schema version %d, newer than this orchstat understands (%d); upgrade orchstat", s.Path, n, SchemaVersion)
		}
	case readOnly:
		return fmt.Errorf("%s is not an orchstat database: %w", s.Path, cleanDuckErr(err))
	}
	// An up-to-date store needs no DDL, so opening it writes nothing.
	if hash == want || readOnly && asIs {
		return nil
	}
	if readOnly {
		return errOutdated
	}
	if _, err := s.conn.ExecContext(ctx, "BEGIN TRANSACTION"); err != nil {
		return err
	}
	rollback := func(err error) error {
		s.conn.ExecContext(ctx, "ROLLBACK")
		return fmt.Errorf("creating schema in %s: %w", s.Path, cleanDuckErr(err))
	}
	if s.Reread, err = s.rereadCalls(ctx); err != nil {
		return rollback(err)
	}
	for _, stmt := range tableStatements() {
		if _, err := s.conn.ExecContext(ctx, stmt); err != nil {
			return rollback(err)
		}
	}
	if err := s.checkColumns(ctx); err != nil {
		s.conn.ExecContext(ctx, "ROLLBACK")
		return err
	}
	if err := s.jsonAsText(ctx); err != nil {
		return rollback(err)
	}
	// An older store's runs get their figures once, here.
	if ok, err := s.figuresCurrent(ctx); err != nil {
		return rollback(err)
	} else if !ok {
		if err := s.RebuildFigures(ctx); err != nil {
			return rollback(err)
		}
	}
	for _, stmt := range views {
		if _, err := s.conn.ExecContext(ctx, stmt); err != nil {
			return rollback(err)
		}
	}
	// The schema's keys are rewritten; others (the store's id) are kept.
	if _, err := s.conn.ExecContext(ctx, `DELETE FROM meta WHERE key IN ('schema_version', 'schema_hash')`); err != nil {
		return rollback(err)
	}
	if _, err := s.conn.ExecContext(ctx, `INSERT INTO meta VALUES ('schema_version', ?), ('schema_hash', ?)`,
		strconv.Itoa(SchemaVersion), want); err != nil {
		return rollback(err)
	}
	if _, err := s.conn.ExecContext(ctx, "COMMIT"); err != nil {
		return err
	}
	return s.Checkpoint(ctx)
}

// jsonAsText turns the JSON columns of a store made with DuckDB 1.1.2 into
// VARCHAR, which is what the schema now says: DuckDB's JSON type is VARCHAR
// under an alias, and its functions read either, but duckdb-go v2 treats
// the alias as a request to encode: its Appender stores a Go string as a
// quoted JSON string, and reading gives nested Go values rather than the
// text the trace holds. Every value keeps its text.
func (s *Store) jsonAsText(ctx context.Context) error {
	rs, err := s.conn.QueryContext(ctx, `SELECT table_name, column_name FROM duckdb_columns()
		WHERE schema_name = 'main' AND data_type = 'JSON' AND NOT internal
		  AND table_oid IN (SELECT table_oid FROM duckdb_tables()) ORDER BY ALL`)
	if err != nil {
		return err
	}
	var alter []string
	for rs.Next() {
		var t, c string
		if err := rs.Scan(&t, &c); err != nil {
			rs.Close()
			return err
		}
		alter = append(alter, fmt.Sprintf(`ALTER TABLE %s ALTER COLUMN %s SET DATA TYPE VARCHAR`, quoteIdent(t), quoteIdent(c)))
	}
	rs.Close()
	if err := rs.Err(); err != nil {
		return err
	}
	for _, a := range alter {
		if _, err := s.conn.ExecContext(ctx, a); err != nil {
			return err
		}
	}
	return nil
}

// checkColumns catches a store whose tables predate a column orchstat
// writes: CREATE TABLE IF NOT EXISTS leaves such tables as they are.
func (s *Store) checkColumns(ctx context.Context) error {
	// One query for every table: duckdb_columns() binds every view each
	// time it runs, which once made creating a store cost a second of CPU.
	have := map[string]string{}
	err := eachRow(ctx, s.conn, "reading the tables' columns", `SELECT table_name, string_agg(column_name, ',' ORDER BY column_index)
		FROM duckdb_columns() WHERE schema_name = 'main' AND NOT internal GROUP BY table_name`, nil, func(rs *sql.Rows) error {
		var name, cols string
		if err := rs.Scan(&name, &cols); err != nil {
			return err
		}
		have[name] = cols
		return nil
	})
	if err != nil {
		return err
	}
	for _, t := range append([]Table{FileStates, DirStates}, FileTables...) {
		got := have[t.Name]
		var want []string
		for _, c := range t.Columns {
			want = append(want, c.Name)
		}
		if got != strings.Join(want, ",") {
			return fmt.Errorf("%s was made by another version of orchstat (table %s has columns %s, want %s); "+
				"it is only an index of your trace files: delete it and ingest again", s.Path, t.Name, got, strings.Join(want, ","))
		}
	}
	return nil
}

// Close releases the database and its lock. Closing checkpoints, so a
// cleanly closed store leaves no log behind.
func (s *Store) Close() error {
	err := s.conn.Close()
	if e := s.db.Close(); err == nil {
		err = e
	}
	s.lock.unlock()
	s.ticket.leave()
	s.snapshot.remove()
	return err
}

// Reopen closes DuckDB and opens the database again, keeping orchstat's
// lock. DuckDB 1.1.2 is not to be trusted after some failures, such as a
// commit that ran out of memory: later statements of the same instance
// have aborted the process. A new instance starts from the file, where
// the failed transaction left nothing.
func (s *Store) Reopen(ctx context.Context) error {
	s.conn.Close()
	s.db.Close()
	connector, err := NewConnector(s.dsn)
	if err != nil {
		return fmt.Errorf("reopening database %s: %w", s.Path, cleanDuckErr(err))
	}
	db := sql.OpenDB(connector)
	conn, err := db.Conn(ctx)
	if err != nil {
		db.Close()
		return fmt.Errorf("reopening database %s: %w", s.Path, cleanDuckErr(err))
	}
	s.db, s.conn = db, conn
	return nil
}

// Checkpoint writes everything committed so far into the database file
// itself, and removes an older orchstat's writing mark (see setAsideWAL).
func (s *Store) Checkpoint(ctx context.Context) error {
	if _, err := s.conn.ExecContext(ctx, "CHECKPOINT"); err != nil {
		return fmt.Errorf("checkpointing %s: %w", s.Path, cleanDuckErr(err))
	}
	if s.memory {
		return nil
	}
	if err := os.Remove(s.Path + ".writing"); err != nil && !os.IsNotExist(err) {
		return err
	}
	return nil
}

// cleanDuckErr strips the driver's boilerplate prefix from an error.
func cleanDuckErr(err error) error {
	if err == nil {
		return nil
	}
	msg := err.Error()
	for _, p := range []string{"database/sql/driver: could not open database: ", "duckdb error: "} {
		msg = strings.TrimPrefix(msg, p)
	}
	if msg == err.Error() {
		return err
	}
	return errors.New(msg)
}

func quoteIdent(s string) string { return `"` + strings.ReplaceAll(s, `"`, `""`) + `"` }

// DBPath is the store's database file, for a writer that knows the store
// only by an interface (ingest) to name it in its errors.
func (s *Store) DBPath() string { return s.Path }

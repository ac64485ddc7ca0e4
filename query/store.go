// Package query owns orchstat's DuckDB store: opening it safely alongside
// other orchstat processes, its schema, and the SQL behind every report.
package query

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/marcboeker/go-duckdb"
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
}

// Store is an open orchstat database. DuckDB transactions belong to a
// connection, so everything goes through the one Conn.
type Store struct {
	Path string
	DB   *sql.DB
	Conn *sql.Conn
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
func Open(ctx context.Context, path string, opts Options) (*Store, error) {
	sleep, now := opts.Sleep, opts.Now
	if sleep == nil {
		sleep = time.Sleep
	}
	if now == nil {
		now = time.Now
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
	dsn := abs
	if opts.ReadOnly {
		dsn += "?access_mode=READ_ONLY"
	}
	start := now()
	delay := 25 * time.Millisecond
	warned := false
	for {
		connector, err := duckdb.NewConnector(dsn, nil)
		if err == nil {
			st, err := open(ctx, abs, connector, opts.ReadOnly)
			if err != nil {
				connector.Close()
			}
			return st, err
		}
		m := lockHolder.FindStringSubmatch(err.Error())
		if m == nil {
			return nil, fmt.Errorf("opening database %s: %w", abs, cleanDuckErr(err))
		}
		holder := describeHolder(m[1], m[2])
		waited := now().Sub(start)
		if waited >= opts.LockTimeout {
			return nil, &LockError{Path: abs, Holder: holder, Waited: waited}
		}
		if !warned && opts.Waiting != nil {
			opts.Waiting(holder)
			warned = true
		}
		// Bounded exponential backoff: the holder is usually an ingest that
		// finishes in seconds, so poll quickly at first.
		d := min(delay, opts.LockTimeout-waited)
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		default:
		}
		sleep(d)
		delay = min(2*delay, time.Second)
	}
}

// describeHolder names the process DuckDB says holds the lock, using its
// command line when /proc shows it.
func describeHolder(exe, pid string) string {
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

func open(ctx context.Context, path string, connector *duckdb.Connector, readOnly bool) (*Store, error) {
	db := sql.OpenDB(connector)
	conn, err := db.Conn(ctx)
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("opening database %s: %w", path, cleanDuckErr(err))
	}
	st := &Store{Path: path, DB: db, Conn: conn}
	if err := st.migrate(ctx, readOnly); err != nil {
		st.Close()
		return nil, err
	}
	return st, nil
}

func (s *Store) migrate(ctx context.Context, readOnly bool) error {
	var v string
	err := s.Conn.QueryRowContext(ctx, `SELECT value FROM meta WHERE key = 'schema_version'`).Scan(&v)
	switch {
	case err == nil:
		n, _ := strconv.Atoi(v)
		if n > SchemaVersion {
			return fmt.Errorf("database %s has schema version %d, newer than this orchstat understands (%d); upgrade orchstat", s.Path, n, SchemaVersion)
		}
	case readOnly:
		return fmt.Errorf("%s is not an orchstat database: %w", s.Path, cleanDuckErr(err))
	}
	if readOnly {
		return nil
	}
	if _, err := s.Conn.ExecContext(ctx, "BEGIN TRANSACTION"); err != nil {
		return err
	}
	for _, stmt := range schemaStatements() {
		if _, err := s.Conn.ExecContext(ctx, stmt); err != nil {
			s.Conn.ExecContext(ctx, "ROLLBACK")
			return fmt.Errorf("creating schema in %s: %w", s.Path, cleanDuckErr(err))
		}
	}
	if _, err := s.Conn.ExecContext(ctx, `DELETE FROM meta WHERE key = 'schema_version'`); err != nil {
		s.Conn.ExecContext(ctx, "ROLLBACK")
		return err
	}
	if _, err := s.Conn.ExecContext(ctx, `INSERT INTO meta VALUES ('schema_version', ?)`, strconv.Itoa(SchemaVersion)); err != nil {
		s.Conn.ExecContext(ctx, "ROLLBACK")
		return err
	}
	_, err = s.Conn.ExecContext(ctx, "COMMIT")
	return err
}

// Close releases the database and its lock.
func (s *Store) Close() error {
	err := s.Conn.Close()
	if e := s.DB.Close(); err == nil {
		err = e
	}
	return err
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

package query

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"
)

// The notification queue. A notification is queued in the same
// transaction that saves the alert change behind it, and stays until a
// receiver accepts it: one that cannot be delivered now is retried by the
// next check, never dropped.
var (
	Notifications = Table{"notifications", "notifications queued by `orchstat check`, delivered or not", cols(
		"id BIGINT, receiver VARCHAR, group_key VARCHAR, status VARCHAR, reason VARCHAR, message VARCHAR, " +
			"queued_at TIMESTAMP, attempts INTEGER, last_attempt_at TIMESTAMP, last_error VARCHAR, delivered_at TIMESTAMP")}
	NotifyGroups = Table{"notify_groups", "when each receiver's firing alert group was last notified, for repeat_interval", cols(
		"receiver VARCHAR, group_key VARCHAR, last_queued_at TIMESTAMP")}
)

// deliveredRetention is how long delivered notifications are kept, as a
// log to query; undelivered ones are kept until delivered.
const deliveredRetention = 7 * 24 * time.Hour

// Queued is a notification waiting in the queue. Its message is kept as
// the JSON the check queued, to be sent as it is.
type Queued struct {
	ID       int64
	Receiver string
	Reason   string
	Message  json.RawMessage
	QueuedAt time.Time
	Attempts int
}

// NotificationRow is a notification a check queues: its receiver, the
// message's group key and status (firing or resolved), why it is sent,
// and the message as JSON.
type NotificationRow struct {
	Receiver, GroupKey, Status, Reason string
	Message                            json.RawMessage
}

// Delivery is the outcome of one check's attempts at a queued notification.
type Delivery struct {
	ID       int64     `json:"id"`
	Attempts int       `json:"attempts"`
	Err      string    `json:"error,omitempty"` // empty when delivered
	At       time.Time `json:"at"`
}

// loadNotifyGroups reads when each group was last queued, keyed by
// receiver and group key joined by a NUL (notify.Notification.Key).
func loadNotifyGroups(ctx context.Context, q querier) (map[string]time.Time, error) {
	rs, err := q.QueryContext(ctx, `SELECT receiver, group_key, last_queued_at FROM notify_groups`)
	if err != nil {
		return nil, fmt.Errorf("reading notification state: %w", err)
	}
	defer rs.Close()
	out := map[string]time.Time{}
	for rs.Next() {
		var recv, key string
		var at time.Time
		if err := rs.Scan(&recv, &key, &at); err != nil {
			return nil, fmt.Errorf("reading notification state: %w", err)
		}
		out[recv+"\x00"+key] = at.UTC()
	}
	return out, rs.Err()
}

// pendingNotifications lists the undelivered notifications, oldest first.
func pendingNotifications(ctx context.Context, q querier) ([]Queued, error) {
	rs, err := q.QueryContext(ctx, `SELECT id, receiver, reason, message, queued_at, attempts
		FROM notifications WHERE delivered_at IS NULL ORDER BY id`)
	if err != nil {
		return nil, fmt.Errorf("reading the notification queue: %w", err)
	}
	defer rs.Close()
	var out []Queued
	for rs.Next() {
		var n Queued
		var msg string
		if err := rs.Scan(&n.ID, &n.Receiver, &n.Reason, &msg, &n.QueuedAt, &n.Attempts); err != nil {
			return nil, fmt.Errorf("reading the notification queue: %w", err)
		}
		n.Message = json.RawMessage(msg)
		n.QueuedAt = n.QueuedAt.UTC()
		out = append(out, n)
	}
	return out, rs.Err()
}

// SaveCheck saves a check's outcome in one checkpointed transaction: the
// alerts (replacing the saved ones), the notifications their changes
// queue, and when each group was last queued.
func SaveCheck(ctx context.Context, st *Store, alerts []AlertRow, queue []NotificationRow, groups map[string]time.Time, now time.Time) error {
	return st.inTransaction(ctx, "saving alert state", func() error {
		if err := saveAlerts(ctx, st, alerts); err != nil {
			return err
		}
		if _, err := st.conn.ExecContext(ctx, "DELETE FROM notify_groups"); err != nil {
			return err
		}
		for key, at := range groups {
			recv, gk, _ := strings.Cut(key, "\x00")
			if _, err := st.conn.ExecContext(ctx, `INSERT INTO notify_groups VALUES (?, ?, ?)`, recv, gk, at.UTC()); err != nil {
				return err
			}
		}
		var next int64
		if err := st.conn.QueryRowContext(ctx, `SELECT coalesce(max(id), 0) + 1 FROM notifications`).Scan(&next); err != nil {
			return err
		}
		for i, n := range queue {
			if _, err := st.conn.ExecContext(ctx, `INSERT INTO notifications VALUES (?, ?, ?, ?, ?, ?, ?, 0, NULL, NULL, NULL)`,
				next+int64(i), n.Receiver, n.GroupKey, n.Status, n.Reason, string(n.Message), now.UTC()); err != nil {
				return err
			}
		}
		return nil
	})
}

// RecordDeliveries saves delivery attempts, and forgets notifications
// delivered more than a week before now. A notification recorded as
// delivered stays so, and is not counted again, so recording the same
// journal twice (see FoldDeliveries) changes nothing.
func RecordDeliveries(ctx context.Context, st *Store, ds []Delivery, now time.Time) error {
	return st.inTransaction(ctx, "saving notification deliveries", func() error {
		for _, d := range ds {
			at := d.At
			if at.IsZero() {
				at = now
			}
			var delivered, lastErr any
			if d.Err == "" {
				delivered = at.UTC()
			} else {
				lastErr = d.Err
			}
			if _, err := st.conn.ExecContext(ctx, `UPDATE notifications SET attempts = attempts + ?, last_attempt_at = ?,
				last_error = ?, delivered_at = ? WHERE id = ? AND delivered_at IS NULL`, d.Attempts, at.UTC(), lastErr, delivered, d.ID); err != nil {
				return err
			}
		}
		_, err := st.conn.ExecContext(ctx, `DELETE FROM notifications WHERE delivered_at < ?`, now.Add(-deliveredRetention).UTC())
		return err
	})
}

// countPending is how many notifications wait to be delivered.
func countPending(ctx context.Context, q querier) (int, error) {
	rs, err := q.QueryContext(ctx, `SELECT count(*) FROM notifications WHERE delivered_at IS NULL`)
	if err != nil {
		return 0, fmt.Errorf("reading the notification queue: %w", err)
	}
	defer rs.Close()
	var n int
	if rs.Next() {
		if err := rs.Scan(&n); err != nil {
			return 0, fmt.Errorf("reading the notification queue: %w", err)
		}
	}
	return n, rs.Err()
}

// Delivering notifications can take as long as a receiver's timeouts, so
// `orchstat check` does it holding no lock on the store: it writes each
// outcome, as the receiver answers, to a journal beside the store
// (<db>.deliveries, a JSON line each, synced), and folds the journal into
// the notifications table afterwards, or at the next delivery should it
// be killed first. So an acknowledged notification is never sent twice.
// One check delivers at a time (LockDeliveries), and only the holder of
// that lock appends to the journal or folds it.

// DeliveryJournal appends delivery outcomes to the journal.
type DeliveryJournal struct{ f *os.File }

// OpenDeliveryJournal opens the journal of the store at db for appending.
func OpenDeliveryJournal(db string) (*DeliveryJournal, error) {
	f, err := os.OpenFile(db+".deliveries", os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("opening the delivery journal: %w", err)
	}
	return &DeliveryJournal{f: f}, nil
}

// Record writes d and syncs it: once Record returns, a later check knows.
func (j *DeliveryJournal) Record(d Delivery) error {
	b, err := json.Marshal(d)
	if err != nil {
		return err
	}
	if _, err := j.f.Write(append(b, '\n')); err != nil {
		return fmt.Errorf("writing the delivery journal: %w", err)
	}
	if err := j.f.Sync(); err != nil {
		return fmt.Errorf("writing the delivery journal: %w", err)
	}
	return nil
}

func (j *DeliveryJournal) Close() error { return j.f.Close() }

// FoldDeliveries records the journal's outcomes in the store, then empties
// the journal. A line cut short by a crash is ignored: its delivery is
// tried again. The caller holds LockDeliveries.
func FoldDeliveries(ctx context.Context, st *Store, now time.Time) error {
	path := st.Path + ".deliveries"
	b, err := os.ReadFile(path)
	if os.IsNotExist(err) || (err == nil && len(b) == 0) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("reading the delivery journal: %w", err)
	}
	var ds []Delivery
	for _, line := range strings.Split(string(b), "\n") {
		var d Delivery
		if line != "" && json.Unmarshal([]byte(line), &d) == nil && d.ID > 0 {
			ds = append(ds, d)
		}
	}
	if err := RecordDeliveries(ctx, st, ds, now); err != nil {
		return err
	}
	if err := os.Remove(path); err != nil && !os.IsNotExist(err) {
		return fmt.Errorf("emptying the delivery journal: %w", err)
	}
	return nil
}

// ErrDeliveryBusy is LockDeliveries' error when another check kept
// delivering past the wait.
var ErrDeliveryBusy = errors.New("notifications are being delivered")

// LockDeliveries makes this process the one delivering notifications for
// the store at db, waiting up to timeout for another that is. The store
// itself is not locked: the caller must not hold the store while it
// waits here (a delivering check opens the store while holding this).
// sleep is the wait between polls, which must end with ctx: the caller
// passes retry.Sleep, the one such wait, which the store may not import.
func LockDeliveries(ctx context.Context, db string, timeout time.Duration, sleep func(context.Context, time.Duration) error) (release func(), err error) {
	deadline := time.Now().Add(timeout)
	delay := 10 * time.Millisecond
	for {
		lk, holder, err := tryLock(db+".deliver.lock", false)
		if err != nil {
			return nil, err
		}
		if lk != nil {
			return lk.unlock, nil
		}
		if !time.Now().Before(deadline) {
			return nil, fmt.Errorf("%w by %s (waited %s)", ErrDeliveryBusy, holder, timeout)
		}
		if err := sleep(ctx, delay); err != nil {
			return nil, err
		}
		delay = nextLockPoll(delay)
	}
}

// inTransaction runs f in a transaction, committed and checkpointed when f
// succeeds and rolled back otherwise.
func (st *Store) inTransaction(ctx context.Context, what string, f func() error) (err error) {
	if _, err := st.conn.ExecContext(ctx, "BEGIN TRANSACTION"); err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	defer func() {
		if err != nil {
			st.conn.ExecContext(context.WithoutCancel(ctx), "ROLLBACK")
			err = fmt.Errorf("%s: %w", what, err)
		}
	}()
	if err := f(); err != nil {
		return err
	}
	if _, err := st.conn.ExecContext(ctx, "COMMIT"); err != nil {
		return err
	}
	return st.Checkpoint(ctx)
}

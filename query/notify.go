package query

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/orchstat/orchstat/model/alerts"
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

// LoadNotifyGroups reads when each notification group was last queued; see loadNotifyGroups.
func (c *CheckStore) LoadNotifyGroups(ctx context.Context) (map[string]time.Time, error) {
	return loadNotifyGroups(ctx, c.st.conn)
}

// PendingNotifications lists the undelivered notifications, oldest first; see pendingNotifications.
func (c *CheckStore) PendingNotifications(ctx context.Context) ([]alerts.Queued, error) {
	return pendingNotifications(ctx, c.st.conn)
}

// CountPending is how many notifications wait to be delivered; see countPending.
func (c *CheckStore) CountPending(ctx context.Context) (int, error) {
	return countPending(ctx, c.st.conn)
}

// pendingNotifications lists the undelivered notifications, oldest first.
func pendingNotifications(ctx context.Context, q querier) ([]alerts.Queued, error) {
	rs, err := q.QueryContext(ctx, `SELECT id, receiver, reason, message, queued_at, attempts
		FROM notifications WHERE delivered_at IS NULL ORDER BY id`)
	if err != nil {
		return nil, fmt.Errorf("reading the notification queue: %w", err)
	}
	defer rs.Close()
	var out []alerts.Queued
	for rs.Next() {
		var n alerts.Queued
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
func (c *CheckStore) SaveCheck(ctx context.Context, saved []alerts.Alert, queue []alerts.Notification, groups map[string]time.Time, now time.Time) error {
	st := c.st
	return st.inTransaction(ctx, "saving alert state", func() error {
		if err := saveAlerts(ctx, st, saved); err != nil {
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
// journal twice (see rules/check's foldDeliveries) changes nothing.
func (c *CheckStore) RecordDeliveries(ctx context.Context, ds []alerts.Delivery, now time.Time) error {
	st := c.st
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
// `orchstat check` does it holding no lock on the store, journaling each
// outcome beside the store and folding the journal into the notifications
// table afterwards (see rules/check). One check delivers at a time
// (LockDeliveries), and only the holder of that lock appends to the
// journal or folds it.

// LockDeliveries makes this process the one delivering notifications for
// the store at db, waiting up to timeout for another that is (then
// alerts.ErrDeliveryBusy). The store
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
			return nil, fmt.Errorf("%w by %s (waited %s)", alerts.ErrDeliveryBusy, holder, timeout)
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

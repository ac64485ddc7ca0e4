package query

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/orchstat/orchstat/rules"
	"github.com/orchstat/orchstat/rules/notify"
)

// The notification queue. A notification is queued in the same
// transaction that saves the alert change behind it, and stays until a
// receiver accepts it: one that cannot be delivered now is retried by the
// next check, never dropped.
var (
	Notifications = Table{"notifications", "notifications queued by `orchstat check`, delivered or not", cols(
		"id BIGINT, receiver VARCHAR, group_key VARCHAR, status VARCHAR, reason VARCHAR, message JSON, " +
			"queued_at TIMESTAMP, attempts INTEGER, last_attempt_at TIMESTAMP, last_error VARCHAR, delivered_at TIMESTAMP")}
	NotifyGroups = Table{"notify_groups", "when each receiver's firing alert group was last notified, for repeat_interval", cols(
		"receiver VARCHAR, group_key VARCHAR, last_queued_at TIMESTAMP")}
)

// deliveredRetention is how long delivered notifications are kept, as a
// log to query; undelivered ones are kept until delivered.
const deliveredRetention = 7 * 24 * time.Hour

// Queued is a notification waiting in the queue.
type Queued struct {
	ID       int64
	Receiver string
	Reason   string
	Message  notify.Message
	QueuedAt time.Time
	Attempts int
}

// Delivery is the outcome of one check's attempts at a queued notification.
type Delivery struct {
	ID       int64
	Attempts int
	Err      string // empty when delivered
}

// LoadNotifyGroups reads when each group was last queued, keyed by
// notify.Notification.Key.
func LoadNotifyGroups(ctx context.Context, q querier) (map[string]time.Time, error) {
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

// PendingNotifications lists the undelivered notifications, oldest first.
func PendingNotifications(ctx context.Context, q querier) ([]Queued, error) {
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
		if err := json.Unmarshal([]byte(msg), &n.Message); err != nil {
			return nil, fmt.Errorf("reading the notification queue: notification %d: %w", n.ID, err)
		}
		n.QueuedAt = n.QueuedAt.UTC()
		out = append(out, n)
	}
	return out, rs.Err()
}

// SaveCheck saves a check's outcome in one checkpointed transaction: the
// alerts (replacing the saved ones), the notifications their changes
// queue, and when each group was last queued.
func SaveCheck(ctx context.Context, st *Store, alerts []rules.Alert, queue []notify.Notification, groups map[string]time.Time, now time.Time) error {
	return st.inTransaction(ctx, "saving alert state", func() error {
		if err := saveAlerts(ctx, st, alerts); err != nil {
			return err
		}
		if _, err := st.Conn.ExecContext(ctx, "DELETE FROM notify_groups"); err != nil {
			return err
		}
		for key, at := range groups {
			recv, gk, _ := strings.Cut(key, "\x00")
			if _, err := st.Conn.ExecContext(ctx, `INSERT INTO notify_groups VALUES (?, ?, ?)`, recv, gk, at.UTC()); err != nil {
				return err
			}
		}
		var next int64
		if err := st.Conn.QueryRowContext(ctx, `SELECT coalesce(max(id), 0) + 1 FROM notifications`).Scan(&next); err != nil {
			return err
		}
		for i, n := range queue {
			msg, err := json.Marshal(n.Message)
			if err != nil {
				return err
			}
			if _, err := st.Conn.ExecContext(ctx, `INSERT INTO notifications VALUES (?, ?, ?, ?, ?, ?, ?, 0, NULL, NULL, NULL)`,
				next+int64(i), n.Receiver, n.Message.GroupKey, n.Message.Status, n.Reason, string(msg), now.UTC()); err != nil {
				return err
			}
		}
		return nil
	})
}

// RecordDeliveries saves a check's delivery attempts, and forgets
// notifications delivered more than a week before now.
func RecordDeliveries(ctx context.Context, st *Store, ds []Delivery, now time.Time) error {
	return st.inTransaction(ctx, "saving notification deliveries", func() error {
		for _, d := range ds {
			var delivered, lastErr any
			if d.Err == "" {
				delivered = now.UTC()
			} else {
				lastErr = d.Err
			}
			if _, err := st.Conn.ExecContext(ctx, `UPDATE notifications SET attempts = attempts + ?, last_attempt_at = ?,
				last_error = ?, delivered_at = ? WHERE id = ?`, d.Attempts, now.UTC(), lastErr, delivered, d.ID); err != nil {
				return err
			}
		}
		_, err := st.Conn.ExecContext(ctx, `DELETE FROM notifications WHERE delivered_at < ?`, now.Add(-deliveredRetention).UTC())
		return err
	})
}

// inTransaction runs f in a transaction, committed and checkpointed when f
// succeeds and rolled back otherwise.
func (st *Store) inTransaction(ctx context.Context, what string, f func() error) (err error) {
	if err := st.MarkWriting(); err != nil {
		return err
	}
	if _, err := st.Conn.ExecContext(ctx, "BEGIN TRANSACTION"); err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	defer func() {
		if err != nil {
			st.Conn.ExecContext(context.WithoutCancel(ctx), "ROLLBACK")
			err = fmt.Errorf("%s: %w", what, err)
		}
	}()
	if err := f(); err != nil {
		return err
	}
	if _, err := st.Conn.ExecContext(ctx, "COMMIT"); err != nil {
		return err
	}
	return st.Checkpoint(ctx)
}

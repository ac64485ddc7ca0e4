package check

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/orchstat/orchstat/model/alerts"
	"github.com/orchstat/orchstat/rules/alerting"
	"github.com/orchstat/orchstat/rules/notify"
)

// loadAlerts reads the alerts saved by the last check, by rule.
func loadAlerts(ctx context.Context, st Store) (map[string][]alerting.Alert, error) {
	saved, err := st.LoadAlerts(ctx)
	if err != nil {
		return nil, err
	}
	out := map[string][]alerting.Alert{}
	for _, s := range saved {
		a := alerting.Alert{Rule: s.Rule, Fingerprint: s.Fingerprint, Labels: s.Labels,
			ActiveAt: s.ActiveAt, FiredAt: s.FiredAt, ResolvedAt: s.ResolvedAt, LastEvalAt: s.LastEvalAt, KeepFiringSince: s.KeepFiringSince,
			Checks: s.Checks, Value: s.Value, Numerator: s.Numerator, Denominator: s.Denominator, NoData: s.NoData}
		if err := a.State.UnmarshalText([]byte(s.State)); err != nil {
			return nil, fmt.Errorf("reading alert state: %w", err)
		}
		out[a.Rule] = append(out[a.Rule], a)
	}
	return out, nil
}

// alertRows are alerts as the store keeps them.
func alertRows(as []alerting.Alert) ([]alerts.Alert, error) {
	out := make([]alerts.Alert, 0, len(as))
	for _, a := range as {
		state, err := a.State.MarshalText()
		if err != nil {
			return nil, fmt.Errorf("saving alert state: %w", err)
		}
		out = append(out, alerts.Alert{Rule: a.Rule, Fingerprint: a.Fingerprint, Labels: a.Labels, State: string(state),
			ActiveAt: a.ActiveAt, FiredAt: a.FiredAt, ResolvedAt: a.ResolvedAt, LastEvalAt: a.LastEvalAt, KeepFiringSince: a.KeepFiringSince,
			Checks: a.Checks, Value: a.Value, Numerator: a.Numerator, Denominator: a.Denominator, NoData: a.NoData})
	}
	return out, nil
}

// notificationRows are queued notifications as the store keeps them.
func notificationRows(queue []notify.Notification) ([]alerts.Notification, error) {
	out := make([]alerts.Notification, 0, len(queue))
	for _, n := range queue {
		msg, err := json.Marshal(n.Message)
		if err != nil {
			return nil, fmt.Errorf("saving alert state: %w", err)
		}
		out = append(out, alerts.Notification{Receiver: n.Receiver, GroupKey: n.Message.GroupKey, Status: n.Message.Status,
			Reason: n.Reason, Message: msg})
	}
	return out, nil
}

// pendingItems reads the undelivered notifications, oldest first, as
// items to send, with when each was queued.
func pendingItems(ctx context.Context, st Store) ([]notify.Item, map[int64]time.Time, error) {
	pending, err := st.PendingNotifications(ctx)
	if err != nil {
		return nil, nil, err
	}
	items := make([]notify.Item, 0, len(pending))
	queuedAt := map[int64]time.Time{}
	for _, p := range pending {
		it := notify.Item{ID: p.ID, Receiver: p.Receiver, Reason: p.Reason}
		if err := json.Unmarshal(p.Message, &it.Message); err != nil {
			return nil, nil, fmt.Errorf("reading the notification queue: notification %d: %w", p.ID, err)
		}
		items = append(items, it)
		queuedAt[p.ID] = p.QueuedAt
	}
	return items, queuedAt, nil
}

// splitScope parts the stored alerts into this check's scope's (whose
// scope label is scope, "" for the whole store) and the others'.
func splitScope(prev map[string][]alerting.Alert, scope string) (mine map[string][]alerting.Alert, others []alerting.Alert) {
	mine = map[string][]alerting.Alert{}
	for rule, alerts := range prev {
		for _, a := range alerts {
			if a.Labels["scope"] == scope {
				mine[rule] = append(mine[rule], a)
			} else {
				others = append(others, a)
			}
		}
	}
	return mine, others
}

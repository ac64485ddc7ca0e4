package check

import (
	"context"
	"fmt"
	"time"

	"github.com/orchstat/orchstat/model/alerts"
	"github.com/orchstat/orchstat/rules/notify"
)

// deliver sends the queued notifications and this check's Alertmanager
// refreshes, and returns how each went, with the number still queued.
// It holds no lock on the store while receivers answer: as one
// delivering check at a time, it reads the queue, lets the store go, and
// journals each outcome as it comes (see foldDeliveries), so a
// check killed mid-delivery never has an acknowledged notification sent
// again. Failures are told to o.Warn, with no secrets.
func deliver(ctx context.Context, o Options, db string, refresh []notify.Notification, wait time.Duration) ([]Sent, int, error) {
	release, err := o.Lock(ctx, db, wait)
	if err != nil {
		return nil, 0, err
	}
	defer release()
	items, queuedAt, err := queued(ctx, o, db)
	if err != nil {
		return nil, 0, err
	}
	for _, n := range refresh {
		items = append(items, notify.Item{Receiver: n.Receiver, Reason: n.Reason, Message: n.Message})
	}
	if len(items) == 0 {
		return nil, 0, nil
	}
	results, journalErr, err := send(ctx, o, db, items)
	if err != nil {
		return nil, 0, err
	}
	var rows []Sent
	kept := 0
	for _, r := range results {
		row := Sent{Receiver: r.Receiver, Status: r.Message.Status, Reason: r.Reason, Group: r.Message.GroupKey,
			Alerts: len(r.Message.Alerts), Attempts: r.Attempts, Delivered: r.Err == nil}
		if t, ok := queuedAt[r.ID]; ok && t.Before(o.Now.Truncate(time.Microsecond)) {
			row.QueuedAt = &t
		}
		if r.Err != nil {
			row.Error = r.Err.Error()
			what := "kept for the next check"
			if r.ID == 0 {
				what = "not sent; the next check sends it again"
			} else {
				kept++
			}
			o.Warn(fmt.Sprintf("notification (%s, %s) %s: %v", r.Message.Status, r.Message.GroupKey, what, r.Err))
		}
		rows = append(rows, row)
	}
	if journalErr != nil {
		return rows, kept, journalErr
	}
	st, err := o.Open(ctx, db)
	if err != nil {
		return rows, kept, fmt.Errorf("%w (the deliveries are journaled; the next check records them)", err)
	}
	defer st.Close()
	return rows, kept, foldDeliveries(ctx, st, o.Now)
}

// queued folds the deliveries journaled by an earlier check into the
// store and reads what is still to send, with when each was queued.
func queued(ctx context.Context, o Options, db string) ([]notify.Item, map[int64]time.Time, error) {
	st, err := o.Open(ctx, db)
	if err != nil {
		return nil, nil, err
	}
	defer st.Close()
	if err := foldDeliveries(ctx, st, o.Now); err != nil {
		return nil, nil, err
	}
	return pendingItems(ctx, st)
}

// send flushes items to their receivers, journaling each outcome of a
// queued notification as it comes. journalErr is the first outcome that
// could not be journaled.
func send(ctx context.Context, o Options, db string, items []notify.Item) (results []notify.Result, journalErr, err error) {
	journal, err := openJournal(db)
	if err != nil {
		return nil, nil, err
	}
	results = o.Sender.Flush(ctx, o.Rules.Receivers, items, func(r notify.Result) {
		if r.ID == 0 || journalErr != nil {
			return
		}
		d := alerts.Delivery{ID: r.ID, Attempts: r.Attempts, At: o.Clock().UTC()}
		if r.Err != nil {
			d.Err = r.Err.Error()
		}
		journalErr = journal.record(d)
	})
	journal.close()
	return results, journalErr, nil
}

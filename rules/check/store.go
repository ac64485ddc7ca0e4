package check

import (
	"context"
	"time"

	"github.com/orchstat/orchstat/model/alerts"
	"github.com/orchstat/orchstat/model/reports"
)

// Data is what the rules read: metrics and series over windows of runs.
// cmd/orchstat wires in the store (query.CheckStore); a test hands in a
// fake.
type Data interface {
	// WindowMetrics computes the metrics of the runs w selects: the
	// records' and agents' calls' when records is set, else the traces'.
	WindowMetrics(ctx context.Context, w alerts.Window, records bool) (reports.Metrics, error)
	// CallSeries, ProviderSeries and SystemSeries split a call metric, a
	// provider_* metric and a record metric by labels.
	CallSeries(ctx context.Context, w alerts.Window, metric string, by []string) ([]alerts.Series, error)
	ProviderSeries(ctx context.Context, w alerts.Window, metric string, by []string) ([]alerts.Series, error)
	SystemSeries(ctx context.Context, w alerts.Window, metric string) ([]alerts.Series, error)
	// HasRecords reports whether any system's records are held.
	HasRecords(ctx context.Context) (bool, error)
	// SQLSeries runs a rule's own read-only query.
	SQLSeries(ctx context.Context, sql string) ([]alerts.Series, error)
	// DataSpan is when the first and the last run under paths started.
	DataSpan(ctx context.Context, paths []string) (first, last *time.Time, err error)
	// Path names the data (the store's file).
	Path() string
	Close() error
}

// Store is where a check keeps its alerts between runs and queues its
// notifications, and what it reads the rules' data from unless given
// Data of its own.
type Store interface {
	Data
	// LoadAlerts reads the alerts saved by the last check.
	LoadAlerts(ctx context.Context) ([]alerts.Alert, error)
	// SaveCheck saves a check's alerts (replacing the saved ones), the
	// notifications their changes queue and when each group was last
	// queued, in one transaction.
	SaveCheck(ctx context.Context, saved []alerts.Alert, queue []alerts.Notification, groups map[string]time.Time, now time.Time) error
	// LoadNotifyGroups reads when each group was last queued, keyed by
	// notify.Notification.Key.
	LoadNotifyGroups(ctx context.Context) (map[string]time.Time, error)
	// PendingNotifications lists the undelivered notifications, oldest
	// first; CountPending counts them.
	PendingNotifications(ctx context.Context) ([]alerts.Queued, error)
	CountPending(ctx context.Context) (int, error)
	// RecordDeliveries saves delivery outcomes; recording one twice
	// changes nothing.
	RecordDeliveries(ctx context.Context, ds []alerts.Delivery, now time.Time) error
}

// LockFunc makes the caller the one check delivering notifications for
// the store at path, waiting up to timeout for another that is (then
// alerts.ErrDeliveryBusy), and returns the lock's release.
type LockFunc func(ctx context.Context, path string, timeout time.Duration) (release func(), err error)

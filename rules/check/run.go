package check

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/orchstat/orchstat/model/alerts"
	"github.com/orchstat/orchstat/rules/alerting"
	"github.com/orchstat/orchstat/rules/notify"
)

// Options are what a check needs: the store, the rules, the instant, and
// the way to the receivers.
type Options struct {
	// Store is the store, open for writing. Whoever opened it closes it,
	// and does so before Deliver (see Run).
	Store Store
	// Data, when set, is what the rules read instead of Store, which then
	// keeps only the alerts and notifications: a lake's rows (see
	// query.OpenLake), held in memory. Its opener closes it too.
	Data Data
	// Open opens the store at a path for writing, to record deliveries.
	Open func(ctx context.Context, path string) (Store, error)
	// Lock makes this check the one delivering the store's notifications.
	Lock  LockFunc
	Rules *alerting.File
	// Now is the instant of the check; Clock times deliveries.
	Now   time.Time
	Clock func() time.Time
	// Paths keeps the rules to the runs found under them (none: every
	// run), and Scope labels the alerts of such a check (see Evaluate).
	Paths []string
	Scope string
	// Sender delivers the notifications.
	Sender *notify.Sender
	// LockTimeout is how long to wait for another check delivering.
	LockTimeout time.Duration
	// Warn is told what went wrong without stopping the check: a rule
	// that failed, a notification not delivered.
	Warn func(msg string)
}

// Result is a check's outcome.
type Result struct {
	// DB is the store's path.
	DB string
	Evaluation
	// Sent is the notifications delivered or tried.
	Sent []Sent
	// Kept is how many notifications stay queued for the next check.
	Kept int
	// Latest is when the latest run of the check's scope started, read
	// only when some rule had no data, so the check can say where the
	// data is; nil otherwise, or when no run has a start.
	Latest *time.Time

	// refresh and queued are what Run leaves Deliver: the Alertmanager
	// refreshes to send, and how many notifications this check queued.
	refresh []notify.Notification
	queued  int
}

// Run checks the store: it evaluates every rule from the alerts the last
// check saved, and saves the alerts and the notifications their changes
// queue in one transaction. Alerts of other scopes are neither evaluated
// nor resolved; they are kept as they are. Run neither closes the store
// nor delivers: receivers can take as long as their timeouts, so the
// caller lets the store go and then calls Deliver, and nobody waits on a
// slow webhook to read or write the store.
func Run(ctx context.Context, o Options) (Result, error) {
	st := o.Store
	var data Data = st
	if o.Data != nil {
		data = o.Data
	}
	saved, err := loadAlerts(ctx, st)
	if err != nil {
		return Result{}, err
	}
	prev, others := splitScope(saved, o.Scope)
	sampler := NewSampler(data, o.Now)
	sampler.Paths = o.Paths
	res := Result{DB: st.Path(), Evaluation: Evaluate(ctx, sampler, o.Rules, prev, o.Now, o.Scope)}
	res.Alerts = append(res.Alerts, others...)
	if res.Latest, err = latestIfNoData(ctx, data, o.Rules, o.Paths, res.Rows); err != nil {
		return Result{}, err
	}
	for _, f := range res.Failures {
		o.Warn(fmt.Sprintf("rule %s: %v", f.Rule, f.Err))
	}
	refresh, queued, pending, err := save(ctx, st, o, res.Evaluation)
	if err != nil {
		return Result{}, err
	}
	res.refresh, res.queued, res.Kept = refresh, queued, pending
	return res, nil
}

// Deliver delivers what Run left queued in the store at res.DB, and this
// check's Alertmanager refreshes, setting res.Sent and res.Kept. Call it
// once the store Run was handed is closed: it opens the store itself (o.Open)
// only for as long as it reads the queue and records the outcomes. Of o
// it reads the opener, the lock, the clock and the warnings; o.Store and
// o.Data, closed by then, are not used.
func Deliver(ctx context.Context, o Options, res *Result) error {
	pending := res.Kept
	if pending == 0 && len(res.refresh) == 0 {
		return nil
	}
	// Only a check with notifications of its own waits for another
	// that is delivering; one with none leaves the queue to it.
	wait := o.LockTimeout
	if res.queued == 0 && len(res.refresh) == 0 {
		wait = 0
	}
	sent, kept, err := deliver(ctx, o, res.DB, res.refresh, wait)
	switch {
	case errors.Is(err, alerts.ErrDeliveryBusy):
		// Evaluated all the same: the queue keeps what is not sent.
		o.Warn(fmt.Sprintf("%v; %d queued notification(s) left for it or the next check", err, pending))
	case err != nil:
		return err
	default:
		res.Sent, res.Kept = sent, kept
	}
	return nil
}

// save saves the evaluation's alerts and queues its notifications, and
// returns the Alertmanager refreshes to send and how many notifications
// wait in the queue.
func save(ctx context.Context, st Store, o Options, ev Evaluation) (refresh []notify.Notification, queued, pending int, err error) {
	groups, err := st.LoadNotifyGroups(ctx)
	if err != nil {
		return nil, 0, 0, err
	}
	queue, refresh := notify.Plan(o.Rules.Route, o.Rules.Receivers, ev.Notify, groups, o.Now)
	saved, err := alertRows(ev.Alerts)
	if err != nil {
		return nil, 0, 0, err
	}
	rows, err := notificationRows(queue)
	if err != nil {
		return nil, 0, 0, err
	}
	if err := st.SaveCheck(ctx, saved, rows, groups, o.Now); err != nil {
		return nil, 0, 0, err
	}
	pending, err = st.CountPending(ctx)
	return refresh, len(rows), pending, err
}

// Look evaluates every rule at at, a past time, over data as it was then:
// each window ends at at. It is a look, not a round of cron: no alert
// state is read or saved and nothing is notified, so every alert starts
// from inactive (a rule with `for` is pending at most). The caller closes
// data.
func Look(ctx context.Context, data Data, rf *alerting.File, at time.Time, paths []string, scope string) (Result, error) {
	sampler := NewSampler(data, at)
	sampler.Paths = paths
	sampler.Past = true
	res := Result{DB: data.Path(), Evaluation: Evaluate(ctx, sampler, rf, nil, at, scope)}
	res.Notify = nil // a look notifies nothing
	for i := range res.Rows {
		// Every alert starts from inactive at the look: a change from it,
		// or its start, is no news.
		res.Rows[i].Changed = ""
		res.Rows[i].ActiveSince = nil
	}
	var err error
	res.Latest, err = latestIfNoData(ctx, data, rf, paths, res.Rows)
	return res, err
}

// latestIfNoData is when the latest run under paths started, when some
// rule over a time window has no data (a rule over the last N runs has
// runs whenever there are any); nil otherwise.
func latestIfNoData(ctx context.Context, data Data, rf *alerting.File, paths []string, rows []Row) (*time.Time, error) {
	timed := map[string]bool{}
	for _, r := range rf.Rules {
		timed[r.Name] = r.Window.Duration > 0
	}
	for _, r := range rows {
		if r.State == "no data" && timed[r.Rule] {
			_, last, err := data.DataSpan(ctx, paths)
			return last, err
		}
	}
	return nil, nil
}

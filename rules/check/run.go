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
	// Store is the store, open for writing; Run closes it.
	Store Store
	// Data, when set, is what the rules read instead of Store, which then
	// keeps only the alerts and notifications: a lake's rows (see
	// query.OpenLake), held in memory. Run closes it.
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
}

// Run checks the store: it evaluates every rule from the alerts the last
// check saved, saves the alerts and the notifications their changes queue
// in one transaction, lets the store go, and delivers what is queued.
// Alerts of other scopes are neither evaluated nor resolved; they are kept
// as they are.
func Run(ctx context.Context, o Options) (Result, error) {
	st := o.Store
	defer func() {
		if st != nil {
			st.Close()
		}
	}()
	var data Data = st
	if o.Data != nil {
		data = o.Data
		defer o.Data.Close()
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
	// Receivers can take as long as their timeouts, so the store is let go
	// before delivering: nobody waits on a slow webhook to read or write it.
	st.Close()
	st = nil
	res.Kept = pending
	if pending > 0 || len(refresh) > 0 {
		// Only a check with notifications of its own waits for another
		// that is delivering; one with none leaves the queue to it.
		wait := o.LockTimeout
		if queued == 0 && len(refresh) == 0 {
			wait = 0
		}
		sent, kept, err := deliver(ctx, o, res.DB, refresh, wait)
		switch {
		case errors.Is(err, alerts.ErrDeliveryBusy):
			// Evaluated all the same: the queue keeps what is not sent.
			o.Warn(fmt.Sprintf("%v; %d queued notification(s) left for it or the next check", err, pending))
		case err != nil:
			return Result{}, err
		default:
			res.Sent, res.Kept = sent, kept
		}
	}
	return res, nil
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

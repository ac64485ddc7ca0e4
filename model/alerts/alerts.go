// Package alerts holds what the alert check and the store exchange: the
// alerts and notifications a check keeps between cron runs, the outcomes
// of its deliveries, and the series its rules read. The store keeps and
// reads them as plain rows without knowing the rules (rules/check turns
// them into the rules' alerts and samples), so the rules' evaluation and
// the store can change apart. It holds as well what check and rules
// backtest print (check.go): filled from rules/check's results, drawn by
// reports/render, which need not know the rules.
package alerts

import (
	"encoding/json"
	"errors"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/orchstat/orchstat/model/reports"
)

// Alert is one saved alert, a row of alert_state. Times are UTC, zero
// when unset; State is the alert's state as text (pending, firing, ...).
type Alert struct {
	Rule, Fingerprint string
	Labels            map[string]string
	State             string

	ActiveAt, FiredAt, ResolvedAt, LastEvalAt, KeepFiringSince time.Time

	Checks                        int
	Value, Numerator, Denominator *float64
	NoData                        bool
}

// Notification is a notification a check queues: its receiver, the
// message's group key and status (firing or resolved), why it is sent,
// and the message as JSON.
type Notification struct {
	Receiver, GroupKey, Status, Reason string
	Message                            json.RawMessage
}

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

// Delivery is the outcome of one check's attempts at a queued
// notification, as the delivery journal keeps it, a JSON line each.
type Delivery struct {
	ID       int64     `json:"id"`
	Attempts int       `json:"attempts"`
	Err      string    `json:"error,omitempty"` // empty when delivered
	At       time.Time `json:"at"`
}

// ErrDeliveryBusy is the error of taking the delivery lock when another
// check kept delivering past the wait.
var ErrDeliveryBusy = errors.New("notifications are being delivered")

// Series is a metric's value for one label set.
type Series struct {
	Labels map[string]string
	reports.Metric
}

// Window is the runs a rule reads: those that started at or after Since
// and before Until (each when set), the Last of them to start when above
// 0, and only those found under Paths when set.
type Window struct {
	Since, Until *time.Time
	Last         int
	Paths        []string
}

// LabelText is a label set as Prometheus writes one, {a="x",b="y"},
// sorted by name; empty for no labels. check's table and the report's
// list of what needs attention name alerts alike with it.
func LabelText(labels map[string]string) string {
	if len(labels) == 0 {
		return ""
	}
	var parts []string
	for k, v := range labels {
		parts = append(parts, k+"="+strconv.Quote(v))
	}
	sort.Strings(parts)
	return "{" + strings.Join(parts, ",") + "}"
}

// The names of the alert states, as check prints and stores them
// (alerting.State's String), for the stages that read them back.
const (
	StateInactive = "inactive"
	StateResolved = "resolved"
	StatePending  = "pending"
	StateFiring   = "firing"
)

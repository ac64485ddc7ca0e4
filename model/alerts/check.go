package alerts

import (
	"fmt"
	"time"

	"github.com/orchstat/orchstat/model/reports"
)

// What `orchstat check` and `orchstat rules backtest` print: filled from
// rules/check's results (check.NewReport, cmd/orchstat's backtest), drawn
// by reports/render, which may not import the rules. The JSON documents'
// fields are declared in the order of their JSON names, which is the
// order the documents have always had (they were maps before).

// CheckRow is one alert, one label set whose condition does not hold
// (inactive), or one rule without data, as check prints it. Every rule
// has at least one row, so a reader sees how close each is to firing.
type CheckRow struct {
	Rule        string            `json:"rule"`
	Severity    string            `json:"severity"`
	State       string            `json:"state"` // inactive, pending, firing, resolved, no data or error
	Labels      map[string]string `json:"labels,omitempty"`
	Metric      string            `json:"metric"` // the rule's metric; "sql" for a rule with its own query
	Value       *float64          `json:"value"`
	Numerator   *float64          `json:"numerator,omitempty"`
	Denominator *float64          `json:"denominator,omitempty"`
	// NoPriceCalls is, for a cost metric, the calls its value leaves out
	// because their model has no price (docs/prices.md).
	NoPriceCalls *float64   `json:"no_price_calls,omitempty"`
	Threshold    *float64   `json:"threshold"`
	Condition    string     `json:"condition"`
	ActiveSince  *time.Time `json:"active_since,omitempty"`
	Changed      string     `json:"changed,omitempty"` // this check's transition, as from→to
	NoData       bool       `json:"no_data,omitempty"`
	// NeedsSamples is the samples an inactive label set's condition asks
	// for ("≥ 5") when its value is past the threshold but its
	// denominator short of them: why it does not hold.
	NeedsSamples string `json:"needs_samples,omitempty"`
	// Note says more about the row: when the latest data is, for a rule
	// without data, or why a rule was skipped.
	Note  string `json:"note,omitempty"`
	Error string `json:"error,omitempty"` // the rule could not be evaluated or annotated
}

// Sent is one notification a check delivered or tried to.
type Sent struct {
	Receiver  string     `json:"receiver"`
	Status    string     `json:"status"` // the message's: firing or resolved
	Reason    string     `json:"reason"` // change, repeat or refresh
	Group     string     `json:"group"`
	Alerts    int        `json:"alerts"`
	Attempts  int        `json:"attempts"`
	Delivered bool       `json:"delivered"`
	Error     string     `json:"error,omitempty"`
	QueuedAt  *time.Time `json:"queued_at,omitempty"` // set for notifications queued by an earlier check
}

// CheckReport is one check, as `check --format json` prints it.
type CheckReport struct {
	Alerts   []CheckRow `json:"alerts"`
	At       time.Time  `json:"at"`
	Database string     `json:"database"`
	ExitCode int        `json:"exit_code"`
	// LatestData is when the latest run started, when a rule had no data.
	LatestData    *time.Time    `json:"latest_data,omitempty"`
	Look          bool          `json:"look"` // check --at: nothing saved or sent
	Notifications []Sent        `json:"notifications"`
	Scope         reports.Scope `json:"scope"`
	Status        string        `json:"status"`

	// Windows are the evaluated rules' windows, by rule, from which the
	// notes of rules without data say where to look; not in the JSON,
	// whose rows carry the notes made from them.
	Windows map[string]RuleWindow `json:"-"`
}

// RuleWindow is the runs a rule reads as its rule file says: those that
// started in the Duration before the check, or its last Runs runs.
type RuleWindow struct {
	Duration time.Duration
	Runs     int
}

// BacktestReport is `rules backtest --format json`.
type BacktestReport struct {
	Database      string         `json:"database"`
	Evaluations   int            `json:"evaluations"`
	From          time.Time      `json:"from"`
	Notifications int            `json:"notifications"`
	Receivers     bool           `json:"receivers"`
	RuleFile      string         `json:"rule_file"`
	Rules         []RuleBacktest `json:"rules"`
	Scope         reports.Scope  `json:"scope"`
	Step          string         `json:"step"`
	StepSeconds   float64        `json:"step_seconds"`
	To            time.Time      `json:"to"`
	// Skipped counts the instants of the step left out because no run
	// started in the rules' longest window before them.
	Skipped int `json:"skipped_without_data"`

	// Longest is the rules' longest time window, which the text names when
	// the instants are the data's own (StepSeconds 0).
	Longest time.Duration `json:"-"`
}

// RuleBacktest is one rule's history.
type RuleBacktest struct {
	Rule      string   `json:"rule"`
	Severity  string   `json:"severity"`
	Metric    string   `json:"metric"`
	Threshold *float64 `json:"threshold"`
	Condition string   `json:"condition"`
	// Held counts the evaluations at which the condition held for some
	// label set; NoData those at which the rule had no data; Skipped
	// those at which it could not be evaluated at a past time
	// (check.ErrNotAtTime); Failed those at which it failed.
	Held int `json:"held"`
	// Short counts the evaluations at which a label set was past the
	// threshold but short of the samples the condition asks for (see
	// alerting.Rule.ShortOfSamples).
	Short   int `json:"short"`
	NoData  int `json:"no_data"`
	Skipped int `json:"skipped,omitempty"`
	Failed  int `json:"failed,omitempty"`
	// Blips counts the alerts that went pending and back to inactive
	// without firing.
	Blips int `json:"blips"`
	// Alerts are the alerts that fired, in order.
	Alerts []Incident `json:"alerts"`
	// Notifications counts the notifications that would have carried the
	// rule's alerts.
	Notifications int    `json:"notifications"`
	Error         string `json:"error,omitempty"` // the first failure
}

// Incident is one alert that fired: from pending to resolved.
type Incident struct {
	Labels   map[string]string `json:"labels,omitempty"`
	ActiveAt time.Time         `json:"active_at"`
	FiredAt  time.Time         `json:"fired_at"`
	// ResolvedAt is nil for an alert still firing at the last evaluation.
	ResolvedAt *time.Time `json:"resolved_at"`
	// The value when it fired.
	Value       *float64 `json:"value"`
	Numerator   *float64 `json:"numerator,omitempty"`
	Denominator *float64 `json:"denominator,omitempty"`
	// NoPriceCalls is, for a cost metric, the calls its value left out
	// for want of a price.
	NoPriceCalls *float64 `json:"no_price_calls,omitempty"`
	// Notifications counts the notifications that would have carried it.
	Notifications int `json:"notifications"`
}

// DurationText is a window or a step as a person writes it: 24h, 7d, 30m.
func DurationText(d time.Duration) string {
	switch {
	case d%(24*time.Hour) == 0 && d > 24*time.Hour:
		return fmt.Sprintf("%dd", d/(24*time.Hour))
	case d%time.Hour == 0:
		return fmt.Sprintf("%dh", d/time.Hour)
	case d%time.Minute == 0:
		return fmt.Sprintf("%dm", d/time.Minute)
	}
	return d.String()
}

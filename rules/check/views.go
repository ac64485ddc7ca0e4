package check

import (
	"time"

	"github.com/orchstat/orchstat/model/reports"
)

// The JSON documents `orchstat check` and `orchstat rules backtest` print.
// Their fields are declared in the order of their JSON names, which is the
// order the documents have always had (they were maps before).

// Report is one check, as `check --format json` prints it.
type Report struct {
	Alerts   []Row     `json:"alerts"`
	At       time.Time `json:"at"`
	Database string    `json:"database"`
	ExitCode int       `json:"exit_code"`
	// LatestData is when the latest run started, when a rule had no data.
	LatestData    *time.Time    `json:"latest_data,omitempty"`
	Look          bool          `json:"look"` // check --at: nothing saved or sent
	Notifications []Sent        `json:"notifications"`
	Scope         reports.Scope `json:"scope"`
	Status        string        `json:"status"`
}

// NewReport is the report of a check that ended with code, empty lists
// printed as [].
func NewReport(db string, scope reports.Scope, rows []Row, sent []Sent, code int, at time.Time, look bool, latest *time.Time) Report {
	if rows == nil {
		rows = []Row{}
	}
	if sent == nil {
		sent = []Sent{}
	}
	r := Report{Alerts: rows, At: at.UTC(), Database: db, ExitCode: code, Look: look, Notifications: sent, Scope: scope, Status: StatusNames[code]}
	if latest != nil {
		l := latest.UTC()
		r.LatestData = &l
	}
	return r
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
}

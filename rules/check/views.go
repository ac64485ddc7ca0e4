package check

import (
	"time"

	"github.com/orchstat/orchstat/model/alerts"
	"github.com/orchstat/orchstat/model/reports"
	"github.com/orchstat/orchstat/rules/alerting"
)

// A check's results are the model's rows (model/alerts), which
// reports/render draws without knowing the rules; these names keep check's
// own words for them.
type (
	Row          = alerts.CheckRow
	Sent         = alerts.Sent
	RuleBacktest = alerts.RuleBacktest
	Incident     = alerts.Incident
)

// NewReport is the report of a check, res, that ended with res.Code,
// empty lists printed as [], with the windows of the rules of rf for the
// notes of rules without data. look is set for check --at.
func NewReport(db string, scope reports.Scope, res Result, at time.Time, look bool, rf *alerting.File) alerts.CheckReport {
	rows, sent := res.Rows, res.Sent
	if rows == nil {
		rows = []Row{}
	}
	if sent == nil {
		sent = []Sent{}
	}
	r := alerts.CheckReport{Alerts: rows, At: at.UTC(), Database: db, ExitCode: res.Code, Look: look, Notifications: sent, Scope: scope,
		Status: StatusNames[res.Code], Windows: map[string]alerts.RuleWindow{}}
	if res.Latest != nil {
		l := res.Latest.UTC()
		r.LatestData = &l
	}
	if rf != nil {
		for _, rule := range rf.Rules {
			r.Windows[rule.Name] = alerts.RuleWindow{Duration: rule.Window.Duration, Runs: rule.Window.Runs}
		}
	}
	return r
}

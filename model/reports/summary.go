package reports

import "time"

// Summary is the report's first screen: what needs attention, one line
// per system present with its change against the previous window, and
// where the retries, failures and cost come from. Every renderer leads
// with it; JSON carries it whole under "summary".
type Summary struct {
	// Window is the report's window; Previous the one it is compared
	// with, nil under --compare none.
	Window   Period  `json:"window"`
	Previous *Period `json:"previous"`
	// CompareNote says why no change is shown for the whole summary
	// (nothing before the window, say), "" when changes are shown.
	CompareNote string    `json:"compare_note,omitempty"`
	Attention   Attention `json:"attention"`
	// Systems is one entry per system with data in the window, in
	// SystemOrder.
	Systems []SystemSummary `json:"systems"`
	// Where is the few models, sessions or runs behind most of the
	// retries, failures and cost.
	Where []WhereRow `json:"where"`
}

// Period is a window of time: Since inclusive, Until exclusive. A nil
// Since means from the first data.
type Period struct {
	Since *time.Time `json:"since"`
	Until time.Time  `json:"until"`
	// Days is the whole UTC days the window's daily series covers, in
	// order; each SystemSummary.Daily has one point per day.
	Days []string `json:"days,omitempty"`
}

// Attention is the alert rules firing or pending at the window's end, as
// `check --at` evaluates them at that instant (rules/check.Look): the two
// never disagree.
type Attention struct {
	At time.Time `json:"at"`
	// Rules is how many rules were evaluated; Alerts the firing and
	// pending ones, firing first.
	Rules  int            `json:"rules"`
	Alerts []AttentionRow `json:"alerts"`
	Counts map[string]int `json:"states"` // rows by state: inactive, no data, ...
	Note   string         `json:"note,omitempty"`
	// LatestData is when the latest run in scope started, set when it is
	// older than the rules' longest window: where the data is.
	LatestData *time.Time      `json:"latest_data,omitempty"`
	Failed     []AttentionFail `json:"failed,omitempty"`
}

// AttentionFail is a rule the look could not evaluate.
type AttentionFail struct {
	Rule  string `json:"rule"`
	Error string `json:"error"`
}

// AttentionRow is one firing or pending alert.
type AttentionRow struct {
	Rule        string            `json:"rule"`
	Severity    string            `json:"severity"`
	State       string            `json:"state"`
	Labels      map[string]string `json:"labels,omitempty"`
	Metric      string            `json:"metric"`
	Value       *float64          `json:"value"`
	Numerator   *float64          `json:"numerator,omitempty"`
	Denominator *float64          `json:"denominator,omitempty"`
	Threshold   *float64          `json:"threshold"`
	Condition   string            `json:"condition"`
	// Change is against the same rule and labels evaluated at the
	// previous window's end; nil under --compare none.
	Change *Change `json:"change,omitempty"`
}

// Figure is one headline figure of a system: a count, a rate or a sum,
// with its change against the previous window.
type Figure struct {
	// Metric names the figure as the metric catalog does
	// (record_failure_rate, call_cost_usd, ...), which says how it is
	// shown; "" when the system has no such figure.
	Metric      string   `json:"metric"`
	Value       *float64 `json:"value"`
	Numerator   *float64 `json:"numerator,omitempty"`
	Denominator *float64 `json:"denominator,omitempty"`
	Change      *Change  `json:"change,omitempty"`
}

// Change is a figure's change against the previous window.
type Change struct {
	Previous            *float64 `json:"previous"`
	PreviousNumerator   *float64 `json:"previous_numerator,omitempty"`
	PreviousDenominator *float64 `json:"previous_denominator,omitempty"`
	// Delta is the value now less the value then (for a rate, in
	// absolute points: 0.05 is five points); nil when no change is shown,
	// and Reason says why.
	Delta *float64 `json:"delta"`
	// Low and High bound Delta's 95% interval, for rates (Newcombe's
	// hybrid score interval for a difference of proportions).
	Low  *float64 `json:"low,omitempty"`
	High *float64 `json:"high,omitempty"`
	// Significant is false when the interval includes zero: such a
	// change is shown, but not as a rise or a fall.
	Significant bool   `json:"significant"`
	Reason      string `json:"reason,omitempty"`
}

// SystemSummary is one system's headline figures.
type SystemSummary struct {
	System string `json:"system"`
	// Unit is what Count counts: "runs", or "calls" for agents.
	Unit        string `json:"unit"`
	Count       Figure `json:"count"`
	FailureRate Figure `json:"failure_rate"`
	RetryRate   Figure `json:"retry_rate"`
	Cost        Figure `json:"cost_usd"`
	// Daily is one point per day of Window.Days.
	Daily []DayPoint `json:"daily"`
}

// DayPoint is one system's figures on one UTC day.
type DayPoint struct {
	Day     string   `json:"day"`
	Count   int64    `json:"count"`
	Failed  int64    `json:"failed"`
	Retried int64    `json:"retried"`
	CostUSD *float64 `json:"cost_usd"`
}

// WhereRow is one model, session or run behind a share of the retries,
// failures or cost of the window.
type WhereRow struct {
	// What is retries, failures or cost_usd.
	What string `json:"what"`
	// Kind is model, session, run or stage; Key names it, System its
	// system.
	Kind   string `json:"kind"`
	Key    string `json:"key"`
	System string `json:"system"`
	// Unit is what Value and Total count: "retried calls", "failed
	// attempts", "USD", ...
	Unit  string  `json:"unit"`
	Value float64 `json:"value"`
	// Total is the window's total of the same unit, over every key of the
	// kind; Share is Value over Total, 0 to 1.
	Total float64 `json:"total"`
	Share float64 `json:"share"`
}

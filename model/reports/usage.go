package reports

import "time"

// UsageBy are what `orchstat report --by` groups agents' calls by: a
// local day, an ISO week (from Monday), a month, a session, a model, the
// device the records were read on, or the project (working folder) the
// calls ran in (see model/devices).
var UsageBy = []string{"day", "week", "month", "session", "model", "device", "project"}

// UsageReport is what `orchstat report --by` shows: agents' calls, their
// tokens and cost, by period, session or model, as users of ccusage know
// them, with the retries and failures only orchstat counts.
type UsageReport struct {
	GeneratedAt time.Time `json:"generated_at"`
	Database    string    `json:"database"`
	Scope       Scope     `json:"scope"`
	Filters     Filters   `json:"filters"`
	Usage       Usage     `json:"usage"`
}

// Usage is agents' calls grouped one way.
type Usage struct {
	// By is one of UsageBy.
	By string `json:"by"`
	// Timezone is the IANA zone days, weeks and months are cut in.
	Timezone string `json:"timezone"`
	// Rows are the groups in order: periods oldest first, sessions by
	// their first call, models by name.
	Rows []UsageRow `json:"rows"`
	// Total is every call of Rows (Key "total"); its Models are every
	// model's.
	Total UsageRow `json:"total"`
	// NoPrice names the models whose calls have tokens but neither a
	// recorded cost nor a price: their cost is left out of every sum,
	// never counted as $0.
	NoPrice []NoPriceModel `json:"no_price"`
	// Undated counts the calls with no recorded time, which no day, week
	// or month holds (they are in Total, and in session and model rows).
	Undated int64 `json:"undated_calls"`
	// Copies counts the calls of the view the store holds more than one
	// copy of, each counted once: said, never dropped in silence.
	Copies UsageCopies `json:"copies"`
	// Devices are the devices the view's calls are counted under, by
	// name, with the folders that make each one (--by device only).
	Devices []UsageDevice `json:"devices"`
}

// UsageCopies are the calls seen more than once. A call's identity is
// its system, session and call id (docs/reports.md, "One call, several
// machines"); its copies are the rows of other files with the same.
type UsageCopies struct {
	// OnSeveralDevices counts calls whose copies are on two devices or
	// more: a synced ~/.claude read beside the local one, a session two
	// runners exported to a lake.
	OnSeveralDevices int64 `json:"calls_on_several_devices"`
	// WithinOneDevice counts calls copied within one device only: a
	// sub-agent's file replaying its parent's messages, a resumed
	// session, a file copied aside.
	WithinOneDevice int64 `json:"calls_copied_within_one_device"`
	// LeftOut counts the copies left out: a call seen three times leaves
	// two.
	LeftOut int64 `json:"copies_left_out"`
}

// UsageDevice is one device of the view.
type UsageDevice struct {
	Name string `json:"name"`
	// Folders are what make it the device: the PATH of --device
	// NAME=PATH, the lake runner, or the agent's folder.
	Folders []string `json:"folders"`
	// Calls counts the calls counted under it; Shared those of them that
	// another device holds a copy of too.
	Calls  int64 `json:"calls"`
	Shared int64 `json:"calls_also_on_other_devices"`
}

// NoPriceModel is a model without a price, and its calls.
type NoPriceModel struct {
	Provider string `json:"provider"`
	Model    string `json:"model"`
	Calls    int64  `json:"calls"`
}

// UsageRow is one group of calls: a period, session or model, or one
// model within one (in Models). Tokens mean what they mean in CallRow
// (input is the uncached input; reasoning is part of output); a sum is
// nil when no call of the row records it.
type UsageRow struct {
	// Key is the day (2006-01-02), the week's Monday (2006-01-02), the
	// month (2006-01), the session id, the model, the device or the
	// project (model/devices); "(no time)" holds
	// undated calls in a period view; "total" is the total.
	Key string `json:"key"`
	// Provider and Model name a model row.
	Provider string `json:"provider,omitempty"`
	Model    string `json:"model,omitempty"`
	// First and Last are the row's first and last call's times (UTC).
	First *time.Time `json:"first_call"`
	Last  *time.Time `json:"last_call"`
	Calls int64      `json:"calls"`
	// Failed counts calls that ended in failure.
	Failed int64 `json:"failed"`
	// WithAttempts counts the calls whose attempts the record shows;
	// Attempts sums theirs, and Retried counts those that took more
	// than one.
	WithAttempts     int64    `json:"with_attempts"`
	Attempts         int64    `json:"attempts"`
	Retried          int64    `json:"retried"`
	InputTokens      *float64 `json:"input_tokens"`
	CacheReadTokens  *float64 `json:"cache_read_tokens"`
	CacheWriteTokens *float64 `json:"cache_write_tokens"`
	OutputTokens     *float64 `json:"output_tokens"`
	ReasoningTokens  *float64 `json:"reasoning_tokens"`
	// CostUSD sums the calls' cost: recorded (CostFromRecord calls) or
	// priced from tokens (CostFromPrice); NoPriceCalls are left out.
	CostUSD        *float64 `json:"cost_usd"`
	CostFromRecord int64    `json:"cost_from_record"`
	CostFromPrice  int64    `json:"cost_from_price"`
	NoPriceCalls   int64    `json:"no_price_calls"`
	// FailedCostUSD is what the calls' failed attempts cost, recorded or
	// priced.
	FailedCostUSD *float64 `json:"failed_attempt_cost_usd"`
	// Models splits the row by provider and model; nil in a model row.
	Models []UsageRow `json:"models,omitempty"`
}

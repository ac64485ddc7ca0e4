package reports

// The record and call families' counts (MetricSpec.Num, Den), declared
// once as aggregates over a relation's rows: the store renders them in
// DuckDB's SQL over its views (query/read_records.go, read_calls.go), and
// sql-views in each engine's over the lake (reports/sqlviews). What each
// relation holds (which runs, attempts and calls are in scope, each
// once) is the renderer's; what is counted of it is declared here.

// Relations the counts aggregate.
const (
	// RecordRunRows are the record runs in scope, each once, with their
	// record_runs columns.
	RecordRunRows = "record_runs"
	// RecordAttemptRows are their attempts, each once, with attempt,
	// passed and signature, and prev_signature (the signature of the
	// attempt before) and after_deterministic (an earlier attempt failed
	// in a way no retry changes), both computed by the renderer.
	RecordAttemptRows = "record_attempts"
	// CallRows are the calls in scope, each once, with their calls columns.
	CallRows = "calls"
)

// FamilyCount declares one count of the record or call family.
type FamilyCount struct {
	Name string
	// Rows names the relation aggregated (RecordRunRows, …); none for a
	// Derived count.
	Rows string
	// Where is the condition, in SQL every engine takes, over the
	// relation's columns, that a row must meet; "" for every row.
	Where string
	// Sum, when set, is the expression summed over those rows; unset,
	// the rows are counted. A sum over no row (or only NULLs) has no
	// value, "nothing recorded", unless Zero.
	Sum  string
	Zero bool
	// Derived is an expression over the family's other counts.
	Derived string
}

// RecordCounts are the record family's counts.
var RecordCounts = []FamilyCount{
	{Name: "runs", Rows: RecordRunRows},
	{Name: "retried", Rows: RecordRunRows, Where: "attempts > 1"},
	{Name: "with_attempts", Rows: RecordRunRows, Where: "attempts IS NOT NULL"},
	{Name: "failed", Rows: RecordRunRows, Where: "status = 'failure'"},
	{Name: "finished", Rows: RecordRunRows, Where: "status IN ('success', 'failure')"},
	{Name: "attempts_known", Rows: RecordAttemptRows, Where: "passed IS NOT NULL"},
	{Name: "attempts_failed", Rows: RecordAttemptRows, Where: "passed = false"},
	{Name: "retries", Rows: RecordAttemptRows, Where: "attempt > 1"},
	{Name: "wasted", Rows: RecordAttemptRows, Where: "attempt > 1 AND after_deterministic"},
	{Name: "repeats", Rows: RecordAttemptRows,
		Where: "attempt > 1 AND passed = false AND signature IS NOT NULL AND signature = prev_signature"},
}

// tokensOf is the condition that a call records any of its tokens.
const anyTokens = "input_tokens IS NOT NULL OR cache_read_tokens IS NOT NULL OR cache_write_tokens IS NOT NULL OR output_tokens IS NOT NULL"

// CallCounts are the call family's counts but the costs, which need the
// price table and stay with the store's pricing (query/pricing.go).
var CallCounts = []FamilyCount{
	{Name: "calls", Rows: CallRows},
	{Name: "failed", Rows: CallRows, Where: "success = false"},
	{Name: "known", Rows: CallRows, Where: "success IS NOT NULL"},
	{Name: "with_attempts", Rows: CallRows, Where: "attempts IS NOT NULL"},
	{Name: "attempts", Rows: CallRows, Sum: "attempts", Zero: true},
	{Name: "retried", Rows: CallRows, Where: "attempts > 1"},
	{Name: "backoff_ms", Rows: CallRows, Sum: "backoff_ms"},
	{Name: "tokens", Rows: CallRows, Where: anyTokens,
		Sum: "coalesce(input_tokens, 0) + coalesce(cache_read_tokens, 0) + coalesce(cache_write_tokens, 0) + coalesce(output_tokens, 0)"},
	{Name: "input_tokens", Rows: CallRows, Sum: "input_tokens"},
	{Name: "cache_read_tokens", Rows: CallRows, Sum: "cache_read_tokens"},
	{Name: "cache_write_tokens", Rows: CallRows, Sum: "cache_write_tokens"},
	{Name: "output_tokens", Rows: CallRows, Sum: "output_tokens"},
	{Name: "reasoning_tokens", Rows: CallRows, Sum: "reasoning_tokens"},
	{Name: "failed_tokens", Rows: CallRows, Where: "failed_input_tokens IS NOT NULL OR failed_output_tokens IS NOT NULL",
		Sum: "coalesce(failed_input_tokens, 0) + coalesce(failed_output_tokens, 0)"},
	{Name: "retries", Derived: "attempts - with_attempts"},
	{Name: "attempts_unknown", Derived: "calls - with_attempts"},
	{Name: "backoff_seconds", Derived: "backoff_ms / 1000.0"},
}

// FamilyCountOf is the count named name among counts.
func FamilyCountOf(counts []FamilyCount, name string) (FamilyCount, bool) {
	for _, c := range counts {
		if c.Name == name {
			return c, true
		}
	}
	return FamilyCount{}, false
}

// DuckDBAggregate renders the count as a DuckDB aggregate over its
// relation's rows of one group.
func (c FamilyCount) DuckDBAggregate() string {
	s := "count(*)"
	if c.Sum != "" {
		s = "sum(" + c.Sum + ")"
	}
	if c.Where != "" {
		s += " FILTER (WHERE " + c.Where + ")"
	}
	if c.Zero {
		s = "coalesce(" + s + ", 0)"
	}
	return s
}

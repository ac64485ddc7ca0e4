package reports

import "slices"

// The metric catalog: every metric declared once, with what it is made of
// and how it is read. The store computes the counts a family's query
// names (MetricSpec.Num, Den, Unpriced) and turns them into metrics with
// MetricSpec.Of; renderers read Kind for units and Chart for the report
// page; docs/metrics.md's tables are generated from Doc and checked
// against it; and a test in query fails when a declared metric has no
// count behind it or no test holding it to hand-made numbers.

// Family says which records a metric is computed from, and so which
// query computes it and which scope an alert rule's window selects.
type Family string

const (
	// FamilyTrace metrics come from the orchestrator's trace events
	// (METRICS.md), computed by query/read_metrics.go.
	FamilyTrace Family = "trace"
	// FamilyRecord metrics come from other systems' run records
	// (the factory, claudestrator, orchestr8, exec), query/read_records.go.
	FamilyRecord Family = "record"
	// FamilyCall metrics come from agents' model calls (OpenTelemetry
	// GenAI, Claude Code, Codex), query/read_calls.go.
	FamilyCall Family = "call"
)

// Kind says what a metric's value is, and so how it is shown and compared.
type Kind int

const (
	// Count is a whole number of things: 0 when there are none.
	Count Kind = iota
	// Sum adds up a recorded quantity (tokens, seconds); it has no value
	// when no record states it, rather than a 0 nobody measured.
	Sum
	// Share is a ratio of things to things that include them: shown as a
	// percentage, and its change between windows has an interval.
	Share
	// Average is a ratio per run, per loop or per call: 3.33 iterations,
	// not 333.3%, and its change has no interval of a difference of
	// proportions.
	Average
	// Cost is a sum of US dollars that also says how many calls it leaves
	// out for want of a price (Metric.NoPrice, 0 included, so a rule can
	// tell "all priced" from "not a cost"). It has no value when no call
	// has a cost, rather than $0: calls that all lack a price cost
	// something unknown.
	Cost
)

var kindNames = [...]string{Count: "count", Sum: "sum", Share: "share", Average: "average", Cost: "cost"}

func (k Kind) String() string { return kindNames[k] }

// Ratio reports whether metrics of this kind carry a numerator and a
// denominator.
func (k Kind) Ratio() bool { return k == Share || k == Average }

// MetricSpec declares one metric.
type MetricSpec struct {
	Name   string
	Family Family
	Kind   Kind
	// Num names the count (or sum) the value is, or a ratio's numerator;
	// Den a ratio's denominator; Unpriced, for a Cost, the count of calls
	// its sum leaves out. They are the column names of the family's query.
	Num, Den, Unpriced string
	// NumDoc and DenDoc say in words what Num and Den count: the columns
	// of docs/metrics.md's tables.
	NumDoc, DenDoc string
	// Own marks a metric orchstat adds beyond METRICS.md.
	Own bool
	// Chart, when set, is the caption of the report page's chart of the
	// metric by day.
	Chart string
	// Labels are what an alert rule can split the metric by (`by:`):
	// provider and model for the provider requests' metrics, the system
	// for record metrics, and all three for call metrics.
	Labels []string
	// Oracle says what holds the SQL to numbers computed apart from it:
	// "reference" for the plain-Go reference implementation of METRICS.md
	// (reports/reference, compared on every dataset), else the name of a
	// test in query that checks the metric against hand-counted rows.
	Oracle string
}

// Of computes the metric from its family's counts for one group. A count
// missing from c is 0, but for a Sum or a Cost, where it means nothing
// was recorded: Of(nil) is the metric of an empty scope.
func (s MetricSpec) Of(c map[string]*float64) Metric {
	get := func(name string) float64 {
		if v := c[name]; v != nil {
			return *v
		}
		return 0
	}
	switch s.Kind {
	case Share, Average:
		num, den := get(s.Num), get(s.Den)
		m := Metric{Numerator: &num, Denominator: &den}
		if den != 0 {
			v := num / den
			m.Value = &v
		}
		return m
	case Sum:
		return Metric{Value: clone(c[s.Num])}
	case Cost:
		unpriced := get(s.Unpriced)
		return Metric{Value: clone(c[s.Num]), NoPrice: &unpriced}
	}
	v := get(s.Num)
	return Metric{Value: &v}
}

func clone(v *float64) *float64 {
	if v == nil {
		return nil
	}
	c := *v
	return &c
}

// The labels each kind of series is split by.
var (
	requestLabels = []string{"provider", "model"}
	recordLabels  = []string{"system"}
	callLabels    = []string{"system", "provider", "model"}
)

// Catalog is every metric, in the order reports show them: METRICS.md's,
// orchstat's own, then the record metrics, then the call metrics.
var Catalog = []MetricSpec{
	{Name: "runs", Family: FamilyTrace, Kind: Count, Num: "runs",
		NumDoc: "distinct runs with at least one event", Oracle: "reference"},
	{Name: "provider_requests", Family: FamilyTrace, Kind: Count, Num: "requests",
		NumDoc: "`ProviderRequestFinished` events", Labels: requestLabels, Oracle: "reference"},
	{Name: "provider_retry_rate", Family: FamilyTrace, Kind: Share, Num: "requests_retried", Den: "requests",
		NumDoc: "`ProviderRequestFinished` with `payload.retries > 0`", DenDoc: "`provider_requests`",
		Chart: "Provider retry rate by day", Labels: requestLabels, Oracle: "reference"},
	{Name: "provider_failure_rate", Family: FamilyTrace, Kind: Share, Num: "requests_failed", Den: "requests",
		NumDoc: "`ProviderRequestFinished` with `payload.success = false`", DenDoc: "`provider_requests`",
		Chart: "Provider failure rate by day", Labels: requestLabels, Oracle: "reference"},
	{Name: "provider_retries_total", Family: FamilyTrace, Kind: Count, Num: "request_retries",
		NumDoc: "sum of `payload.retries` over `ProviderRequestFinished`", Labels: requestLabels, Oracle: "reference"},
	{Name: "l2_runs", Family: FamilyTrace, Kind: Count, Num: "l2_runs",
		NumDoc: "runs with at least one `IterationStarted`", Oracle: "reference"},
	{Name: "l2_escalation_rate", Family: FamilyTrace, Kind: Share, Num: "l2_escalated", Den: "l2_or_escalated",
		NumDoc: "runs with a `RunEscalated` whose `payload.from` is `\"L2\"`",
		DenDoc: "runs that have an `IterationStarted`, or such an escalation, or both",
		Chart:  "L2 escalation rate by day", Oracle: "reference"},
	{Name: "avg_repair_iterations", Family: FamilyTrace, Kind: Average, Num: "repair_iterations", Den: "repair_runs",
		NumDoc: "sum, over runs with a `RepairAttempted`, of the run's highest `payload.iteration`",
		DenDoc: "runs with at least one `RepairAttempted` (with a numeric `iteration`)",
		Chart:  "Average repair iterations by day", Oracle: "reference"},
	{Name: "l3_steps", Family: FamilyTrace, Kind: Count, Num: "l3_steps",
		NumDoc: "distinct (run, `payload.iteration`) pairs among `CandidateGenerated`", Oracle: "reference"},
	{Name: "l3_diagnosis_rate", Family: FamilyTrace, Kind: Share, Num: "diagnosed_steps", Den: "l3_steps",
		NumDoc: "distinct (run, `payload.iteration`) pairs among `DiagnosisStarted`", DenDoc: "`l3_steps`",
		Chart: "L3 diagnosis rate by day", Oracle: "reference"},
	{Name: "diagnoses_per_l3_run", Family: FamilyTrace, Kind: Average, Num: "diagnoses", Den: "l3_runs",
		NumDoc: "`DiagnosisStarted` events", DenDoc: "runs with at least one `CandidateGenerated`", Oracle: "reference"},
	{Name: "judge_invocations_per_l3_run", Family: FamilyTrace, Kind: Average, Num: "judge_invocations", Den: "l3_runs",
		NumDoc: "`JudgeInvoked` events", DenDoc: "runs with at least one `CandidateGenerated`", Oracle: "reference"},
	{Name: "candidate_validity_rate", Family: FamilyTrace, Kind: Share, Num: "valid_candidates", Den: "candidates",
		NumDoc: "`CandidateGenerated` with `payload.valid = true`", DenDoc: "`CandidateGenerated` events", Oracle: "reference"},
	{Name: "failed_runs", Family: FamilyTrace, Kind: Count, Num: "failed_runs", Own: true,
		NumDoc: "runs with a `RunFinished` whose `payload.status` is `\"failure\"`", Oracle: "reference"},

	{Name: "record_runs", Family: FamilyRecord, Kind: Count, Num: "runs",
		NumDoc: "selected record runs", Labels: recordLabels, Oracle: "TestRecordMetrics"},
	{Name: "record_retry_rate", Family: FamilyRecord, Kind: Share, Num: "retried", Den: "with_attempts",
		NumDoc: "record runs whose recorded attempt count is above 1",
		DenDoc: "record runs whose record gives an attempt count", Labels: recordLabels, Oracle: "TestRecordMetrics"},
	{Name: "record_failure_rate", Family: FamilyRecord, Kind: Share, Num: "failed", Den: "finished",
		NumDoc: "record runs with status `failure`", DenDoc: "record runs with status `success` or `failure`",
		Labels: recordLabels, Oracle: "TestRecordMetrics"},
	{Name: "attempt_failure_rate", Family: FamilyRecord, Kind: Share, Num: "attempts_failed", Den: "attempts_known",
		NumDoc: "attempts recorded as failed", DenDoc: "attempts recorded as passed or failed", Labels: recordLabels, Oracle: "TestRecordMetrics"},
	{Name: "wasted_attempt_rate", Family: FamilyRecord, Kind: Share, Num: "wasted", Den: "retries",
		NumDoc: "retries that come after an earlier failed attempt of the same run whose failure a retry cannot change (see below), whatever their own outcome",
		DenDoc: "retries", Labels: recordLabels, Oracle: "TestRecordMetrics"},
	{Name: "signature_repeat_rate", Family: FamilyRecord, Kind: Share, Num: "repeats", Den: "retries",
		NumDoc: "retries that failed with the same failure signature as the attempt recorded just before them",
		DenDoc: "retries", Labels: recordLabels, Oracle: "TestRecordMetrics"},

	{Name: "calls", Family: FamilyCall, Kind: Count, Num: "calls", NumDoc: "calls", Labels: callLabels, Oracle: "TestCallMetrics"},
	{Name: "call_retry_rate", Family: FamilyCall, Kind: Share, Num: "retried", Den: "with_attempts",
		NumDoc: "calls that took more than one attempt", DenDoc: "calls whose attempts are known", Labels: callLabels, Oracle: "TestCallMetrics"},
	{Name: "call_failure_rate", Family: FamilyCall, Kind: Share, Num: "failed", Den: "known",
		NumDoc: "calls that failed, after any retries", DenDoc: "calls whose record says how they ended", Labels: callLabels, Oracle: "TestCallMetrics"},
	{Name: "call_retries_total", Family: FamilyCall, Kind: Count, Num: "retries",
		NumDoc: "attempts after the first, over calls whose attempts are known", Labels: callLabels, Oracle: "TestCallMetrics"},
	{Name: "attempts_per_call", Family: FamilyCall, Kind: Average, Num: "attempts", Den: "with_attempts",
		NumDoc: "attempts, over calls whose attempts are known", DenDoc: "those calls", Labels: callLabels, Oracle: "TestCallMetrics"},
	{Name: "calls_attempts_unknown", Family: FamilyCall, Kind: Count, Num: "attempts_unknown",
		NumDoc: "calls whose record does not show their attempts", Labels: callLabels, Oracle: "TestCallMetrics"},
	{Name: "call_backoff_seconds", Family: FamilyCall, Kind: Sum, Num: "backoff_seconds",
		NumDoc: "time calls spent waiting between attempts, in seconds: recorded (Claude Code's `retryInMs`) or the gaps between attempt spans; no value when no call records it",
		Labels: callLabels, Oracle: "TestCallMetrics"},
	{Name: "failed_attempt_tokens", Family: FamilyCall, Kind: Sum, Num: "failed_tokens",
		NumDoc: "input and output tokens of failed attempts, apart from the successful attempt's; no value when no call records them",
		Labels: callLabels, Oracle: "TestCallMetrics"},
	{Name: "failed_attempt_cost_usd", Family: FamilyCall, Kind: Cost, Num: "failed_cost", Unpriced: "failed_cost_unpriced",
		NumDoc: "the cost of failed attempts, recorded or priced (see [prices.md](prices.md)); no value when no call has it. Says how many calls it leaves out (`no_price_calls`): those with failed attempts' tokens and neither a recorded cost for them nor a price for their model",
		Labels: callLabels, Oracle: "TestCallSums"},
	{Name: "call_cost_usd", Family: FamilyCall, Kind: Cost, Num: "cost", Unpriced: "cost_unpriced",
		NumDoc: "the sum of the calls' `cost_usd` in `priced_calls`: the cost the record states, else the call's tokens (input, cache read, cache write, output) priced; failed attempts apart, in `failed_attempt_cost_usd`. No value when no call has a cost. Says how many calls it leaves out (`no_price_calls`): those with tokens, no recorded cost and no price for their model",
		Labels: callLabels, Oracle: "TestCallSums"},
	{Name: "call_input_tokens", Family: FamilyCall, Kind: Sum, Num: "input_tokens",
		NumDoc: "the sum of the calls' uncached input tokens (`calls.input_tokens`); no value when no call records them", Labels: callLabels, Oracle: "TestCallSums"},
	{Name: "call_cache_read_tokens", Family: FamilyCall, Kind: Sum, Num: "cache_read_tokens",
		NumDoc: "the sum of their cache reads (`cache_read_tokens`); the same", Labels: callLabels, Oracle: "TestCallSums"},
	{Name: "call_cache_write_tokens", Family: FamilyCall, Kind: Sum, Num: "cache_write_tokens",
		NumDoc: "the sum of their cache writes (`cache_write_tokens`, 1-hour writes included); the same", Labels: callLabels, Oracle: "TestCallSums"},
	{Name: "call_output_tokens", Family: FamilyCall, Kind: Sum, Num: "output_tokens",
		NumDoc: "the sum of their output tokens (`output_tokens`, reasoning tokens included); the same", Labels: callLabels, Oracle: "TestCallSums"},
}

// Spec is the declaration of the metric named name, if there is one.
func Spec(name string) (MetricSpec, bool) {
	i := slices.IndexFunc(Catalog, func(s MetricSpec) bool { return s.Name == name })
	if i < 0 {
		return MetricSpec{}, false
	}
	return Catalog[i], true
}

// FamilyOf is the catalog's metrics of one family, in order.
func FamilyOf(f Family) []MetricSpec {
	var out []MetricSpec
	for _, s := range Catalog {
		if s.Family == f {
			out = append(out, s)
		}
	}
	return out
}

// MetricsOf computes every metric of a family from one group's counts.
func MetricsOf(f Family, counts map[string]*float64) Metrics {
	m := Metrics{}
	for _, s := range FamilyOf(f) {
		m[s.Name] = s.Of(counts)
	}
	return m
}

// names lists the catalog's metrics that keep holds for, in order.
func names(keep func(MetricSpec) bool) []string {
	var out []string
	for _, s := range Catalog {
		if keep(s) {
			out = append(out, s.Name)
		}
	}
	return out
}

func is(name string, keep func(MetricSpec) bool) bool {
	s, ok := Spec(name)
	return ok && keep(s)
}

func ofFamily(f Family) func(MetricSpec) bool {
	return func(s MetricSpec) bool { return s.Family == f }
}
func ofKind(k Kind) func(MetricSpec) bool { return func(s MetricSpec) bool { return s.Kind == k } }

// MetricNames lists every metric in the order reports show them.
var MetricNames = names(func(MetricSpec) bool { return true })

// RecordMetric reports whether a metric is one of the other systems' runs,
// from their records.
func RecordMetric(name string) bool { return is(name, ofFamily(FamilyRecord)) }

// CallMetricNames are the metrics of agents' model calls: logical calls,
// not attempts, with the calls whose attempts the record does not show
// counted apart rather than as calls that took one attempt. Alert rules
// can split them by system, or by provider and model.
var CallMetricNames = names(ofFamily(FamilyCall))

// CallMetric reports whether a metric is one of CallMetricNames.
func CallMetric(name string) bool { return is(name, ofFamily(FamilyCall)) }

// AverageMetric reports whether a metric is an Average.
func AverageMetric(name string) bool { return is(name, ofKind(Average)) }

// CostMetricNames are the metrics of kind Cost.
var CostMetricNames = names(ofKind(Cost))

// CostMetric reports whether a metric is a Cost.
func CostMetric(name string) bool { return is(name, ofKind(Cost)) }

// LabelsOf are the labels an alert rule can split the metric named name
// by; none for a name the catalog does not declare.
func LabelsOf(name string) []string {
	s, _ := Spec(name)
	return s.Labels
}

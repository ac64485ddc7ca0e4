package render

import (
	"strings"
	"testing"

	"github.com/orchstat/orchstat/model/reports"
)

// TestCallSections checks that agents' calls reach every flat format once
// each: a grid per table in text, one CSV row per value and metric, and
// nothing at all in a report without calls.
func TestCallSections(t *testing.T) {
	t.Parallel()
	f := func(v float64) *float64 { return &v }
	s := func(v string) *string { return &v }
	row := reports.CallRow{System: "claude-code", Calls: 10, Failed: 1, WithAttempts: 8, Attempts: 12, Retried: 3,
		Evidence: "transcript 8, none 2", BackoffMS: f(4500), Tokens: f(900),
		Metrics: reports.Metrics{"calls": {Value: f(10)}, "call_retry_rate": {Value: f(0.375), Numerator: f(3), Denominator: f(8)}}}
	model := row
	model.Provider, model.Model = s("anthropic"), s("claude-sonnet-4-5")
	r := renderTestReport()
	r.Calls = reports.Calls{BySystem: []reports.CallRow{row}, ByModel: []reports.CallRow{model}}
	out := renderAll(t, r)

	text := string(out[FormatTable])
	for _, want := range []string{"Agents' model calls\n", "Agents' model calls by provider and model\n", "transcript 8, none 2", "4.5 s", "37.5%"} {
		if !strings.Contains(text, want) {
			t.Errorf("table lacks %q", want)
		}
	}
	csv := string(out[FormatCSV])
	for _, want := range []string{
		"calls,claude-code,calls,10,,\n",
		"calls,claude-code,unknown,2,,\n",
		"calls,claude-code,backoff_ms,4500,,\n",
		"calls,claude-code,call_retry_rate,0.375,3,8\n",
		"calls_by_provider_model,claude-code/anthropic/claude-sonnet-4-5,retried,3,,\n",
	} {
		if strings.Count(csv, want) != 1 {
			t.Errorf("CSV has %q %d times, want once", want, strings.Count(csv, want))
		}
	}
	if strings.Count(csv, "calls,claude-code,calls,") != 1 {
		t.Error("the calls count is written twice")
	}

	r.Calls = reports.Calls{}
	if text := string(renderAll(t, r)[FormatTable]); strings.Contains(text, "Agents'") {
		t.Error("a report without calls shows the calls sections")
	}
}

package retry

import (
	"errors"
	"strings"
	"testing"

	"github.com/orchstat/orchstat/model/failure"
)

func TestValidateClassifier(t *testing.T) {
	c := failure.DefaultProvider.With(
		failure.Rule{Class: failure.ClassRateLimit, Contains: []string{"Quota Exceeded"}},
		failure.Rule{Class: failure.ClassServer, Regexp: `upstream\s+\d+`},
		failure.Rule{Class: failure.ClassTimeout, Status: []string{"408"}},
		failure.Rule{Class: failure.ClassNetwork, Status: []string{"4XX"}},
		failure.Rule{Class: failure.ClassAbort, Equals: []string{"  STOP "}},
		failure.Rule{Class: failure.ClassAuth, Regexp: `(`}, // invalid: matches nothing
		failure.Rule{Class: failure.ClassClient},            // no matcher: matches nothing
	)
	// Validate names the bad rules.
	err := ValidateClassifier(c)
	var pe *PolicyError
	if !errors.As(err, &pe) {
		t.Fatalf("Validate = %v", err)
	}
	got := err.Error()
	for _, want := range []string{"classify[5].regexp: error parsing regexp", "classify[6]: a rule needs contains, regexp, status or equals"} {
		if !strings.Contains(got, want) {
			t.Errorf("Validate() = %q, missing %q", got, want)
		}
	}
	if err := ValidateClassifier(failure.DefaultProvider); err != nil {
		t.Errorf("DefaultProvider: %v", err)
	}
	if err := ValidateClassifier(failure.DefaultFactory); err != nil {
		t.Errorf("DefaultFactory: %v", err)
	}
	bad := failure.Classifier{Rules: []failure.Rule{{Class: "rate_limt", Contains: []string{""}, Status: []string{"5xy", "600", "42"}, Equals: []string{" "}}, {Contains: []string{"x"}}}}
	got = ValidateClassifier(bad).Error()
	for _, want := range []string{`classify[0].class: unknown class "rate_limt"; did you mean "rate_limit"?`,
		"classify[0].contains[0]: an empty string would match everything",
		`classify[0].status[0]: "5xy" is not a status`, `classify[0].status[1]: "600"`, `classify[0].status[2]: "42"`,
		"classify[0].equals[0]", "classify[1].class: a rule needs a class"} {
		if !strings.Contains(got, want) {
			t.Errorf("Validate() = %q, missing %q", got, want)
		}
	}
}

package render

import (
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/orchstat/orchstat/model/advice"
	"github.com/orchstat/orchstat/model/orchestr8/spec"
)

// RenderRecommendation writes r as JSON, or as text whose first line is
// orchestr8's prompt to the user; the text's warnings go to errw.
func RenderRecommendation(w, errw io.Writer, r advice.Recommendation, json bool) error {
	if json {
		b, err := MarshalJSON(r)
		if err != nil {
			return err
		}
		_, err = w.Write(b)
		return err
	}
	for _, warn := range r.Warnings {
		fmt.Fprintf(errw, "orchstat: warning: %s\n", warn)
	}
	// The first line is orchestr8's prompt to the user (line 60).
	fmt.Fprintf(w, "Recommended strategy: %s\n", r.Strategy)
	attempt := fmt.Sprintf("attempt %d", r.Attempt)
	if r.AttemptFrom == "history" {
		switch n := r.Attempt - 1; n {
		case 0:
			attempt += fmt.Sprintf(" (%s has no earlier failure at %s)", r.Item, r.Stage)
		case 1:
			attempt += fmt.Sprintf(" (%s failed at %s once before)", r.Item, r.Stage)
		default:
			attempt += fmt.Sprintf(" (%s failed at %s %d times before)", r.Item, r.Stage, n)
		}
	}
	fmt.Fprintf(w, "  %s, %s: %s\n", r.Stage, attempt, r.Reason)
	settings := fmt.Sprintf("window %d runs (%d recorded), threshold %s, maxRetries %d; %s", r.Window, r.Runs, advice.Percent(r.Threshold), r.MaxRetries, r.Config)
	switch {
	case !slices.ContainsFunc(spec.Keys, func(k string) bool { return !slices.Contains(r.ConfigDefaults, k) }):
		settings += " (defaults)"
	case len(r.ConfigDefaults) > 0:
		settings += " (defaults for " + strings.Join(r.ConfigDefaults, ", ") + ")"
	}
	fmt.Fprintf(w, "  %s\n", settings)
	if r.Scope != nil {
		fmt.Fprintf(w, "  %s\n", ScopeText(r.Store, *r.Scope, 0))
	}
	return nil
}

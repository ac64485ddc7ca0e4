package main

import (
	"context"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/orchstat/orchstat/query"
	"github.com/orchstat/orchstat/rules/yamlast"
)

// maxKnown caps the known values a warning lists: a store holds thousands
// of runs, and the closest one is named on its own anyway.
const maxKnown = 10

// warnUnmatched warns on w about each --provider or --run value that names
// nothing in the store, with the closest known value and a list of known
// ones. A typo in a filter otherwise gives an all-zero report that looks
// like a quiet week. The command still runs: it is a warning, not an
// error, as a run may simply not be ingested yet.
func warnUnmatched(ctx context.Context, w io.Writer, st *query.Store, f query.Filter) error {
	if f.Provider != "" {
		known, err := st.KnownProviders(ctx)
		if err != nil {
			return err
		}
		if !slices.ContainsFunc(known, func(k string) bool { return strings.EqualFold(k, f.Provider) }) {
			fmt.Fprintln(w, unmatched("--provider", f.Provider, "provider", "providers", known, true))
		}
	}
	if len(f.Runs) > 0 {
		known, err := st.KnownRuns(ctx)
		if err != nil {
			return err
		}
		set := make(map[string]bool, len(known))
		for _, r := range known {
			set[r] = true
		}
		for _, r := range f.Runs {
			if !set[r] {
				fmt.Fprintln(w, unmatched("--run", r, "run", "runs", known, false))
			}
		}
	}
	return nil
}

// unmatched words the warning for flag's value, which names no known one.
func unmatched(flag, value, noun, plural string, known []string, fold bool) string {
	var b strings.Builder
	fmt.Fprintf(&b, "orchstat: warning: %s %q matches no %s in the store", flag, value, noun)
	if len(known) == 0 {
		fmt.Fprintf(&b, ", which holds no %s", plural)
		return b.String()
	}
	if c, ok := closest(value, known, fold); ok {
		fmt.Fprintf(&b, "; did you mean %q?", c)
	} else {
		b.WriteString(".")
	}
	fmt.Fprintf(&b, " Known %s: %s", plural, knownList(known))
	return b.String()
}

// knownList joins up to maxKnown values, saying how many more there are.
func knownList(known []string) string {
	if len(known) <= maxKnown {
		return strings.Join(known, ", ")
	}
	return fmt.Sprintf("%s, and %d more", strings.Join(known[:maxKnown], ", "), len(known)-maxKnown)
}

// closest is the known value nearest to s by edit distance (the first in
// known's order on a tie), when it is near enough to be what was meant:
// closer than a rewrite of every character.
func closest(s string, known []string, fold bool) (string, bool) {
	if fold {
		s = strings.ToLower(s)
	}
	best, bestD := "", -1
	for _, k := range known {
		kk := k
		if fold {
			kk = strings.ToLower(k)
		}
		if d := yamlast.Distance(s, kk); bestD < 0 || d < bestD {
			best, bestD = k, d
		}
	}
	if bestD < 0 || bestD >= max(len([]rune(s)), 1) {
		return "", false
	}
	return best, true
}

// addFilterFlags adds the flags that narrow the runs read (report,
// simulate).
func addFilterFlags(cmd *cobra.Command, since, until *string, runs *[]string, provider *string) {
	f := cmd.Flags()
	f.StringVar(since, "since", "", "only runs that started at or after this duration ago or date")
	f.StringVar(until, "until", "", "only runs that started before this duration ago or date")
	f.StringArrayVar(runs, "run", nil, "only this run id (repeatable)")
	f.StringVar(provider, "provider", "", "only runs that used this provider (any case); request figures count its requests only")
}

// buildFilter builds a query.Filter from the flag values.
func buildFilter(now time.Time, since, until string, runs []string, provider string) (query.Filter, error) {
	f := query.Filter{Runs: runs, Provider: provider}
	var err error
	if since != "" {
		if f.Since, err = parseWhen(now, since); err != nil {
			return f, usageError{fmt.Errorf("--since: %w", err)}
		}
	}
	if until != "" {
		if f.Until, err = parseWhen(now, until); err != nil {
			return f, usageError{fmt.Errorf("--until: %w", err)}
		}
	}
	// An empty window is a mistake (the bounds swapped, most likely), not a
	// question whose answer is zero runs.
	if f.Since != nil && f.Until != nil && !f.Since.Before(*f.Until) {
		return f, usageError{fmt.Errorf("--since %s is not before --until %s: no run can start in that window",
			f.Since.Format(time.RFC3339), f.Until.Format(time.RFC3339))}
	}
	return f, nil
}

var daysRe = regexp.MustCompile(`^(\d+)d$`)

// parseWhen reads "24h"/"7d" as that long before now, or a date.
func parseWhen(now time.Time, s string) (*time.Time, error) {
	var t time.Time
	if m := daysRe.FindStringSubmatch(s); m != nil {
		n, _ := strconv.Atoi(m[1])
		t = now.AddDate(0, 0, -n)
	} else if d, err := time.ParseDuration(s); err == nil {
		t = now.Add(-d)
	} else if d, err := time.Parse("2006-01-02", s); err == nil {
		t = d
	} else if d, err := time.Parse(time.RFC3339Nano, s); err == nil {
		t = d
	} else {
		return nil, fmt.Errorf("%q is neither a duration (30m, 24h, 7d) nor a date (2026-11-01 or RFC 3339)", s)
	}
	t = t.UTC()
	return &t, nil
}

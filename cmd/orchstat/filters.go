package main

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"

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

package main

import (
	"fmt"
	"slices"

	"github.com/spf13/cobra"

	"github.com/orchstat/orchstat"
	"github.com/orchstat/orchstat/rules/alerting"
	"github.com/orchstat/orchstat/rules/yamlast"
)

func newRulesCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "rules",
		Short: "Work with alert rule files",
		Long: `Work with alert rule files such as alerts.yaml. The rule file format is
described in docs/rules.md.`,
		Example: `  orchstat rules check alerts.yaml`,
		Args:    usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, args []string) error {
			return usageError{fmt.Errorf("rules needs a subcommand, such as check")}
		},
	}
	cmd.AddCommand(newRulesCheckCmd(g), newRulesTestCmd(g), newRulesBacktestCmd(g, nil), newRulesExportCmd(g, nil))
	return cmd
}

// rulesCheckOptions are rules check's: the files to check (none: the
// built-in alerts.yaml) and where to report.
type rulesCheckOptions struct {
	IO    *IO
	Files []string
}

func newRulesCheckCmd(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "check [FILE...]",
		Short: "Validate alert rule files",
		Long: `Validate alert rule files and report every problem as file:line:column.

Without FILE, checks the alerts.yaml built into orchstat. Each problem goes to
stderr, one per line; each file gets one summary line on stdout. It finds YAML
syntax errors, files over 1 MiB or nested more than 64 deep, unknown keys,
missing or duplicate names, unknown metrics and labels, bad windows and
durations, conditions that do not compile to a boolean, and annotation
templates that do not execute. It runs each condition and template on sample
data, as a check would: a condition past its budget (10,000 items, 1 MiB of
text per evaluation) or failing on every sample, and a template failing with
the rule's labels, are problems.

Exit status: 0 when every file is valid, 1 when any has problems or cannot
be read, 2 on usage errors.`,
		Example: `  # Check the built-in rules
  orchstat rules check

  # Check your own files before passing one to report --rules
  orchstat rules check alerts.yaml team/*.yaml`,
		RunE: func(cmd *cobra.Command, args []string) error {
			return rulesCheckRun(&rulesCheckOptions{IO: g.io, Files: args})
		},
	}
}

func rulesCheckRun(o *rulesCheckOptions) error {
	io, files := o.IO, o.Files
	type input struct {
		name string
		data []byte
		err  error
	}
	var inputs []input
	if len(files) == 0 {
		inputs = append(inputs, input{name: "alerts.yaml (built in)", data: orchstat.DefaultAlerts})
	}
	for _, f := range files {
		b, err := yamlast.ReadFile(f)
		inputs = append(inputs, input{name: f, data: b, err: err})
	}
	failed := false
	for _, in := range inputs {
		if in.err != nil {
			fmt.Fprintf(io.Err, "orchstat: %v\n", in.err)
			fmt.Fprintf(io.Out, "%s: unreadable\n", in.name)
			failed = true
			continue
		}
		problems := alerting.Check(in.name, in.data)
		for _, p := range problems {
			fmt.Fprintln(io.Err, p)
		}
		// Warnings (a template failing on sample data) do not make the
		// file invalid: check loads it, and the alert reports the error.
		warnings := len(problems)
		problems = slices.DeleteFunc(problems, func(p alerting.Problem) bool { return p.Warning })
		warnings -= len(problems)
		warned := ""
		if warnings > 0 {
			warned = fmt.Sprintf(", %d warning%s", warnings, plural(warnings))
		}
		if len(problems) > 0 {
			failed = true
			fmt.Fprintf(io.Out, "%s: %d problem%s%s\n", in.name, len(problems), plural(len(problems)), warned)
			continue
		}
		f, err := alerting.Parse(in.name, in.data)
		if err != nil { // Check and Parse agree; this is a safety net
			fmt.Fprintf(io.Err, "orchstat: %v\n", err)
			fmt.Fprintf(io.Out, "%s: invalid\n", in.name)
			failed = true
			continue
		}
		fmt.Fprintf(io.Out, "%s: %d rule%s, OK%s\n", in.name, len(f.Rules), plural(len(f.Rules)), warned)
	}
	if failed {
		return silentError{exitError}
	}
	return nil
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

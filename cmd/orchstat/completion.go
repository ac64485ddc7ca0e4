package main

import (
	"slices"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/orchstat/orchstat/ingest"
	"github.com/orchstat/orchstat/model/factory/spec"
	"github.com/orchstat/orchstat/model/reports"
	"github.com/orchstat/orchstat/reports/render"
	"github.com/orchstat/orchstat/rules/adaptive"
	"github.com/orchstat/orchstat/rules/retry"
)

// registerCompletions gives shell completion the values of the flags
// that take one of a known set, by flag name across the whole command
// tree, so a command added later gets them too. It is called once, when
// the tree is built.
func registerCompletions(root *cobra.Command) {
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		// LocalFlags, unlike Flags, holds the persistent flags c defines.
		c.LocalFlags().VisitAll(func(f *pflag.Flag) {
			if fn := flagValues(c, f); fn != nil {
				// It fails only for a flag c does not have or one already
				// registered; each local flag is seen once.
				_ = c.RegisterFlagCompletionFunc(f.Name, fn)
			}
		})
		if c.ValidArgsFunction == nil && ruleFileArgs(c) {
			c.ValidArgsFunction = yamlFiles
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
}

type completionFunc = func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective)

// flagValues is the completion of f on c, or nil for a flag whose values
// are free (a path, a number, a date).
func flagValues(c *cobra.Command, f *pflag.Flag) completionFunc {
	switch f.Name {
	case "format":
		// Three flags share the name: ingest's hidden old name for
		// --input-format (default auto), output formats on the reports
		// (table) and on the commands that answer in text or JSON (text).
		switch f.DefValue {
		case "auto":
			return fixed(ingest.Formats...)
		case "text":
			return fixed("text", "json")
		}
		formats := render.Formats
		if c.Name() == "report" || c.Name() == "simulate" {
			formats = render.PageFormats
		}
		var names []string
		for _, fm := range formats {
			names = append(names, string(fm))
		}
		return fixed(names...)
	case "input-format":
		return fixed(ingest.Formats...)
	case "policy", "baseline":
		// A preset, or a policy file.
		return func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
			return retry.PresetNames(), cobra.ShellCompDirectiveDefault
		}
	case "backoff":
		// simulate's quick flag: a schedule, as retry.WithSchedule reads it.
		return fixed(retry.ScheduleNames()...)
	case "stage":
		return stageNames
	case "system":
		return fixed(recordSystems...)
	case "op":
		return fixed(execOps...)
	case "by":
		// report --by's groupings, devices and projects among them, and
		// the billing blocks.
		return fixed(append(slices.Clone(reports.UsageBy), byBlock)...)
	case "rules":
		return yamlFiles
	}
	return nil
}

// ruleFileArgs reports whether c's arguments are rule or rule test files.
func ruleFileArgs(c *cobra.Command) bool {
	return c.Parent() != nil && c.Parent().Name() == "rules" && (c.Name() == "check" || c.Name() == "test")
}

func fixed(values ...string) completionFunc {
	values = slices.Clone(values)
	return func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
		return values, cobra.ShellCompDirectiveNoFileComp
	}
}

func yamlFiles(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
	return []string{"yaml", "yml"}, cobra.ShellCompDirectiveFilterFileExt
}

// stageNames are the stages recommend's --stage knows without opening the
// store: those of the retry configuration --config names (orchestr8's
// defaults when there is none) and the factory's pipeline stages, as the
// report names them. Completion must answer at once, and opening the store
// may wait on its lock.
func stageNames(c *cobra.Command, _ []string, _ string) ([]string, cobra.ShellCompDirective) {
	path := adaptive.DefaultPath
	if f := c.Flags().Lookup("config"); f != nil && f.Value.String() != "" {
		path = f.Value.String()
	}
	cfg, _ := adaptive.Load(path)
	var out []string
	for s := range cfg.Strategies {
		out = append(out, s)
	}
	for _, s := range []string{spec.StageWrite, spec.StageApply, spec.StageVerify, spec.StageAcceptance} {
		if !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	slices.Sort(out)
	return out, cobra.ShellCompDirectiveNoFileComp
}

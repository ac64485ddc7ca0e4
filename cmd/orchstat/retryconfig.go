package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"

	"github.com/spf13/cobra"

	"github.com/orchstat/orchstat/model/advice"
	"github.com/orchstat/orchstat/reports/render"
	"github.com/orchstat/orchstat/rules/adaptive"
)

type retryConfigOptions struct {
	g      *globals
	Config string
	Format string
}

// newRetryConfigCmd is orchestr8's `retry-config` and `retry-config reset`
// (line 224), with orchestr8's setConfigValue (src/retry.js) as `set`.
func newRetryConfigCmd(g *globals) *cobra.Command {
	o := &retryConfigOptions{g: g}
	cmd := &cobra.Command{
		Use:   "retry-config [show|set KEY VALUE|reset]",
		Short: "Show, set or reset orchestr8's retry configuration (.claude/retry-config.json)",
		Long: `Manage orchestr8's retry configuration, which its adaptive retry and
orchstat recommend read:

  maxRetries            attempts at a stage before the advice is to abort (default 3)
  windowSize            recent runs the failure rate is taken over (default 10)
  highFailureThreshold  failure rate above which a stage gets its strategies (default 0.2)
  strategies.<stage>    the stage's strategy for attempt 1, 2, ... (comma-separated)

show (the default) prints the effective configuration and marks the values
that are defaults; set checks a value and writes the file; reset writes the
defaults, as orchestr8's resetConfig does. Writes are atomic and keep the
file's mode. A corrupt file is read as the defaults, key by key, with a
warning naming the line and field; set and reset replace it.`,
		Example: `  orchstat retry-config
  orchstat retry-config set maxRetries 4
  orchstat retry-config set strategies.nigel simplify-tests,add-context
  orchstat retry-config reset
  orchstat retry-config show --format json --config path/to/.claude/retry-config.json`,
		Args: usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, args []string) error { return o.show() },
	}
	pf := cmd.PersistentFlags()
	pf.StringVar(&o.Config, "config", adaptive.DefaultPath, "the retry configuration file")
	pf.StringVarP(&o.Format, "format", "f", "text", "output format: text or json")
	cmd.PersistentPreRunE = func(c *cobra.Command, args []string) error {
		if o.Format != "text" && o.Format != "json" {
			return usageError{fmt.Errorf("--format %q: text or json", o.Format)}
		}
		// The root's hook (the CPU profile) is not run when a child has
		// its own.
		if root := c.Root(); root.PersistentPreRunE != nil {
			return root.PersistentPreRunE(c, args)
		}
		return nil
	}
	cmd.AddCommand(&cobra.Command{
		Use:   "show",
		Short: "Print the effective retry configuration, marking defaults",
		Args:  usageArgs(cobra.NoArgs),
		RunE:  func(cmd *cobra.Command, args []string) error { return o.show() },
	}, &cobra.Command{
		Use:   "set KEY VALUE",
		Short: "Check and write one value: " + adaptive.SettableKeys(),
		Example: `  orchstat retry-config set highFailureThreshold 0.3
  orchstat retry-config set strategies.cass reduce-stories,simplify-prompt`,
		Args: usageArgs(cobra.ExactArgs(2)),
		RunE: func(cmd *cobra.Command, args []string) error { return o.set(args[0], args[1]) },
	}, &cobra.Command{
		Use:   "reset",
		Short: "Write the default configuration",
		Args:  usageArgs(cobra.NoArgs),
		RunE:  func(cmd *cobra.Command, args []string) error { return o.reset() },
	})
	return cmd
}

func (o *retryConfigOptions) load() (adaptive.Config, []string) {
	c, warns := adaptive.Load(o.Config)
	out := []string{}
	for _, w := range warns {
		out = append(out, w.String())
	}
	return c, out
}

func (o *retryConfigOptions) show() error {
	c, warns := o.load()
	_, statErr := os.Stat(o.Config)
	io := o.g.io
	return render.RenderSettings(io.Out, io.Err, c.Settings(o.Config, statErr == nil, warns), o.Format == "json")
}

func (o *retryConfigOptions) set(key, value string) error {
	c, warns := o.load()
	if err := c.Set(key, value); err != nil {
		return usageError{err}
	}
	if len(warns) > 0 {
		// orchestr8's setConfigValue also writes over what it could not
		// read; say what is replaced before it goes.
		warns = append(warns, fmt.Sprintf("%s is rewritten whole, with the defaults in place of what could not be read", o.Config))
	}
	if err := c.Save(o.Config); err != nil {
		return fmt.Errorf("writing %s: %w", o.Config, err)
	}
	io := o.g.io
	return render.RenderSet(io.Out, io.Err, advice.SetResult{Key: key, Path: o.Config, Value: c.Value(key), Warnings: warns}, o.Format == "json")
}

func (o *retryConfigOptions) reset() error {
	_, err := os.Stat(o.Config)
	existed := !errors.Is(err, fs.ErrNotExist)
	if err := adaptive.Reset(o.Config); err != nil {
		return fmt.Errorf("writing %s: %w", o.Config, err)
	}
	return render.RenderReset(o.g.io.Out, advice.ResetResult{Existed: existed, Path: o.Config, Reset: true, Warnings: []string{}}, o.Format == "json")
}

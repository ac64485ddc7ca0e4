package main

import (
	"context"
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/orchstat/orchstat/query"
	"github.com/orchstat/orchstat/query/lake"
	"github.com/orchstat/orchstat/reports/render"
)

type exportOptions struct {
	g *globals
	ingestFirst
	Lake   string
	Runner string
	// RenameRunner moves the store's files from the runner id it exported
	// under before to Runner.
	RenameRunner bool
	// Hostname names the runner when --runner is not given.
	Hostname func() (string, error)
	Lakes    lake.Options
}

func newExportCmd(g *globals) *cobra.Command {
	o := &exportOptions{g: g, Hostname: os.Hostname, Lakes: g.deps.lake}
	cmd := &cobra.Command{
		Use:   "export --lake DIR|s3://BUCKET/PREFIX [PATH...]",
		Short: "Export the store to a Parquet lake that many runners share",
		Long: `Ingest any new lines under PATH (unless --no-ingest), then write what changed
in the store since its last export to this lake as Parquet files, one per
table, system, day and runner:

  <table>/system=<system>/day=<YYYY-MM-DD>/runner=<runner>/part-<runner>.parquet

A second export with nothing new writes nothing. Each file is written aside
and appears whole (a rename, or one S3 PUT), and the partitions an export is
about to replace are recorded first, so an export killed at any point leaves
no partial file, and the next one finishes its work.

Many runners export to one lake at once without coordinating: each writes
only its own runner's files, and no file is ever deleted. --runner defaults to
the host name; the first export of a store claims its runner id in the lake
(_runners/<runner>.json), and another store exporting as the same runner is
refused. One store exports under one runner id: a second id (a renamed
host) is refused, as the lake would hold its runs twice, unless
--rename-runner moves its files to the new id, leaving the old id's
partitions empty.

report, check and simulate read the lake with --lake. The layout, the
schema and queries for DuckDB, Spark, Trino and ClickHouse are in
docs/lake.md. S3 credentials and the endpoint come from the usual AWS
environment variables and files, and are never printed.`,
		Example: `  orchstat export --lake /mnt/lake
  orchstat export --lake s3://ci-traces/orchstat --runner ci-linux-7
  orchstat report --lake s3://ci-traces/orchstat --since 7d`,
		RunE: func(cmd *cobra.Command, args []string) error {
			o.Paths = args
			if o.Lake == "" {
				return usageError{fmt.Errorf("export needs --lake DIR or --lake s3://bucket/prefix")}
			}
			return exportRun(cmd.Context(), o)
		},
	}
	o.ingestFirst.flags(cmd, "export the store as it is, without ingesting first")
	// PATHs only say what to ingest first: export always writes the
	// whole store, so --all means nothing here.
	cmd.Flags().MarkHidden("all")
	cmd.Flags().StringVar(&o.Lake, "lake", "", "the lake: a directory, or s3://bucket/prefix")
	cmd.Flags().StringVar(&o.Runner, "runner", "", "this runner's id in the lake (default: the host name)")
	cmd.Flags().BoolVar(&o.RenameRunner, "rename-runner", false, "move this store's files from the runner id it exported under before to --runner's (its old partitions are left empty)")
	return cmd
}

func exportRun(ctx context.Context, o *exportOptions) error {
	runner := o.Runner
	if runner == "" {
		host, err := o.Hostname()
		if err != nil {
			return fmt.Errorf("naming the runner: %w (pass --runner)", err)
		}
		runner = query.RunnerFromHost(host)
	}
	if err := query.CheckRunner(runner); err != nil {
		return usageError{fmt.Errorf("--runner: %w", err)}
	}
	lk, err := lake.Open(ctx, o.Lake, o.Lakes)
	if err != nil {
		return err
	}
	st, unread, err := o.ingestFirst.open(ctx, o.g, true)
	if err != nil {
		return err
	}
	defer st.Close()
	res, err := st.ExportLake(ctx, lk, query.ExportOptions{Runner: runner, RenameRunner: o.RenameRunner, Now: o.g.io.Now, Hook: crashHook()})
	if err != nil {
		return err
	}
	warnAll(o.g.io.Err, res.Warnings)
	where := render.EscapeControls(res.Lake)
	switch {
	case o.Quiet:
	case res.Partitions == 0:
		fmt.Fprintf(o.g.io.Out, "nothing new to export to %s as runner %s\n", where, runner)
	default:
		fmt.Fprintf(o.g.io.Out, "exported the changes of %d source files to %s as runner %s: %d partition files, %d rows, %s\n",
			res.Files, where, runner, res.Partitions, res.Rows, humanBytes(res.Bytes))
	}
	if unread {
		return silentError{exitError}
	}
	return nil
}

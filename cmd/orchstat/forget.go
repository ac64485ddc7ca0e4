package main

import (
	"context"
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/orchstat/orchstat/ingest"
	"github.com/orchstat/orchstat/reports/render"
)

type forgetOptions struct {
	g     *globals
	Paths []string
}

func newForgetCmd(g *globals) *cobra.Command {
	o := &forgetOptions{g: g}
	return &cobra.Command{
		Use:   "forget PATH...",
		Short: "Remove what was ingested from files or folders, so they are read again",
		Long: `Remove from the store every row ingested from the files at or under each
PATH: their events and records, their quarantined lines, and where ingest
stopped in them. It is one transaction: all of it goes, or nothing does.
The next ingest reads those files as new.

Use it when a file was read the wrong way (a factory run_summary.json read
as a trace, say): forget it, then ingest it with the right --input-format. The
files themselves are not touched, and may be gone already.`,
		Example: `  orchstat forget results/run_summary.json
  orchstat ingest --input-format factory results/run_summary.json
  orchstat forget .orchestrator/runs/1769708891380`,
		Args: usageArgs(cobra.MinimumNArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.Paths = args
			return forgetRun(cmd.Context(), o)
		},
	}
}

func forgetRun(ctx context.Context, o *forgetOptions) error {
	db := o.g.dbPath(o.Paths)
	if _, err := os.Stat(db); err != nil {
		return fmt.Errorf("no orchstat database at %s: nothing to forget (pass --db to name the store)", render.EscapeControls(db))
	}
	paths := make([]string, len(o.Paths))
	for i, p := range o.Paths {
		paths[i] = ingest.ScopePath(p, "")
	}
	st, err := o.g.open(ctx, db, false)
	if err != nil {
		return err
	}
	defer st.Close()
	n, err := st.Forget(ctx, paths)
	if err != nil {
		return err
	}
	named := render.EscapeControls(strings.Join(o.Paths, ", "))
	if n.Files == 0 {
		return fmt.Errorf("the store %s holds nothing read from %s", render.EscapeControls(st.Path), named)
	}
	files := "files"
	if n.Files == 1 {
		files = "file"
	}
	fmt.Fprintf(o.g.io.Out, "forgot %d %s under %s (%d events, %d record runs, %d quarantined lines) in %s; the next ingest reads those still there as new\n",
		n.Files, files, named, n.Events, n.Records, n.Quarantined, render.EscapeControls(st.Path))
	return nil
}

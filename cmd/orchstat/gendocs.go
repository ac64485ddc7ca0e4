package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/cobra/doc"

	"github.com/orchstat/orchstat/query"
	"github.com/orchstat/orchstat/reports/render"
)

// genDocsCommand is how the generated docs are rebuilt; tests name it when
// the checked-in docs are stale.
const genDocsCommand = "go run ./cmd/orchstat gen-docs docs"

// manDate is the date every man page carries, fixed so that regenerating
// the pages changes them only when the help text changes.
var manDate = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func newGenDocsCmd() *cobra.Command {
	return &cobra.Command{
		Use:    "gen-docs DIR",
		Short:  "Write the CLI reference and the store's schema under DIR",
		Hidden: true,
		Args:   usageArgs(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			return genDocs(cmd.Context(), args[0])
		},
	}
}

// genDocs writes DIR/cli (one Markdown page per command), DIR/cli/man
// (the same as man pages) and DIR/schema.md, and redraws the tables of
// DIR/metrics.md. Earlier generated files are
// removed first, so a command that is gone leaves no page behind.
func genDocs(ctx context.Context, dir string) error {
	cli, man := filepath.Join(dir, "cli"), filepath.Join(dir, "cli", "man")
	for _, d := range []struct{ dir, pattern string }{{cli, "*.md"}, {man, "*.1"}} {
		if err := removeGenerated(d.dir, d.pattern); err != nil {
			return err
		}
		if err := os.MkdirAll(d.dir, 0o755); err != nil {
			return err
		}
	}
	root := docsRoot()
	if err := doc.GenMarkdownTree(root, cli); err != nil {
		return err
	}
	// No Title: each page takes its command's (ORCHSTAT\-REPORT), which man
	// shows at the top and bottom of the page and apropos lists.
	header := &doc.GenManHeader{Section: "1", Date: &manDate, Source: "orchstat", Manual: "orchstat manual"}
	if err := doc.GenManTree(root, header, man); err != nil {
		return err
	}
	schema, err := query.SchemaDoc(ctx)
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "schema.md"), []byte(schema), 0o644); err != nil {
		return err
	}
	return fillMetricDoc(filepath.Join(dir, "metrics.md"))
}

// fillMetricDoc redraws the metrics page's tables from the catalog. The
// prose around them is written by hand, so a DIR without the page (a
// fresh one, as tests use) has no tables to fill.
func fillMetricDoc(path string) error {
	old, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	doc, err := render.FillMetricDoc(string(old))
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return os.WriteFile(path, []byte(doc), 0o644)
}

// docsRoot is the command tree as users see it, with nothing in it that
// depends on the machine or the moment it is generated.
func docsRoot() *cobra.Command {
	root := newRootCmd(&IO{In: eofReader{}, Out: io.Discard, Err: io.Discard, Now: func() time.Time { return manDate }})
	// cobra adds the completion command when it executes; the reference
	// should show it.
	root.InitDefaultCompletionCmd()
	// --db's default is $ORCHSTAT_DB, whatever the generating shell holds.
	root.PersistentFlags().Lookup("db").DefValue = ""
	var walk func(*cobra.Command)
	walk = func(c *cobra.Command) {
		c.DisableAutoGenTag = true
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
	return root
}

func removeGenerated(dir, pattern string) error {
	old, err := filepath.Glob(filepath.Join(dir, pattern))
	if err != nil {
		return err
	}
	for _, f := range old {
		if err := os.Remove(f); err != nil {
			return fmt.Errorf("removing the earlier %s: %w", f, err)
		}
	}
	return nil
}

type eofReader struct{}

func (eofReader) Read([]byte) (int, error) { return 0, io.EOF }

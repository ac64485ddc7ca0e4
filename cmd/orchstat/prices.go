package main

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/orchstat/orchstat/model/records/prices"
)

// addPricesFlag adds --prices, for the commands that show agents' calls'
// cost.
func addPricesFlag(cmd *cobra.Command, path *string) {
	cmd.Flags().StringVar(path, "prices", "", "price agents' calls with this LiteLLM model_prices_and_context_window.json file as well; its entries win over the built-in table (see docs/prices.md)")
}

// loadPrices reads --prices over the built-in table; no file means the
// built-in table alone. A file that cannot be read is a usage error
// naming it, and where and which field when it is malformed. The entries
// it skips (images, audio, embeddings...) are counted on stderr, unless
// quiet, so that a model missing from the reports can be traced to them.
func loadPrices(io *IO, path string) (*prices.Table, error) {
	table := prices.Builtin()
	if path == "" {
		return table, nil
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, usageError{fmt.Errorf("--prices: %w", err)}
	}
	defer f.Close()
	mine, err := prices.Load(f, path)
	if err != nil {
		return nil, usageError{fmt.Errorf("--prices: %w", err)}
	}
	if n := len(mine.Skipped); n > 0 && !io.Quiet {
		first := mine.Skipped[0]
		fmt.Fprintf(io.Err, "orchstat: %s: %d of its entries are not priced per token and were skipped (the first: %q, %s)\n",
			path, n, first.Key, first.Reason)
	}
	return table.Extend(mine), nil
}

// Command gen writes a deterministic corpus of synthetic orchestrator runs:
//
//	go run ./benchmarks/gen -out DIR -runs 20000 -seed 1 [-chunks] [-payload-bytes N] [-start 2026-10-01T00:00:00Z] [-days 30]
//
// Each run becomes DIR/<runId>/ with trace.jsonl, manifest.json and, when
// the run got that far, summary.json and verification reports. The same
// flags always give the same bytes.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/orchstat/orchstat/benchmarks/tracegen"
)

func main() {
	if err := run(os.Args[1:], os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "gen:", err)
		if errors.Is(err, flag.ErrHelp) {
			os.Exit(0)
		}
		os.Exit(2)
	}
}

func run(args []string, stderr io.Writer) error {
	def := tracegen.DefaultConfig()
	fs := flag.NewFlagSet("gen", flag.ContinueOnError)
	fs.SetOutput(stderr)
	out := fs.String("out", "", "directory to write runs into (must be empty or absent)")
	runs := fs.Int("runs", def.Runs, "number of runs")
	seed := fs.Uint64("seed", def.Seed, "random seed")
	chunks := fs.Bool("chunks", false, "emit SubprocessOutputChunked lines (about 30 KB per run)")
	payload := fs.Int("payload-bytes", 0, "give provider requests a prompt and answered ones an output of about N bytes each (0 = none)")
	start := fs.String("start", def.Start.Format(time.RFC3339), "start of the first run, RFC 3339")
	days := fs.Int("days", def.Days, "days the runs are spread over")
	workers := fs.Int("workers", 0, "parallel workers (0 = GOMAXPROCS); does not change the output")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *out == "" {
		return errors.New("-out is required")
	}
	t, err := time.Parse(time.RFC3339, *start)
	if err != nil {
		return fmt.Errorf("-start: %w", err)
	}
	if err := checkEmpty(*out); err != nil {
		return err
	}

	cfg := def
	cfg.Runs, cfg.Seed, cfg.Start, cfg.Days, cfg.Chunks, cfg.Workers = *runs, *seed, t.UTC(), *days, *chunks, *workers
	cfg.PayloadBytes = *payload
	st, err := tracegen.Generate(*out, cfg)
	if err != nil {
		return err
	}
	fmt.Fprintf(stderr, "gen: %d runs, %d events, %d files, %d bytes (%.1f MB) in %s\n",
		st.Runs, st.Events, st.Files, st.Bytes, float64(st.Bytes)/1e6, *out)
	return nil
}

// checkEmpty refuses to mix a new corpus into an old one: stale runs from a
// different seed or size would silently change every metric.
func checkEmpty(dir string) error {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if len(entries) > 0 {
		return fmt.Errorf("%s is not empty; remove it or choose another -out", dir)
	}
	return nil
}

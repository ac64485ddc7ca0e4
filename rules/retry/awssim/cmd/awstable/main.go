// Command awstable prints the AWS "Exponential Backoff And Jitter"
// simulation, run through orchstat's retry core, as a Markdown table: for
// each number of clients and each schedule, the mean writes (work) and mean
// completion time over the seeds, with 95% intervals.
//
//	go run ./rules/retry/awssim/cmd/awstable
package main

import (
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/orchstat/orchstat/rules/retry/awssim"
)

func main() {
	clients := flag.String("clients", "10,50,100", "comma-separated client counts")
	runs := flag.Int("runs", 100, "runs (seeds) per cell; the published simulator averaged 100")
	seed := flag.Uint64("seed", 1, "first seed; run i uses seed+i")
	first := flag.Int("first-retry", 0, "retry index of a client's first retry (0: 2, the published simulator's base·2^attempt)")
	flag.Parse()

	var ns []int
	for _, s := range strings.Split(*clients, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n <= 0 {
			fmt.Fprintf(os.Stderr, "awstable: -clients: bad count %q\n", s)
			os.Exit(2)
		}
		ns = append(ns, n)
	}
	if *runs < 1 {
		fmt.Fprintln(os.Stderr, "awstable: -runs must be at least 1")
		os.Exit(2)
	}

	fmt.Printf("Runs per cell: %d (seeds %d–%d), network |N(10 ms, 2 ms)|, base 5 ms, cap 2000 ms, first retry index %d.\n\n",
		*runs, *seed, *seed+uint64(*runs)-1, firstRetry(*first))
	fmt.Println("| clients | schedule | writes (work), mean [95% CI] | completion ms, mean [95% CI] | work ÷ full jitter |")
	fmt.Println("|---:|---|---:|---:|---:|")
	for _, n := range ns {
		var rows []awssim.Summary
		full := 0.0
		for _, s := range awssim.Published() {
			sum := awssim.Sweep(awssim.Config{Clients: n, Backoff: s.Backoff, Seed: *seed, FirstRetry: *first}, *runs)
			rows = append(rows, sum)
			if s.Name == "full jitter" {
				full = sum.Calls.Mean
			}
		}
		for i, s := range awssim.Published() {
			sum := rows[i]
			fmt.Printf("| %d | %s | %.1f [%.1f, %.1f] | %.0f [%.0f, %.0f] | %.2f |\n", n, s.Name,
				sum.Calls.Mean, sum.Calls.Lo, sum.Calls.Hi,
				sum.CompletionMS.Mean, sum.CompletionMS.Lo, sum.CompletionMS.Hi,
				sum.Calls.Mean/full)
		}
	}
}

func firstRetry(n int) int {
	if n == 0 {
		return 2
	}
	return n
}

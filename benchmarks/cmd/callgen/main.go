// Command callgen writes Claude Code transcripts for the agents' views'
// benchmark (benchmarks/usage.sh); see package benchmarks/callgen.
//
//	go run ./benchmarks/cmd/callgen -out DIR -calls 1000000
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/orchstat/orchstat/benchmarks/callgen"
)

func main() {
	out := flag.String("out", "", "folder to write the transcripts under (devices desktop/ and laptop/)")
	calls := flag.Int("calls", 92000, "calls to write, copies not counted")
	per := flag.Int("per-session", 200, "calls per session")
	seed := flag.Uint64("seed", 1, "seed")
	dst := flag.Bool("dst", true, "add calls at the 2026 DST changes of Europe/Berlin and America/New_York")
	flag.Parse()
	if *out == "" {
		fmt.Fprintln(os.Stderr, "callgen: -out DIR is needed")
		os.Exit(2)
	}
	st, err := callgen.Write(*out, callgen.Options{Calls: *calls, PerSession: *per, Seed: *seed, DSTEdges: *dst})
	if err != nil {
		fmt.Fprintln(os.Stderr, "callgen:", err)
		os.Exit(1)
	}
	fmt.Printf("%d calls (%d more as copies) in %d files, %d lines, %d bytes\n", st.Calls, st.Copied, st.Files, st.Lines, st.Bytes)
}

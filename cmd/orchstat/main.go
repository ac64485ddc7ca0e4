// Command orchstat turns LLM-orchestrator run traces into retry answers.
package main

import (
	"os"
	"runtime/debug"
)

func main() {
	// orchstat is short-lived and its live heap is small, so collecting
	// less often saves CPU; the soft limit keeps ingest's peak (two batches
	// in flight) bounded all the same. GOMEMLIMIT overrides it.
	debug.SetGCPercent(200)
	if os.Getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(96 << 20)
	}
	os.Exit(Main(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

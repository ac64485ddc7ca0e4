// Command orchstat turns LLM-orchestrator run traces into retry answers.
package main

import (
	"os"
	"runtime/debug"
)

func main() {
	// See supervise.go: unless this is the supervised child, the work is
	// done by a child process, and this one only relays its status.
	if code, ok := supervise(os.Args[1:], os.Stderr); ok {
		os.Exit(code)
	}
	rep := childReporter()
	// orchstat is short-lived and its live heap is small, so collecting
	// less often saves CPU; the soft limit keeps ingest's peak (two batches
	// in flight) bounded all the same. GOMEMLIMIT overrides it.
	debug.SetGCPercent(200)
	if os.Getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(96 << 20)
	}
	rep.exit(mainWith(os.Args[1:], os.Stdin, os.Stdout, os.Stderr, rep.report))
}

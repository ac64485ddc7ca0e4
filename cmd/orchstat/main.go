// Command orchstat turns LLM-orchestrator run traces into retry answers.
package main

import (
	"fmt"
	"os"
	"os/signal"
	"runtime/debug"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/orchstat/orchstat/rules/retry/runner/guard"
)

func main() {
	// A guard of a command orchstat runs (exec's attempts, command
	// receivers) is orchstat itself in a mode of its own: see guard.
	if code, ok := guard.Main(); ok {
		os.Exit(code)
	}
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
	var command atomic.Value
	report := func(key, value string) {
		if key == "command" {
			command.Store(value)
		}
		rep.report(key, value)
	}
	stopAfterSignal(rep, &command)
	rep.exit(mainWith(os.Args[1:], os.Stdin, os.Stdout, os.Stderr, report))
}

// stopGrace is how long a command may take to stop after Ctrl-C or
// SIGTERM. Commands stop their work on the context's cancellation at once;
// this ends one that waits where no context reaches (a read from a pipe
// whose writer never writes, say). Stopping then is safe: the store is
// crash-safe, and an ingest cut short is read again by the next.
const stopGrace = 2 * time.Second

func stopAfterSignal(rep reporter, command *atomic.Value) {
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	go func() {
		sig := <-sigs
		// exec stops its command gracefully, over --kill-after, by itself;
		// receive answers the requests in flight within its own bound
		// (receiver.ShutdownGrace), as an acknowledged request must be on
		// disk.
		if c, _ := command.Load().(string); c == "exec" || c == "receive" {
			return
		}
		time.Sleep(stopGrace)
		n := int(sig.(syscall.Signal))
		fmt.Fprintf(os.Stderr, "orchstat: still running %v after %v; stopped\n", stopGrace, sig)
		rep.exit(128 + n)
	}()
}

// Command orchstat turns LLM-orchestrator run traces into retry answers.
package main

import (
	"os"
	"runtime/debug"
)

func main() {
	// orchstat is short-lived and its live heap is small and bounded, so
	// collecting half as often costs little memory and saves CPU.
	debug.SetGCPercent(200)
	os.Exit(Main(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

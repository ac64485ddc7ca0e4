// Command orchstat turns LLM-orchestrator run traces into retry answers.
package main

import "os"

func main() {
	os.Exit(Main(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

package main

import (
	"context"
	"os"
	"time"

	"github.com/orchstat/orchstat/query/lake"
	"github.com/orchstat/orchstat/rules/notify"
	"github.com/orchstat/orchstat/rules/ruletest"
)

// deps are what commands take from the world besides IO's streams
// and clock: root passes it down, each command copies what it needs into
// its options, and tests pass their own (see runCLIWith), so no test
// swaps a package variable and the tests can run in parallel.
type deps struct {
	// newSender makes the notification sender; tests fix its clock,
	// randomness and sleeps.
	newSender func(now func() time.Time) *notify.Sender
	// openTestStore opens a rule-test worker's store; tests count calls.
	openTestStore func(ctx context.Context, path string) (ruletest.Store, error)
	// ruleTestWorkers bounds how many rule tests run at once, each on a
	// store of its own: a test is a chain of small queries on one
	// connection, so running a few side by side uses the cores one test
	// leaves idle.
	ruleTestWorkers int
	// lake is how commands open lakes: tests point S3 at a local server
	// and the cache at a temporary folder.
	lake lake.Options
	// startReplica starts building a lake's replica apart, logging to
	// log (see lakereplica.go); tests start their own binary.
	startReplica func(lake, log string) error
}

func defaultDeps() deps {
	return deps{
		newSender: func(now func() time.Time) *notify.Sender {
			s := notify.NewSender("orchstat/" + version)
			s.Now = now
			return s
		},
		openTestStore:   openRuleTestStore,
		ruleTestWorkers: 4,
		startReplica: func(loc, log string) error {
			exe, err := os.Executable()
			if err != nil {
				return err
			}
			return startReplica(exe, loc, log)
		},
	}
}

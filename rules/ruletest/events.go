package ruletest

import (
	"fmt"
	"os"
	"path/filepath"
)

// writeEvents writes inline events as trace.jsonl files, one run
// directory per run, in the order given, each line by appendTrace.
func writeEvents(runs string, events []Event, appendTrace TraceFunc) error {
	if err := os.MkdirAll(runs, 0o755); err != nil {
		return err
	}
	byRun := map[string][]byte{}
	var order []string
	for _, e := range events {
		at, _ := parseTime(e.At)
		if _, ok := byRun[e.Run]; !ok {
			order = append(order, e.Run)
		}
		var payload any = e.Payload
		if e.Payload == nil {
			payload = nil // written as {}
		}
		line, err := appendTrace(byRun[e.Run], e.Run, e.Type, at, payload)
		if err != nil {
			return fmt.Errorf("event of run %s: %w", e.Run, err)
		}
		byRun[e.Run] = line
	}
	for _, run := range order {
		dir := filepath.Join(runs, run)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dir, "trace.jsonl"), byRun[run], 0o644); err != nil {
			return err
		}
	}
	return nil
}

// WriteEvents writes inline events into their runs' traces under runs, as
// a test's input is written before it is ingested (rules export turns
// tests into promtool's, with counters computed from the same runs).
func WriteEvents(runs string, events []Event, appendTrace TraceFunc) error {
	return writeEvents(runs, events, appendTrace)
}

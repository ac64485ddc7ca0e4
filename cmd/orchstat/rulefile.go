package main

import (
	"github.com/orchstat/orchstat"
	"github.com/orchstat/orchstat/rules/alerting"
)

// loadRules reads --rules, or the rules built into the binary, for every
// command that evaluates the alert rules (check, rules backtest, report).
func loadRules(path string) (*alerting.File, error) {
	if path == "" {
		return alerting.Parse("alerts.yaml (built in)", orchstat.DefaultAlerts)
	}
	return alerting.Load(path)
}

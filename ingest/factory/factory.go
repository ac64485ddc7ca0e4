// Package factory reads the records of seed 003's factory
// (llm-contract-harness): run summaries, failure briefs, and the web
// pipeline's events and meta files.
package factory

import (
	"errors"

	"github.com/orchstat/orchstat/ingest/records"
)

var errTODO = errors.New("factory records are not read yet")

// ParseSummary reads a run_summary.json.
func ParseSummary(path string, b []byte) (*records.Set, error) { return nil, errTODO }

// ParseBrief reads an attempt_N/failure_brief.json.
func ParseBrief(path string, b []byte) (*records.Set, error) { return nil, errTODO }

// ParseEvents reads a web pipeline's runs/<id>/events.jsonl.
func ParseEvents(path string, b []byte) (*records.Set, error) { return nil, errTODO }

// ParseMeta reads a web pipeline's runs/<id>/meta.json.
func ParseMeta(path string, b []byte) (*records.Set, error) { return nil, errTODO }

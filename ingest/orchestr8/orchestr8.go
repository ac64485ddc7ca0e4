// Package orchestr8 reads orchestr8's records (seed 004):
// .claude/pipeline-history.json and .claude/retry-config.json.
package orchestr8

import (
	"errors"

	"github.com/orchstat/orchstat/ingest/records"
)

var errTODO = errors.New("orchestr8 records are not read yet")

// ParseHistory reads .claude/pipeline-history.json.
func ParseHistory(path string, b []byte) (*records.Set, error) { return nil, errTODO }

// ParseConfig reads .claude/retry-config.json.
func ParseConfig(path string, b []byte) (*records.Set, error) { return nil, errTODO }

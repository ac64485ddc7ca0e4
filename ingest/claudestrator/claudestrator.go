// Package claudestrator reads claudestrator's records (seed 002's
// auto-retry): .orchestrator/history.csv, session_state.md, task_queue.md
// and issue_queue.md.
package claudestrator

import (
	"errors"

	"github.com/orchstat/orchstat/ingest/records"
)

var errTODO = errors.New("claudestrator records are not read yet")

// ParseHistory reads .orchestrator/history.csv.
func ParseHistory(path string, b []byte) (*records.Set, error) { return nil, errTODO }

// ParseSessionState reads .orchestrator/session_state.md.
func ParseSessionState(path string, b []byte) (*records.Set, error) { return nil, errTODO }

// ParseTaskQueue reads .orchestrator/task_queue.md.
func ParseTaskQueue(path string, b []byte) (*records.Set, error) { return nil, errTODO }

// ParseIssueQueue reads .orchestrator/issue_queue.md.
func ParseIssueQueue(path string, b []byte) (*records.Set, error) { return nil, errTODO }

// Package codex reads Codex CLI rollout files: the JSON lines Codex writes
// per session under ${CODEX_HOME:-~/.codex}/sessions/YYYY/MM/DD/ (and
// archived_sessions/), named rollout-<time>-<uuid>.jsonl.
//
// A current rollout line is {"timestamp", "type", "payload"}; its first
// line is the session_meta. One file is one records.Run (RunID and Batch
// the session id). A rollout records no request as such: the unit it shows
// is one completed model response, an event_msg token_count whose info is
// set and whose cumulative total_token_usage changed. Each such line is one
// records.Call, with its tokens and the model of the turn_context before
// it. Rate-limit-only token_counts (info null) and repeated identical
// totals are not calls.
//
// What a rollout cannot say: whether a call was retried. Codex retries
// requests and streams, but writes none of it to the rollout in the
// versions read (stream_error is never persisted; error only in its
// extended-history mode), so calls have unknown attempts (EvidenceNone),
// never one. When a file does hold stream_error or error events, they are
// read as the failed attempts of the call they precede. Nor does it say a
// call's duration, HTTP status or request id, or how the session ended:
// every run is "unfinished".
//
// Legacy rollouts (mid-2025, before the payload envelope) are recognised:
// their header gives the run, and their other lines are ignored (they hold
// no token counts).
//
// Parsing is pure and deterministic: the same bytes give the same set.
package codex

import (
	"path/filepath"
	"strings"

	"github.com/orchstat/orchstat/ingest/records"
)

// Source names the rows this package writes.
const Source = "rollout"

// maxExcerpt bounds every text copied from a record into a row or error.
const maxExcerpt = 200

// ParseRollout reads one whole rollout file. path gives the session id
// when the file does not (the UUID that ends a rollout's name). A file in
// neither rollout format is an *records.Error; lines that cannot be read
// are Problems, located by line and field.
func ParseRollout(path string, b []byte) (*records.Set, error) {
	lines := splitLines(b)
	r := &rollout{path: path, set: &records.Set{}}
	if len(lines) == 0 {
		return r.set, nil
	}
	if legacyHeader(lines[0].B) {
		r.readLegacy(lines)
	} else if r.readCurrent(lines); r.envelopes == 0 {
		return nil, &records.Error{Line: lines[0].No, Offset: lines[0].Off, Field: "type",
			Msg: "not a Codex rollout: no line is {timestamp, type, payload}"}
	}
	r.finish()
	return r.set, nil
}

// fileSessionID is the UUID that ends a rollout's file name, or "".
func fileSessionID(path string) string {
	name := filepath.Base(strings.ReplaceAll(path, `\`, "/"))
	name = strings.TrimSuffix(name, ".jsonl")
	if len(name) < 36 || !isUUID(name[len(name)-36:]) {
		return ""
	}
	return strings.ToLower(name[len(name)-36:])
}

// isUUID says whether s is 8-4-4-4-12 hex digits.
func isUUID(s string) bool {
	if len(s) != 36 {
		return false
	}
	for i, c := range s {
		switch i {
		case 8, 13, 18, 23:
			if c != '-' {
				return false
			}
		default:
			if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F') {
				return false
			}
		}
	}
	return true
}

// excerpt trims s to maxExcerpt bytes without splitting a character.
func excerpt(s string) string { return records.Excerpt(s, maxExcerpt) }

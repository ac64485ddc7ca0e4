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
// A file is read a line at a time (Stream), so that a rollout that grows
// is read on from where the last reading stopped; ParseRollout is the
// same stream fed every line. Each call closes at the line that makes it
// (a changed token_count, an error), except the one group that stays
// open: the stream errors awaiting the response they delay, closed by the
// next token_count or error, by a turn_context or turn_aborted, or at
// maxAttempts (1,000) attempts. Until then Open shows them as a call of
// unknown outcome, as the end of a file does, named by the last stream
// error's line (the call they close into is named by its own line: the
// ingest replaces a reading's open calls as a whole). Besides them, at
// most 999 stream errors each holding two excerpts of at most 200 bytes,
// a State holds the run row's per-file aggregates and the last cumulative
// total, so that a repeated total is not a call wherever a reading stops.
// Two facts are settled where a whole-file read would look ahead:
//
//   - the run's id is settled by the first call made: a session_meta read
//     after a call (never in a file Codex writes, whose first line is its
//     session_meta) fills the detail but no longer names the run, since
//     rows already final name it;
//   - the detail lists at most maxModels (100) distinct models, the first
//     seen, and says when it has cut the list.
//
// Parsing is pure and deterministic: the same bytes give the same set,
// however they are cut into readings.
package codex

import (
	"path/filepath"
	"strings"

	"github.com/orchstat/orchstat/model/records"
)

// Source names the rows this package writes.
const Source = "rollout"

// maxExcerpt bounds every text copied from a record into a row or error.
const maxExcerpt = 200

// ParseRollout reads one whole rollout file: Stream fed every line. path
// gives the session id when the file does not (the UUID that ends a
// rollout's name). A file in neither rollout format is an *records.Error;
// lines that cannot be read are Problems, located by line and field.
func ParseRollout(path string, b []byte) (*records.Set, error) {
	return Stream.Feed(path, b)
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

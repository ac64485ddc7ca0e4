// Package claudecode reads Claude Code's session transcripts: the JSON
// lines files under ~/.claude/projects/<project>/ (or a .config/claude
// config directory), one <sessionId>.jsonl per session, and one
// agent-<agentId>.jsonl per sub-agent, in <sessionId>/subagents/ in
// current versions and beside the session file in older ones.
//
// The format is not an official API and changes between versions. Only
// the conversation records are read: user, assistant and system lines.
// Bookkeeping records (file-history-snapshot, summary, queue-operation,
// titles, progress, ...) and record types no version we know writes are
// ignored. A line that is not a JSON object, has no type, or is a
// conversation record with a field of the wrong type is a problem.
//
// What maps to what:
//   - the file is one Run: the session, or one sub-agent of a session
//     (RunID "<sessionId>/agent-<agentId>");
//   - each model response is one Call. Streaming writes a response as
//     several assistant lines sharing message.id and requestId, each
//     repeating the usage so far; they are one call, with the last usage.
//     Tool results and other lines may come between them, but a line of
//     another call (any other assistant line, or an api_error line)
//     closes the response: the same message again after that is another
//     call, its CallID suffixed "@<first line>";
//   - a system api_error line is an attempt that failed and was retried
//     (retryAttempt, retryInMs, the error). The api_error lines before a
//     response are that call's failed attempts; an assistant line with
//     isApiErrorMessage ends the chain as a failed call.
//
// What the records cannot say: the duration of an attempt or of a call
// (lines are written when an attempt ends); the tokens of failed attempts;
// retries made below Claude Code, inside the SDK; whether a failed call
// with no api_error lines before it was retried at all (its attempts are
// unknown); which sub-agent a line of an old transcript's sidechain
// belongs to; and calls a sub-agent file replays from its parent, which
// only a reader of both files could tell apart.
//
// Reading a growing file. Stream reads a transcript a line at a time, and
// ParseTranscript is that stream fed a whole file. What stays open is the
// response being streamed (closed by the next call's line), the api_error
// lines waiting for their call's outcome (closed by the response, the
// failure, a user line or a restarted count), closed calls whose model or
// run is not yet known, and aggregates for the run row; the run itself
// never closes. A closed call is committed (Final) once no later line can
// change its rows, in the order calls began. The bounds, each of which
// can make a reading differ from an unbounded whole-file read only where
// it says:
//   - a call that names no model takes the nearest real model: the last
//     before its first line, or the first within maxModelGap (1000)
//     lines after it; a model farther after it is not looked for;
//   - the run's session and agent ids are those the lines name within
//     the first maxIdentityWait (100) conversation lines; a session first
//     named after that is only listed in session_ids, and the run is
//     named from the path;
//   - a CallID is checked against the last maxIDs (256) CallIDs of the
//     file (64-bit hashes) to suffix a repeat with "@<first line>"; a
//     message id repeating farther apart keeps its bare id;
//   - a call holds at most maxChain (1000) failed attempts; a longer chain
//     is cut into calls of that many;
//   - a call remembers maxToolIDs (512) distinct tool_use ids to count a
//     repeated block once; further ids are counted without that check;
//   - the run's detail lists the first maxSessions (32) session ids and
//     maxModels (32) models.
//
// State is JSON of all that, versioned; it is a few KiB for a long file.
package claudecode

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/orchstat/orchstat/model/records"
)

// Source is the source column of every row this package makes.
const Source = "transcript"

// maxExcerpt bounds the text of errors kept in rows and problems.
const maxExcerpt = 200

// isAPIRequest reports whether an ignored line is an api-request record,
// which Claude Code 2.1.332 writes before each HTTP request it sends to
// the model (its querySource, a digest of the request, the request's
// parameters). Only their number is read.
func isAPIRequest(line []byte) bool {
	if !bytes.Contains(line, []byte(`"api-request"`)) {
		return false
	}
	var r struct {
		Type string `json:"type"`
	}
	return json.Unmarshal(line, &r) == nil && r.Type == "api-request"
}

// isKnownType reports whether an ignored line is a bookkeeping record
// Claude Code writes, which makes the file a transcript.
func isKnownType(line []byte) bool {
	var r struct {
		Type string `json:"type"`
	}
	return json.Unmarshal(line, &r) == nil && bookkeepingTypes[r.Type]
}

// excerpt cuts text to maxExcerpt bytes without splitting a character.
func excerpt(s string) string { return records.Excerpt(s, maxExcerpt) }

// stem is a file's name without its extension.
func stem(path string) string {
	base := filepath.Base(path)
	return strings.TrimSuffix(base, filepath.Ext(base))
}

func minTime(a, b *time.Time) *time.Time {
	if a == nil || (b != nil && b.Before(*a)) {
		return b
	}
	return a
}

func maxTime(a, b *time.Time) *time.Time {
	if a == nil || (b != nil && b.After(*a)) {
		return b
	}
	return a
}

// sorted is a copy of list in order, for deterministic Detail.
func sorted(list []string) []string {
	out := append([]string(nil), list...)
	sort.Strings(out)
	return out
}

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
//     repeating the usage so far; they are one call, with the last usage;
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
package claudecode

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/orchstat/orchstat/ingest/records"
)

// Source is the source column of every row this package makes.
const Source = "transcript"

// maxExcerpt bounds the text of errors kept in rows and problems.
const maxExcerpt = 200

// tally counts what became of a file's lines.
type tally struct{ used, ignored, problems, blank int }

// ParseTranscript reads one transcript file: a session's or a sub-agent's.
func ParseTranscript(path string, b []byte) (*records.Set, error) {
	set, _, err := parse(path, b)
	return set, err
}

func parse(path string, b []byte) (*records.Set, tally, error) {
	var t tally
	set := &records.Set{}
	var entries []*entry
	var firstErr *records.Error
	known := false
	for n, off := 1, int64(0); off < int64(len(b)); n++ {
		start := off
		var line []byte
		line, off = nextLine(b, off)
		e, kind, ferr := decodeLine(line, n)
		switch kind {
		case lineBlank:
			t.blank++
		case lineIgnored:
			t.ignored++
			known = known || isKnownType(line)
		case lineUsed:
			t.used++
			known = true
			entries = append(entries, e)
		case lineProblem:
			t.problems++
			p := records.Error{Line: n, Offset: start, Field: ferr.field, Msg: ferr.msg}
			if firstErr == nil {
				firstErr = &p
			}
			set.Problems = append(set.Problems, p)
		}
	}
	if !known && (t.problems > 0 || t.ignored > 0) {
		e := records.Error{Line: 1, Field: "type", Msg: "not a Claude Code transcript: no user, assistant, system or other known record"}
		if firstErr != nil && t.ignored == 0 {
			e.Line, e.Offset = firstErr.Line, firstErr.Offset
		}
		return nil, t, &e
	}
	build(set, path, entries)
	return set, t, nil
}

// nextLine returns the line starting at off, without its newline, and the
// offset of the next line.
func nextLine(b []byte, off int64) ([]byte, int64) {
	rest := b[off:]
	i := bytes.IndexByte(rest, '\n')
	if i < 0 {
		return rest, int64(len(b))
	}
	return rest[:i], off + int64(i) + 1
}

// isKnownType reports whether an ignored line is a bookkeeping record
// Claude Code writes, which makes the file a transcript.
func isKnownType(line []byte) bool {
	var r struct {
		Type string `json:"type"`
	}
	return json.Unmarshal(line, &r) == nil && bookkeepingTypes[r.Type]
}

// build makes the file's run and calls.
func build(set *records.Set, path string, entries []*entry) {
	if len(entries) == 0 {
		return
	}
	info := describe(path, entries)
	var models []modelAt
	for _, e := range entries {
		if e.asst != nil && e.asst.model != "" && e.asst.model != synthetic {
			models = append(models, modelAt{e.line, e.asst.model})
		}
	}
	ids := map[string]bool{}
	for _, c := range group(entries) {
		rc, atts := c.convert(info.runID, info.session, models, ids)
		set.Calls = append(set.Calls, rc)
		set.CallAttempts = append(set.CallAttempts, atts...)
		info.add(c, rc)
	}
	set.Runs = append(set.Runs, info.run())
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

// sortedKeys is a set's members in order, for deterministic Detail.
func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

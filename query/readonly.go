package query

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"
)

// ErrEmptyQuery is returned for a query with no statement in it.
var ErrEmptyQuery = errors.New("the query is empty")

// SyntaxError is a query DuckDB's parser could not read.
type SyntaxError struct{ Msg string }

func (e *SyntaxError) Error() string { return e.Msg }

// leadingExplain matches EXPLAIN [ANALYZE] at the start of a query, after
// any comments: the rest must itself be a query.
var leadingExplain = regexp.MustCompile(`(?is)^(?:\s+|--[^\n]*(?:\n|$)|/\*.*?\*/)*explain(?:\s+analyze)?\b`)

// checkReadOnly returns an error unless q is one query statement: a
// SELECT in any of its spellings (WITH, FROM, VALUES, TABLE, DESCRIBE,
// SHOW, SUMMARIZE), or EXPLAIN of one. It asks DuckDB's own parser, through
// json_serialize_sql, which serializes SELECT statements only and reports
// anything else, and every statement of q, so nothing is hidden behind a
// quote a hand-written splitter misreads: `SELECT $$'$$; CREATE ...` is
// three statements to DuckDB.
//
// `orchstat sql` runs on a read-only connection with external access off,
// so DuckDB refuses writes anyway; a rule's sql runs on check's read-write
// connection, where this is the guard.
func checkReadOnly(ctx context.Context, q querier, stmt string) error {
	body := stmt
	if loc := leadingExplain.FindStringIndex(stmt); loc != nil {
		body = stmt[loc[1]:]
	}
	rs, err := q.QueryContext(ctx, `SELECT json_serialize_sql(?::VARCHAR)::VARCHAR`, body)
	if err != nil {
		return cleanDuckErr(err)
	}
	defer rs.Close()
	var out string
	if rs.Next() {
		if err := rs.Scan(&out); err != nil {
			return err
		}
	}
	if err := rs.Err(); err != nil {
		return cleanDuckErr(err)
	}
	var parsed struct {
		Error      bool              `json:"error"`
		Type       string            `json:"error_type"`
		Message    string            `json:"error_message"`
		Position   string            `json:"position"`
		Statements []json.RawMessage `json:"statements"`
	}
	if err := json.Unmarshal([]byte(out), &parsed); err != nil {
		return fmt.Errorf("reading DuckDB's parse of the query: %w", err)
	}
	switch {
	case parsed.Error && parsed.Type == "parser":
		msg := parsed.Message
		if parsed.Position != "" && body == stmt {
			msg += " (at character " + parsed.Position + ")"
		}
		return &SyntaxError{Msg: msg}
	case parsed.Error:
		what := describeStatement(stmt)
		if strings.Contains(strings.TrimRight(strings.TrimSpace(stmt), ";"), ";") {
			what = "one of these statements" // which, the parser does not say
		}
		return fmt.Errorf("orchstat sql is read-only: it runs one query (SELECT, WITH, FROM, VALUES, TABLE, DESCRIBE, SHOW, SUMMARIZE, or EXPLAIN of one), and %s is not one", what)
	case len(parsed.Statements) == 0:
		return ErrEmptyQuery
	case len(parsed.Statements) > 1:
		// Only the last result would be shown, so say so instead.
		return fmt.Errorf("orchstat sql runs one statement at a time; this has %d", len(parsed.Statements))
	}
	return nil
}

// describeStatement names a refused statement by its first word, for the
// message only; what is refused was decided by DuckDB's parser.
func describeStatement(stmt string) string {
	s := stmt
	for {
		s = strings.TrimLeft(s, " \t\r\n(")
		switch {
		case strings.HasPrefix(s, "--"):
			if i := strings.IndexByte(s, '\n'); i >= 0 {
				s = s[i+1:]
				continue
			}
			s = ""
		case strings.HasPrefix(s, "/*"):
			if i := strings.Index(s, "*/"); i >= 0 {
				s = s[i+2:]
				continue
			}
			s = ""
		}
		break
	}
	word, _, _ := strings.Cut(s, " ")
	word = strings.ToUpper(strings.TrimRight(word, ";\t\r\n"))
	if word == "" || len(word) > 20 {
		return "this statement"
	}
	if strings.ContainsRune("AEIOU", rune(word[0])) {
		return "an " + word + " statement"
	}
	return "a " + word + " statement"
}

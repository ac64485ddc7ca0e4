package query

import (
	"errors"
	"fmt"
	"strings"
)

// readOnlyStarts are the statements `orchstat sql` runs. DuckDB's read-only
// mode already refuses writes to the store; this list also refuses what
// read-only mode allows but a query tool should not do (temporary tables,
// settings, extensions), with a message that names the statement.
var readOnlyStarts = map[string]bool{
	"SELECT": true, "WITH": true, "FROM": true, "VALUES": true, "TABLE": true,
	"DESCRIBE": true, "DESC": true, "SHOW": true, "SUMMARIZE": true, "EXPLAIN": true,
}

// ErrEmptyQuery is returned for a query with no statement in it.
var ErrEmptyQuery = errors.New("the query is empty")

// CheckReadOnly returns an error unless q is a single query statement.
func CheckReadOnly(q string) error {
	stmts := splitStatements(q)
	if len(stmts) == 0 {
		return ErrEmptyQuery
	}
	for _, s := range stmts {
		kw := firstKeyword(s)
		if !readOnlyStarts[kw] {
			return fmt.Errorf("orchstat sql is read-only: %s statements are refused", kw)
		}
	}
	if len(stmts) > 1 {
		// Only the last result would be shown, so say so instead.
		return fmt.Errorf("orchstat sql runs one statement at a time; this has %d", len(stmts))
	}
	return nil
}

// splitStatements splits on semicolons outside quotes and comments, and
// drops comments, so each statement's first word can be read.
func splitStatements(q string) []string {
	var out []string
	var cur strings.Builder
	flush := func() {
		if s := strings.TrimSpace(cur.String()); s != "" {
			out = append(out, s)
		}
		cur.Reset()
	}
	for i := 0; i < len(q); i++ {
		c := q[i]
		switch {
		case c == '-' && i+1 < len(q) && q[i+1] == '-':
			for i < len(q) && q[i] != '\n' {
				i++
			}
			cur.WriteByte(' ')
		case c == '/' && i+1 < len(q) && q[i+1] == '*':
			end := strings.Index(q[i+2:], "*/")
			if end < 0 {
				i = len(q)
			} else {
				i += end + 3 // the comment's last byte; the loop moves past it
			}
			cur.WriteByte(' ')
		case c == '\'' || c == '"':
			j := i + 1
			for j < len(q) && q[j] != c {
				j++
			}
			cur.WriteString(q[i:min(j+1, len(q))])
			i = j
		case c == ';':
			flush()
		default:
			cur.WriteByte(c)
		}
	}
	flush()
	return out
}

func firstKeyword(s string) string {
	s = strings.TrimLeft(s, " \t\r\n(")
	end := strings.IndexFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r == '_')
	})
	if end < 0 {
		end = len(s)
	}
	return strings.ToUpper(s[:end])
}

package claudestrator

import (
	"bytes"
	"strings"
	"unicode/utf8"

	"github.com/orchstat/orchstat/model/records"
)

// The markdown files are written by agents from templates, so the same
// field appears as a table row ("| Status | pending |"), a bold label
// ("**Status:** pending") or, in session_state.md, a plain "key: value"
// line. These helpers read all three. Text inside fenced code blocks is
// skipped: templates carry example entries there.

type mdLine struct {
	n     int // 1-based
	text  string
	fence bool // a fence line or inside a fenced block
	delim bool // the fence line itself
}

// mdLines splits a file into lines and marks fenced code. A file with NUL
// bytes is binary, not markdown; stray bytes that are not UTF-8 (an
// editor's Latin-1) are replaced, not fatal.
func mdLines(b []byte, field string) ([]mdLine, error) {
	if bytes.IndexByte(b, 0) >= 0 {
		return nil, &records.Error{Line: 1, Field: field, Msg: "binary data: not a claudestrator markdown file"}
	}
	if !utf8.Valid(b) {
		b = bytes.ToValidUTF8(b, []byte("\uFFFD"))
	}
	b = bytes.TrimPrefix(b, []byte("\ufeff"))
	var out []mdLine
	in := false
	for i, s := range strings.Split(string(b), "\n") {
		s = strings.TrimRight(s, "\r")
		t := strings.TrimLeft(s, " ")
		isFence := len(s)-len(t) < 4 && (strings.HasPrefix(t, "```") || strings.HasPrefix(t, "~~~"))
		if isFence {
			in = !in
		}
		out = append(out, mdLine{n: i + 1, text: s, fence: in || isFence, delim: isFence})
	}
	return out, nil
}

// heading reads an ATX heading: "### BUILD-001: Title" is level 3.
func heading(s string) (level int, text string, ok bool) {
	t := strings.TrimLeft(s, " ")
	if len(s)-len(t) > 3 {
		return 0, "", false
	}
	for level < len(t) && t[level] == '#' {
		level++
	}
	if level == 0 || level > 6 || (level < len(t) && t[level] != ' ' && t[level] != '\t') {
		return 0, "", false
	}
	return level, strings.TrimSpace(strings.TrimRight(strings.TrimSpace(t[level:]), "#")), true
}

// tableRow splits "| a | b |" into trimmed cells.
func tableRow(s string) ([]string, bool) {
	t := strings.TrimSpace(s)
	if len(t) < 2 || t[0] != '|' {
		return nil, false
	}
	t = strings.TrimSuffix(t[1:], "|")
	cells := strings.Split(t, "|")
	for i := range cells {
		cells[i] = strings.TrimSpace(cells[i])
	}
	return cells, true
}

// fieldRow reads a two-column "| Field | Value |" row, skipping the
// header and separator rows. A value holding "|" keeps it.
func fieldRow(s string) (key, val string, ok bool) {
	cells, ok := tableRow(s)
	if !ok || len(cells) < 2 {
		return "", "", false
	}
	key = strings.Trim(cells[0], "`*")
	if key == "" || strings.Trim(key, "-: ") == "" || (strings.EqualFold(key, "field") && strings.EqualFold(cells[1], "value")) {
		return "", "", false
	}
	return key, strings.Join(cells[1:], " | "), true
}

// boldLabel reads "**Key:** value", "- **Key:** value" or "**Key**: value".
func boldLabel(s string) (key, val string, ok bool) {
	t := strings.TrimSpace(s)
	t = strings.TrimSpace(strings.TrimPrefix(strings.TrimPrefix(t, "- "), "* "))
	if !strings.HasPrefix(t, "**") {
		return "", "", false
	}
	rest := t[2:]
	end := strings.Index(rest, "**")
	if end <= 0 {
		return "", "", false
	}
	key, after := rest[:end], rest[end+2:]
	switch {
	case strings.HasSuffix(key, ":"):
		key = strings.TrimSuffix(key, ":")
	case strings.HasPrefix(after, ":"):
		after = after[1:]
	default:
		return "", "", false
	}
	key = strings.TrimSpace(key)
	if key == "" {
		return "", "", false
	}
	return key, strings.TrimSpace(after), true
}

// normKey folds a field name for lookup: "Retry-Count", "retry count"
// and "retry_count" are one key.
func normKey(s string) string {
	return strings.NewReplacer("-", "_", " ", "_").Replace(strings.ToLower(strings.TrimSpace(s)))
}

// field is one field of an entry, with where it was written.
type field struct {
	key, val string
	line     int
}

// fields keeps an entry's fields in order, looked up by normKey.
type fields struct {
	list  []field
	index map[string]int
}

func (f *fields) add(key, val string, line int) {
	if f.index == nil {
		f.index = map[string]int{}
	}
	k := normKey(key)
	if i, dup := f.index[k]; dup {
		// The later value is the newer edit of the entry.
		f.list[i] = field{key, val, line}
		return
	}
	f.index[k] = len(f.list)
	f.list = append(f.list, field{key, val, line})
}

// appendTo continues a field's value on the next line.
func (f *fields) appendTo(key, text string) {
	if i, ok := f.index[normKey(key)]; ok {
		f.list[i].val += "\n" + text
	}
}

func (f *fields) get(names ...string) (field, bool) {
	for _, n := range names {
		if i, ok := f.index[normKey(n)]; ok {
			return f.list[i], true
		}
	}
	return field{}, false
}

func (f *fields) value(names ...string) string {
	v, _ := f.get(names...)
	return strings.TrimSpace(v.val)
}

func (f *fields) raw() map[string]string {
	m := make(map[string]string, len(f.list))
	for _, x := range f.list {
		m[x.key] = x.val
	}
	return m
}

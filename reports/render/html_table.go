package render

import (
	"bytes"
	"html/template"
	"strings"

	"github.com/orchstat/orchstat/model/reports"
)

// writeTableHTML writes t (its rows already plain cells) as a page with
// one table: cells at full precision as in CSV (times to the
// nanosecond, lists and objects as JSON), nil as t.Null.
func writeTableHTML(buf *bytes.Buffer, t reports.Table, rows [][]any) error {
	null := t.Null
	if null == "" {
		null = "-"
	}
	title := escapeControls(t.Title)
	if title == "" {
		title = "orchstat"
	}
	g := tableGrid(title, t.Columns, rows, null)
	tbl := &htmlTable{}
	for j, c := range t.Columns {
		tbl.Head = append(tbl.Head, htmlHead{Text: escapeControls(c), Numeric: g.numeric[j]})
	}
	for _, row := range rows {
		var r htmlRow
		for j, v := range row {
			s := null
			if v != nil {
				s = csvCell(v)
			}
			r.Cells = append(r.Cells, htmlCell{HTML: htmlText(escapeControls(s)), Numeric: g.numeric[j]})
		}
		tbl.Rows = append(tbl.Rows, r)
	}
	tbl.None = "(none)"
	page := htmlPage{Title: title, Sections: []htmlSection{{ID: "table", Title: title, Blocks: []htmlBlock{{Table: tbl}}}}}
	return writeHTMLPage(buf, page)
}

// textEscaper escapes what HTML text cannot hold as itself: a "<" would
// start a tag and a "&" a character reference. Quotes need no escaping
// in text, and are kept so that a JSON cell reads as JSON in the page's
// source too, as it does in every other format.
var textEscaper = strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;")

// htmlText is s as HTML text, for a cell of a table's page: safe only
// between tags, where the page template puts it.
func htmlText(s string) template.HTML {
	return template.HTML(textEscaper.Replace(s))
}

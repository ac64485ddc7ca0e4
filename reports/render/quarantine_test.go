package render

import (
	"bytes"
	"testing"

	"github.com/orchstat/orchstat/model/reports"
)

// The reason's own "line 4: " is not said twice ("line 4, byte 200:
// line 4: not JSON" before).
func TestRenderQuarantineList(t *testing.T) {
	tbl := reports.Table{Title: "Quarantined lines", Rows: [][]any{
		{"/a/very/long/path/to/trace.jsonl", 3, 120, "ts", "bad time", "{\"ts\":\x1b}"},
		{"/a/very/long/path/to/trace.jsonl", 4, 200, nil, "line 4: not JSON", "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"},
	}}
	var out, errw bytes.Buffer
	if err := RenderQuarantine(&out, &errw, Quarantine{Lines: tbl, Total: 5}, FormatTable, 30); err != nil {
		t.Fatal(err)
	}
	want := "Quarantined lines\n\n…very/long/path/to/trace.jsonl\n  line 3, byte 120: bad time\n    {\"ts\":\\x1b}\n" +
		"  line 4, byte 200: not JSON\n    xxxxxxxxxxxxxxxxxxxxxxxxx…\n2 of 5 quarantined lines shown; --limit 0 shows them all\n"
	if out.String() != want || errw.Len() != 0 {
		t.Errorf("got\n%s\nwant\n%s\n(stderr %q)", out.String(), want, errw.String())
	}
}

package ingest

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/orchstat/orchstat/ingest/trace"
)

// TestPayloadsByteForByte reads traces through readLines and checks every
// event's payload against the bytes of its line once the whole file is
// read, so a chunk's payloads that a later chunk's arena overwrote would
// show. The files cover both ways a chunk's arena ends (handed over as
// its string when mostly full, copied and reused when mostly empty), a
// payload larger than a chunk, and a stream, whose size is not known.
func TestPayloadsByteForByte(t *testing.T) {
	r := rand.New(rand.NewPCG(40, 1))
	text := func(n int) string {
		const alphabet = `abc "\ é合{}[]:,0123456789` + "\t\n"
		var b strings.Builder
		for b.Len() < n {
			b.WriteString(string([]rune(alphabet)[r.IntN(len([]rune(alphabet)))]))
		}
		return b.String()
	}
	cases := []struct {
		name   string
		sizes  func() int
		lines  int
		stream bool
	}{
		{"large payloads", func() int { return 2000 + r.IntN(40000) }, 200, false},
		{"small payloads", func() int { return r.IntN(20) }, 40000, false},
		{"mixed, one past a chunk", func() int {
			if r.IntN(100) == 0 {
				return chunkBytes + r.IntN(100000)
			}
			return r.IntN(3000)
		}, 300, false},
		{"stream", func() int { return r.IntN(9000) }, 500, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var file bytes.Buffer
			var want []string
			for i := range c.lines {
				p := fmt.Sprintf(`{"i":%d,"s":%q}`, i, text(c.sizes()))
				want = append(want, p)
				fmt.Fprintf(&file, `{"type":"X","schemaVersion":1,"timestamp":"2026-11-02T10:00:00.000Z","runId":"r","payload":%s}`+"\n", p)
			}
			cur := fileState{id: 1, path: "t/trace.jsonl", size: int64(file.Len())}
			rd := trace.NewReader(bytes.NewReader(file.Bytes()), 0, 0)
			if c.stream {
				cur.size = 0
				rd = trace.NewStreamReader(bytes.NewReader(file.Bytes()))
			}
			var got []string
			chunks := 0
			readLines(rd, cur, "", nil, func(ch chunk) bool {
				chunks++
				if ch.err != nil {
					t.Fatalf("chunk %d: %v", chunks, ch.err)
				}
				for _, e := range ch.rows.Events {
					got = append(got, e.Payload)
				}
				return true
			})
			rd.Close()
			if len(got) != len(want) {
				t.Fatalf("%d payloads in %d chunks, want %d", len(got), chunks, len(want))
			}
			for i := range want {
				if got[i] != want[i] {
					t.Fatalf("payload %d of %d (%d chunks) differs:\n got %.120q\nwant %.120q", i, len(want), chunks, got[i], want[i])
				}
			}
			if chunks < 2 && c.lines > 1000 {
				t.Errorf("%d chunk(s): the case does not cross chunks", chunks)
			}
		})
	}
}

package yamlast

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// nested builds hostile documents: n levels of one kind of nesting.
func nested(kind string, n int) string {
	switch kind {
	case "brackets": // the issue's: rules: [[[...]]]
		return "rules: " + strings.Repeat("[", n) + strings.Repeat("]", n) + "\n"
	case "unclosed":
		return "rules: " + strings.Repeat("[", n) + "\n"
	case "flow mappings":
		return "rules: " + strings.Repeat("{a: ", n) + "1" + strings.Repeat("}", n) + "\n"
	case "flow over lines":
		return "rules: [\n" + strings.Repeat("  [\n", n) + strings.Repeat("  ]\n", n) + "]\n"
	case "indentation":
		var b strings.Builder
		for i := range n {
			b.WriteString(strings.Repeat(" ", i) + "a:\n")
		}
		return b.String()
	case "compact lists":
		return "rules:\n" + strings.Repeat("- ", n) + "x\n"
	case "tagged and anchored":
		return "rules: " + strings.Repeat("!!seq &a [", n) + strings.Repeat("]", n) + "\n"
	case "after a quoted key":
		return "'rules': " + strings.Repeat("[", n) + strings.Repeat("]", n) + "\n"
	}
	panic(kind)
}

var hostileKinds = []string{"brackets", "unclosed", "flow mappings", "flow over lines", "indentation",
	"compact lists", "tagged and anchored", "after a quoted key"}

// allocated is the bytes f allocates.
func allocated(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// Each way to nest, at 20 KB and 200 KB (the sizes: 195 MB and
// 15 GB to parse), is refused by Parse with "nested too deep" at a line
// and column, before the parser sees it, in a few kilobytes.
func TestParseRefusesDeepNesting(t *testing.T) {
	for _, kind := range hostileKinds {
		for _, size := range []int{20 << 10, 200 << 10} {
			n := 1
			for len(nested(kind, n*2)) <= size {
				n *= 2
			}
			doc := []byte(nested(kind, n))
			t.Run(kind+"/"+strconv.Itoa(size>>10)+"KB", func(t *testing.T) {
				var err error
				bytes := allocated(func() { _, err = Parse(doc) })
				var de *DepthError
				if !errors.As(err, &de) || de.Line < 1 || de.Column < 1 {
					t.Fatalf("%d bytes: error %v, want a DepthError with a position", len(doc), err)
				}
				msg, line, col := ErrorAt(err)
				if !strings.Contains(msg, "nested too deep") || line != de.Line || col != de.Column {
					t.Errorf("ErrorAt: %q at %d:%d", msg, line, col)
				}
				// Generous: the scan keeps a stack of at most MaxDepth.
				if bytes > 1<<20 {
					t.Errorf("refusing %d bytes allocated %d bytes", len(doc), bytes)
				}
			})
		}
	}
}

// The limit is exact for brackets and indentation, and points at where
// the document goes one level too deep.
func TestCheckDepthBoundary(t *testing.T) {
	// "rules:" is one level; MaxDepth-1 brackets inside it make MaxDepth.
	if err := CheckDepth([]byte(nested("brackets", MaxDepth-1))); err != nil {
		t.Errorf("%d levels refused: %v", MaxDepth, err)
	}
	err := CheckDepth([]byte(nested("brackets", MaxDepth)))
	var de *DepthError
	if !errors.As(err, &de) || de.Line != 1 || de.Column != len("rules: ")+MaxDepth {
		t.Errorf("%d levels: %v", MaxDepth+1, err)
	}
	if err := CheckDepth([]byte(nested("indentation", MaxDepth))); err != nil {
		t.Errorf("%d levels of indentation refused: %v", MaxDepth, err)
	}
	err = CheckDepth([]byte(nested("indentation", MaxDepth+1)))
	if !errors.As(err, &de) || de.Line != MaxDepth+1 || de.Column != MaxDepth+1 {
		t.Errorf("%d levels of indentation: %v", MaxDepth+1, err)
	}
}

// Brackets that are text (quoted, in comments, in block scalars, inside
// plain scalars) do not count, and real files pass.
func TestCheckDepthIgnoresText(t *testing.T) {
	deep := strings.Repeat("[{", 200)
	for name, doc := range map[string]string{
		"single quotes":      "a: '" + deep + " it''s'\n",
		"double quotes":      "a: \"\\\"" + deep + "\"\n",
		"quotes over lines":  "a: \"x\n  " + deep + "\n  y\"\nb: [1]\n",
		"comment":            "a: 1 # " + deep + "\n# " + deep + "\n",
		"literal block":      "a: |\n  " + deep + "\n  " + deep + "\nb: [1, {c: 2}]\n",
		"folded in a list":   "- a: >-\n    " + deep + "\n  b: 1\n- c\n",
		"plain scalar":       "a: see " + deep + "\n",
		"quoted in a flow":   "a: [\"" + deep + "\", '" + deep + "']\n",
		"several documents":  strings.Repeat("---\n"+nested("brackets", 40), 5),
		"crlf":               "a: 1\r\nb: [1, 2]\r\n",
		"rule file":          "rules:\n  - name: r\n    metric: runs\n    condition: value > 1 && labels.x in ['a', \"b\"]\n    annotations:\n      summary: '{{ .Value }} [{{ range .Labels }}{{ . }}{{ end }}]'\n",
		"policy file":        "extends: orchestrator\nbackoff: {initial: 1s, max: 10s}\nadaptive: {strategies: {implement: [simplify-prompt, incremental]}}\nclassify: [{class: rate_limit, contains: [\"quota [exceeded\"]}]\n",
		"template in quotes": "a: '{{ index .Labels \"[\" }}'\n",
	} {
		if err := CheckDepth([]byte(doc)); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
	// The repository's own YAML files.
	files, _ := filepath.Glob("../../testdata/*/*.yaml")
	more, _ := filepath.Glob("../../testdata/*/*/*.yaml")
	for _, f := range append(append(files, more...), "../../alerts.yaml") {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if err := CheckDepth(b); err != nil {
			t.Errorf("%s: %v", f, err)
		}
	}
}

// ReadFile reads at most MaxFileSize+1 bytes of anything: /dev/zero, a
// huge file, a named pipe nobody writes to, a directory each get a clear
// error, quickly and in bounded memory.
func TestReadFileBounds(t *testing.T) {
	dir := t.TempDir()
	exact := filepath.Join(dir, "exact.yaml")
	os.WriteFile(exact, []byte(strings.Repeat("#", MaxFileSize)), 0o644)
	over := filepath.Join(dir, "over.yaml")
	os.WriteFile(over, []byte(strings.Repeat("#", MaxFileSize+1)), 0o644)
	huge := filepath.Join(dir, "huge.yaml")
	f, err := os.Create(huge)
	if err != nil {
		t.Fatal(err)
	}
	f.Truncate(8 << 30) // sparse: 8 GiB that take no disk
	f.Close()
	fifo := filepath.Join(dir, "fifo.yaml")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}

	if b, err := ReadFile(exact); err != nil || len(b) != MaxFileSize {
		t.Errorf("a file of exactly %d bytes: %d, %v", MaxFileSize, len(b), err)
	}
	for _, tc := range []struct{ path, want string }{
		{over, "over.yaml: 1048577 bytes, more than the 1048576 (1 MiB)"},
		{huge, "huge.yaml: 8589934592 bytes, more than the 1048576 (1 MiB)"},
		{"/dev/zero", "/dev/zero: more than 1048576 bytes (1 MiB)"},
		{fifo, "fifo.yaml: is a named pipe, not a file, and nothing could be read from it"},
		{dir, "is a directory, not a file"},
	} {
		done := make(chan struct{})
		var bytes uint64
		go func() {
			defer close(done)
			bytes = allocated(func() { _, err = ReadFile(tc.path) })
		}()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			t.Fatalf("%s: ReadFile did not return", tc.path)
		}
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.path, err, tc.want)
		}
		if bytes > 8<<20 {
			t.Errorf("%s: allocated %d bytes", tc.path, bytes)
		}
	}
	if _, err := ReadFile(filepath.Join(dir, "missing.yaml")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing: %v", err)
	}
	// Parse itself refuses more than MaxFileSize, for data read elsewhere.
	if _, err := Parse([]byte(strings.Repeat("#", MaxFileSize+1))); err == nil || !strings.Contains(err.Error(), "more than the 1048576") {
		t.Errorf("Parse of %d bytes: %v", MaxFileSize+1, err)
	}
}

// A pipe with a writer (a shell's <(...)) is read as a file.
func TestReadFilePipe(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	go func() {
		time.Sleep(50 * time.Millisecond)
		w.WriteString("rules: []\n")
		w.Close()
	}()
	b, err := ReadFile("/dev/fd/" + strconv.Itoa(int(r.Fd())))
	if err != nil || string(b) != "rules: []\n" {
		t.Errorf("%q, %v", b, err)
	}
}

// laughs is a "billion laughs": ten aliases of ten aliases, levels deep.
func laughs(levels int) string {
	var b strings.Builder
	b.WriteString("a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n")
	for i := 1; i <= levels; i++ {
		b.WriteString("a" + strconv.Itoa(i) + ": &a" + strconv.Itoa(i) + " [")
		for j := range 10 {
			if j > 0 {
				b.WriteString(", ")
			}
			b.WriteString("*a" + strconv.Itoa(i-1))
		}
		b.WriteString("]\n")
	}
	return b.String()
}

// Aliases that make a small file stand for a billion values, or an alias
// inside its own anchor, are refused at the alias, in bounded time and
// memory; ordinary aliases pass.
func TestCheckExpansion(t *testing.T) {
	for name, tc := range map[string]struct {
		doc       string
		line, col int
	}{
		"billion laughs": {laughs(8) + "tests: *a8\n", 6, 10},
		"recursive":      {"a: &a [1, *a]\n", 1, 11},
		"in a mapping":   {laughs(8) + "m: {k: *a8}\n", 6, 10},
	} {
		f, err := Parse([]byte(tc.doc))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		bytes := allocated(func() { err = CheckExpansion(f) })
		var xe *ExpansionError
		if !errors.As(err, &xe) || xe.Line != tc.line || xe.Column != tc.col {
			t.Errorf("%s: %v, want an ExpansionError at %d:%d", name, err, tc.line, tc.col)
		}
		if msg, _, _ := ErrorAt(err); !strings.Contains(msg, "expands (through aliases) to more than 200000 values") {
			t.Errorf("%s: %q", name, msg)
		}
		if bytes > 64<<20 {
			t.Errorf("%s: allocated %d", name, bytes)
		}
	}
	f, err := Parse([]byte(laughs(3) + "defaults: &d {a: 1}\nx: {<<: *d, b: *a3, c: *a3}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if err := CheckExpansion(f); err != nil {
		t.Errorf("thousands of values: %v", err)
	}
}

package ingest

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
)

// readDirUnsorted gives every entry of a folder with its type, as
// os.ReadDir does, in any order, odd names and many entries included
// (many system calls' worth where the buffer is small).
func TestReadDirUnsorted(t *testing.T) {
	defer smallDirentBuffer()()
	dir := t.TempDir()
	want := map[string]os.FileMode{}
	for i := range 300 {
		name := filepath.Join(dir, "run-"+string(rune('a'+i%26))+"-\t\n é"+string(rune('0'+i%10))+"-"+strconv.Itoa(i))
		if err := os.Mkdir(name, 0o755); err != nil {
			t.Fatal(err)
		}
		want[filepath.Base(name)] = os.ModeDir
	}
	os.WriteFile(filepath.Join(dir, "file"), nil, 0o644)
	want["file"] = 0
	os.Symlink("file", filepath.Join(dir, "link"))
	want["link"] = os.ModeSymlink
	got, err := readDirUnsorted(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(want) {
		t.Fatalf("%d entries, want %d", len(got), len(want))
	}
	for _, e := range got {
		if m, ok := want[e.name]; !ok || m != e.typ&os.ModeType {
			t.Errorf("entry %q of type %v; want %v (known %v)", e.name, e.typ, m, ok)
		}
	}
	ref, _ := os.ReadDir(dir)
	names := make([]string, len(got))
	for i, e := range got {
		names[i] = e.name
	}
	slices.Sort(names)
	for i, e := range ref {
		if names[i] != e.Name() {
			t.Fatalf("entry %d is %q, os.ReadDir says %q", i, names[i], e.Name())
		}
	}
	if _, err := readDirUnsorted(filepath.Join(dir, "missing")); !os.IsNotExist(err) {
		t.Fatalf("a missing folder: %v, want not-exist", err)
	}
}

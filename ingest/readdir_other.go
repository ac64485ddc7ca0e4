//go:build !linux

package ingest

import "os"

// readDirUnsorted lists dir in the order the system gives: os.ReadDir's
// sort through the fs.DirEntry interface, and the interfaces themselves,
// were half of listing a runs folder of 30,000 runs.
func readDirUnsorted(dir string) ([]dirEntry, error) {
	f, err := os.Open(dir)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	entries, err := f.ReadDir(-1)
	out := make([]dirEntry, len(entries))
	for i, e := range entries {
		out[i] = dirEntry{e.Name(), e.Type()}
	}
	return out, err
}

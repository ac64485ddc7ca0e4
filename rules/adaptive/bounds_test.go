package adaptive

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/orchstat/orchstat/model/orchestr8/spec"
)

// The retry configuration is bounded like the YAML files: nesting past
// encoding/json's 10,000 levels says so (it said "invalid character
// '['"), /dev/zero is refused after 1 MiB, and a named pipe nobody writes
// to reads as empty rather than hanging Load; each is the defaults with a
// warning, in bounded memory.
func TestLoadHostile(t *testing.T) {
	dir := t.TempDir()
	deep := filepath.Join(dir, "deep.json")
	os.WriteFile(deep, []byte(`{"maxRetries": `+strings.Repeat("[", 200000)+strings.Repeat("]", 200000)+"}"), 0o644)
	fifo := filepath.Join(dir, "fifo.json")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ path, want string }{
		{deep, deep + ":1: is nested too deep (more than 10000 levels of [ and {); using the defaults"},
		{"/dev/zero", "/dev/zero: is larger than 1024 KiB"},
		{fifo, fifo + ":1: is empty; using the defaults"},
	} {
		done := make(chan struct{})
		var c Config
		var w []Warning
		var before, after runtime.MemStats
		go func() {
			defer close(done)
			runtime.ReadMemStats(&before)
			c, w = Load(tc.path)
			runtime.ReadMemStats(&after)
		}()
		select {
		case <-done:
		case <-time.After(30 * time.Second): // a hang guard
			t.Fatalf("%s: Load did not return", tc.path)
		}
		if len(w) != 1 || !strings.HasPrefix(w[0].String(), tc.want) || c.MaxRetries != spec.DefaultMaxRetries {
			t.Errorf("%s: %v %+v, want %q", tc.path, w, c.MaxRetries, tc.want)
		}
		if n := after.TotalAlloc - before.TotalAlloc; n > 16<<20 {
			t.Errorf("%s: allocated %d bytes", tc.path, n)
		}
	}
}

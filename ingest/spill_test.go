package ingest

import (
	"errors"
	"testing"

	"github.com/orchstat/orchstat/model/disk"
)

// DuckDB's failure to spill on a nearly full disk is retried with a
// larger memory limit, as running out of memory is (a larger pool needs
// no spill): before, it failed every ingest for good with DuckDB's words.
func TestSpillFailureIsRetried(t *testing.T) {
	msg := `Failed to commit: failed to offload data block of size 256.0 KiB (4.5 MiB/5.8 MiB used). This limit was set by the 'max_temp_directory_size' setting.`
	if !disk.IsOutOfMemory(errors.New(msg)) || !tempFull.MatchString(msg) {
		t.Errorf("%q is not taken for a want of memory on a full disk", msg)
	}
	if tempFull.MatchString("could not allocate block of size 256.0 KiB") {
		t.Error("running out of memory taken for a full disk")
	}
}

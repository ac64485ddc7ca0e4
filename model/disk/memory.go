package disk

import "regexp"

// outOfMemory matches DuckDB's errors for a buffer pool too small for the
// work: "Out of Memory Error: …" mid-statement, and, at a commit,
// "Failed to commit: could not allocate block of size 256.0 KiB (63.7
// MiB/64.0 MiB used)", whose type prefix is not "Out of Memory". A buffer
// pool that must spill where the disk is nearly full fails instead with
// "failed to offload data block … max_temp_directory_size": DuckDB caps
// its spill files by the free space, and a larger pool needs no spill.
var outOfMemory = regexp.MustCompile(`(?i)out of memory|could not allocate block|failed to (allocate|pin|offload) (data )?block|max_temp_directory_size`)

// IsOutOfMemory reports whether err is DuckDB running out of its memory
// limit (or of the disk it spills to), which a larger limit may cure.
func IsOutOfMemory(err error) bool {
	return err != nil && outOfMemory.MatchString(err.Error())
}

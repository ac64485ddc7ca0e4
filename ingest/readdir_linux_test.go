package ingest

// smallDirentBuffer makes getdents64's buffer small, so a test's folder
// takes many calls; it returns what puts it back.
func smallDirentBuffer() func() {
	n := direntBuf
	direntBuf = 1024
	return func() { direntBuf = n }
}

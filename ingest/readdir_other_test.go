//go:build !linux

package ingest

// smallDirentBuffer does nothing where os.File.ReadDir lists folders.
func smallDirentBuffer() func() { return func() {} }

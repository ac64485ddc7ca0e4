package query_test

import "testing"

// skipShort skips, under go test -short, a test of scale or an end-to-end
// one (generated datasets, the reference comparison, memory bounds, large
// or interrupted files): the fast lane keeps this package's unit tests, and
// go test ./... runs these. See "Tests" in docs/CONTRIBUTING.md.
func skipShort(t *testing.T, what string) {
	t.Helper()
	if testing.Short() {
		t.Skipf("%s; go test ./... runs it (skipped under -short)", what)
	}
}

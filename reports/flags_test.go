package reports

import "flag"

// update rewrites golden files instead of comparing against them:
// go test ./reports -update
var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

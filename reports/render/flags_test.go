package render

import "flag"

// update rewrites golden files instead of comparing against them:
// go test ./reports/render -update
var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

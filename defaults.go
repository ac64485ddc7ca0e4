// Package orchstat holds files that ship inside the binary. go:embed cannot
// reach above a package's directory, so the embedding lives at the root
// beside the files users edit.
package orchstat

import _ "embed"

// DefaultAlerts is alerts.yaml as shipped.
//
//go:embed alerts.yaml
var DefaultAlerts []byte

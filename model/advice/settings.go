package advice

import "encoding/json"

// Settings is `orchstat retry-config show`: the effective retry
// configuration, with the values that are defaults marked. The JSON
// carries the configuration as it would be written; the text lays the
// same values out as orchestr8's displayConfig does.
type Settings struct {
	Path   string `json:"path"`
	Exists bool   `json:"exists"`
	// Config is the configuration as it would be written.
	Config   json.RawMessage `json:"config"`
	Defaults []string        `json:"defaults"`
	Warnings []string        `json:"warnings"`

	MaxRetries int     `json:"-"`
	WindowSize int     `json:"-"`
	Threshold  float64 `json:"-"`
	// Stages are the stages with strategies, in the file's order, and
	// Strategies each one's list.
	Stages     []string            `json:"-"`
	Strategies map[string][]string `json:"-"`
	// Defaulted names the values not taken from the file: top-level keys,
	// and "strategies.<stage>" for a stage whose list was unusable.
	Defaulted map[string]bool `json:"-"`
}

// SetResult is `retry-config set --format json`: the value written under
// key, and the warnings about what could not be read. Fields are in the
// order of their JSON names, as the document always had them.
type SetResult struct {
	Key      string   `json:"key"`
	Path     string   `json:"path"`
	Value    any      `json:"value"` // an int, a float64 or a []string, as written
	Warnings []string `json:"warnings"`
}

// ResetResult is `retry-config reset --format json`.
type ResetResult struct {
	Existed  bool     `json:"existed"`
	Path     string   `json:"path"`
	Reset    bool     `json:"reset"`
	Warnings []string `json:"warnings"`
}

package main

import (
	"errors"
	"fmt"
	"io/fs"
	"strings"

	"github.com/orchstat/orchstat/rules/retry"
	"github.com/orchstat/orchstat/rules/retry/policyfile"
	"github.com/orchstat/orchstat/rules/yamlast"
)

// loadPolicy reads a retry policy, as exec's --policy and simulate's
// --baseline and --policy name one: a file when one exists at spec, else a
// preset.
// A spec with a slash or a dot is a path, so a mistyped file name is not
// reported as an unknown preset.
func loadPolicy(spec string) (*retry.Policy, error) {
	data, err := yamlast.ReadFile(spec)
	switch {
	case err == nil:
		return policyfile.Parse(spec, data)
	case !errors.Is(err, fs.ErrNotExist):
		return nil, err
	case strings.ContainsAny(spec, "/."):
		return nil, fmt.Errorf("policy %s: no such file", spec)
	}
	p, err := retry.Preset(spec)
	if err != nil {
		return nil, usageError{err}
	}
	return p, nil
}

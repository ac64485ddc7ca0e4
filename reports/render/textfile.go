package render

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// PromSample is one gauge sample for the Prometheus text format.
type PromSample struct {
	Name   string // without the orchstat_ prefix
	Help   string
	Labels map[string]string
	Value  float64
}

// WriteTextfile writes samples in the Prometheus text exposition format for
// node_exporter's textfile collector: every name gets the orchstat_ prefix,
// a # HELP and a # TYPE gauge line. It writes a temporary file beside path
// and renames it over path, so the collector never reads half a file.
func WriteTextfile(path string, samples []PromSample) error {
	var b strings.Builder
	byName := map[string][]PromSample{}
	var names []string
	for _, s := range samples {
		if _, ok := byName[s.Name]; !ok {
			names = append(names, s.Name)
		}
		byName[s.Name] = append(byName[s.Name], s)
	}
	sort.Strings(names)
	for _, n := range names {
		group := byName[n]
		fmt.Fprintf(&b, "# HELP orchstat_%s %s\n# TYPE orchstat_%s gauge\n", n, escapeHelp(group[0].Help), n)
		lines := make([]string, 0, len(group))
		for _, s := range group {
			lines = append(lines, "orchstat_"+n+promLabels(s.Labels)+" "+promValue(s.Value))
		}
		sort.Strings(lines) // one order whatever the map order
		for _, l := range lines {
			b.WriteString(l + "\n")
		}
	}
	return writeAtomic(path, []byte(b.String()))
}

// writeAtomic writes text to a temporary file beside path and renames it
// over path, so a reader never sees half a file.
func writeAtomic(path string, text []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(text); err != nil {
		tmp.Close()
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err := tmp.Chmod(0o644); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return nil
}

func promLabels(l map[string]string) string {
	if len(l) == 0 {
		return ""
	}
	keys := make([]string, 0, len(l))
	for k := range l {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		parts = append(parts, promName(k)+`="`+escapeLabel(l[k])+`"`)
	}
	return "{" + strings.Join(parts, ",") + "}"
}

// promName makes a label name valid: [a-zA-Z_][a-zA-Z0-9_]*.
func promName(s string) string {
	var b strings.Builder
	for i, r := range s {
		ok := r == '_' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || (i > 0 && r >= '0' && r <= '9')
		if ok {
			b.WriteRune(r)
		} else {
			b.WriteByte('_')
		}
	}
	if b.Len() == 0 {
		return "_"
	}
	return b.String()
}

func escapeLabel(s string) string {
	return strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`).Replace(s)
}

func escapeHelp(s string) string {
	return strings.NewReplacer(`\`, `\\`, "\n", `\n`).Replace(s)
}

func promValue(v float64) string {
	switch {
	case math.IsNaN(v):
		return "NaN"
	case math.IsInf(v, 1):
		return "+Inf"
	case math.IsInf(v, -1):
		return "-Inf"
	}
	return strconv.FormatFloat(v, 'g', -1, 64)
}

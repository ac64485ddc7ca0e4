package render

import (
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/orchstat/orchstat/model/advice"
	"github.com/orchstat/orchstat/model/orchestr8/spec"
)

// RenderSettings writes `retry-config show`: s as JSON, or laid out as
// orchestr8's displayConfig (retry.js) with the defaults marked, its
// warnings going to errw.
func RenderSettings(w, errw io.Writer, s advice.Settings, asJSON bool) error {
	if asJSON {
		return writeIndented(w, s)
	}
	warn(errw, s.Warnings)
	head := "Retry configuration: " + s.Path
	if !s.Exists {
		head += " (no file: the defaults)"
	}
	fmt.Fprintf(w, "%s\n\n", head)
	mark := func(key string) string {
		if s.Defaulted[key] {
			return "  (default)"
		}
		return ""
	}
	line := func(label, value, key string) {
		fmt.Fprintln(w, strings.TrimRight(fmt.Sprintf("  %-24s%-6s%s", label, value, mark(key)), " "))
	}
	line("Max retries:", strconv.Itoa(s.MaxRetries), spec.KeyMaxRetries)
	line("Window size:", strconv.Itoa(s.WindowSize), spec.KeyWindowSize)
	line("High failure threshold:", strconv.FormatFloat(s.Threshold, 'f', -1, 64), spec.KeyThreshold)
	fmt.Fprintf(w, "\n  Stage strategies:%s\n", mark(spec.KeyStrategies))
	if len(s.Stages) == 0 {
		fmt.Fprintln(w, "    (none: every stage gets a simple retry)")
	}
	for _, st := range s.Stages {
		list := strings.Join(s.Strategies[st], " -> ")
		if list == "" {
			list = "(none: simple retry)"
		}
		fmt.Fprintf(w, "    %-16s: %s%s\n", st, list, mark(spec.KeyStrategies+"."+st))
	}
	return nil
}

// RenderSet writes `retry-config set`: r as JSON, or as orchestr8's
// "Set ${key} = ${numValue}" naming the file, its warnings going to errw.
func RenderSet(w, errw io.Writer, r advice.SetResult, asJSON bool) error {
	if asJSON {
		return writeIndented(w, r)
	}
	warn(errw, r.Warnings)
	v := fmt.Sprint(r.Value)
	if l, ok := r.Value.([]string); ok {
		v = strings.Join(l, ",")
	}
	fmt.Fprintf(w, "Set %s = %s in %s\n", r.Key, v, r.Path)
	return nil
}

// RenderReset writes `retry-config reset`: r as JSON, or one line.
func RenderReset(w io.Writer, r advice.ResetResult, asJSON bool) error {
	if asJSON {
		return writeIndented(w, r)
	}
	fmt.Fprintf(w, "Reset %s to the defaults\n", r.Path)
	return nil
}

func warn(errw io.Writer, warns []string) {
	for _, w := range warns {
		fmt.Fprintf(errw, "orchstat: warning: %s\n", w)
	}
}

// writeIndented writes v as encoding/json does, indented: retry-config's
// documents always were, HTML escaped, unlike MarshalJSON's.
func writeIndented(w io.Writer, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(w, "%s\n", b)
	return err
}

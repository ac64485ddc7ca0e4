package main

import (
	"bytes"
	"fmt"
	"strings"

	"github.com/olekukonko/tablewriter/pkg/twwidth"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/orchstat/orchstat/rules/yamlast"
)

// Help for people at a terminal: cobra prints each flag's usage on one
// line, and --db's ran to 143 columns, wrapped by the terminal into the
// next flag's column. The help is cobra's, wrapped at the terminal's
// width (80 columns when standard output is not a terminal) by
// wrapHelp.

// defaultHelpWidth is the width of help that goes to a pipe or a file.
const defaultHelpWidth = 80

// setHelp makes root's help (and its commands') wrap at the terminal's
// width, and suggests the closest flag for a mistyped one.
func setHelp(root *cobra.Command, io *IO) {
	cobraHelp := root.HelpFunc()
	root.SetHelpFunc(func(c *cobra.Command, args []string) {
		var buf bytes.Buffer
		out := c.OutOrStdout()
		c.SetOut(&buf)
		cobraHelp(c, args)
		c.SetOut(out)
		width := io.OutWidth
		if width <= 0 {
			width = defaultHelpWidth
		}
		fmt.Fprint(out, wrapHelp(buf.String(), width))
	})
	root.SetFlagErrorFunc(flagError)
}

// flagError makes pflag's errors usage errors, with a suggestion for a
// mistyped flag.
func flagError(c *cobra.Command, err error) error {
	return usageError{fmt.Errorf("%w%s", err, flagSuggestion(c, err))}
}

// flagSuggestion is "; did you mean --format?" for pflag's error about an
// unknown flag (--fromat) when the command has a flag within two edits of
// it; cobra suggests only for subcommands.
func flagSuggestion(c *cobra.Command, err error) string {
	name, ok := strings.CutPrefix(err.Error(), "unknown flag: --")
	if !ok {
		return ""
	}
	name, _, _ = strings.Cut(name, "=")
	var known []string
	c.Flags().VisitAll(func(f *pflag.Flag) {
		if !f.Hidden {
			known = append(known, f.Name)
		}
	})
	c.InheritedFlags().VisitAll(func(f *pflag.Flag) {
		if !f.Hidden {
			known = append(known, f.Name)
		}
	})
	best := yamlast.Closest(name, known)
	if best == "" {
		return ""
	}
	return fmt.Sprintf("; did you mean --%s?", best)
}

// wrapHelp wraps each line of cobra's help text wider than width:
//   - a line of a flag or command list ("  -f, --format string   output
//     format…") under its description, so the names stay a column apart;
//   - an example's command with a " \" at the break, so it still pastes
//     into a shell, never inside single quotes;
//   - prose, and an example's "#" comments, under the line's indentation.
//
// A word longer than the room left is not broken.
func wrapHelp(text string, width int) string {
	var out strings.Builder
	section := ""
	for _, line := range strings.SplitAfter(text, "\n") {
		nl := strings.HasSuffix(line, "\n")
		line = strings.TrimSuffix(line, "\n")
		if line != "" && !strings.HasPrefix(line, " ") && strings.HasSuffix(line, ":") {
			section = line
		}
		var lines []string
		switch {
		case twwidth.Width(line) <= width:
			lines = []string{line}
		case section == "Examples:" && !strings.HasPrefix(strings.TrimSpace(line), "#"):
			lines = wrapCommand(line, width)
		case strings.HasSuffix(section, "Flags:") || strings.HasSuffix(section, "Commands:") || section == "Additional help topics:":
			lines = wrapHanging(line, descriptionColumn(line), width)
		default:
			indent := len(line) - len(strings.TrimLeft(line, " "))
			if strings.HasPrefix(line[indent:], "# ") {
				indent += 2
			}
			lines = wrapHanging(line, indent, width)
		}
		out.WriteString(strings.Join(lines, "\n"))
		if nl {
			out.WriteByte('\n')
		}
	}
	return out.String()
}

// descriptionColumn is where a list line's description starts: after the
// first run of two or more spaces that follows its name, else after its
// first space.
func descriptionColumn(line string) int {
	start := len(line) - len(strings.TrimLeft(line, " "))
	if i := strings.Index(line[start:], "  "); i >= 0 {
		j := start + i
		for j < len(line) && line[j] == ' ' {
			j++
		}
		if j < len(line) {
			return j
		}
	}
	// A name as long as the list's column ("retry-config Show, …") is
	// followed by one space.
	if i := strings.IndexByte(line[start:], ' '); i >= 0 {
		return start + i + 1
	}
	return start
}

// wrapHanging breaks line at spaces into lines of at most width columns,
// the lines after the first indented by indent spaces. When the indent
// leaves too little room (under 20 columns), it hangs by 4 instead.
func wrapHanging(line string, indent, width int) []string {
	if width-indent < 20 {
		indent = min(4, len(line)-len(strings.TrimLeft(line, " "))+4)
	}
	pad := strings.Repeat(" ", indent)
	var lines []string
	cur := ""
	for _, word := range splitWords(line) {
		switch {
		case cur == "":
			cur = word
		case twwidth.Width(cur)+twwidth.Width(word) <= width:
			cur += word
		default:
			lines = append(lines, strings.TrimRight(cur, " "))
			cur = pad + strings.TrimLeft(word, " ")
		}
	}
	return append(lines, strings.TrimRight(cur, " "))
}

// splitWords splits line before each space that follows a non-space, so
// the words joined again are line: "  a  b c" is "  a", "  b", " c".
func splitWords(line string) []string {
	var words []string
	start := 0
	for i := 1; i < len(line); i++ {
		if line[i] == ' ' && line[i-1] != ' ' {
			words = append(words, line[start:i])
			start = i
		}
	}
	return append(words, line[start:])
}

// wrapCommand breaks an example's shell command at spaces outside single
// quotes (in double quotes a backslash-newline vanishes too), ending each
// line but the last in " \" and indenting the rest four more.
func wrapCommand(line string, width int) []string {
	indent := len(line) - len(strings.TrimLeft(line, " "))
	pad := strings.Repeat(" ", indent+4)
	var lines []string
	rest, first := line, true
	for twwidth.Width(rest) > width {
		// The last space that leaves room for " \", outside single
		// quotes.
		cut := -1
		single, double := false, false
		start := 0
		if !first {
			start = len(pad)
		}
		for i := 0; i < len(rest); i++ {
			switch c := rest[i]; {
			case c == '\'':
				// Outside double quotes a quoted word; inside, a SQL
				// string, whose spaces are the query's own.
				single = !single
			case c == '"' && !single:
				double = !double
			case c == ' ' && !single && i > start && twwidth.Width(rest[:i])+2 <= width:
				cut = i
			}
		}
		if cut < 0 {
			break
		}
		lines = append(lines, strings.TrimRight(rest[:cut], " ")+" \\")
		rest, first = pad+strings.TrimLeft(rest[cut:], " "), false
	}
	return append(lines, rest)
}

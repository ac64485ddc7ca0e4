package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/orchstat/orchstat/reports/render"
	"github.com/spf13/cobra"
)

// Issue 25, "Everything a person reads": what orchstat prints for people
// at a terminal.

// runCLITerm is runCLI with standard output a terminal width columns wide.
func runCLITerm(t *testing.T, width int, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	io := &IO{In: strings.NewReader(""), Out: &out, Err: &errb, Now: func() time.Time { return fixedNow }, OutWidth: width, OutIsTTY: true}
	code = runWith(context.Background(), args, io, defaultDeps())
	return code, out.String(), errb.String()
}

// widest is the widest line of s, in runes.
func widest(s string) (int, string) {
	n, line := 0, ""
	for _, l := range strings.Split(s, "\n") {
		if w := utf8.RuneCountInString(l); w > n {
			n, line = w, l
		}
	}
	return n, line
}

// TestQuarantineFitsTerminal: quarantine at an 80-column terminal was 256
// columns wide; it fits, and says how many of how many lines --limit shows.
func TestQuarantineFitsTerminal(t *testing.T) {
	endToEnd(t, "runs orchstat against a real store")
	t.Parallel()
	db := bundledStore(t)
	code, out, stderr := runCLITerm(t, 80, "--db", db, "quarantine", "--limit", "3")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if n, line := widest(out); n > 80 {
		t.Errorf("a line of %d columns at an 80-column terminal: %q\n%s", n, line, out)
	}
	if !strings.Contains(out, "3 of 15 quarantined lines shown") || !strings.Contains(out, "not JSON: syntax error near byte 1") {
		t.Errorf("output:\n%s", out)
	}
	// All shown: no count. --wide: the table, whole.
	if _, out, _ = runCLITerm(t, 80, "--db", db, "quarantine", "--limit", "0"); strings.Contains(out, " shown") {
		t.Errorf("--limit 0 says it left lines out:\n%s", out)
	}
	if _, out, _ = runCLITerm(t, 80, "--db", db, "quarantine", "--wide", "--limit", "2"); !strings.Contains(out, "| path ") {
		t.Errorf("--wide is no table:\n%s", out)
	}
	// JSON stays JSON: the count goes to stderr.
	_, out, stderr = runCLI(t, "", "--db", db, "quarantine", "--format", "json", "--limit", "2")
	if !strings.HasPrefix(out, "[") || !strings.Contains(stderr, "2 of 15") {
		t.Errorf("json: %q, stderr %q", out, stderr)
	}
}

// TestReadCommandsNameStores: `report testdata/runs` puts its store in
// testdata/runs/.orchestrator; sql and quarantine from the folder above
// said only that there was no store at ./.orchestrator. They name the
// stores below.
func TestReadCommandsNameStores(t *testing.T) {
	dir := t.TempDir()
	store := filepath.Join(dir, "testdata", "runs", ".orchestrator", "orchstat.duckdb")
	if err := os.MkdirAll(filepath.Dir(store), 0o755); err != nil {
		t.Fatal(err)
	}
	if code, _, stderr := runCLI(t, "", "--db", store, "sql", "select 1"); code == 0 {
		// A missing store is created by nothing but ingest.
		t.Fatalf("sql on a missing store: %s", stderr)
	}
	if err := os.WriteFile(store, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Chdir(dir)
	t.Setenv("ORCHSTAT_DB", "")
	want := filepath.Join("testdata", "runs", ".orchestrator", "orchstat.duckdb")
	for _, args := range [][]string{{"sql", "select 1"}, {"quarantine"}} {
		code, _, stderr := runCLI(t, "", args...)
		if code != 1 || !strings.Contains(stderr, "--db "+want) {
			t.Errorf("%v: exit %d, %q", args, code, stderr)
		}
	}
}

// TestOutputSaysWhatItWrote: -o said nothing; an unwritable -o named the
// temporary file beside it; --format html at a terminal dumped the page.
func TestOutputSaysWhatItWrote(t *testing.T) {
	endToEnd(t, "runs orchstat against a real store")
	t.Parallel()
	dir := t.TempDir()
	db, out := bundledStore(t), filepath.Join(dir, "report.html")
	code, _, stderr := runCLI(t, "", "--db", db, "report", "--no-ingest", "--format", "html", "-o", out)
	fi, err := os.Stat(out)
	if code != 0 || err != nil {
		t.Fatalf("exit %d, %v: %s", code, err, stderr)
	}
	if want := "wrote " + out + ", " + render.SizeText(fi.Size()) + "\n"; stderr != want || !strings.HasSuffix(want, " KB\n") {
		t.Errorf("stderr %q, want %q", stderr, want)
	}
	if _, _, stderr = runCLI(t, "", "--db", db, "report", "--no-ingest", "-q", "--format", "html", "-o", out); stderr != "" {
		t.Errorf("-q: stderr %q", stderr)
	}

	// A folder that is a file: the message names the path given.
	bad := filepath.Join(out, "x.html")
	code, _, stderr = runCLI(t, "", "--db", db, "report", "--no-ingest", "--format", "html", "-o", bad)
	if code != 1 || !strings.Contains(stderr, "-o "+bad+": ") || strings.Contains(stderr, ".tmp") {
		t.Errorf("exit %d, %q", code, stderr)
	}
	code, _, stderr = runCLI(t, "", "--db", db, "report", "--no-ingest", "--format", "html", "-o", filepath.Join(dir, "no", "x.html"))
	if code != 1 || !strings.Contains(stderr, "the folder "+filepath.Join(dir, "no")+" does not exist") {
		t.Errorf("exit %d, %q", code, stderr)
	}

	// HTML to a terminal: -o, please.
	code, stdout, stderr := runCLITerm(t, 80, "--db", db, "report", "--no-ingest", "--format", "html")
	if code != exitUsage || stdout != "" || !strings.Contains(stderr, "-o") {
		t.Errorf("html at a terminal: exit %d, %d bytes out, %q", code, len(stdout), stderr)
	}
	if code, _, stderr = runCLITerm(t, 80, "--db", db, "report", "--no-ingest", "--format", "html", "-o", out); code != 0 {
		t.Errorf("html -o at a terminal: exit %d, %q", code, stderr)
	}
}

func TestSizeText(t *testing.T) {
	t.Parallel()
	for n, want := range map[int64]string{0: "0 bytes", 999: "999 bytes", 1500: "1.5 KB", 81234: "81 KB", 2_345_678: "2.3 MB", 45_000_000: "45 MB"} {
		if got := render.SizeText(n); got != want {
			t.Errorf("render.SizeText(%d) = %q, want %q", n, got, want)
		}
	}
}

// TestManPagesTitledPerCommand: every man page was titled ORCHSTAT, so
// `man orchstat-report` showed ORCHSTAT(1) at its top.
func TestManPagesTitledPerCommand(t *testing.T) {
	dir := t.TempDir()
	if err := genDocs(context.Background(), dir); err != nil {
		t.Fatal(err)
	}
	for page, title := range map[string]string{
		"orchstat.1":             `.TH "ORCHSTAT" "1"`,
		"orchstat-report.1":      `.TH "ORCHSTAT-REPORT" "1"`,
		"orchstat-rules-check.1": `.TH "ORCHSTAT-RULES-CHECK" "1"`,
	} {
		b, err := os.ReadFile(filepath.Join(dir, "cli", "man", page))
		if err != nil || !strings.Contains(string(b), title+" ") {
			t.Errorf("%s: %v, want the title %s in\n%.200s", page, err, title, b)
		}
	}
}

// TestHelpFitsWidth: --help lines ran to 180 columns (flags' usage, the
// examples); help wraps at the terminal's width, 80 when it is none, and
// an example's command still pastes into a shell.
func TestHelpFitsWidth(t *testing.T) {
	t.Parallel()
	var paths [][]string
	var walk func(c *cobra.Command, path []string)
	walk = func(c *cobra.Command, path []string) {
		paths = append(paths, path)
		for _, sub := range c.Commands() {
			if !sub.Hidden {
				walk(sub, append(append([]string{}, path...), sub.Name()))
			}
		}
	}
	walk(newRootCmd(&IO{}), nil)
	for _, path := range paths {
		for _, width := range []int{0, 60} {
			args := append(append([]string{}, path...), "--help")
			var code int
			var out string
			if width == 0 {
				code, out, _ = runCLI(t, "", args...)
			} else {
				code, out, _ = runCLITerm(t, width, args...)
			}
			limit := width
			if width == 0 {
				limit = 80
			}
			if code != 0 || !strings.Contains(out, "Usage:") {
				t.Fatalf("%v at %d: exit %d\n%s", args, width, code, out)
			}
			for _, line := range strings.Split(out, "\n") {
				if n := utf8.RuneCountInString(line); n > limit && strings.Contains(strings.TrimSpace(line), " ") {
					t.Errorf("%v at %d columns: a line of %d: %q", args, width, n, line)
				}
			}
		}
	}
	_, out, _ := runCLI(t, "", "sql", "--help")
	if !strings.Contains(out, "ORDER \\\n      BY runs DESC\"") {
		t.Errorf("sql's first example, wrapped:\n%s", out)
	}
}

// TestUnknownFlagSuggests: cobra suggests subcommands, not flags.
func TestUnknownFlagSuggests(t *testing.T) {
	t.Parallel()
	for args, want := range map[string]string{
		"report --fromat html":         "unknown flag: --fromat; did you mean --format?\n",
		"sql --lock-timout 1s x":       "did you mean --lock-timeout?",
		"exec --max-retires 2 -- true": "did you mean --max-retries?",
		"report --frobnicate":          "unknown flag: --frobnicate\n",
	} {
		code, _, stderr := runCLI(t, "", strings.Fields(args)...)
		if code != exitUsage || !strings.Contains(stderr, want) {
			t.Errorf("%s: exit %d, %q, want %q", args, code, stderr, want)
		}
	}
}

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/orchstat/orchstat/model/reports"
	"github.com/orchstat/orchstat/rules/check"
)

// writeProviderRuns writes, for each of days days from start, one run a
// day of each provider with n requests of which retried are retried (a
// function of the day): a store whose windows can be compared.
func writeProviderRuns(t *testing.T, runs string, start time.Time, days int, n map[string]int, retried func(day int, provider string) int) {
	t.Helper()
	for d := range days {
		for _, p := range slices.Sorted(func(yield func(string) bool) {
			for k := range n {
				if !yield(k) {
					return
				}
			}
		}) {
			run := fmt.Sprintf("%s-%02d", p, d)
			ts := start.AddDate(0, 0, d).Add(12 * time.Hour)
			var b strings.Builder
			fmt.Fprintf(&b, `{"type":"RunStarted","schemaVersion":1,"timestamp":%q,"runId":%q,"payload":{}}`+"\n", ts.Format(time.RFC3339Nano), run)
			k := retried(d, p)
			for i := range n[p] {
				r := 0
				if i < k {
					r = 1
				}
				at := ts.Add(time.Duration(i+1) * time.Second).Format(time.RFC3339Nano)
				fmt.Fprintf(&b, `{"type":"ProviderRequestStarted","schemaVersion":1,"timestamp":%q,"runId":%q,"payload":{"provider":%q,"model":"m-%s"}}`+"\n", at, run, p, p)
				fmt.Fprintf(&b, `{"type":"ProviderRequestFinished","schemaVersion":1,"timestamp":%q,"runId":%q,"payload":{"provider":%q,"durationMs":100,"success":true,"retries":%d}}`+"\n", at, run, p, r)
			}
			fmt.Fprintf(&b, `{"type":"RunFinished","schemaVersion":1,"timestamp":%q,"runId":%q,"payload":{"status":"success"}}`+"\n",
				ts.Add(time.Hour).Format(time.RFC3339Nano), run)
			path := filepath.Join(runs, run, "trace.jsonl")
			os.MkdirAll(filepath.Dir(path), 0o755)
			if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// reportDoc is the part of report's JSON the summary tests read.
type reportDoc struct {
	Summary *reports.Summary `json:"summary"`
}

func summaryJSON(t *testing.T, now time.Time, args ...string) reportDoc {
	t.Helper()
	code, out, stderr := runCLIAt(t, now, "", append([]string{"report", "--format", "json"}, args...)...)
	if code != 0 {
		t.Fatalf("report exit %d: %s", code, stderr)
	}
	var doc reportDoc
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("%v: %q", err, out)
	}
	if doc.Summary == nil {
		t.Fatalf("no summary in %s", out)
	}
	return doc
}

func systemOf(s *reports.Summary, name string) reports.SystemSummary {
	for _, sy := range s.Systems {
		if sy.System == name {
			return sy
		}
	}
	return reports.SystemSummary{}
}

// A second week that doubles one provider's retry rate shows as a change
// of the orchestrator's retry rate whose interval excludes zero, marked
// ▲ on screen; two alike weeks show a change of zero, within noise, and
// nothing is marked.
func TestReportCompareWeeks(t *testing.T) {
	t.Parallel()
	start := time.Date(2026, 10, 5, 0, 0, 0, 0, time.UTC) // a Monday
	now := start.AddDate(0, 0, 14)
	n := map[string]int{"anthropic": 40, "openai": 40}
	for _, tt := range []struct {
		name    string
		retried func(day int, p string) int
		delta   float64
		marked  bool
	}{
		{"doubled", func(day int, p string) int {
			if p == "anthropic" && day >= 7 {
				return 8 // 20%, from 10%
			}
			return 4
		}, 0.05, true},
		{"alike", func(int, string) int { return 4 }, 0, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			runs := filepath.Join(dir, "runs")
			writeProviderRuns(t, runs, start, 14, n, tt.retried)
			db := filepath.Join(dir, "o.duckdb")
			doc := summaryJSON(t, now, "--db", db, "--since", "7d", runs)
			s := doc.Summary
			if s.Previous == nil || !s.Previous.Until.Equal(start.AddDate(0, 0, 7)) || !s.Previous.Since.Equal(start) {
				t.Fatalf("previous window %+v, want the week before", s.Previous)
			}
			o := systemOf(s, "orchestrator")
			c := o.RetryRate.Change
			if c == nil || c.Delta == nil || c.Low == nil || c.High == nil {
				t.Fatalf("retry rate change %+v, want a delta with its interval", c)
			}
			if d := *c.Delta; d < tt.delta-1e-9 || d > tt.delta+1e-9 {
				t.Errorf("delta %v, want %v", d, tt.delta)
			}
			if c.Significant != tt.marked || (*c.Low > 0 || *c.High < 0) != tt.marked {
				t.Errorf("significant %v, interval [%v, %v]; want significant %v", c.Significant, *c.Low, *c.High, tt.marked)
			}
			if *o.Count.Value != 14 || o.Count.Change == nil || *o.Count.Change.Delta != 0 {
				t.Errorf("runs %v change %+v, want 14 and no change", *o.Count.Value, o.Count.Change)
			}
			if len(o.Daily) != 7 || o.Daily[0].Count != 2 {
				t.Errorf("daily %+v, want 7 days of 2 runs", o.Daily)
			}
			var out bytes.Buffer
			code := runWith(context.Background(), []string{"report", "--db", db, "--no-ingest", "--since", "7d"},
				&IO{In: strings.NewReader(""), Out: &out, Err: &bytes.Buffer{}, Now: func() time.Time { return now }, OutWidth: 80}, defaultDeps())
			if code != 0 {
				t.Fatalf("exit %d", code)
			}
			text := out.String()
			if got := strings.Contains(text, "▲+5.0"); got != tt.marked {
				t.Errorf("▲+5.0 shown %v, want %v:\n%s", got, tt.marked, text)
			}
			if !tt.marked && (strings.Contains(text, "▲") || strings.Contains(text, "▼") || !strings.Contains(text, "~+0.0")) {
				t.Errorf("a change within noise is marked, or not shown as ~:\n%s", text)
			}
		})
	}
}

// The summary's list of what needs attention is check --at's firing and
// pending alerts at the window's end, row for row: report and check share
// the evaluator, so they never disagree.
func TestReportAttentionIsCheckAt(t *testing.T) {
	endToEnd(t, "reports from a real store")
	t.Parallel()
	start := time.Date(2026, 10, 5, 0, 0, 0, 0, time.UTC)
	now := start.AddDate(0, 0, 14)
	dir := t.TempDir()
	runs := filepath.Join(dir, "runs")
	writeProviderRuns(t, runs, start, 14, map[string]int{"anthropic": 40, "openai": 40},
		func(day int, p string) int {
			if p == "anthropic" {
				return 12
			}
			return 2
		})
	rulesFile := filepath.Join(dir, "rules.yaml")
	os.WriteFile(rulesFile, []byte(`rules:
  - name: retries_pending
    metric: provider_retry_rate
    window: 24h
    threshold: 0.1
    condition: value > threshold && denominator >= 20
    for: 2
  - name: retries_firing
    metric: provider_retry_rate
    window: 48h
    threshold: 0.1
    condition: value > threshold
    severity: critical
  - name: failures
    metric: provider_failure_rate
    window: 24h
    threshold: 0.1
    condition: value > threshold
`), 0o644)
	bundled, _ := filepath.Abs("../../testdata/runs")
	for _, tt := range []struct {
		name  string
		args  []string
		until time.Time
		now   time.Time
	}{
		{"generated", []string{"--rules", rulesFile, runs}, now.Add(-11 * time.Hour), now},
		{"bundled", []string{bundled}, time.Date(2025, 11, 5, 19, 6, 0, 0, time.UTC), fixedNow},
	} {
		t.Run(tt.name, func(t *testing.T) {
			db := filepath.Join(t.TempDir(), "o.duckdb")
			at := tt.until.Format(time.RFC3339)
			doc := summaryJSON(t, tt.now, append([]string{"--db", db, "--until", at}, tt.args...)...)
			_, look, _ := runLook(t, tt.now, append([]string{"--db", db, "--at", at}, tt.args...)...)
			var want []check.Row
			for _, r := range look.Alerts {
				if r.State == "firing" || r.State == "pending" {
					want = append(want, r)
				}
			}
			got := doc.Summary.Attention.Alerts
			if len(want) == 0 {
				t.Fatalf("check --at %s finds nothing firing or pending: the test needs some", at)
			}
			if len(got) != len(want) {
				t.Fatalf("report lists %d alerts, check --at %d:\nreport %+v\ncheck %+v", len(got), len(want), got, want)
			}
			for _, w := range want {
				found := false
				for _, g := range got {
					if g.Rule == w.Rule && g.State == w.State && fmt.Sprint(g.Labels) == fmt.Sprint(w.Labels) &&
						fmt.Sprint(deref(g.Value)) == fmt.Sprint(deref(w.Value)) && fmt.Sprint(deref(g.Denominator)) == fmt.Sprint(deref(w.Denominator)) {
						found = true
					}
				}
				if !found {
					t.Errorf("check --at's %s %s (%v) is not in the report's list %+v", w.State, w.Rule, deref(w.Value), got)
				}
			}
			if tt.name == "generated" {
				states := map[string]string{}
				for _, g := range got {
					states[g.Rule] = g.State
				}
				if states["retries_pending"] != "pending" || states["retries_firing"] != "firing" {
					t.Errorf("states %v, want one pending and one firing", states)
				}
			}
		})
	}
}

func deref(v *float64) float64 {
	if v == nil {
		return -1
	}
	return *v
}

// The first screen at 80 columns: the summary ends (the "Details" line)
// within the first 24 lines, for the bundled runs and for the external
// records read as one folder.
func TestReportFirstScreenGolden(t *testing.T) {
	endToEnd(t, "reports from a real store")
	goldenDir, db := goldenStore(t, "runs")
	checkFirstScreen(t, filepath.Join(goldenDir, "report.80.table"), fixedNow, false, "--db", db, "report", "--no-ingest")
}

func TestReportFirstScreenExternal(t *testing.T) {
	ext, err := filepath.Abs("../../../shared/testdata-external")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(ext); err != nil {
		t.Skipf("no external records at %s: %v", ext, err)
	}
	goldenDir, err := filepath.Abs("../../testdata/golden")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.CopyFS(filepath.Join(dir, "ext"), os.DirFS(ext)); err != nil {
		t.Fatal(err)
	}
	wd, _ := os.Getwd()
	t.Cleanup(func() { os.Chdir(wd) })
	os.Chdir(dir)
	now := time.Date(2026, 8, 4, 0, 0, 0, 0, time.UTC) // the day after the latest record
	// The scope line names the temporary folder, whose length wraps it
	// differently from run to run: the golden starts below it.
	checkFirstScreen(t, filepath.Join(goldenDir, "report.external.80.table"), now, true, "--db", "o.duckdb", "report", "-q", "ext")
}

func checkFirstScreen(t *testing.T, golden string, now time.Time, belowScope bool, args ...string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := runWith(context.Background(), args,
		&IO{In: strings.NewReader(""), Out: &out, Err: &errb, Now: func() time.Time { return now }, OutWidth: 80}, defaultDeps())
	if code != 0 && code != 1 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	text := out.String()
	lines := strings.Split(text, "\n")
	end := slices.Index(lines, "Details")
	if end < 0 || end >= 24 {
		t.Errorf("the summary ends at line %d, want within the first 24 lines:\n%s", end+1, strings.Join(lines[:min(40, len(lines))], "\n"))
	}
	for i, l := range lines {
		if n := len([]rune(l)); n > 80 {
			t.Errorf("line %d is %d columns wide: %q", i+1, n, l)
		}
	}
	if belowScope {
		text = text[strings.Index(text, "\n\n")+2:]
	}
	matchGolden(t, golden, text)
}

// The README's tour quotes the summary of the bundled runs: it must be
// what report prints.
func TestReadmeTour(t *testing.T) {
	endToEnd(t, "reports from a real store")
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	const marker = "<!-- tour: report testdata/runs, now 2025-11-06T00:00:00Z, 80 columns"
	s := string(readme)
	i := strings.Index(s, marker)
	if i < 0 {
		t.Fatalf("README.md lacks the tour's marker %q", marker)
	}
	s = s[i:]
	s = s[strings.Index(s, "\n\n")+2:]
	var quoted []string
	for _, l := range strings.Split(s, "\n") {
		if l != "" && !strings.HasPrefix(l, "    ") {
			break
		}
		quoted = append(quoted, strings.TrimPrefix(l, "    "))
	}
	for len(quoted) > 0 && quoted[len(quoted)-1] == "" {
		quoted = quoted[:len(quoted)-1]
	}
	_, db := goldenStore(t, "runs")
	var out bytes.Buffer
	if code := runWith(context.Background(), []string{"--db", db, "report", "--no-ingest", "--section", "summary"},
		&IO{In: strings.NewReader(""), Out: &out, Err: &bytes.Buffer{}, Now: func() time.Time { return fixedNow }, OutWidth: 80}, defaultDeps()); code != 0 {
		t.Fatalf("exit %d", code)
	}
	got := strings.Split(strings.TrimRight(out.String(), "\n"), "\n")
	// Below the scope line and its blank line.
	got = got[2:]
	for len(got) > 0 && (got[len(got)-1] == "" || strings.HasPrefix(got[len(got)-1], "Generated ")) {
		got = got[:len(got)-1]
	}
	if strings.Join(quoted, "\n") != strings.Join(got, "\n") {
		t.Errorf("README.md's tour quotes:\n%s\n\nreport prints:\n%s", strings.Join(quoted, "\n"), strings.Join(got, "\n"))
	}
}

func TestLocalZoneName(t *testing.T) {
	now := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	env := func(m map[string]string) func(string) string { return func(k string) string { return m[k] } }
	link := func(target string, err error) func(string) (string, error) {
		return func(string) (string, error) { return target, err }
	}
	if got := localZoneName(env(map[string]string{"TZ": ":Europe/Paris"}), link("", os.ErrNotExist), now); got != "Europe/Paris" {
		t.Errorf("TZ: %q", got)
	}
	if got := localZoneName(env(nil), link("/usr/share/zoneinfo/America/New_York", nil), now); got != "America/New_York" {
		t.Errorf("/etc/localtime: %q", got)
	}
	if got := localZoneName(env(nil), link("", os.ErrNotExist), now); !strings.HasPrefix(got, "local ") || !strings.Contains(got, "UTC") {
		t.Errorf("neither: %q", got)
	}
}

func TestUTF8Locale(t *testing.T) {
	for _, tt := range []struct {
		env  map[string]string
		want bool
	}{
		{nil, true},
		{map[string]string{"LANG": "en_US.UTF-8"}, true},
		{map[string]string{"LANG": "C"}, false},
		{map[string]string{"LC_ALL": "POSIX", "LANG": "en_US.UTF-8"}, false},
		{map[string]string{"LC_CTYPE": "de_DE.utf8"}, true},
	} {
		if got := utf8Locale(func(k string) string { return tt.env[k] }); got != tt.want {
			t.Errorf("utf8Locale(%v) = %v, want %v", tt.env, got, tt.want)
		}
	}
}

// Agents' records get a store in the user's data folder, never one
// inside ~/.claude or ~/.codex: those folders are the tools'.
func TestAgentStoreOutsideTheToolsFolder(t *testing.T) {
	endToEnd(t, "reports from a real store")
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("XDG_DATA_HOME", "")
	t.Setenv("ORCHSTAT_DB", "")
	projects := filepath.Join(home, ".claude", "projects", "x")
	os.MkdirAll(projects, 0o755)
	src, _ := filepath.Glob("../../testdata/agents/claude/project/*.jsonl")
	var copied bool
	for _, f := range src {
		b, _ := os.ReadFile(f)
		if strings.Contains(string(b), `"sessionId"`) {
			os.WriteFile(filepath.Join(projects, filepath.Base(f)), b, 0o644)
			copied = true
		}
	}
	if !copied {
		t.Skip("no Claude Code transcript in testdata/agents")
	}
	code, out, stderr := runCLI(t, "", "report", "--section", "summary", filepath.Join(home, ".claude"))
	want := filepath.Join(home, ".local", "share", "orchstat", "claude.duckdb")
	if code != 0 || !strings.HasPrefix(out, "Store: "+want+" — ") {
		t.Fatalf("exit %d, first line %q (stderr %q); want the store %s named first", code, strings.SplitN(out, "\n", 2)[0], stderr, want)
	}
	filepath.WalkDir(filepath.Join(home, ".claude"), func(p string, d os.DirEntry, err error) error {
		if err == nil && (d.Name() == ".orchestrator" || strings.HasSuffix(p, ".duckdb")) {
			t.Errorf("orchstat wrote into Claude Code's folder: %s", p)
		}
		return nil
	})
	xdg := filepath.Join(home, "xdg")
	t.Setenv("XDG_DATA_HOME", xdg)
	if got := defaultDBFor(projects); got != filepath.Join(xdg, "orchstat", "claude.duckdb") {
		t.Errorf("with XDG_DATA_HOME: %s", got)
	}
	other := filepath.Join(t.TempDir(), "copy", ".codex", "sessions")
	if got := defaultDBFor(other); !strings.HasPrefix(filepath.Base(got), "codex-") || filepath.Dir(got) != filepath.Join(xdg, "orchstat") {
		t.Errorf("a .codex elsewhere: %s, want codex-HASH.duckdb in the data folder", got)
	}
	if got := defaultDBFor(filepath.Join(home, "repo", ".orchestrator", "runs")); got != filepath.Join(home, "repo", ".orchestrator", "orchstat.duckdb") {
		t.Errorf("an orchestrator's runs: %s", got)
	}
}

// The tour's check line says what check prints today: each part of its
// comment is in the output.
func TestReadmeTourCheck(t *testing.T) {
	endToEnd(t, "reports from a real store")
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	var comment string
	for _, l := range strings.Split(string(readme), "\n") {
		if strings.HasPrefix(l, "    ./orchstat check testdata/runs ") && strings.Contains(l, "#") {
			comment = strings.TrimSpace(l[strings.Index(l, "#")+1:])
		}
	}
	if comment == "" {
		t.Fatal("README.md's tour has no commented check line")
	}
	runs, _ := filepath.Abs("../../testdata/runs")
	// Today, as the tour says: long after the bundled runs.
	now := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	_, out, stderr := runCLIAt(t, now, "", "--db", filepath.Join(t.TempDir(), "o.duckdb"), "check", runs)
	for _, part := range strings.Split(comment, "; ") {
		if !strings.Contains(out+stderr, part) {
			t.Errorf("the tour says %q; check prints no %q:\n%s%s", comment, part, out, stderr)
		}
	}
}

// simulate's words: --policy with quick flags says it makes two
// policies; the verdict quotes the record's success rate, not the
// replay's; a time to resolution the record does not hold is "-".
func TestSimulateSaysWhatRan(t *testing.T) {
	t.Parallel()
	runs, _ := filepath.Abs("../../testdata/runs")
	code, out, stderr := runCLIWidth(t, 80, fixedNow, "simulate", "-q", "--db", filepath.Join(t.TempDir(), "s.duckdb"), runs,
		"--max-retries", "5", "--policy", "auto-retry")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	flat := strings.Join(strings.Fields(out), " ")
	for _, want := range []string{
		"2 policies, not one: auto-retry (--policy) and orchestrator with max-retries 5 (the quick flags change the baseline",
		"orchestrator with max-retries 5: success stays at the record's 97.4% (98.0% replayed; the difference is within its interval)",
		"Leaves out orchestrator's 1 run (with nothing to replay",
	} {
		if !strings.Contains(flat, want) {
			t.Errorf("no %q in\n%s", want, out)
		}
	}
	ext, _ := filepath.Abs("../../../shared/testdata-external/claude-code/d-kimuson")
	if _, err := os.Stat(ext); err != nil {
		t.Skipf("no external transcripts: %v", err)
	}
	code, out, stderr = runCLIWidth(t, 80, fixedNow, "simulate", "-q", "--db", filepath.Join(t.TempDir(), "c.duckdb"), ext, "--max-retries", "5")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	flat = strings.Join(strings.Fields(out), " ")
	if !strings.Contains(flat, "| time to | - | - | - |") || strings.Contains(flat, "| time to | 0.00") {
		t.Errorf("transcripts without durations: the times to resolution must read -:\n%s", out)
	}
}

// A copied /etc/localtime is named by the zone file it copies.
func TestZoneOfCopy(t *testing.T) {
	root := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(root, name)
		os.MkdirAll(filepath.Dir(p), 0o755)
		os.WriteFile(p, []byte(body), 0o644)
		return p
	}
	write("CET", "paris and more")
	write("Europe/Paris", "paris and more")
	write("posix/Europe/Paris", "paris and more")
	write("Europe/Berlin", "berlin!and more")
	write("UTC", "utc")
	write("Etc/UTC", "utc")
	local := filepath.Join(t.TempDir(), "localtime")
	for _, tt := range []struct{ body, want string }{
		{"paris and more", "Europe/Paris"},
		{"berlin!and more", "Europe/Berlin"},
		{"utc", "Etc/UTC"},
		{"nowhere at all", ""},
	} {
		os.WriteFile(local, []byte(tt.body), 0o644)
		got := zoneOfCopy(local, root)
		if tt.want == "Etc/UTC" && got == "UTC" {
			got = tt.want // an alias of the same bytes is as good
		}
		if got != tt.want {
			t.Errorf("a copy of %q: %q, want %q", tt.body, got, tt.want)
		}
	}
}

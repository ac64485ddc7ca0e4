package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/orchstat/orchstat/rules/adaptive"
)

type retryConfigJSON struct {
	Path     string         `json:"path"`
	Exists   bool           `json:"exists"`
	Config   map[string]any `json:"config"`
	Defaults []string       `json:"defaults"`
	Warnings []string       `json:"warnings"`
}

func showJSON(t *testing.T, cfg string) retryConfigJSON {
	t.Helper()
	code, out, stderr := runCLI(t, "", "retry-config", "show", "--config", cfg, "--format", "json")
	if code != 0 {
		t.Fatalf("show: exit %d: %s", code, stderr)
	}
	var r retryConfigJSON
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	return r
}

func TestRetryConfigShowDefaults(t *testing.T) {
	t.Parallel()
	cfg := filepath.Join(t.TempDir(), ".claude", "retry-config.json")
	code, out, stderr := runCLI(t, "", "retry-config", "--config", cfg)
	want := "Retry configuration: " + cfg + " (no file: the defaults)\n\n" +
		"  Max retries:            3       (default)\n" +
		"  Window size:            10      (default)\n" +
		"  High failure threshold: 0.2     (default)\n" +
		"\n  Stage strategies:  (default)\n" +
		"    alex            : simplify-prompt -> add-context\n" +
		"    cass            : reduce-stories -> simplify-prompt\n" +
		"    nigel           : simplify-tests -> add-context\n" +
		"    codey-plan      : add-context -> simplify-prompt\n" +
		"    codey-implement : incremental -> rollback\n"
	if code != 0 || out != want || stderr != "" {
		t.Errorf("exit %d\n%s\nwant\n%s\nstderr %q", code, out, want, stderr)
	}
	r := showJSON(t, cfg)
	if r.Exists || r.Path != cfg || strings.Join(r.Defaults, ",") != "maxRetries,windowSize,highFailureThreshold,strategies" ||
		r.Config["maxRetries"] != 3.0 || r.Config["windowSize"] != 10.0 || r.Config["highFailureThreshold"] != 0.2 || len(r.Warnings) != 0 {
		t.Errorf("%+v", r)
	}
	if _, err := os.Stat(cfg); err == nil {
		t.Errorf("show wrote the file")
	}
}

func TestRetryConfigSetShowResetRoundTrip(t *testing.T) {
	t.Parallel()
	cfg := filepath.Join(t.TempDir(), ".claude", "retry-config.json")
	for _, tc := range []struct{ key, value, printed string }{
		{"maxRetries", "5", "Set maxRetries = 5 in " + cfg + "\n"},
		{"highFailureThreshold", "30%", "Set highFailureThreshold = 0.3 in " + cfg + "\n"},
		{"strategies.nigel", "add-context, simplify-tests", "Set strategies.nigel = add-context,simplify-tests in " + cfg + "\n"},
	} {
		code, out, stderr := runCLI(t, "", "retry-config", "set", tc.key, tc.value, "--config", cfg)
		if code != 0 || out != tc.printed || stderr != "" {
			t.Errorf("set %s %s: exit %d %q %q", tc.key, tc.value, code, out, stderr)
		}
	}
	// The file is orchestr8's shape, every key written.
	c, warns := adaptive.Load(cfg)
	if len(warns) != 0 || c.MaxRetries != 5 || c.WindowSize != 10 || c.HighFailureThreshold != 0.3 ||
		!reflect.DeepEqual(c.Strategies["nigel"], []string{"add-context", "simplify-tests"}) || !reflect.DeepEqual(c.Strategies["cass"], []string{"reduce-stories", "simplify-prompt"}) {
		t.Errorf("%+v %v", c, warns)
	}
	r := showJSON(t, cfg)
	if !r.Exists || len(r.Defaults) != 0 || r.Config["maxRetries"] != 5.0 || r.Config["highFailureThreshold"] != 0.3 {
		t.Errorf("show after set: %+v", r)
	}
	code, out, _ := runCLI(t, "", "retry-config", "show", "--config", cfg)
	if code != 0 || strings.Contains(out, "(default)") || !strings.Contains(out, "  Max retries:            5\n") ||
		!strings.Contains(out, "    nigel           : add-context -> simplify-tests\n") {
		t.Errorf("show after set:\n%s", out)
	}
	// recommend reads what set wrote.
	dbDir := t.TempDir()
	if r := recommendJSONOut(t, "--db", filepath.Join(dbDir, "none.duckdb"), "--stage", "nigel", "--attempt", "5", "--config", cfg); r.MaxRetries != 5 || r.Threshold != 0.3 || r.Strategy != "retry" {
		t.Errorf("recommend after set: %+v", r)
	}

	// reset writes orchestr8's defaults (resetConfig), keeping the mode.
	os.Chmod(cfg, 0o600)
	code, out, stderr := runCLI(t, "", "retry-config", "reset", "--config", cfg)
	if code != 0 || out != "Reset "+cfg+" to the defaults\n" || stderr != "" {
		t.Errorf("reset: exit %d %q %q", code, out, stderr)
	}
	b, _ := os.ReadFile(cfg)
	if string(b) != string(adaptive.Default().Marshal()) {
		t.Errorf("reset wrote\n%s", b)
	}
	if st, _ := os.Stat(cfg); st.Mode().Perm() != 0o600 {
		t.Errorf("mode %v", st.Mode().Perm())
	}
	if r := showJSON(t, cfg); !r.Exists || len(r.Defaults) != 0 || r.Config["maxRetries"] != 3.0 {
		t.Errorf("show after reset: %+v", r)
	}
	code, out, _ = runCLI(t, "", "retry-config", "reset", "--config", cfg, "--format", "json")
	var rr map[string]any
	if code != 0 || json.Unmarshal([]byte(out), &rr) != nil || rr["reset"] != true || rr["existed"] != true {
		t.Errorf("reset json: %d %s", code, out)
	}
}

func TestRetryConfigBadKeyOrValue(t *testing.T) {
	t.Parallel()
	cfg := filepath.Join(t.TempDir(), "retry-config.json")
	for _, tc := range []struct {
		args []string
		msg  string
	}{
		{[]string{"set", "max_retries", "5"}, `unknown key "max_retries"; did you mean "maxRetries"? (valid keys: maxRetries, windowSize, highFailureThreshold, strategies.<stage> (alex, cass, nigel, codey-plan, codey-implement))`},
		{[]string{"set", "threshold", "0.3"}, `unknown key "threshold" (valid keys: maxRetries,`},
		{[]string{"set", "windowSize", "0"}, `windowSize must be a whole number from 1 up, got "0"`},
		{[]string{"set", "--", "maxRetries", "-1"}, `maxRetries must be a whole number from 0 up, got "-1"`},
		{[]string{"set", "highFailureThreshold", "2"}, `highFailureThreshold must be a number from 0 to 1`},
		{[]string{"set", "strategies.nigel", "simplfy-tests"}, `strategies.nigel: unknown strategy "simplfy-tests"; did you mean "simplify-tests"?`},
		{[]string{"set", "strategies.review", "retry"}, `unknown stage "review"`},
		{[]string{"set", "strategies", "retry"}, "name the stage: strategies.<stage>"},
		{[]string{"set", "maxRetries"}, "accepts 2 arg(s)"},
		{[]string{"show", "extra"}, `unknown command "extra"`},
		{[]string{"frobnicate"}, `unknown command "frobnicate" for "orchstat retry-config"`},
		{[]string{"show", "--format", "yaml"}, `--format "yaml": text or json`},
	} {
		code, out, stderr := runCLI(t, "", append([]string{"retry-config", "--config", cfg}, tc.args...)...)
		if code != exitUsage || out != "" || !strings.Contains(stderr, tc.msg) {
			t.Errorf("%v: exit %d, stdout %q, stderr %q, want %q", tc.args, code, out, stderr, tc.msg)
		}
	}
	if _, err := os.Stat(cfg); err == nil {
		t.Errorf("a refused set wrote the file")
	}
}

func TestRetryConfigCorrupt(t *testing.T) {
	t.Parallel()
	cfg := filepath.Join(t.TempDir(), "retry-config.json")
	os.WriteFile(cfg, []byte("{\n  \"maxRetries\": 4,\n  \"windowSize\": -2,\n  \"strategies\": {\"cass\": \"x\"}\n}\n"), 0o644)
	code, out, stderr := runCLI(t, "", "retry-config", "--config", cfg)
	if code != 0 || !strings.Contains(out, "  Max retries:            4\n") || !strings.Contains(out, "  Window size:            10      (default)\n") ||
		!strings.Contains(out, "    cass            : reduce-stories -> simplify-prompt  (default)\n") {
		t.Errorf("exit %d\n%s", code, out)
	}
	for _, w := range []string{
		"orchstat: warning: " + cfg + ":3: windowSize: must be a whole number from 1 up, got -2; using the default 10\n",
		"orchstat: warning: " + cfg + ":4: strategies.cass: must be a list of strategy names",
	} {
		if !strings.Contains(stderr, w) {
			t.Errorf("stderr %q lacks %q", stderr, w)
		}
	}
	r := showJSON(t, cfg)
	if strings.Join(r.Defaults, ",") != "windowSize,highFailureThreshold,strategies.cass" || len(r.Warnings) != 2 {
		t.Errorf("%+v", r)
	}
	// set replaces what could not be read, and says so.
	code, _, stderr = runCLI(t, "", "retry-config", "set", "windowSize", "6", "--config", cfg)
	if code != 0 || !strings.Contains(stderr, "is rewritten whole, with the defaults in place of what could not be read") {
		t.Errorf("set: exit %d %q", code, stderr)
	}
	if c, w := adaptive.Load(cfg); len(w) != 0 || c.MaxRetries != 4 || c.WindowSize != 6 {
		t.Errorf("after set: %+v %v", c, w)
	}
	// Not JSON at all: the defaults, with the line of the damage.
	os.WriteFile(cfg, []byte("not valid json{{{"), 0o644)
	code, out, stderr = runCLI(t, "", "retry-config", "show", "--config", cfg)
	if code != 0 || !strings.Contains(out, "  Max retries:            3       (default)") || !strings.Contains(stderr, cfg+":1: is not valid JSON") {
		t.Errorf("exit %d\n%s%s", code, out, stderr)
	}
}

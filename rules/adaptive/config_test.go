package adaptive

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/orchstat/orchstat/model/orchestr8/spec"
	"github.com/orchstat/orchstat/rules/retry"
)

// orchestr8Default is JSON.stringify(getDefaultConfig(), null, 2), what
// orchestr8's resetConfig writes (src/retry.js), plus a final newline.
const orchestr8Default = `{
  "maxRetries": 3,
  "windowSize": 10,
  "highFailureThreshold": 0.2,
  "strategies": {
    "alex": [
      "simplify-prompt",
      "add-context"
    ],
    "cass": [
      "reduce-stories",
      "simplify-prompt"
    ],
    "nigel": [
      "simplify-tests",
      "add-context"
    ],
    "codey-plan": [
      "add-context",
      "simplify-prompt"
    ],
    "codey-implement": [
      "incremental",
      "rollback"
    ]
  }
}
`

func TestDefaultIsTheCorePreset(t *testing.T) {
	p, err := retry.Preset("adaptive")
	if err != nil {
		t.Fatal(err)
	}
	if got := Default().Adaptive(); !reflect.DeepEqual(got, *p.Adaptive) {
		t.Errorf("Default().Adaptive() = %+v, the adaptive preset has %+v", got, *p.Adaptive)
	}
	if got := string(Default().Marshal()); got != orchestr8Default {
		t.Errorf("defaults marshal as\n%s\nwant orchestr8's\n%s", got, orchestr8Default)
	}
}

func TestLoadMissingIsDefaultsSilently(t *testing.T) {
	c, w := Load(filepath.Join(t.TempDir(), ".claude", "retry-config.json"))
	if len(w) != 0 {
		t.Errorf("warnings: %v", w)
	}
	if !reflect.DeepEqual(c.Adaptive(), Default().Adaptive()) {
		t.Errorf("got %+v", c)
	}
	for _, k := range spec.Keys {
		if !c.Defaulted[k] {
			t.Errorf("%s not marked defaulted", k)
		}
	}
}

func TestParse(t *testing.T) {
	def := Default()
	type want struct {
		maxRetries, window int
		threshold          float64
		strategies         map[string][]string // nil: the defaults
		defaulted          []string
		warnings           []string // substrings, one per warning, in order: "line:field: text"
	}
	for _, tc := range []struct {
		name, file string
		want       want
	}{
		{"orchestr8's own defaults", orchestr8Default, want{3, 10, 0.2, nil, nil, nil}},
		{"values from the file", `{"maxRetries": 5, "windowSize": 20, "highFailureThreshold": 0.5, "strategies": {"cass": ["simplify-prompt"]}}`,
			want{5, 20, 0.5, map[string][]string{"cass": {"simplify-prompt"}}, nil, nil}},
		{"integral doubles are counts", `{"maxRetries": 4.0, "windowSize": 1e1, "highFailureThreshold": 1, "strategies": {}}`,
			want{4, 10, 1, map[string][]string{}, nil, nil}},
		{"missing keys are defaults", `{"maxRetries": 1}`,
			want{1, 10, 0.2, nil, []string{spec.KeyWindowSize, spec.KeyThreshold, spec.KeyStrategies}, nil}},
		{"bad JSON is the defaults whole", "{\n  \"maxRetries\": 5,\n  \"windowSize\": oops\n}",
			want{3, 10, 0.2, nil, spec.Keys, []string{"3: is not valid JSON"}}},
		{"truncated", "{\n  \"maxRetries\": 5,\n", want{3, 10, 0.2, nil, spec.Keys, []string{"3: is not valid JSON"}}},
		{"empty", "  \n", want{3, 10, 0.2, nil, spec.Keys, []string{"1: is empty"}}},
		{"trailing garbage", `{"maxRetries": 5} {}`, want{3, 10, 0.2, nil, spec.Keys, []string{"1: is not valid JSON"}}},
		{"not an object", "\n[1, 2]", want{3, 10, 0.2, nil, spec.Keys, []string{"2: is not a JSON object (it is a list)"}}},
		{"null", "null", want{3, 10, 0.2, nil, spec.Keys, []string{"1: is not a JSON object (it is null)"}}},
		{"wrong types, key by key", "{\n  \"maxRetries\": \"5\",\n  \"windowSize\": 7,\n  \"highFailureThreshold\": true,\n  \"strategies\": [\"x\"]\n}",
			want{3, 7, 0.2, nil, []string{spec.KeyMaxRetries, spec.KeyThreshold, spec.KeyStrategies}, []string{
				`2: maxRetries: must be a whole number from 0 up, got "5"; using the default 3`,
				`4: highFailureThreshold: must be a number from 0 to 1, got true; using the default 0.2`,
				`5: strategies: must be an object`,
			}}},
		{"out of range", "{\"maxRetries\": -1,\n\"windowSize\": 0,\n\"highFailureThreshold\": 1.5}",
			want{3, 10, 0.2, nil, spec.Keys, []string{"1: maxRetries: ", "2: windowSize: must be a whole number from 1 up, got 0", "3: highFailureThreshold: must be a number from 0 to 1, got 1.5"}}},
		{"fractions and huge counts", `{"maxRetries": 2.5, "windowSize": 1e300}`,
			want{3, 10, 0.2, nil, spec.Keys, []string{"maxRetries: must be a whole number from 0 up, got 2.5", "windowSize: must be a whole number from 1 up, got 1e300"}}},
		{"null values", `{"maxRetries": null, "windowSize": 3}`,
			want{3, 3, 0.2, nil, []string{spec.KeyMaxRetries, spec.KeyThreshold, spec.KeyStrategies}, []string{"maxRetries: must be a whole number from 0 up, got null"}}},
		{"a bad stage costs only that stage", "{\"strategies\": {\n  \"cass\": \"simplify-prompt\",\n  \"nigel\": [\"add-context\", 3],\n  \"mine\": {\"a\": 1},\n  \"alex\": [\"simplify-prompt\"]\n}}",
			want{3, 10, 0.2, map[string][]string{"cass": def.Strategies["cass"], "nigel": def.Strategies["nigel"], "alex": {"simplify-prompt"}},
				[]string{spec.KeyMaxRetries, spec.KeyWindowSize, spec.KeyThreshold, "strategies.cass", "strategies.nigel"}, []string{
					`2: strategies.cass: must be a list of strategy names, got "simplify-prompt"; using the default reduce-stories, simplify-prompt`,
					`3: strategies.nigel: must be a list of strategy names, got ["add-context", 3]; using the default simplify-tests, add-context`,
					`4: strategies.mine: must be a list of strategy names, got {"a": 1}; the stage is ignored`,
				}}},
		{"unknown strategies are kept, with a warning", `{"strategies": {"cass": ["simplfy-prompt", "", "retry"]}}`,
			want{3, 10, 0.2, map[string][]string{"cass": {"simplfy-prompt", "", "retry"}}, []string{spec.KeyMaxRetries, spec.KeyWindowSize, spec.KeyThreshold}, []string{
				`strategies.cass[0]: "simplfy-prompt" is not a strategy orchestr8 applies; did you mean "simplify-prompt"?`,
				`strategies.cass[1]: "" is not a strategy`,
			}}},
		{"an empty list and a null list", `{"strategies": {"cass": [], "alex": null}}`,
			want{3, 10, 0.2, map[string][]string{"cass": {}, "alex": def.Strategies["alex"]}, []string{spec.KeyMaxRetries, spec.KeyWindowSize, spec.KeyThreshold, "strategies.alex"},
				[]string{"strategies.alex: must be a list of strategy names, got null"}}},
		{"an unnamed stage", `{"strategies": {"": ["retry"]}}`,
			want{3, 10, 0.2, map[string][]string{}, []string{spec.KeyMaxRetries, spec.KeyWindowSize, spec.KeyThreshold}, []string{"strategies: a stage has an empty name"}}},
		{"unknown keys are kept", "{\n\"max_retries\": 5}",
			want{3, 10, 0.2, nil, spec.Keys, []string{`2: max_retries: is not a key orchestr8's retry configuration has; did you mean "maxRetries"?`}}},
		{"duplicates: the last wins", "{\"maxRetries\": 1,\n\"maxRetries\": 2}",
			want{2, 10, 0.2, nil, []string{spec.KeyWindowSize, spec.KeyThreshold, spec.KeyStrategies}, []string{"2: maxRetries: appears again (first on line 1)"}}},
		{"duplicate stages", "{\"strategies\": {\"cass\": [\"retry\"],\n \"cass\": [\"rollback\"]}}",
			want{3, 10, 0.2, map[string][]string{"cass": {"rollback"}}, []string{spec.KeyMaxRetries, spec.KeyWindowSize, spec.KeyThreshold}, []string{"2: strategies.cass: appears again (first on line 1)"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, warns := Parse("cfg.json", []byte(tc.file))
			w := tc.want
			if c.MaxRetries != w.maxRetries || c.WindowSize != w.window || c.HighFailureThreshold != w.threshold {
				t.Errorf("got maxRetries %d windowSize %d threshold %v, want %d %d %v", c.MaxRetries, c.WindowSize, c.HighFailureThreshold, w.maxRetries, w.window, w.threshold)
			}
			strategies := w.strategies
			if strategies == nil {
				strategies = def.Strategies
			}
			if !reflect.DeepEqual(c.Strategies, strategies) {
				t.Errorf("strategies %v, want %v", c.Strategies, strategies)
			}
			var defaulted []string
			for k, d := range c.Defaulted {
				if d {
					defaulted = append(defaulted, k)
				}
			}
			slices.Sort(defaulted)
			wantD := slices.Clone(w.defaulted)
			slices.Sort(wantD)
			if !slices.Equal(defaulted, wantD) {
				t.Errorf("defaulted %v, want %v", defaulted, wantD)
			}
			if len(warns) != len(w.warnings) {
				t.Fatalf("warnings %q, want %d like %q", warns, len(w.warnings), w.warnings)
			}
			for i, sub := range w.warnings {
				if got := warns[i].String(); !strings.HasPrefix(got, "cfg.json:") || !strings.Contains(got, sub) {
					t.Errorf("warning %d = %q, want one containing %q", i, got, sub)
				}
			}
		})
	}
}

func TestLoadUnreadable(t *testing.T) {
	dir := t.TempDir()
	c, w := Load(dir)
	if len(w) != 1 || !strings.Contains(w[0].String(), "is a directory") || c.MaxRetries != 3 {
		t.Errorf("a directory: %v %+v", w, c)
	}
	big := filepath.Join(dir, "big.json")
	os.WriteFile(big, []byte(`{"maxRetries": 1, "x": "`+strings.Repeat("a", maxFile)+`"}`), 0o644)
	if c, w := Load(big); len(w) != 1 || !strings.Contains(w[0].String(), "larger than") || c.MaxRetries != 3 {
		t.Errorf("a huge file: %v %+v", w, c.MaxRetries)
	}
	if os.Getuid() != 0 {
		locked := filepath.Join(dir, "locked.json")
		os.WriteFile(locked, []byte(`{"maxRetries": 1}`), 0o000)
		if c, w := Load(locked); len(w) != 1 || !strings.Contains(w[0].String(), "cannot read it (permission denied)") || c.MaxRetries != 3 {
			t.Errorf("unreadable: %v %+v", w, c.MaxRetries)
		}
	}
}

func TestSet(t *testing.T) {
	for _, tc := range []struct {
		key, value string
		err        string // "" for success
		check      func(Config) bool
	}{
		{"maxRetries", "5", "", func(c Config) bool { return c.MaxRetries == 5 }},
		{"maxRetries", "0", "", func(c Config) bool { return c.MaxRetries == 0 }},
		{"maxRetries", "3.0", "", func(c Config) bool { return c.MaxRetries == 3 }},
		{"maxRetries", "-1", "maxRetries must be a whole number from 0 up", nil},
		{"maxRetries", "2.5", "maxRetries must be a whole number from 0 up", nil},
		{"maxRetries", "three", "maxRetries must be a whole number", nil},
		{"maxRetries", "1e20", "maxRetries must be a whole number", nil},
		{"windowSize", "25", "", func(c Config) bool { return c.WindowSize == 25 }},
		{"windowSize", "0", "windowSize must be a whole number from 1 up", nil},
		{"highFailureThreshold", "0.35", "", func(c Config) bool { return c.HighFailureThreshold == 0.35 }},
		{"highFailureThreshold", "25%", "", func(c Config) bool { return c.HighFailureThreshold == 0.25 }},
		{"highFailureThreshold", "1", "", func(c Config) bool { return c.HighFailureThreshold == 1 }},
		{"highFailureThreshold", "1.2", "must be a number from 0 to 1", nil},
		{"highFailureThreshold", "NaN", "must be a number from 0 to 1", nil},
		{"highFailureThreshold", "", "must be a number from 0 to 1", nil},
		{"strategies.nigel", "add-context, simplify-tests", "", func(c Config) bool {
			return slices.Equal(c.Strategies["nigel"], []string{"add-context", "simplify-tests"})
		}},
		{"strategies.cass", "", "", func(c Config) bool { return c.Strategies["cass"] != nil && len(c.Strategies["cass"]) == 0 }},
		{"strategies.nigel", "simplfy-tests", `unknown strategy "simplfy-tests"; did you mean "simplify-tests"?`, nil},
		{"strategies.nigle", "retry", `unknown stage "nigle"; did you mean "nigel"?`, nil},
		{"strategies", "retry", "name the stage: strategies.<stage>", nil},
		{"strategies.", "retry", "name the stage", nil},
		{"max_retries", "3", `unknown key "max_retries"; did you mean "maxRetries"? (valid keys: maxRetries, windowSize, highFailureThreshold, strategies.<stage> (alex,`, nil},
		{"threshold", "0.3", `unknown key "threshold"`, nil},
	} {
		c := Default()
		err := c.Set(tc.key, tc.value)
		switch {
		case tc.err == "" && err != nil:
			t.Errorf("Set(%q, %q): %v", tc.key, tc.value, err)
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("Set(%q, %q) = %v, want an error containing %q", tc.key, tc.value, err, tc.err)
		case tc.err == "" && !tc.check(c):
			t.Errorf("Set(%q, %q) left %+v", tc.key, tc.value, c)
		case tc.err == "" && c.Defaulted[tc.key]:
			t.Errorf("Set(%q, %q) left the key marked defaulted", tc.key, tc.value)
		case tc.err != "" && !reflect.DeepEqual(c.Adaptive(), Default().Adaptive()):
			t.Errorf("Set(%q, %q) failed but changed the config", tc.key, tc.value)
		}
	}
	// A stage the file already has may be set, though orchestr8 has no
	// such agent.
	c, _ := Parse("cfg.json", []byte(`{"strategies": {"review": ["retry"]}}`))
	if err := c.Set("strategies.review", "simplify-prompt"); err != nil {
		t.Errorf("a custom stage already in the file: %v", err)
	}
}

func TestSaveRoundTrip(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, ".claude", "retry-config.json")
	c, _ := Load(path)
	if err := c.Set("maxRetries", "5"); err != nil {
		t.Fatal(err)
	}
	if err := c.Set("strategies.review", "retry"); err == nil {
		t.Fatal("a new stage that is not orchestr8's was accepted")
	}
	if err := c.Save(path); err != nil {
		t.Fatal(err)
	}
	got, w := Load(path)
	if len(w) != 0 || got.MaxRetries != 5 || len(got.Defaulted) != 0 && slices.ContainsFunc(spec.Keys, func(k string) bool { return got.Defaulted[k] }) {
		t.Fatalf("after save: %+v %v", got, w)
	}
	if !reflect.DeepEqual(got.Adaptive(), c.Adaptive()) {
		t.Errorf("round trip: %+v, saved %+v", got.Adaptive(), c.Adaptive())
	}
	// The file is valid JSON that orchestr8 would read, with every key.
	var m map[string]any
	b, _ := os.ReadFile(path)
	if err := json.Unmarshal(b, &m); err != nil || len(m) != 4 || m["maxRetries"] != 5.0 {
		t.Errorf("saved %s (%v)", b, err)
	}

	// The mode is kept, and nothing is left beside the file.
	os.Chmod(path, 0o600)
	c.Set("windowSize", "4")
	if err := c.Save(path); err != nil {
		t.Fatal(err)
	}
	if st, _ := os.Stat(path); st.Mode().Perm() != 0o600 {
		t.Errorf("mode %v, want 0600", st.Mode().Perm())
	}
	if ents, _ := os.ReadDir(filepath.Dir(path)); len(ents) != 1 {
		t.Errorf("left behind: %v", ents)
	}

	// A symbolic link still points where it did, at the new content.
	real := filepath.Join(dir, "shared.json")
	os.WriteFile(real, []byte(orchestr8Default), 0o644)
	link := filepath.Join(dir, "link.json")
	if err := os.Symlink(real, link); err != nil {
		t.Skip(err)
	}
	c, _ = Load(link)
	c.Set("windowSize", "12")
	if err := c.Save(link); err != nil {
		t.Fatal(err)
	}
	if fi, _ := os.Lstat(link); fi.Mode()&os.ModeSymlink == 0 {
		t.Errorf("the link was replaced by a file")
	}
	if c, _ := Load(real); c.WindowSize != 12 {
		t.Errorf("the link's target has windowSize %d", c.WindowSize)
	}
}

func TestSaveKeepsUnknownKeysAndOrder(t *testing.T) {
	path := filepath.Join(t.TempDir(), "retry-config.json")
	os.WriteFile(path, []byte(`{"strategies": {"nigel": ["retry"], "alex": ["rollback"]}, "maxRetries": 2, "notes": {"by": "me", "n": [1, 2]}}`), 0o644)
	c, w := Load(path)
	if len(w) != 1 {
		t.Fatalf("warnings %v, want one for notes", w)
	}
	if err := c.Set("strategies.cass", "simplify-prompt"); err != nil {
		t.Fatal(err)
	}
	c.Save(path)
	b, _ := os.ReadFile(path)
	want := `{
  "maxRetries": 2,
  "windowSize": 10,
  "highFailureThreshold": 0.2,
  "strategies": {
    "nigel": [
      "retry"
    ],
    "alex": [
      "rollback"
    ],
    "cass": [
      "simplify-prompt"
    ]
  },
  "notes": {
    "by": "me",
    "n": [
      1,
      2
    ]
  }
}
`
	if string(b) != want {
		t.Errorf("saved\n%s\nwant\n%s", b, want)
	}
}

func TestReset(t *testing.T) {
	path := filepath.Join(t.TempDir(), ".claude", "retry-config.json")
	os.MkdirAll(filepath.Dir(path), 0o755)
	os.WriteFile(path, []byte("corrupt{{{"), 0o640)
	if err := Reset(path); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(path)
	if string(b) != orchestr8Default {
		t.Errorf("reset wrote\n%s", b)
	}
	if st, _ := os.Stat(path); st.Mode().Perm() != 0o640 {
		t.Errorf("mode %v", st.Mode().Perm())
	}
}

// FuzzLoadConfig: whatever the file holds, Load returns a usable
// configuration, warnings that name the file and a line in it, and a
// configuration that survives being written and read back unchanged.
func FuzzLoadConfig(f *testing.F) {
	for _, s := range []string{orchestr8Default, "", "{}", "null", "[]", "{\"maxRetries\": 5", `{"maxRetries": "5"}`,
		`{"strategies": {"cass": [1], "x": [""], "": []}, "a": {"b": [1e999]}}`, `{"windowSize": 1e-3, "highFailureThreshold": -0}`,
		"\xef\xbb\xbf{}", `{"maxRetries": 1, "maxRetries": {"x": 1}}`, `{"strategies": {"cass": ["a"], "cass": 3}}`} {
		f.Add([]byte(s))
	}
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, b []byte) {
		path := filepath.Join(dir, "retry-config.json")
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
		c, warns := Load(path)
		lines := 1 + strings.Count(string(b), "\n")
		for _, w := range warns {
			if w.Path != path || w.Line < 1 || w.Line > lines || w.Msg == "" {
				t.Fatalf("warning %+v for %q", w, b)
			}
		}
		if c.MaxRetries < 0 || c.WindowSize < 1 || !(c.HighFailureThreshold >= 0 && c.HighFailureThreshold <= 1) {
			t.Fatalf("unusable config %+v from %q", c, b)
		}
		for st, l := range c.Strategies {
			if st == "" || l == nil {
				t.Fatalf("stage %q: %v from %q", st, l, b)
			}
		}
		// Save is Marshal and a rename; the round trip skips the disk's
		// syncs, which would make most of the fuzzing time waiting.
		saved := c.Marshal()
		if !json.Valid(saved) {
			t.Fatalf("saved invalid JSON %q from %q", saved, b)
		}
		again, warns2 := Parse(path, saved)
		if !reflect.DeepEqual(again.Adaptive(), c.Adaptive()) || !slices.Equal(again.StageNames(), c.StageNames()) {
			t.Fatalf("round trip changed %+v to %+v (from %q, saved %s)", c, again, b, saved)
		}
		for _, w := range warns2 {
			// Only what Load keeps as it was may warn again.
			if !strings.Contains(w.Msg, "is not a strategy") && !strings.Contains(w.Msg, "kept as it is") {
				t.Fatalf("saved file warns %v (from %q, saved %s)", w, b, saved)
			}
		}
	})
}

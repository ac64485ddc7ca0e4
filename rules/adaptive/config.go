// Package adaptive manages orchestr8's retry configuration file,
// .claude/retry-config.json, for `orchstat recommend` and `orchstat
// retry-config`. The rule the file configures lives in rules/retry
// (Adaptive.FailureRate and Adaptive.Recommend); this package only reads,
// validates and writes its settings, and bridges them with
// Config.Adaptive.
//
// The keys, defaults and limits are orchestr8's own, from its src/retry.js
// (github.com/NewmanJustice/orchestr8, getDefaultConfig, setConfigValue,
// readConfig, resetConfig) and its test/feature_adaptive-retry.test.js:
//
//	{"maxRetries": 3, "windowSize": 10, "highFailureThreshold": 0.2,
//	 "strategies": {"alex": ["simplify-prompt", "add-context"], ...}}
//
// The keys, defaults, stages and the ranges of the values are
// model/orchestr8/spec's, which the reader that stores the same file also
// uses; this package adds only its own bound on counts (maxCount). It is pure Go: no DuckDB, no cobra, no YAML.
package adaptive

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"unicode/utf8"

	"github.com/orchstat/orchstat/model/orchestr8/spec"
	"github.com/orchstat/orchstat/rules/internal/names"
	"github.com/orchstat/orchstat/rules/retry"
)

// DefaultPath is where orchestr8 keeps the file, relative to the project
// root (retry.js's CONFIG_FILE; orchestr8's adaptive retry spec, lines 16 and 138).
const DefaultPath = ".claude/retry-config.json"

// maxFile bounds what Load reads: the file is a few hundred bytes, and one
// of megabytes is not a configuration anyone wrote.
const maxFile = 1 << 20

// maxCount bounds maxRetries and windowSize, beyond orchestr8's own
// limits (spec.MaxRetriesRange, WindowSizeRange), so they fit any int
// and a window never asks for more runs than a store could hold.
const maxCount = math.MaxInt32

// Config is the effective configuration: the file's values where they are
// valid, the defaults elsewhere.
type Config struct {
	MaxRetries           int
	WindowSize           int
	HighFailureThreshold float64
	// Strategies is each stage's strategy for attempt 1, 2, ...; the last
	// one serves later attempts (retry.js recommendStrategy).
	Strategies map[string][]string
	// Defaulted names the values not taken from the file: top-level keys,
	// and "strategies.<stage>" for a stage whose list was unusable.
	Defaulted map[string]bool

	order []string   // stages in the file's order, for Save and show
	extra []extraKey // keys orchestr8 may add later, kept for Save
}

type extraKey struct {
	key string
	raw json.RawMessage
}

// Default is orchestr8's getDefaultConfig, every value marked defaulted.
func Default() Config {
	c := Config{
		MaxRetries:           spec.DefaultMaxRetries,
		WindowSize:           spec.DefaultWindowSize,
		HighFailureThreshold: spec.DefaultThreshold,
		Strategies:           spec.DefaultStrategies(),
		Defaulted:            map[string]bool{},
		order:                slices.Clone(spec.Stages),
	}
	for _, k := range spec.Keys {
		c.Defaulted[k] = true
	}
	return c
}

// Adaptive is the configuration as the retry core takes it.
func (c Config) Adaptive() retry.Adaptive {
	s := make(map[string][]string, len(c.Strategies))
	for st, l := range c.Strategies {
		s[st] = slices.Clone(l)
	}
	return retry.Adaptive{Window: c.WindowSize, Threshold: c.HighFailureThreshold, MaxRetries: c.MaxRetries, Strategies: s}
}

// StageNames lists the stages that have strategies: in the file's order,
// then any added since in name order.
func (c Config) StageNames() []string {
	out := make([]string, 0, len(c.Strategies))
	seen := map[string]bool{}
	for _, st := range c.order {
		if _, ok := c.Strategies[st]; ok && !seen[st] {
			seen[st] = true
			out = append(out, st)
		}
	}
	var rest []string
	for st := range c.Strategies {
		if !seen[st] {
			rest = append(rest, st)
		}
	}
	sort.Strings(rest)
	return append(out, rest...)
}

// Warning is a part of the file that could not be used, or that orchestr8
// would use to no effect. Line is 1-based; 0 when the problem is the file
// as a whole (it cannot be read). Field is a key path such as
// "strategies.nigel[1]".
type Warning struct {
	Path  string
	Line  int
	Field string
	Msg   string
}

func (w Warning) String() string {
	var b strings.Builder
	b.WriteString(w.Path)
	if w.Line > 0 {
		fmt.Fprintf(&b, ":%d", w.Line)
	}
	if w.Field != "" {
		fmt.Fprintf(&b, ": %s", w.Field)
	}
	fmt.Fprintf(&b, ": %s", w.Msg)
	return b.String()
}

// Load reads the file at path. It never fails, because orchestr8's adaptive
// retry spec wants a missing or corrupt file to fall back to the hardcoded
// defaults (line 169) rather than stop a pipeline: a missing file is the
// defaults silently; anything else unusable is the defaults, key by key where
// the JSON is sound, each with a Warning naming the file, line and field.
func Load(path string) (Config, []Warning) {
	// O_NONBLOCK: a named pipe nobody writes to reads as empty rather than
	// hanging orchstat, beyond Ctrl-C's reach, in open.
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return Default(), nil
	}
	if err != nil {
		return Default(), []Warning{{Path: path, Msg: fmt.Sprintf("cannot read it (%v); using the defaults", unwrapPath(err))}}
	}
	defer f.Close()
	if st, err := f.Stat(); err == nil && st.IsDir() {
		return Default(), []Warning{{Path: path, Msg: "is a directory, not a file; using the defaults"}}
	}
	b, err := io.ReadAll(io.LimitReader(f, maxFile+1))
	if err != nil {
		return Default(), []Warning{{Path: path, Msg: fmt.Sprintf("cannot read it (%v); using the defaults", unwrapPath(err))}}
	}
	if len(b) > maxFile {
		return Default(), []Warning{{Path: path, Msg: fmt.Sprintf("is larger than %d KiB, which no retry configuration is; using the defaults", maxFile>>10)}}
	}
	return Parse(path, b)
}

func unwrapPath(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// Parse is Load on the file's content; path is for the warnings.
func Parse(path string, b []byte) (Config, []Warning) {
	c := Default()
	var warns []Warning
	warn := func(off int, field, format string, args ...any) {
		warns = append(warns, Warning{Path: path, Line: lineAt(b, off), Field: field, Msg: fmt.Sprintf(format, args...)})
	}
	if firstByte(b) == len(b) {
		// orchestr8's JSON.parse fails on an empty file too, and readConfig
		// falls back to the defaults (retry.js).
		warn(0, "", "is empty; using the defaults")
		return c, warns
	}
	if !json.Valid(b) {
		// Not JSON: orchestr8 takes the defaults whole (readConfig's catch),
		// and so does this. Keys read before a syntax error are not
		// salvaged, as a half-written file may mix old and new values.
		var v any
		err := json.Unmarshal(b, &v)
		off := len(b)
		var se *json.SyntaxError
		if errors.As(err, &se) {
			off = int(se.Offset)
			// encoding/json stops at 10,000 levels, linearly; say so
			// rather than "invalid character '['".
			if strings.HasSuffix(se.Error(), "exceeded max depth") {
				warn(off, "", "is nested too deep (more than 10000 levels of [ and {); using the defaults")
				return c, warns
			}
		}
		warn(off, "", "is not valid JSON (%v); using the defaults", err)
		return c, warns
	}
	top, err := members(b, 0)
	if err != nil {
		warn(firstByte(b), "", "is not a JSON object (%v); using the defaults", err)
		return c, warns
	}
	seen := map[string]int{}
	for _, m := range top {
		if prev, dup := seen[m.key]; dup {
			warn(m.valOff, m.key, "appears again (first on line %d); the last one is used, as orchestr8's JSON.parse does", lineAt(b, prev))
		}
		seen[m.key] = m.valOff
	}
	for _, m := range lastOf(top) {
		switch m.key {
		case spec.KeyMaxRetries:
			if n, ok := count(m.raw, spec.MaxRetriesRange); ok {
				c.MaxRetries, c.Defaulted[m.key] = n, false
			} else {
				warn(m.valOff, m.key, "must be a whole number from 0 up, got %s; using the default %d", show(m.raw), spec.DefaultMaxRetries)
			}
		case spec.KeyWindowSize:
			if n, ok := count(m.raw, spec.WindowSizeRange); ok {
				c.WindowSize, c.Defaulted[m.key] = n, false
			} else {
				warn(m.valOff, m.key, "must be a whole number from 1 up, got %s; using the default %d", show(m.raw), spec.DefaultWindowSize)
			}
		case spec.KeyThreshold:
			if f, ok := fraction(m.raw); ok {
				c.HighFailureThreshold, c.Defaulted[m.key] = f, false
			} else {
				warn(m.valOff, m.key, "must be a number from 0 to 1, got %s; using the default %v", show(m.raw), spec.DefaultThreshold)
			}
		case spec.KeyStrategies:
			parseStrategies(&c, b, m, warn)
		default:
			warn(m.valOff, m.key, "is not a key orchestr8's retry configuration has%s (keys: %s); kept as it is",
				names.Suggest(m.key, spec.Keys), strings.Join(spec.Keys, ", "))
			c.extra = append(c.extra, extraKey{m.key, m.raw})
		}
	}
	return c, warns
}

// parseStrategies reads the strategies object stage by stage, so one bad
// stage costs only that stage (its default, if it has one).
func parseStrategies(c *Config, b []byte, m member, warn func(int, string, string, ...any)) {
	stages, err := members(m.raw, m.valOff)
	if err != nil {
		warn(m.valOff, spec.KeyStrategies, "must be an object of stage: [strategy, ...], got %s; using the default strategies", show(m.raw))
		return
	}
	c.Defaulted[spec.KeyStrategies] = false
	c.Strategies = map[string][]string{}
	c.order = nil
	seen := map[string]int{}
	for _, s := range stages {
		if prev, dup := seen[s.key]; dup {
			warn(s.valOff, spec.KeyStrategies+"."+s.key, "appears again (first on line %d); the last one is used", lineAt(b, prev))
		}
		seen[s.key] = s.valOff
	}
	for _, s := range lastOf(stages) {
		field := spec.KeyStrategies + "." + s.key
		if s.key == "" {
			warn(s.valOff, spec.KeyStrategies, "a stage has an empty name; ignored")
			continue
		}
		var items []json.RawMessage
		var list []string
		ok := json.Unmarshal(s.raw, &items) == nil && items != nil
		for _, it := range items {
			var name string
			if json.Unmarshal(it, &name) != nil {
				ok = false
				break
			}
			list = append(list, name)
		}
		if !ok {
			if d, has := spec.DefaultStrategies()[s.key]; has {
				warn(s.valOff, field, "must be a list of strategy names, got %s; using the default %s", show(s.raw), strings.Join(d, ", "))
				c.Strategies[s.key] = slices.Clone(d)
				c.Defaulted[field] = true
				c.order = append(c.order, s.key)
			} else {
				warn(s.valOff, field, "must be a list of strategy names, got %s; the stage is ignored", show(s.raw))
			}
			continue
		}
		for i, name := range list {
			if !slices.Contains(spec.Strategies, name) {
				// Kept: this is what orchestr8 would recommend, though its
				// applyStrategy changes nothing for a name it does not know.
				warn(s.valOff, fmt.Sprintf("%s[%d]", field, i), "%q is not a strategy orchestr8 applies%s (strategies: %s); it is recommended as written and works as a simple retry",
					name, names.Suggest(name, spec.Strategies), strings.Join(spec.Strategies, ", "))
			}
		}
		if list == nil {
			list = []string{}
		}
		c.Strategies[s.key] = list
		c.order = append(c.order, s.key)
	}
}

// member is one key of a JSON object and where its value starts in the
// file.
type member struct {
	key    string
	valOff int
	raw    json.RawMessage
}

// members lists an object's keys in order; base is raw's offset in the
// file. raw must be valid JSON.
func members(raw []byte, base int) ([]member, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return nil, fmt.Errorf("it is %s", kind(raw))
	}
	var out []member
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, err
		}
		key, _ := tok.(string)
		off := int(dec.InputOffset())
		for off < len(raw) && (raw[off] == ':' || isSpace(raw[off])) {
			off++
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, err
		}
		out = append(out, member{key: key, valOff: base + off, raw: v})
	}
	return out, nil
}

// lastOf keeps the last of duplicate keys, where JSON.parse would, in the
// order of their first appearance.
func lastOf(ms []member) []member {
	idx := map[string]int{}
	var out []member
	for _, m := range ms {
		if i, ok := idx[m.key]; ok {
			out[i] = m
			continue
		}
		idx[m.key] = len(out)
		out = append(out, m)
	}
	return out
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

func firstByte(b []byte) int {
	i := 0
	for i < len(b) && isSpace(b[i]) {
		i++
	}
	return i
}

func lineAt(b []byte, off int) int {
	off = min(max(off, 0), len(b))
	return 1 + bytes.Count(b[:off], []byte{'\n'})
}

func kind(raw []byte) string {
	switch t := bytes.TrimSpace(raw); {
	case len(t) == 0:
		return "nothing"
	case t[0] == '[':
		return "a list"
	case t[0] == '"':
		return "a string"
	case t[0] == 'n':
		return "null"
	case t[0] == 't' || t[0] == 'f':
		return "a boolean"
	case t[0] == '{':
		return "an object"
	}
	return "a number"
}

// show quotes a value for a message, cut short.
func show(raw json.RawMessage) string {
	s := string(bytes.TrimSpace(raw))
	if len(s) > 40 {
		cut := 40
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		s = s[:cut] + "…"
	}
	return s
}

// count reads a whole number in r, up to maxCount. JSON numbers are all
// doubles to orchestr8, so 3.0 and 3e0 are 3; 3.5 is not a count of
// anything.
func count(raw json.RawMessage, r spec.ConfigRange) (int, bool) {
	f, ok := number(raw)
	if !ok || !r.Allows(f) || f > maxCount {
		return 0, false
	}
	return int(f), true
}

func fraction(raw json.RawMessage) (float64, bool) {
	f, ok := number(raw)
	return f, ok && spec.ThresholdRange.Allows(f)
}

// number reads a JSON number, and only a number: orchestr8 compares with
// whatever the file holds, so a quoted "3" happens to work there, but a
// configuration of the wrong type is taken for damage here.
func number(raw json.RawMessage) (float64, bool) {
	t := bytes.TrimSpace(raw)
	if len(t) == 0 || !(t[0] == '-' || t[0] >= '0' && t[0] <= '9') {
		return 0, false
	}
	f, err := strconv.ParseFloat(string(t), 64)
	return f, err == nil && !math.IsInf(f, 0) && !math.IsNaN(f)
}

// SettableKeys describes what Set takes, for messages and help.
func SettableKeys() string {
	return spec.KeyMaxRetries + ", " + spec.KeyWindowSize + ", " + spec.KeyThreshold + ", " + spec.KeyStrategies + ".<stage> (" + strings.Join(spec.Stages, ", ") + ")"
}

// Set changes one value, given as text, after checking it as orchestr8's
// setConfigValue does (retry.js): maxRetries a whole number from 0,
// windowSize one from 1, highFailureThreshold from 0 to 1 (also taken as
// a percentage, "25%"). Beyond orchestr8, "strategies.<stage>" takes a
// comma-separated list of strategies (an empty value leaves the stage
// none, which is a simple retry); the stage must be orchestr8's or one the
// configuration already has, and each strategy one applyStrategy knows,
// so that a typo is not saved as a strategy that does nothing.
func (c *Config) Set(key, value string) error {
	v := strings.TrimSpace(value)
	switch key {
	case spec.KeyMaxRetries, spec.KeyWindowSize:
		r := spec.MaxRetriesRange
		if key == spec.KeyWindowSize {
			r = spec.WindowSizeRange
		}
		// As setConfigValue: a number that is an integer, so "3.0" is 3.
		f, err := strconv.ParseFloat(v, 64)
		if err != nil || !r.Allows(f) || f > maxCount {
			return fmt.Errorf("%s must be a whole number from %d up, got %q", key, int(r.Min), value)
		}
		n := int(f)
		if key == spec.KeyMaxRetries {
			c.MaxRetries = n
		} else {
			c.WindowSize = n
		}
	case spec.KeyThreshold:
		f, err := strconv.ParseFloat(strings.TrimSuffix(v, "%"), 64)
		if strings.HasSuffix(v, "%") {
			f /= 100
		}
		if err != nil || !spec.ThresholdRange.Allows(f) {
			return fmt.Errorf("%s must be a number from 0 to 1 (or a percentage such as 20%%), got %q", key, value)
		}
		c.HighFailureThreshold = f
	default:
		stage, ok := strings.CutPrefix(key, spec.KeyStrategies+".")
		if key == spec.KeyStrategies || ok && stage == "" {
			return fmt.Errorf("name the stage: %s.<stage>, one of %s", spec.KeyStrategies, strings.Join(c.knownStages(), ", "))
		}
		if !ok {
			known := append(slices.Clone(spec.Keys[:3]), spec.KeyStrategies+"."+spec.Stages[0])
			return fmt.Errorf("unknown key %q%s (valid keys: %s)", key, names.Suggest(key, known), SettableKeys())
		}
		if _, has := c.Strategies[stage]; !has && !slices.Contains(spec.Stages, stage) {
			return fmt.Errorf("unknown stage %q%s (stages: %s)", stage, names.Suggest(stage, c.knownStages()), strings.Join(c.knownStages(), ", "))
		}
		list := []string{}
		if v != "" {
			for _, s := range strings.Split(v, ",") {
				s = strings.TrimSpace(s)
				if !slices.Contains(spec.Strategies, s) {
					return fmt.Errorf("%s: unknown strategy %q%s (strategies: %s)", key, s, names.Suggest(s, spec.Strategies), strings.Join(spec.Strategies, ", "))
				}
				list = append(list, s)
			}
		}
		if c.Strategies == nil {
			c.Strategies = map[string][]string{}
		}
		if _, has := c.Strategies[stage]; !has {
			c.order = append(c.order, stage)
		}
		c.Strategies[stage] = list
		if c.Defaulted != nil {
			delete(c.Defaulted, key)
			c.Defaulted[spec.KeyStrategies] = false
		}
		return nil
	}
	if c.Defaulted != nil {
		c.Defaulted[key] = false
	}
	return nil
}

func (c Config) knownStages() []string {
	out := slices.Clone(spec.Stages)
	for _, st := range c.StageNames() {
		if !slices.Contains(out, st) {
			out = append(out, st)
		}
	}
	return out
}

// Marshal is the file as orchestr8's writeConfig writes it
// (JSON.stringify(config, null, 2)): every key, defaults included, since
// orchestr8 reads the file without filling in missing keys; then any keys
// this version does not know, as they were.
func (c Config) Marshal() []byte {
	var b bytes.Buffer
	b.WriteString("{\n")
	fmt.Fprintf(&b, "  %q: %d,\n", spec.KeyMaxRetries, c.MaxRetries)
	fmt.Fprintf(&b, "  %q: %d,\n", spec.KeyWindowSize, c.WindowSize)
	th, _ := json.Marshal(c.HighFailureThreshold)
	fmt.Fprintf(&b, "  %q: %s,\n", spec.KeyThreshold, th)
	fmt.Fprintf(&b, "  %q: ", spec.KeyStrategies)
	stages := c.StageNames()
	if len(stages) == 0 {
		b.WriteString("{}")
	} else {
		b.WriteString("{\n")
		for i, st := range stages {
			k, _ := json.Marshal(st)
			l := c.Strategies[st]
			if l == nil {
				l = []string{} // null would break orchestr8's strategies[idx]
			}
			v, _ := json.MarshalIndent(l, "    ", "  ")
			fmt.Fprintf(&b, "    %s: %s", k, v)
			if i < len(stages)-1 {
				b.WriteString(",")
			}
			b.WriteString("\n")
		}
		b.WriteString("  }")
	}
	for _, e := range c.extra {
		k, _ := json.Marshal(e.key)
		var v bytes.Buffer
		if json.Indent(&v, e.raw, "  ", "  ") != nil {
			v.Reset()
			v.Write(e.raw)
		}
		fmt.Fprintf(&b, ",\n  %s: %s", k, v.Bytes())
	}
	b.WriteString("\n}\n")
	return b.Bytes()
}

// Save writes the configuration to path atomically: a temporary file in
// the same directory, synced, then renamed over the old one, so a crash
// leaves the old file or the new one and never the half-written file that
// Load would have to fall back from. The file keeps its mode (new files
// get 0644), a symbolic link keeps pointing where it did, and a missing
// directory is made, as orchestr8's ensureConfigDir does.
func (c Config) Save(path string) error {
	target := path
	if r, err := filepath.EvalSymlinks(path); err == nil {
		target = r
	}
	mode := fs.FileMode(0o644)
	if st, err := os.Stat(target); err == nil {
		if st.IsDir() {
			return fmt.Errorf("%s is a directory", path)
		}
		mode = st.Mode().Perm()
	}
	dir := filepath.Dir(target)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(target)+".*.tmp")
	if err != nil {
		return err
	}
	done := false
	defer func() {
		if !done {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	if _, err := tmp.Write(c.Marshal()); err != nil {
		return err
	}
	if err := tmp.Chmod(mode); err != nil {
		return err
	}
	if err := tmp.Sync(); err != nil {
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp.Name(), target); err != nil {
		return err
	}
	done = true
	// The rename is durable once the directory is; failing to sync it is
	// not worth failing a write that has happened.
	if d, err := os.Open(dir); err == nil {
		d.Sync()
		d.Close()
	}
	return nil
}

// Reset writes the defaults to path, as orchestr8's resetConfig does (it
// writes getDefaultConfig rather than removing the file). Keys orchestr8
// does not know are dropped with the rest.
func Reset(path string) error { return Default().Save(path) }

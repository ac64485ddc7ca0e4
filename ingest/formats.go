package ingest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/orchstat/orchstat/ingest/claudecode"
	"github.com/orchstat/orchstat/ingest/claudestrator"
	"github.com/orchstat/orchstat/ingest/codex"
	"github.com/orchstat/orchstat/ingest/factory"
	"github.com/orchstat/orchstat/ingest/orchestr8"
	"github.com/orchstat/orchstat/ingest/otlp"
	"github.com/orchstat/orchstat/model/records"
	"github.com/orchstat/orchstat/model/rows"
	"github.com/orchstat/orchstat/model/systems"
)

// formats are the record formats, asked in this order: Codex's rollouts,
// named rollout-*.jsonl, before Claude Code's transcripts, which are any
// .jsonl below projects/, so a rollout kept below a Claude folder is
// Codex's; by content, OTLP's first object and Codex's first line before a
// transcript's session id on any early line.
var formats = []records.Format{factory.Format, claudestrator.Format, orchestr8.Format, otlp.Format, codex.Format, claudecode.Format}

// RecordFormats are the record formats ingest reads, in the order it asks
// them.
func RecordFormats() []records.Format { return slices.Clone(formats) }

// formatSystem is the system whose records a format names.
func formatSystem(format string) string {
	if s, ok := systems.OfFormat(format); ok {
		return s.Name
	}
	return format
}

// Formats are what --format names. "auto" detects each file's format by
// its name and place; "orchestrator" is the trace format of EVENTS.md.
// Agents' formats are named as their users know them: "otlp" for the
// OpenTelemetry file exporter's JSON, whose rows' system is "otel".
var Formats = append([]string{"auto"}, formatNames()...)

func formatNames() []string {
	var out []string
	for _, s := range systems.All {
		if s.Format != "" {
			out = append(out, s.Format)
		}
	}
	return out
}

type recordFormat struct {
	system string
	records.Kind
}

// recordKinds are the formats' kinds, by name.
var recordKinds = func() map[string]recordFormat {
	m := map[string]recordFormat{}
	for _, f := range formats {
		for _, k := range f.Kinds {
			m[k.Name] = recordFormat{f.System, k}
		}
	}
	return m
}()

// systemOf is the system a source kind belongs to: "orchestrator" for
// traces and run files.
func systemOf(kind string) string {
	if f, ok := recordKinds[kind]; ok {
		return f.system
	}
	return systems.Orchestrator
}

// recordKind names a record file's kind from its name, and for the web
// pipeline's generic names, from its sibling: a file of a kind's name
// without the sibling it needs is no kind's.
func recordKind(path string) (string, bool) {
	base := filepath.Base(path)
	for _, f := range formats {
		for _, k := range f.Kinds {
			if k.File != base {
				continue
			}
			if k.Beside == "" {
				return k.Name, true
			}
			_, err := os.Stat(filepath.Join(filepath.Dir(path), k.Beside))
			return k.Name, err == nil
		}
	}
	for _, f := range formats {
		for _, k := range f.Kinds {
			if k.Path != nil && k.Path(path) {
				return k.Name, true
			}
		}
	}
	return "", false
}

// sniffKind names the kind of a file given explicitly with --format whose
// name says nothing, from its extension and first bytes.
func sniffKind(format, path string) (string, bool) {
	head := make([]byte, 4096)
	f, err := os.Open(path)
	if err != nil {
		return "", false
	}
	n, _ := f.Read(head)
	f.Close()
	head = head[:n]
	ext := strings.ToLower(filepath.Ext(path))
	for _, r := range formats {
		if r.System == format {
			return r.Guess(ext, head)
		}
	}
	return "", false
}

// sniffHead is how much of a file is read to tell its format by content:
// a transcript's or rollout's first line can be long, and its keys come
// first.
const sniffHead = 16 << 10

// contentExts are the extensions of files whose content is looked at:
// agents' records, and orchestrator traces under other names.
var contentExts = map[string]bool{".json": true, ".jsonl": true, ".ndjson": true}

// contentKind names a file's kind by its first bytes (a bounded read):
// OTLP JSON, a Codex rollout, a Claude Code transcript, or an
// orchestrator trace. When none claims it, why not.
func contentKind(path string) (kind, why string) {
	f, err := os.Open(path)
	if err != nil {
		return "", "cannot be opened: " + describeOpenErr(err).Error()
	}
	defer f.Close()
	head := make([]byte, sniffHead)
	n, err := io.ReadFull(f, head)
	if n == 0 && err != nil && !errors.Is(err, io.EOF) {
		return "", "cannot be read: " + describeOpenErr(err).Error()
	}
	return headKind(head[:n])
}

// headKind names the kind a file's first bytes say, or why they say none.
func headKind(head []byte) (kind, why string) {
	for _, f := range formats {
		for _, k := range f.Kinds {
			if k.Head != nil && k.Head(head) {
				return k.Name, ""
			}
		}
	}
	if traceHead(head) {
		return KindTrace, ""
	}
	return "", whyNot(head)
}

// byContent reports whether a kind is told by content alone.
func byContent(kind string) bool {
	f, ok := recordKinds[kind]
	return ok && f.Head != nil
}

// traceHead tells an orchestrator trace by its first line's keys: type,
// runId and timestamp, in any order (EVENTS.md).
func traceHead(head []byte) bool {
	keys := firstKeys(firstLine(head), 64)
	return keys["type"] && keys["runId"] && keys["timestamp"]
}

// firstLine is head's first non-blank line, without a BOM.
func firstLine(head []byte) []byte {
	head = bytes.TrimPrefix(head, []byte("\ufeff"))
	for len(head) > 0 {
		line := head
		if i := bytes.IndexByte(head, '\n'); i >= 0 {
			line, head = head[:i], head[i+1:]
		} else {
			head = nil
		}
		if line = bytes.TrimSpace(line); len(line) > 0 {
			return line
		}
	}
	return nil
}

// firstKeys reads up to max top-level keys of the JSON object that starts
// b, as far as b goes (a cut-off value ends the read).
func firstKeys(b []byte, max int) map[string]bool {
	keys := map[string]bool{}
	d := json.NewDecoder(bytes.NewReader(b))
	if t, err := d.Token(); err != nil || t != json.Delim('{') {
		return keys
	}
	for d.More() && len(keys) < max {
		t, err := d.Token()
		k, ok := t.(string)
		if err != nil || !ok {
			return keys
		}
		keys[k] = true
		var v json.RawMessage
		if d.Decode(&v) != nil {
			return keys
		}
	}
	return keys
}

// validText reports whether head is UTF-8 but for a rune the read cut.
func validText(head []byte) bool {
	for i := 0; i < utf8.UTFMax && i <= len(head); i++ {
		if utf8.Valid(head[:len(head)-i]) {
			return true
		}
	}
	return false
}

// whyBinary is why a binary file is no format's.
const whyBinary = "binary, not JSON"

// whyNot says why no format claims a file by its first bytes, in words a
// user can check against the file.
func whyNot(head []byte) string {
	line := firstLine(head)
	switch {
	case len(line) == 0:
		return "empty"
	case !validText(head) || bytes.ContainsAny(head[:min(len(head), 512)], "\x00\x01\x02\x03\x04\x05\x06\x07\x08\x0e\x0f\x10\x11\x12\x13\x14\x15\x16\x17\x18\x19\x1a\x1b\x1c\x1d\x1e\x1f"):
		return whyBinary
	case line[0] == '[':
		return "a JSON array; every format's records are JSON objects"
	case line[0] != '{':
		return "not JSON"
	}
	// The first object's keys, though it spans many lines.
	keys := firstKeys(bytes.TrimLeft(bytes.TrimPrefix(head, []byte("\ufeff")), " \t\r\n"), 6)
	if len(keys) == 0 {
		return "a JSON object orchstat could not read the keys of"
	}
	names := make([]string, 0, len(keys))
	for k := range keys {
		names = append(names, strconv.Quote(k))
	}
	sort.Strings(names)
	return "a JSON object whose first keys (" + strings.Join(names, ", ") + ") are no format's"
}

// probeRecords finds the record files at the places the systems keep
// them, relative to a directory the user named: each format's Home
// (claudestrator's .orchestrator/, orchestr8's .claude/). A few stats, so
// it runs on every ingest.
func probeRecords(dir string, allow func(kind string) bool, add func(source)) {
	subs, names := []string{""}, []string(nil)
	for _, f := range formats {
		if f.Home == "" {
			continue
		}
		subs = append(subs, f.Home)
		for _, k := range f.Kinds {
			names = append(names, k.File)
		}
	}
	for _, sub := range subs {
		for _, name := range names {
			p := filepath.Join(dir, sub, name)
			if st, err := os.Stat(p); err != nil || !st.Mode().IsRegular() {
				continue
			}
			if k, ok := recordKind(p); ok && allow(k) {
				add(source{path: p, kind: k, runDir: filepath.Base(filepath.Dir(p))})
			}
		}
	}
}

// Walk bounds: records sit a few levels down (examples/artifacts/<run>/
// attempt_1/failure_brief.json); a walk that meets more entries than this
// was pointed at the wrong directory.
const (
	walkDepth   = 6
	walkEntries = 200000
)

var skipDirs = map[string]bool{".git": true, "node_modules": true, "vendor": true, "__pycache__": true,
	".venv": true, "venv": true, ".tox": true}

// Skipped is a file a walk met that no format reads, and why.
type Skipped struct{ Path, Reason string }

// walk is what walkRecords reports besides the sources it adds: run
// directories met at any depth, and files no format claims.
type walk struct {
	// runs asks for orchestrator run directories to be noted, not walked.
	runs bool
	// listed are the run directories already listed; the walk does not
	// go into them.
	listed  map[string]bool
	runDirs []string
	skipped []Skipped
}

// walkRunDir reports whether a directory the walk meets is an
// orchestrator run: it holds a trace.jsonl, or it is in a runs folder and
// holds a summary.json or manifest.json.
func walkRunDir(dir string) bool {
	if st, err := os.Stat(filepath.Join(dir, "trace.jsonl")); err == nil && st.Mode().IsRegular() {
		return true
	}
	return filepath.Base(filepath.Dir(dir)) == "runs" && isRunDir(dir)
}

// folders are the folders path lies in, from root's own down.
func folders(root, path string) []string {
	rel, err := filepath.Rel(root, filepath.Dir(path))
	if err != nil {
		return nil
	}
	return append([]string{filepath.Base(root)}, strings.Split(filepath.ToSlash(rel), "/")...)
}

// keptIn reports whether path lies in a folder where claudestrator keeps
// its files (.orchestrator), below root.
func keptIn(root, path string) bool {
	return slices.Contains(folders(root, path), ".orchestrator")
}

// notCandidate reports whether a JSON file no format claims is one that
// is no record of any kind, and not worth a word: a hidden file, a
// project's manifest, or Claude Code's and Codex's own settings and state
// outside the folders that hold their transcripts and rollouts.
func notCandidate(root, path string) bool {
	base := filepath.Base(path)
	if strings.HasPrefix(base, ".") || manifests[base] || strings.HasPrefix(base, "tsconfig") {
		return true
	}
	home := false
	for _, f := range folders(root, path) {
		switch f {
		case ".claude", "claude", ".codex":
			home = true
		case "projects", "sessions", "archived_sessions":
			if home {
				return false
			}
		}
	}
	return home
}

// manifests are projects' own JSON files.
var manifests = map[string]bool{"package.json": true, "package-lock.json": true, "composer.json": true,
	"composer.lock": true, "deno.json": true, "jsconfig.json": true, "settings.json": true,
	"settings.local.json": true, "launch.json": true, "extensions.json": true}

// walkRecords finds record files under root: by name and place, and, for
// JSON files, by their first bytes. Orchestrator run directories it meets
// at any depth are noted in w (when w is set) to be listed like the
// others, and not walked into; files that no format claims are noted as
// skipped. Symbolic links are not followed, so a link cannot make the
// walk loop.
func walkRecords(root string, allow func(kind string) bool, add func(source), w *walk) error {
	seen := 0
	errStop := errors.New("stop")
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if p == root {
				return err
			}
			return nil // an unreadable subdirectory does not stop the rest
		}
		if d.IsDir() && w != nil && w.listed[p] {
			return filepath.SkipDir // a run listed already, not counted
		}
		seen++
		if seen > walkEntries {
			return errStop
		}
		if d.IsDir() {
			if p == root {
				return nil
			}
			if skipDirs[d.Name()] || strings.Count(p[len(root):], string(filepath.Separator)) > walkDepth {
				return filepath.SkipDir
			}
			if w != nil && w.runs && walkRunDir(p) {
				w.runDirs = append(w.runDirs, p)
				return filepath.SkipDir
			}
			return nil
		}
		if !d.Type().IsRegular() {
			return nil
		}
		src := func(kind string) source { return source{path: p, kind: kind, runDir: filepath.Base(filepath.Dir(p))} }
		if k, ok := recordKind(p); ok {
			if allow(k) {
				add(src(k))
			}
			return nil
		}
		ext := strings.ToLower(filepath.Ext(p))
		switch {
		case contentExts[ext]:
			k, why := contentKind(p)
			switch {
			case k == "":
				if w != nil && !notCandidate(root, p) {
					w.skipped = append(w.skipped, Skipped{p, why})
				}
			case allow(k):
				add(src(k))
			}
		case (ext == ".csv" || ext == ".md") && w != nil && keptIn(root, p):
			w.skipped = append(w.skipped, Skipped{p, "not a file claudestrator keeps (history.csv, task_queue.md, issue_queue.md, session_state.md)"})
		}
		return nil
	})
	if errors.Is(err, errStop) {
		return fmt.Errorf("found more than %d entries looking for run records; name the directory that holds them", walkEntries)
	}
	return err
}

// recordRows adds a record set's rows.
func recordRows(r *rows.Set, f fileState, set *records.Set, b []byte) {
	id := f.id
	for _, x := range set.Runs {
		r.RecordRuns = append(r.RecordRuns, rows.RecordRun{FileID: id, System: x.System, RunID: x.RunID, Item: text(x.Item),
			Source: text(x.Source), Batch: text(x.Batch), StartedAt: when(x.StartedAt), FinishedAt: when(x.FinishedAt),
			Status: text(x.Status), Verdict: text(x.Verdict), Attempts: integer(x.Attempts), MaxAttempts: integer(x.MaxAttempts),
			EndedStage: text(x.EndedStage), DurationMS: num(x.DurationMS), Tokens: num(x.Tokens), CostUSD: num(x.CostUSD),
			Detail: jsonBytes(x.Detail)})
	}
	for _, a := range set.Attempts {
		attempt := int32(a.Attempt)
		r.RecordAttempts = append(r.RecordAttempts, rows.RecordAttempt{FileID: id, System: a.System, RunID: a.RunID,
			Item: text(a.Item), Source: text(a.Source), Attempt: &attempt, TS: when(a.TS), Passed: boolean(a.Passed),
			Stage: text(a.Stage), Class: text(a.Class), ExitCode: integer(a.ExitCode), Command: text(a.Command),
			Error: text(a.Error), Signature: text(a.Signature), DurationMS: num(a.DurationMS), Tokens: num(a.Tokens),
			CostUSD: num(a.CostUSD)})
	}
	for _, s := range set.Stages {
		r.RecordStages = append(r.RecordStages, rows.RecordStage{FileID: id, System: s.System, RunID: s.RunID, Item: text(s.Item),
			Source: text(s.Source), Attempt: int32(s.Attempt), Seq: int32(s.Seq), Stage: s.Name, Passed: boolean(s.Passed),
			ExitCode: integer(s.ExitCode), Command: text(s.Command), DurationMS: num(s.DurationMS), Tokens: num(s.Tokens),
			CostUSD: num(s.CostUSD), Feedback: text(s.Feedback)})
	}
	for _, c := range set.Configs {
		r.RecordConfigs = append(r.RecordConfigs, rows.RecordConfig{FileID: id, System: c.System, Config: jsonBytes(c.JSON)})
	}
	callRows(r, id, set)
	for _, p := range set.Problems {
		quarantine(r, f, int64(p.Line), p.Offset, p.Field, p.Msg, problemLine(b, p))
	}
}

// problemLine is the text of the line a problem is on, when the format
// has lines and says where it starts; nil otherwise.
func problemLine(b []byte, p records.Error) []byte {
	if p.Line <= 0 || p.Offset < 0 || p.Offset >= int64(len(b)) || p.Offset > 0 && b[p.Offset-1] != '\n' {
		return nil
	}
	line := b[p.Offset:]
	if i := bytes.IndexByte(line, '\n'); i >= 0 {
		line = line[:i]
	}
	return bytes.TrimSuffix(line, []byte("\r"))
}

// callRows adds a record set's agent calls and their attempts.
func callRows(r *rows.Set, id int32, set *records.Set) {
	for _, c := range set.Calls {
		r.Calls = append(r.Calls, rows.Call{FileID: id, System: c.System, RunID: text(c.RunID), Session: text(c.Session),
			CallID: text(c.CallID), Source: text(c.Source), Line: int64(c.Line), TS: when(c.TS), DurationMS: num(c.DurationMS),
			Provider: text(c.Provider), Model: text(c.Model), Operation: text(c.Operation), Success: boolean(c.Success),
			Error: text(c.Error), ErrorType: text(c.ErrorType), StatusCode: integer(c.StatusCode), Attempts: integer(c.Attempts),
			Evidence: text(c.Evidence), BackoffMS: num(c.BackoffMS),
			Tokens:            tokens(c.InputTokens, c.CacheReadTokens, c.CacheWriteTokens, c.OutputTokens, c.ReasoningTokens, c.CostUSD),
			FailedInputTokens: num(c.FailedInputTokens), FailedOutputTokens: num(c.FailedOutputTokens),
			FailedCostUSD: num(c.FailedCostUSD), CacheWrite1hTokens: num(c.CacheWrite1hTokens), Cwd: text(c.Cwd)})
	}
	for _, a := range set.CallAttempts {
		r.CallAttempts = append(r.CallAttempts, rows.CallAttempt{FileID: id, System: a.System, RunID: text(a.RunID),
			CallID: text(a.CallID), Source: text(a.Source), Attempt: int32(a.Attempt), TS: when(a.TS),
			DurationMS: num(a.DurationMS), Success: boolean(a.Success), StatusCode: integer(a.StatusCode), Error: text(a.Error),
			BackoffMS: num(a.BackoffMS),
			Tokens:    tokens(a.InputTokens, a.CacheReadTokens, a.CacheWriteTokens, a.OutputTokens, a.ReasoningTokens, a.CostUSD)})
	}
}

func tokens(input, cacheRead, cacheWrite, output, reasoning, cost *float64) rows.Tokens {
	return rows.Tokens{InputTokens: num(input), CacheReadTokens: num(cacheRead), CacheWriteTokens: num(cacheWrite),
		OutputTokens: num(output), ReasoningTokens: num(reasoning), CostUSD: num(cost)}
}

// text is a record's string, with "" as NULL.
func text(s string) *string {
	if s == "" {
		return nil
	}
	v := strings.ToValidUTF8(s, "\uFFFD")
	return &v
}

// integer is a record's whole number as an INTEGER column holds it.
func integer(p *int) *int32 {
	if p == nil {
		return nil
	}
	n := int32(*p)
	return &n
}

// when is a record's time in UTC.
func when(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	u := t.UTC()
	return &u
}

// num and boolean copy a record's value, so the row does not share what
// the record's reader may yet change.
func num(p *float64) *float64 { return copyOf(p) }

func boolean(p *bool) *bool { return copyOf(p) }

func copyOf[T any](p *T) *T {
	if p == nil {
		return nil
	}
	v := *p
	return &v
}

func jsonBytes(b []byte) *string {
	if len(b) == 0 {
		return nil
	}
	s := string(b)
	return &s
}

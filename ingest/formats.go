package ingest

import (
	"bytes"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/orchstat/orchstat/ingest/claudecode"
	"github.com/orchstat/orchstat/ingest/claudestrator"
	"github.com/orchstat/orchstat/ingest/codex"
	"github.com/orchstat/orchstat/ingest/factory"
	"github.com/orchstat/orchstat/ingest/orchestr8"
	"github.com/orchstat/orchstat/ingest/otlp"
	"github.com/orchstat/orchstat/ingest/records"
	"github.com/orchstat/orchstat/query"
)

// Record kinds, as stored in files.kind: the files of the other systems'
// records, each parsed whole (see readRunFile).
const (
	KindFactorySummary = "factory_summary" // run_summary.json
	KindFactoryBrief   = "factory_brief"   // attempt_N/failure_brief.json
	KindFactoryEvents  = "factory_events"  // web pipeline runs/<id>/events.jsonl
	KindFactoryMeta    = "factory_meta"    // web pipeline runs/<id>/meta.json
	KindClaudeHistory  = "claudestrator_history"
	KindClaudeSession  = "claudestrator_session"
	KindClaudeTasks    = "claudestrator_tasks"
	KindClaudeIssues   = "claudestrator_issues"
	KindO8History      = "orchestr8_history"
	KindO8Config       = "orchestr8_config"
	KindCodexRollout   = "codex_rollout"          // sessions/YYYY/MM/DD/rollout-*.jsonl
	KindClaudeCode     = "claude_code_transcript" // projects/<dir>/<session>.jsonl and its sub-agents'
	KindOTLP           = "otlp"                   // the OpenTelemetry Collector file exporter's JSON, or an OTLP/HTTP JSON payload
)

// FormatOTLP names OpenTelemetry's format; its rows' system is records.OTel.
const FormatOTLP = "otlp"

// formatSystem is the system whose records a format names.
func formatSystem(format string) string {
	if format == FormatOTLP {
		return records.OTel
	}
	return format
}

// Formats are what --format names. "auto" detects each file's format by
// its name and place; "orchestrator" is the trace format of EVENTS.md.
// Agents' formats are named as their users know them: "otlp" for the
// OpenTelemetry file exporter's JSON, whose rows' system is "otel".
var Formats = []string{"auto", "orchestrator", records.Factory, records.Claudestrator, records.Orchestr8, FormatOTLP, records.ClaudeCode, records.Codex}

type recordFormat struct {
	system string
	parse  records.Parser
}

var recordKinds = map[string]recordFormat{
	KindFactorySummary: {records.Factory, factory.ParseSummary},
	KindFactoryBrief:   {records.Factory, factory.ParseBrief},
	KindFactoryEvents:  {records.Factory, factory.ParseEvents},
	KindFactoryMeta:    {records.Factory, factory.ParseMeta},
	KindClaudeHistory:  {records.Claudestrator, claudestrator.ParseHistory},
	KindClaudeSession:  {records.Claudestrator, claudestrator.ParseSessionState},
	KindClaudeTasks:    {records.Claudestrator, claudestrator.ParseTaskQueue},
	KindClaudeIssues:   {records.Claudestrator, claudestrator.ParseIssueQueue},
	KindO8History:      {records.Orchestr8, orchestr8.ParseHistory},
	KindO8Config:       {records.Orchestr8, orchestr8.ParseConfig},
	KindCodexRollout:   {records.Codex, codex.ParseRollout},
	KindClaudeCode:     {records.ClaudeCode, claudecode.ParseTranscript},
	KindOTLP:           {records.OTel, otlp.Parse},
}

// systemOf is the system a source kind belongs to: "orchestrator" for
// traces and run files.
func systemOf(kind string) string {
	if f, ok := recordKinds[kind]; ok {
		return f.system
	}
	return "orchestrator"
}

// recordKind names a record file's kind from its name, and for the web
// pipeline's generic names, from its sibling: events.jsonl and meta.json
// count only as a pair.
func recordKind(path string) (string, bool) {
	base := filepath.Base(path)
	sibling := func(name string) bool {
		_, err := os.Stat(filepath.Join(filepath.Dir(path), name))
		return err == nil
	}
	switch base {
	case "run_summary.json":
		return KindFactorySummary, true
	case "failure_brief.json":
		return KindFactoryBrief, true
	case "events.jsonl":
		return KindFactoryEvents, sibling("meta.json")
	case "meta.json":
		return KindFactoryMeta, sibling("events.jsonl")
	case "history.csv":
		return KindClaudeHistory, true
	case "session_state.md":
		return KindClaudeSession, true
	case "task_queue.md":
		return KindClaudeTasks, true
	case "issue_queue.md":
		return KindClaudeIssues, true
	case "pipeline-history.json":
		return KindO8History, true
	case "retry-config.json":
		return KindO8Config, true
	}
	switch {
	case codex.IsRolloutPath(path):
		return KindCodexRollout, true
	case claudecode.IsTranscriptPath(path):
		return KindClaudeCode, true
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
	switch format {
	case records.Factory:
		switch {
		case ext == ".jsonl":
			return KindFactoryEvents, true
		case bytes.Contains(head, []byte(`"pipeline_run_id"`)):
			return KindFactoryMeta, true
		case bytes.Contains(head, []byte(`"attempts"`)) || bytes.Contains(head, []byte(`"verdict"`)):
			return KindFactorySummary, true
		default:
			return KindFactoryBrief, true
		}
	case records.Claudestrator:
		switch {
		case ext == ".csv":
			return KindClaudeHistory, true
		case bytes.Contains(head, []byte("Retry-Count")) || bytes.Contains(head, []byte("Auto-Retry")):
			return KindClaudeIssues, true
		case bytes.Contains(head, []byte("loop_count:")):
			return KindClaudeSession, true
		default:
			return KindClaudeTasks, true
		}
	case records.Orchestr8:
		if bytes.Contains(head, []byte(`"windowSize"`)) || bytes.Contains(head, []byte(`"maxRetries"`)) {
			return KindO8Config, true
		}
		return KindO8History, true
	case records.Codex:
		return KindCodexRollout, codex.Sniff(head)
	case records.ClaudeCode:
		return KindClaudeCode, claudecode.Sniff(head)
	case records.OTel:
		return KindOTLP, otlp.Sniff(head)
	}
	return "", false
}

// isOTLPFile reports whether a JSON file the walk meets is OpenTelemetry's,
// by its first bytes: the Collector's file exporter writes to any name.
func isOTLPFile(path string) bool {
	switch strings.ToLower(filepath.Ext(path)) {
	case ".json", ".jsonl", ".ndjson":
	default:
		return false
	}
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	head := make([]byte, 4096)
	n, _ := io.ReadFull(f, head)
	return otlp.Sniff(head[:n])
}

// probeRecords finds the record files at the places the systems keep
// them, relative to a directory the user named: claudestrator's
// .orchestrator/ and orchestr8's .claude/. A few stats, so it runs on
// every ingest.
func probeRecords(dir string, allow func(kind string) bool, add func(source)) {
	for _, sub := range []string{"", ".orchestrator", ".claude"} {
		for _, name := range []string{"history.csv", "session_state.md", "task_queue.md", "issue_queue.md",
			"pipeline-history.json", "retry-config.json"} {
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

// walkRecords finds record files under root. Symbolic links are not
// followed, so a link cannot make the walk loop.
func walkRecords(root string, allow func(kind string) bool, add func(source)) error {
	seen := 0
	errStop := errors.New("stop")
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if p == root {
				return err
			}
			return nil // an unreadable subdirectory does not stop the rest
		}
		seen++
		if seen > walkEntries {
			return errStop
		}
		if d.IsDir() {
			if p != root && (skipDirs[d.Name()] || strings.Count(p[len(root):], string(filepath.Separator)) > walkDepth) {
				return filepath.SkipDir
			}
			return nil
		}
		if !d.Type().IsRegular() {
			return nil
		}
		if k, ok := recordKind(p); ok && allow(k) {
			add(source{path: p, kind: k, runDir: filepath.Base(filepath.Dir(p))})
		} else if !ok && allow(KindOTLP) && isOTLPFile(p) {
			add(source{path: p, kind: KindOTLP, runDir: filepath.Base(filepath.Dir(p))})
		}
		return nil
	})
	if errors.Is(err, errStop) {
		return fmt.Errorf("found more than %d entries looking for run records; name the directory that holds them", walkEntries)
	}
	return err
}

// recordRows adds a record set's rows.
func recordRows(r rows, f fileState, set *records.Set, b []byte) {
	id := f.id
	for _, x := range set.Runs {
		r.add(query.RecordRuns, id, x.System, x.RunID, text(x.Item), text(x.Source), text(x.Batch), when(x.StartedAt), when(x.FinishedAt),
			text(x.Status), text(x.Verdict), integer(x.Attempts), integer(x.MaxAttempts), text(x.EndedStage),
			num(x.DurationMS), num(x.Tokens), num(x.CostUSD), jsonBytes(x.Detail))
	}
	for _, a := range set.Attempts {
		r.add(query.RecordAttempts, id, a.System, a.RunID, text(a.Item), text(a.Source), int32(a.Attempt), when(a.TS), boolean(a.Passed),
			text(a.Stage), text(a.Class), integer(a.ExitCode), text(a.Command), text(a.Error), text(a.Signature),
			num(a.DurationMS), num(a.Tokens), num(a.CostUSD))
	}
	for _, s := range set.Stages {
		r.add(query.RecordStages, id, s.System, s.RunID, text(s.Item), text(s.Source), int32(s.Attempt), int32(s.Seq), s.Name,
			boolean(s.Passed), integer(s.ExitCode), text(s.Command), num(s.DurationMS), num(s.Tokens), num(s.CostUSD), text(s.Feedback))
	}
	for _, c := range set.Configs {
		r.add(query.RecordConfigs, id, c.System, jsonBytes(c.JSON))
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
func callRows(r rows, id int32, set *records.Set) {
	for _, c := range set.Calls {
		r.add(query.Calls, id, c.System, text(c.RunID), text(c.Session), text(c.CallID), text(c.Source), int64(c.Line), when(c.TS),
			num(c.DurationMS), text(c.Provider), text(c.Model), text(c.Operation), boolean(c.Success), text(c.Error), text(c.ErrorType),
			integer(c.StatusCode), integer(c.Attempts), text(c.Evidence), num(c.BackoffMS), num(c.InputTokens), num(c.CacheReadTokens),
			num(c.CacheWriteTokens), num(c.OutputTokens), num(c.ReasoningTokens), num(c.CostUSD),
			num(c.FailedInputTokens), num(c.FailedOutputTokens), num(c.FailedCostUSD))
	}
	for _, a := range set.CallAttempts {
		r.add(query.CallAttempts, id, a.System, text(a.RunID), text(a.CallID), text(a.Source), int32(a.Attempt), when(a.TS),
			num(a.DurationMS), boolean(a.Success), integer(a.StatusCode), text(a.Error), num(a.BackoffMS),
			num(a.InputTokens), num(a.CacheReadTokens), num(a.CacheWriteTokens), num(a.OutputTokens), num(a.ReasoningTokens), num(a.CostUSD))
	}
}

func text(s string) driver.Value {
	if s == "" {
		return nil
	}
	return strings.ToValidUTF8(s, "\uFFFD")
}

func integer(p *int) driver.Value {
	if p == nil {
		return nil
	}
	return int32(*p)
}

func when(t *time.Time) driver.Value {
	if t == nil {
		return nil
	}
	return t.UTC()
}

func jsonBytes(b []byte) driver.Value {
	if len(b) == 0 {
		return nil
	}
	return string(b)
}

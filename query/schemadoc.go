package query

import (
	"context"
	"database/sql"
	"fmt"
	"sort"
	"strings"
)

// relationDoc is what docs/schema.md says of one table or view beyond its
// columns. Tables take their description from their declaration (a
// rows.Set field's holds tag, or the Table here).
type relationDoc struct {
	name  string
	view  bool
	holds string // views only
	note  string
}

// schemaDocOrder is the order docs/schema.md lists the store in: each view
// beside the tables it reads.
var schemaDocOrder = []relationDoc{
	{name: "events", note: "The trace files stay the source of truth; this is their index. Every typed table below repeats `file_id, line, run_id, ts`, so any row leads back to its line."},
	{name: "run_spans", note: "So reports find runs and their time spans without scanning `events`."},
	{name: "runs", view: true, holds: "one row per run, from its events and its `summary.json`",
		note: "`status` is `RunFinished`'s, else the summary's, else `unfinished`; `max_level` is the highest think level the run reached."},
	{name: "run_events"}, {name: "escalations"}, {name: "provider_selections"}, {name: "provider_request_starts"},
	{name: "provider_request_finishes"},
	{name: "run_figures", note: "Derived from the event tables at ingest, in the transaction that stores the events, for the runs it touched, so a report reads one row per run: the `runs` view's columns the overview and the worst runs show, and the counts each trace metric folds over runs (`model/reports/runcounts.go` declares them). Not exported to a lake; a lake's replica makes them anew."},
	{name: "run_provider_figures", note: "Kept beside `run_figures` for `--provider`, which counts only that provider's requests; `provider` is as the requests name it (NULL included)."},
	{name: "provider_requests", view: true, holds: "one row per finished provider request, with its model (kept for users' SQL)"},
	{name: "l2_events"},
	{name: "l2_iterations", view: true, holds: "one row per (run, L2 iteration)"},
	{name: "patch_events"}, {name: "verification_events"}, {name: "steps"}, {name: "l3_candidates"}, {name: "diagnoses"}, {name: "judge_calls"},
	{name: "summaries"}, {name: "summary_costs"},
	{name: "verification_reports"},
	{name: "verifications", view: true, holds: "one row per verification report, with its run",
		note: "The columns of `verification_reports`, with `run_id` resolved through `run_dirs`."},
	{name: "run_dirs", view: true, holds: "one row per run directory",
		note: "A directory's run is the one whose events its trace holds most of: reports name no run, and directories need not be named after one."},
	{name: "quarantine"},
	{name: "files", view: true, holds: "one row per source file: where ingest stopped in it (the latest `file_states` row)"},
	{name: "file_states", note: "Append-only, so the common path never deletes; superseded rows are dropped once `file_states`, `dir_states` and `sealed_dirs` hold more than twice the live rows plus 10,000."},
	{name: "dir_states", note: "A run directory whose mtime has not changed since it was listed (and was at least 2 s old then) is not listed again."},
	{name: "sealed_dirs", note: "A run directory recorded here with its mtime is one whose run had ended: while its mtime is the same, an ingest looks at none of its files until the next full pass. See [ingest.md](ingest.md#reading-files)."},
	{name: "alert_state", note: "An alert is its rule and label set; see [rules.md](rules.md)."},
	{name: "notifications", note: "Nothing is dropped while undelivered; delivered notifications are kept for 7 days. See [receivers.md](receivers.md)."},
	{name: "notify_groups"},
	{name: "record_runs", note: "Other systems' records: the factory, claudestrator, orchestr8 and `orchstat exec`. See [ingest.md](ingest.md)."},
	{name: "record_attempts"},
	{name: "record_stages", note: "A stage is the factory's write or one of its verify and acceptance commands, claudestrator's build, lint or tests, or an orchestr8 agent."},
	{name: "record_configs"},
	{name: "calls", note: "Agents' records: OpenTelemetry GenAI spans and logs, Claude Code transcripts and Codex rollouts; see [formats/](formats/otlp.md). `attempts` is NULL when the record does not show them, never 0."},
	{name: "call_attempts"},
	{name: "attempt_runs", view: true, holds: "one row per record run, once",
		note: "Several files may describe one run (a factory summary and its failure briefs, or a copied directory). The row comes from one source, anything before failure briefs, then the newest file."},
	{name: "attempts", view: true, holds: "one row per record attempt, once, from the source `attempt_runs` chose (the newest file of it)"},
	{name: "attempt_stages", view: true, holds: "one row per stage an attempt ran, once, from the source `attempt_runs` chose"},
	{name: "exec_invocations", note: "What `orchstat exec` remembers between invocations for its cascade detection (see [simulate.md](simulate.md)); not derived from a file."},
	{name: "lake_exports", note: "What `orchstat export` remembers of each lake it writes to, by the lake's location and the runner (see [lake.md](lake.md)); the latest row of a lake and runner is its last export."},
	{name: "lake_files"}, {name: "lake_parts"},
	{name: "lake_pending", note: "Written before an export replaces any lake file and cleared when it ends, so the next export rewrites every partition a killed one may have touched."},
	{name: "meta", holds: "the store's own settings: `schema_version`, `schema_hash`, `ingest_memory_limit` (the DuckDB memory limit the last ingest needed), `run_figures` (the definition the runs' figures were made by) and `store_id` (names the store in the lakes it exports to)"},
}

// columnNotes says what a column's name and type do not, for the tables
// declared here by SQL and where a note is one table's alone though its
// column is declared in a struct two tables share (rows.Tokens); the
// tables of package model/rows say it in their doc tags (see noteOf).
// Keys are table.column; TestDocsDocumentSchema checks every key names a
// column.
var columnNotes = map[string]string{
	"alert_state.labels":               "JSON",
	"notifications.reason":             "`change` or `repeat`",
	"notifications.message":            "the webhook payload, JSON",
	"notifications.delivered_at":       "NULL while it waits",
	"notify_groups.last_queued_at":     "for `repeat_interval`",
	"calls.input_tokens":               "input tokens neither read from nor written to a prompt cache (an input count that includes its cached part, as OpenAI's does, is split: see docs/formats)",
	"calls.cache_read_tokens":          "input tokens read from the prompt cache",
	"calls.cache_write_tokens":         "input tokens written to the prompt cache",
	"calls.reasoning_tokens":           "the part of `output_tokens` spent reasoning, where the record says",
	"exec_invocations.dir":             "NULL for invocations recorded before it existed; they count for no command's cascade",
	"run_figures.start":                "the run's earliest event, as `run_spans` has it: what a time window selects runs by",
	"run_figures.requests":             "the run's `ProviderRequestFinished` events, of every provider",
	"run_figures.repair_max_iteration": "the run's highest `RepairAttempted` iteration, NULL when none states one",
}

// noteOf is the note of a column, table.column: its doc tag or its
// columnNotes entry.
func noteOf(key string) string {
	if n, ok := declaredNotes[key]; ok {
		return n
	}
	return columnNotes[key]
}

// documentedTables are the tables orchstat defines, by name.
func documentedTables() map[string]Table {
	m := map[string]Table{}
	for _, t := range append([]Table{FileStates, DirStates, SealedDirs, AlertState, Notifications, NotifyGroups, ExecInvocations, LakeExports, LakeFileMarks, LakeParts, LakePending, RunFigures, RunProviderFigures}, FileTables...) {
		m[t.Name] = t
	}
	return m
}

// SchemaDoc renders docs/schema.md. It creates the schema in an in-memory
// DuckDB and reads the columns back, so the page shows what a store holds,
// views included, and fails when a table or view is left undocumented.
func SchemaDoc(ctx context.Context) (string, error) {
	cols, err := liveColumns(ctx)
	if err != nil {
		return "", err
	}
	if err := checkDocumented(cols); err != nil {
		return "", err
	}
	tables := documentedTables()
	var b strings.Builder
	b.WriteString(schemaDocHead)
	b.WriteString("\n## Tables and views\n\n| name | kind | holds | columns |\n|---|---|---|---|\n")
	for _, r := range schemaDocOrder {
		fmt.Fprintf(&b, "| `%s` | %s | %s | %s |\n", r.name, r.kind(), r.holdsIn(tables), columnNames(cols[r.name]))
	}
	b.WriteString("\n## Columns\n")
	for _, r := range schemaDocOrder {
		fmt.Fprintf(&b, "\n### `%s` (%s)\n\n%s.", r.name, r.kind(), upperFirst(r.holdsIn(tables)))
		if r.note != "" {
			b.WriteString(" " + r.note)
		}
		b.WriteString("\n\n| column | type | note |\n|---|---|---|\n")
		for _, c := range cols[r.name] {
			fmt.Fprintf(&b, "| `%s` | %s | %s |\n", c.Name, c.Type, noteOf(r.name+"."+c.Name))
		}
	}
	return b.String(), nil
}

// checkDocumented fails unless schemaDocOrder names exactly the store's
// tables and views.
func checkDocumented(cols map[string][]Column) error {
	documented := map[string]bool{}
	for _, r := range schemaDocOrder {
		if _, ok := cols[r.name]; !ok {
			return fmt.Errorf("schema doc: %s is documented but not in the schema", r.name)
		}
		documented[r.name] = true
	}
	var missing []string
	for n := range cols {
		if !documented[n] {
			missing = append(missing, n)
		}
	}
	if len(missing) > 0 {
		sort.Strings(missing)
		return fmt.Errorf("schema doc: %s not documented; add to schemaDocOrder in query/schemadoc.go", strings.Join(missing, ", "))
	}
	return nil
}

const schemaDocHead = `<!-- Generated from the table declarations in model/rows and
     query/schema.go by ` + "`go run ./cmd/orchstat gen-docs docs`" + `; do not edit. -->
# The store's schema

What ` + "`orchstat sql`" + ` and the DuckDB CLI see in a store (see [sql.md](sql.md)).
Times are UTC ` + "`TIMESTAMP`" + `s without a zone. Numeric payload fields are ` + "`DOUBLE`" + `,
NULL unless the JSON held a number. Columns noted JSON hold JSON text in a
` + "`VARCHAR`" + `: DuckDB's JSON functions read them (` + "`payload->>'$.error'`" + `).
Every table derived from a file starts with ` + "`file_id`" + ` (see ` + "`files`" + `), so a
file's rows can be replaced or forgotten as a unit.
`

func (r relationDoc) kind() string {
	if r.view {
		return "view"
	}
	return "table"
}

func (r relationDoc) holdsIn(tables map[string]Table) string {
	if t, ok := tables[r.name]; ok {
		return t.Comment
	}
	return r.holds
}

func columnNames(cs []Column) string {
	names := make([]string, len(cs))
	for i, c := range cs {
		names[i] = c.Name
	}
	return strings.Join(names, ", ")
}

func upperFirst(s string) string {
	if s == "" || s[0] < 'a' || s[0] > 'z' {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

// liveColumns creates the schema in an in-memory database and lists every
// table's and view's columns in order.
func liveColumns(ctx context.Context) (map[string][]Column, error) {
	c, err := NewConnector("")
	if err != nil {
		return nil, err
	}
	db := sql.OpenDB(c)
	defer db.Close()
	for _, s := range schemaStatements() {
		if _, err := db.ExecContext(ctx, s); err != nil {
			return nil, fmt.Errorf("schema doc: %w", err)
		}
	}
	rows, err := db.QueryContext(ctx, `SELECT table_name, column_name, data_type FROM information_schema.columns
		WHERE table_schema = 'main' ORDER BY table_name, ordinal_position`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[string][]Column{}
	for rows.Next() {
		var t string
		var col Column
		if err := rows.Scan(&t, &col.Name, &col.Type); err != nil {
			return nil, err
		}
		out[t] = append(out[t], col)
	}
	return out, rows.Err()
}

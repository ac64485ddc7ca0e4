package orchestr8

import (
	"encoding/json"
	"errors"
	"fmt"
	"testing"

	"github.com/orchstat/orchstat/model/failure"
	"github.com/orchstat/orchstat/model/records"
)

const batch = "search+tagging+sharing+reminders@2026-02-24T09:00:00.000Z"

func TestParseHistoryNotesApp(t *testing.T) {
	set := parseFixture(t, ParseHistory, "notes-app/.claude/pipeline-history.json")
	run := func(slug, start, end, status, verdict string, n int, dur float64) records.Run {
		return records.Run{System: records.Orchestr8, RunID: slug + "@" + start, Item: slug, Source: "history",
			StartedAt: ts(start), FinishedAt: ts(end), Status: status, Verdict: verdict, Attempts: records.Int(n), DurationMS: ms(dur)}
	}
	userAuth := run("user-auth", "2026-02-20T09:00:00.000Z", "2026-02-20T09:14:30.000Z", "success", "success", 1, 870000)
	userAuth.Tokens, userAuth.CostUSD = sum(18000, 22000, 30000, 15000, 61000), sum(0.27, 0.33, 0.45, 0.225, 0.915)
	export1 := run("export-history", "2026-02-21T10:00:00.000Z", "2026-02-21T10:21:10.000Z", "failure", "failed", 3, 1270000)
	export1.EndedStage, export1.Tokens, export1.CostUSD = "nigel", sum(20000, 26000), sum(0.3, 0.39)
	dark := run("dark-mode", "2026-02-22T08:00:00.000Z", "2026-02-22T08:04:00.000Z", "paused", "paused", 1, 240000)
	offline := run("offline-sync", "2026-02-23T13:00:00.000Z", "2026-02-23T13:40:00.000Z", "failure", "failed", 3, 2400000)
	offline.EndedStage, offline.Tokens, offline.CostUSD = "codey-implement", sum(19000, 21000, 33000, 17000, 140000), sum(0.285, 0.315, 0.495, 0.255, 2.1)
	search := run("search", "2026-02-24T09:00:05.000Z", "2026-02-24T09:11:05.000Z", "success", "success", 1, 660000)
	tagging := run("tagging", "2026-02-24T09:00:07.000Z", "2026-02-24T09:13:07.000Z", "success", "success", 1, 780000)
	search.Batch, tagging.Batch = batch, batch
	sharing := run("sharing", "2026-02-24T09:00:03.000Z", "2026-02-24T09:09:03.000Z", "failure", "murm_failed", 1, 540000)
	reminders := run("reminders", "2026-02-24T09:11:10.000Z", "2026-02-24T09:20:00.000Z", "merge_conflict", "merge_conflict", 1, 530000)
	sharing.Batch, reminders.Batch, reminders.EndedStage = batch, batch, "merge"
	export2 := run("export-history", "2026-02-25T10:00:00.000Z", "2026-02-25T10:12:00.000Z", "success", "success", 1, 720000)
	export2.Tokens = sum(15000, 26000, 13500, 54000)
	compare(t, "runs", noDetail(set.Runs), []records.Run{userAuth, export1, dark, offline, search, tagging, sharing, reminders, export2})

	att := func(r records.Run, n int, at string, passed *bool, stage string) records.Attempt {
		a := records.Attempt{System: records.Orchestr8, RunID: r.RunID, Item: r.Item, Source: "history", Attempt: n, Passed: passed, Stage: stage}
		if at != "" {
			a.TS = ts(at)
		}
		if stage != "" {
			a.Signature = failure.Signature(stage, "")
		}
		return a
	}
	only := func(r records.Run, passed *bool, stage string) records.Attempt {
		a := att(r, 1, "", passed, stage)
		a.TS, a.DurationMS, a.Tokens, a.CostUSD = r.StartedAt, r.DurationMS, r.Tokens, r.CostUSD
		return a
	}
	nigelErr := "Nigel: test plan references story-export-csv.md, which does not exist"
	export1Last := att(export1, 3, "", no, "nigel")
	export1Last.Error, export1Last.Signature = nigelErr, failure.Signature("nigel", nigelErr)
	implErr := "npm test: 3 failing (sync queue drains twice)"
	offlineLast := att(offline, 3, "", no, "codey-implement")
	offlineLast.Error, offlineLast.Signature = implErr, failure.Signature("codey-implement", implErr)
	compare(t, "attempts", set.Attempts, []records.Attempt{
		only(userAuth, yes, ""),
		// retryAttempts 2 says how many, not where: a failed pipeline
		// retried the stage it failed at.
		att(export1, 1, "2026-02-21T10:00:00.000Z", no, "nigel"), att(export1, 2, "", no, "nigel"), export1Last,
		only(dark, nil, ""),
		att(offline, 1, "2026-02-23T13:00:00.000Z", no, "codey-implement"), att(offline, 2, "", no, "codey-implement"), offlineLast,
		only(search, yes, ""), only(tagging, yes, ""), only(sharing, no, ""), only(reminders, no, "merge"), only(export2, yes, ""),
	})

	st := func(r records.Run, n, seq int, name string, passed *bool, dur float64) records.Stage {
		return records.Stage{System: records.Orchestr8, RunID: r.RunID, Item: r.Item, Source: "history", Attempt: n, Seq: seq, Name: name,
			Passed: passed, DurationMS: ms(dur)}
	}
	with := func(s records.Stage, tokens, cost float64, feedback string) records.Stage {
		s.Tokens, s.CostUSD, s.Feedback = ms(tokens), ms(cost), feedback
		return s
	}
	nigel := st(export1, 3, 3, "nigel", no, 0)
	nigel.DurationMS = nil // it failed before its stage was recorded
	want := []records.Stage{
		with(st(userAuth, 1, 1, "alex", yes, 120000), 18000, 0.27, ""),
		with(st(userAuth, 1, 2, "cass", yes, 150000), 22000, 0.33, `{"about":"alex","rating":4,"confidence":0.8,"issues":[],"recommendation":"proceed"}`),
		with(st(userAuth, 1, 3, "nigel", yes, 180000), 30000, 0.45, `{"about":"cass","rating":5,"confidence":0.9,"issues":[],"recommendation":"proceed"}`),
		with(st(userAuth, 1, 4, "codey-plan", yes, 90000), 15000, 0.225,
			`{"about":"nigel","rating":4,"confidence":0.7,"issues":["missing-edge-cases"],"recommendation":"proceed"}`),
		with(st(userAuth, 1, 5, "codey-implement", yes, 330000), 61000, 0.915, ""),
		with(st(export1, 3, 1, "alex", yes, 180000), 20000, 0.3, ""),
		with(st(export1, 3, 2, "cass", yes, 180000), 26000, 0.39, `{"about":"alex","rating":2,"confidence":0.6,"issues":["unclear-scope"],"recommendation":"pause"}`),
		nigel,
		st(dark, 1, 1, "alex", yes, 120000), st(dark, 1, 2, "cass", yes, 120000),
		with(st(offline, 3, 1, "alex", yes, 150000), 19000, 0.285, ""),
		with(st(offline, 3, 2, "cass", yes, 160000), 21000, 0.315, ""),
		with(st(offline, 3, 3, "nigel", yes, 200000), 33000, 0.495, ""),
		with(st(offline, 3, 4, "codey-plan", yes, 110000), 17000, 0.255, ""),
		with(st(offline, 3, 5, "codey-implement", no, 1780000), 140000, 2.1, ""),
		st(search, 1, 1, "alex", yes, 100000), st(search, 1, 2, "cass", yes, 110000), st(search, 1, 3, "nigel", yes, 150000),
		st(search, 1, 4, "codey-plan", yes, 80000), st(search, 1, 5, "codey-implement", yes, 220000),
		// A technical feature skips cass.
		st(tagging, 1, 1, "alex", yes, 120000), st(tagging, 1, 2, "nigel", yes, 200000), st(tagging, 1, 3, "codey-plan", yes, 100000),
		st(tagging, 1, 4, "codey-implement", yes, 360000),
	}
	for i, s := range []struct {
		name         string
		dur, in, out float64
	}{{"alex", 130000, 12000, 3000}, {"nigel", 170000, 20000, 6000}, {"codey-plan", 90000, 11000, 2500}, {"codey-implement", 330000, 40000, 14000}} {
		x := st(export2, 1, i+1, s.name, yes, s.dur)
		x.Tokens = ms(s.in + s.out)
		want = append(want, x)
	}
	compare(t, "stages", set.Stages, want)
	if len(set.Problems)+len(set.Configs) != 0 {
		t.Errorf("problems %v", set.Problems)
	}

	// Each run keeps its entry as written; a feature with no entry keeps
	// its feature and its batch.
	var entry map[string]any
	if err := json.Unmarshal(set.Runs[1].Detail, &entry); err != nil || entry["retryAttempts"] != float64(2) ||
		fmt.Sprint(entry["strategiesUsed"]) != "[simplify-tests add-context]" {
		t.Errorf("export-history detail: %s", set.Runs[1].Detail)
	}
	var feat struct {
		Batch   map[string]any
		Feature map[string]any
	}
	if err := json.Unmarshal(set.Runs[7].Detail, &feat); err != nil || feat.Batch["id"] != batch || feat.Batch["status"] != "partial" ||
		feat.Batch["baseBranch"] != "main" || feat.Feature["status"] != "merge_conflict" {
		t.Errorf("reminders detail: %s", set.Runs[7].Detail)
	}
}

func TestParseHistoryPartial(t *testing.T) {
	set := parseFixture(t, ParseHistory, "partial/.claude/pipeline-history.json")
	compare(t, "problems", problems(set), []string{
		"2 [0]", "3 [1].slug", "12 [2].startedAt", "13 [2].totalDurationMs", "15 [2].stages.alex.durationMs",
		"16 [2].stages.cass.costUsd", "17 [2].stages.nigel", "18 [2].stages.codey-plan", "21 [2].retryAttempts", "26 [3].stages",
		"36 [4].features[1]", "37 [4].features[2].slug"})
	var got []string
	for _, r := range set.Runs {
		n := "-"
		if r.Attempts != nil {
			n = fmt.Sprint(*r.Attempts)
		}
		got = append(got, fmt.Sprintf("%s %s %s %s %s", r.RunID, r.Item, r.Status, n, r.Batch))
	}
	const b = "quick-fix+docs@2026-03-02T10:00:00.000Z"
	compare(t, "runs", got, []string{
		"[1]@2026-03-01T08:00:00.000Z  success 1 ",
		// Its startedAt is unreadable, so the run is named by slug alone;
		// the next entry of the slug, with no time at all, by its index.
		"csv-import csv-import failure 1 ",
		"csv-import#3 csv-import failure 3 ",
		b + "/quick-fix quick-fix queued - " + b,
		"docs@2026-03-02T10:00:01.000Z docs cancelled 1 " + b,
	})
	// A list of retries names their stage.
	var stages []string
	for _, a := range set.Attempts {
		if a.RunID == "csv-import#3" {
			stages = append(stages, a.Stage)
		}
	}
	compare(t, "retried stages", stages, []string{"cass", "cass", ""})
	// A failed entry's retries of no stage were at its failedStage; a
	// successful one's stay unknown.
	inferred, err := ParseHistory("h.json", []byte(`[{"slug":"a","status":"failed","failedStage":"nigel","retryAttempts":[{"stage":"cass"},{}]},
		{"slug":"b","status":"success","retryAttempts":1}]`))
	if a := inferred.Attempts; err != nil || len(a) != 5 || a[0].Stage != "cass" || a[1].Stage != "nigel" || a[2].Stage != "nigel" ||
		a[3].Stage != "" || !*a[4].Passed {
		t.Errorf("inferred stages: %v %+v", err, inferred)
	}
	compare(t, "csv-import stages", set.Stages, []records.Stage{
		{System: records.Orchestr8, RunID: "csv-import", Item: "csv-import", Source: "history", Attempt: 1, Seq: 1, Name: "alex", Passed: yes},
		{System: records.Orchestr8, RunID: "csv-import", Item: "csv-import", Source: "history", Attempt: 1, Seq: 2, Name: "cass", Passed: yes,
			DurationMS: ms(90000)},
		{System: records.Orchestr8, RunID: "csv-import", Item: "csv-import", Source: "history", Attempt: 1, Seq: 3, Name: "nigel", Passed: no},
	})
}

// Entries as test/feature_adaptive-retry.test.js builds them: no stages,
// no startedAt, and two identical.
func TestParseHistoryLegacy(t *testing.T) {
	set := parseFixture(t, ParseHistory, "legacy/.claude/pipeline-history.json")
	var got []string
	for _, r := range set.Runs {
		got = append(got, fmt.Sprintf("%s %s %v %v", r.RunID, r.Status, r.StartedAt, r.FinishedAt.Format("15:04")))
	}
	compare(t, "runs", got, []string{
		"test-feature@2026-02-24T11:00:00.000Z success <nil> 11:00",
		"test-feature@2026-02-24T11:05:00.000Z failure <nil> 11:05",
		"test-feature@2026-02-24T11:05:00.000Z#2 failure <nil> 11:05",
		"test-feature@2026-02-24T11:10:00.000Z success <nil> 11:10",
	})
	if a := set.Attempts[1]; a.TS == nil || a.TS.Format("15:04") != "11:05" || a.Stage != "cass" || a.Signature != set.Attempts[2].Signature {
		t.Errorf("attempt: %+v", a)
	}
	if len(set.Stages) != 2 || set.Stages[0].Name != "cass" || *set.Stages[0].Passed || len(set.Problems) != 0 {
		t.Errorf("stages %+v, problems %v", set.Stages, set.Problems)
	}
}

func TestParseHistoryEmptyAndNot(t *testing.T) {
	set := parseFixture(t, ParseHistory, "empty/.claude/pipeline-history.json")
	if len(set.Runs)+len(set.Problems) != 0 {
		t.Errorf("cleared history: %+v", set)
	}
	for _, tc := range []struct {
		name, in, field string
		line            int
	}{
		{"orchestr8's own corrupt file", "not valid json{{{", "entries", 1},
		{"empty", "", "entries", 1},
		{"object", "{\n\"error\": \"corrupted\"}", "entries", 1},
		{"truncated", "[\n  {\"slug\": \"a\",\n   \"stages\": {\"alex\": {\"durationMs\": 1", "[0].stages.alex", 3},
		{"bad value deep", "[\n {\"slug\":\"a\",\"stages\":{\"nigel\":{\"durationMs\": 12,}}}\n]", "[0].stages.nigel", 2},
		{"two values", "[]\n[]", "entries", 2},
		{"deep", deep(300), "entries", 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			set, err := ParseHistory("pipeline-history.json", []byte(tc.in))
			checkSet(t, set, err)
			var re *records.Error
			if !errors.As(err, &re) || re.Line != tc.line || (re.Field != tc.field && tc.name != "deep") {
				t.Fatalf("got %v, want line %d field %s", err, tc.line, tc.field)
			}
		})
	}
}

func deep(n int) string {
	b := make([]byte, 0, 2*n)
	for range n {
		b = append(b, '[')
	}
	for range n {
		b = append(b, ']')
	}
	return string(b)
}

func TestParseConfig(t *testing.T) {
	for _, tc := range []struct {
		rel, want string
		problems  []string
	}{
		{"notes-app/.claude/retry-config.json", `{"highFailureThreshold":0.25,"maxRetries":4,"strategies":{"alex":["simplify-prompt","add-context"],` +
			`"cass":["reduce-stories","simplify-prompt"],"codey-implement":["incremental","rollback"],"codey-plan":["add-context","simplify-prompt"],` +
			`"nigel":["simplify-tests","add-context"]},"windowSize":10}`, nil},
		// retry.js's getDefaultConfig, as resetConfig writes it.
		{"empty/.claude/retry-config.json", `{"highFailureThreshold":0.2,"maxRetries":3,"strategies":{"alex":["simplify-prompt","add-context"],` +
			`"cass":["reduce-stories","simplify-prompt"],"codey-implement":["incremental","rollback"],"codey-plan":["add-context","simplify-prompt"],` +
			`"nigel":["simplify-tests","add-context"]},"windowSize":10}`, nil},
		// Kept whole, the later of two maxRetries as JSON.parse reads it.
		{"partial/.claude/retry-config.json", `{"highFailureThreshold":1.5,"maxRetries":2.5,"notes":"tuned <by hand> & reset later",` +
			`"strategies":{"cass":["reduce-stories",3],"nigel":"simplify-tests"},"windowSize":0}`,
			[]string{"3 windowSize", "4 highFailureThreshold", "5 strategies.nigel", "5 strategies.cass", "7 maxRetries"}},
	} {
		t.Run(tc.rel, func(t *testing.T) {
			set := parseFixture(t, ParseConfig, tc.rel)
			if len(set.Configs) != 1 || string(set.Configs[0].JSON) != tc.want || len(set.Runs) != 0 {
				t.Fatalf("got %+v", set)
			}
			compare(t, "problems", problems(set), tc.problems)
		})
	}
	for _, tc := range []struct {
		name, in string
		line     int
	}{
		{"orchestr8's own corrupt file", "not valid json{{{", 1},
		{"empty", "", 1},
		{"array", "\n[3]", 2},
		{"trailing", "{}\n}", 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			set, err := ParseConfig("retry-config.json", []byte(tc.in))
			checkSet(t, set, err)
			var re *records.Error
			if !errors.As(err, &re) || re.Line != tc.line || re.Field != "config" {
				t.Fatalf("got %v, want line %d", err, tc.line)
			}
		})
	}
}

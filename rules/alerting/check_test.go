package alerting

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/orchstat/orchstat"
)

// rule wraps fields (each line indented by four spaces) in a one-rule file,
// so the first field is on line 3.
func rule(fields ...string) string {
	return "rules:\n  - name: r\n    " + strings.Join(fields, "\n    ") + "\n"
}

func TestCheckProblems(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, yaml string
		at         string // line:column of the problem
		want       string // a substring of its String()
	}{
		{"yaml syntax", "rules: [\n", "1:8", "YAML: sequence end token ']' not found"},
		{"yaml duplicate key", rule("metric: runs", "condition: value > 1", "metric: runs"), "5:5", `YAML: mapping key "metric" already defined`},
		{"second document", "rules: []\n---\nrules: []\n", "3:1", "holds one YAML document"},
		{"not a mapping", "- a\n", "1:1", "a rule file is a mapping with a rules key"},
		{"rules not a list", "rules: {a: 1}\n", "1:8", "rules: must be a list of rules"},
		{"rule not a mapping", "rules:\n  - just a string\n", "2:5", "rule 1 is not a mapping"},
		{"unknown top-level key", "rule:\n  - name: r\n", "1:1", `unknown top-level key "rule"; did you mean "rules"?`},
		{"unknown rule key", rule("metric: runs", "condition: value > 1", "severty: info"), "5:5", `rule "r": severty: unknown field; did you mean "severity"?`},
		{"missing name", "rules:\n  - metric: runs\n    condition: value > 1\n", "2:5", "name is required (rule 1 has none)"},
		{"empty name", "rules:\n  - name: ''\n    metric: runs\n    condition: value > 1\n", "2:11", "name: must be a non-empty string"},
		{"duplicate name", rule("metric: runs", "condition: value > 1") + "  - name: r\n    metric: runs\n    condition: value > 2\n", "5:11", `rule "r": name: duplicate name; the first rule with it is at line 2`},
		{"neither metric nor sql", rule("condition: value > 1"), "2:5", `rule "r": metric or sql is required`},
		{"both metric and sql", rule("metric: runs", "sql: SELECT 1 AS value", "condition: value > 1"), "4:5", "sql: a rule has a metric or sql, not both"},
		{"unknown metric", rule("metric: retry_rate", "condition: value > 1"), "3:13", `metric: unknown metric "retry_rate"`},
		{"by on a plain metric", rule("metric: l2_runs", "by: [provider]", "condition: value > 1"), "4:10", "metric l2_runs has no labels to group by; only provider_* metrics can"},
		{"unknown by label", rule("metric: provider_retry_rate", "by:", "  - provider", "  - region", "condition: value > 1"), "6:9", `unknown label "region" for provider_retry_rate`},
		{"by not a list", rule("metric: provider_retry_rate", "by: provider", "condition: value > 1"), "4:9", "by: must be a list of labels"},
		{"sql writes", rule("sql: DELETE FROM runs", "condition: value > 1"), "3:10", "must be one read-only query starting with SELECT, WITH or FROM (orchstat check will run it on a read-only connection)"},
		{"sql two statements", rule("sql: SELECT 1 AS value; DROP TABLE runs", "condition: value > 1"), "3:27", "must be a single query"},
		{"sql two statements in a block", rule("sql: |", "  -- ; in a comment is fine", "  SELECT ';' AS value;", "  DROP TABLE runs", "condition: value > 1"), "5:26", "must be a single query"},
		{"bad window", rule("metric: runs", "window: 3x", "condition: value > 1"), "4:13", `window: "3x" is not a duration (24h, 7d), {last: N} or "last N runs"`},
		{"zero window", rule("metric: runs", "window: 0s", "condition: value > 1"), "4:13", "window: must be longer than 0"},
		{"window last zero", rule("metric: runs", "window: {last: 0}", "condition: value > 1"), "4:20", "window.last: must be a positive number of runs"},
		{"window unknown key", rule("metric: runs", "window:", "  first: 5", "condition: value > 1"), "5:7", "window.first: unknown field"},
		{"window last zero runs", rule("metric: runs", "window: last 0 runs", "condition: value > 1"), "4:13", "must cover a positive number of runs"},
		{"bad for", rule("metric: runs", "for: soon", "condition: value > 1"), "4:10", "for: must be a duration (10m, 1h) or a positive number of consecutive checks"},
		{"for zero checks", rule("metric: runs", "for: 0", "condition: value > 1"), "4:10", "for: 0 is not a positive number of checks"},
		{"negative for", rule("metric: runs", "for: -5m", "condition: value > 1"), "4:10", "for: must be a duration"},
		{"bad keep_firing_for", rule("metric: runs", "keep_firing_for: 2", "condition: value > 1"), "4:22", `keep_firing_for: "2" is not a duration`},
		{"bad severity", rule("metric: runs", "severity: page", "condition: value > 1"), "4:15", "severity: must be one of info, warning, critical"},
		{"threshold not a number", rule("metric: runs", "threshold: '0.2'", "condition: value > 1"), "4:16", "threshold: must be a number"},
		{"missing condition", rule("metric: runs"), "2:5", `rule "r": condition is required`},
		{"condition syntax", rule("metric: runs", "condition: value >"), "4:22", "condition: unexpected token EOF"},
		{"condition not bool", rule("metric: runs", "condition: value + 1"), "4:16", "condition: expected bool, but got float64"},
		{"condition type error", rule("metric: runs", "condition: value > 1 && labels > 2"), "4:36", "condition: invalid operation: > (mismatched types map[string]string and int)"},
		{"condition type error, quoted", rule("metric: runs", `condition: "value > 1 && labels > 2"`), "4:37", "invalid operation"},
		{"condition type error, block", rule("metric: runs", "condition: |", "  value > 1 &&", "    labels > 2"), "6:16", "invalid operation"},
		{"condition unknown name", rule("metric: runs", "condition: os.Getenv('HOME') != ''"), "4:16", "unknown name os"},
		{"condition unknown function", rule("metric: runs", "condition: exec('id') == ''"), "4:16", "unknown name exec"},
		{"threshold used but unset", rule("metric: runs", "condition: value > threshold"), "4:16", "uses threshold, but the rule sets none"},
		{"labels not a map", rule("metric: runs", "condition: value > 1", "labels: [a]"), "5:13", "labels: must be a mapping of names to strings"},
		{"label value not a string", rule("metric: runs", "condition: value > 1", "labels:", "  team: [a, b]"), "6:13", "labels.team: must be a string"},
		{"bad label name", rule("metric: runs", "condition: value > 1", "labels: {team-a: x}"), "5:14", "labels.team-a: a label name is letters"},
		{"annotation unknown field", rule("metric: runs", "condition: value > 1", "annotations:", `  summary: "at {{ .Value }} of {{ .Limit }}"`), "6:39", `annotations.summary: unknown field .Limit`},
		{"annotation unbounded range", rule("metric: runs", "condition: value > 1", "annotations:", `  summary: "{{ range 99999999999 }}x{{ end }}"`), "6:26", `range may only go over .Labels`},
		{"annotation template call", rule("metric: runs", "condition: value > 1", "annotations:", `  summary: '{{ define "a" }}{{ template "a" }}{{ end }}{{ template "a" }}'`), "6:72", `{{template}} is not allowed`},
		{"annotation syntax", rule("metric: runs", "condition: value > 1", "annotations:", "  summary: '{{ .Value'"), "6:16", "annotations.summary: unclosed action"},
		{"annotation unknown function", rule("metric: runs", "condition: value > 1", "annotations:", "  summary: '{{ humanize .Value }}'"), "6:16", `function "humanize" not defined`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			problems := Check("x.yaml", []byte(tc.yaml))
			for _, p := range problems {
				s := p.String()
				if strings.HasPrefix(s, "x.yaml:"+tc.at+": ") && strings.Contains(s, tc.want) {
					return
				}
			}
			var got []string
			for _, p := range problems {
				got = append(got, p.String())
			}
			t.Errorf("want a problem at %s containing %q; got:\n%s\nfile:\n%s", tc.at, tc.want, strings.Join(got, "\n"), tc.yaml)
		})
	}
}

func TestCheckReportsEveryProblem(t *testing.T) {
	t.Parallel()
	yaml := `rulez: 1
rules:
  - name: a
    metric: nope
    window: forever
    severity: loud
    condition: value +
  - name: a
    metric: runs
    condition: value > 1
`
	problems := Check("x.yaml", []byte(yaml))
	var got []string
	for _, p := range problems {
		got = append(got, p.String())
	}
	want := []string{"x.yaml:1:1: ", "x.yaml:4:13: ", "x.yaml:5:13: ", "x.yaml:6:15: ", "x.yaml:7:22: ", "x.yaml:8:11: "}
	if len(got) != len(want) {
		t.Fatalf("got %d problems, want %d:\n%s", len(got), len(want), strings.Join(got, "\n"))
	}
	for i := range want {
		if !strings.HasPrefix(got[i], want[i]) {
			t.Errorf("problem %d is %q, want it at %s", i, got[i], want[i])
		}
	}
	if _, err := Parse("x.yaml", []byte(yaml)); err == nil || !strings.Contains(err.Error(), "6 problems") || !strings.Contains(err.Error(), got[5]) {
		t.Errorf("Parse gave %v, want it to list all 6 problems", err)
	}
}

func TestProblemString(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		p    Problem
		want string
	}{
		{Problem{File: "a.yaml", Line: 3, Column: 5, Rule: "r", Field: "window", Message: "bad"}, `a.yaml:3:5: rule "r": window: bad`},
		{Problem{File: "a.yaml", Line: 3, Column: 5, Message: "bad"}, `a.yaml:3:5: bad`},
		{Problem{File: "a.yaml", Message: "bad"}, `a.yaml: bad`},
	} {
		if got := tc.p.String(); got != tc.want {
			t.Errorf("got %q, want %q", got, tc.want)
		}
	}
}

func TestCheckGoodFiles(t *testing.T) {
	t.Parallel()
	th := func(v float64) *float64 { return &v }
	for _, tc := range []struct {
		name, yaml string
		want       Rule
	}{
		{"minimal", rule("metric: runs", "condition: value > 1"), Rule{Severity: "warning"}},
		{"window duration", rule("metric: runs", "window: 90m", "condition: value > 1"), Rule{Window: Window{Duration: 90 * time.Minute}}},
		{"window days", rule("metric: runs", "window: 7d", "condition: value > 1"), Rule{Window: Window{Duration: 7 * 24 * time.Hour}}},
		{"window last mapping", rule("metric: runs", "window: {last: 5}", "condition: value > 1"), Rule{Window: Window{Runs: 5}}},
		{"window last block mapping in runs", rule("metric: runs", "window:", "  last: 5 runs", "condition: value > 1"), Rule{Window: Window{Runs: 5}}},
		{"window last N runs", rule("metric: runs", "window: last 5 runs", "condition: value > 1"), Rule{Window: Window{Runs: 5}}},
		{"window last 1 run", rule("metric: runs", "window: last 1 run", "condition: value > 1"), Rule{Window: Window{Runs: 1}}},
		{"for checks", rule("metric: runs", "for: 3", "condition: value > 1"), Rule{For: Hold{Checks: 3}}},
		{"for duration", rule("metric: runs", "for: 10m", "condition: value > 1"), Rule{For: Hold{Duration: 10 * time.Minute}}},
		{"for days", rule("metric: runs", "for: 1d", "condition: value > 1"), Rule{For: Hold{Duration: 24 * time.Hour}}},
		{"for zero duration", rule("metric: runs", "for: 0s", "condition: value > 1"), Rule{}},
		{"keep_firing_for", rule("metric: runs", "keep_firing_for: 15m", "condition: value > 1"), Rule{KeepFiringFor: 15 * time.Minute}},
		{"everything", `# a comment
receivers: [{name: ops, webhook: {url: "http://example.invalid"}}]
route: {receiver: ops}
rules:
  - name: provider_failures
    metric: provider_failure_rate
    by: [provider, model]
    window: 24h
    threshold: 0.1
    condition: value > threshold && denominator >= 20 && labels.provider != "local"
    for: 2
    keep_firing_for: 30m
    severity: critical
    labels: {team: platform}
    annotations:
      summary: "{{ .Labels.provider }}: {{ printf \"%.0f%%\" .Value }} ({{ .Numerator }}/{{ .Denominator }}), above {{ .Threshold }}"
      description: |
        {{ if gt .Denominator 100.0 }}plenty of data{{ end }}
`, Rule{Metric: "provider_failure_rate", By: []string{"provider", "model"}, Window: Window{Duration: 24 * time.Hour},
			Threshold: th(0.1), For: Hold{Checks: 2}, KeepFiringFor: 30 * time.Minute, Severity: "critical",
			Labels: map[string]string{"team": "platform"}}},
		{"sql", rule("sql: |", "  -- failed runs; the last five", "  /* a ; here */ WITH t AS (SELECT 1) SELECT count(*) AS value FROM t;", "by: [provider]", "condition: value >= 3"), Rule{By: []string{"provider"}}},
		{"sql FROM first", rule("sql: FROM runs SELECT count(*) AS value", "condition: value >= 3"), Rule{}},
		{"anchors and merge keys", "defaults: &d\n  metric: runs\n  window: 1h\nrules:\n  - <<: *d\n    name: r\n    condition: value > 1\n", Rule{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if strings.HasPrefix(tc.yaml, "defaults:") {
				// defaults is not an allowed top-level key; anchors live under rules instead.
				tc.yaml = "rules:\n  - &d\n    name: base\n    metric: runs\n    window: 1h\n    condition: value > 1\n  - <<: *d\n    name: r\n"
			}
			if problems := Check("x.yaml", []byte(tc.yaml)); len(problems) > 0 {
				t.Fatalf("unexpected problems: %v", problems)
			}
			f, err := Parse("x.yaml", []byte(tc.yaml))
			if err != nil {
				t.Fatal(err)
			}
			r := f.Rules[len(f.Rules)-1]
			if tc.want.Window != (Window{}) && r.Window != tc.want.Window {
				t.Errorf("window %+v, want %+v", r.Window, tc.want.Window)
			}
			if tc.want.For != (Hold{}) && r.For != tc.want.For {
				t.Errorf("for %+v, want %+v", r.For, tc.want.For)
			}
			if r.KeepFiringFor != tc.want.KeepFiringFor {
				t.Errorf("keep_firing_for %v, want %v", r.KeepFiringFor, tc.want.KeepFiringFor)
			}
			if tc.want.Metric != "" && r.Metric != tc.want.Metric {
				t.Errorf("metric %q, want %q", r.Metric, tc.want.Metric)
			}
			if tc.want.By != nil && strings.Join(r.By, ",") != strings.Join(tc.want.By, ",") {
				t.Errorf("by %v, want %v", r.By, tc.want.By)
			}
			if tc.want.Threshold != nil && (r.Threshold == nil || *r.Threshold != *tc.want.Threshold) {
				t.Errorf("threshold %v, want %v", r.Threshold, *tc.want.Threshold)
			}
			if tc.want.Severity != "" && r.Severity != tc.want.Severity {
				t.Errorf("severity %q, want %q", r.Severity, tc.want.Severity)
			}
			for k, v := range tc.want.Labels {
				if r.Labels[k] != v {
					t.Errorf("label %s = %q, want %q", k, r.Labels[k], v)
				}
			}
			if ok, err := r.Holds(Sample{Value: f64(5), Numerator: f64(5), Denominator: f64(50), Labels: map[string]string{"provider": "p"}}); err != nil || !ok {
				t.Errorf("Holds: %v, %v", ok, err)
			}
			if _, err := r.Annotate(Sample{Value: f64(0.5), Numerator: f64(10), Denominator: f64(20), Labels: map[string]string{"provider": "p"}}); err != nil {
				t.Error(err)
			}
		})
	}
}

func f64(v float64) *float64 { return &v }

func TestAnnotate(t *testing.T) {
	t.Parallel()
	f, err := Parse("alerts.yaml", orchstat.DefaultAlerts)
	if err != nil {
		t.Fatal(err)
	}
	got, err := f.Rules[0].Annotate(Sample{Value: f64(0.25), Numerator: f64(50), Denominator: f64(200)})
	if err != nil {
		t.Fatal(err)
	}
	if want := "Provider retry rate is 0.25 (50/200 requests), above 0.2"; got["summary"] != want {
		t.Errorf("summary %q, want %q", got["summary"], want)
	}
}

func TestDefaultAlertsPassCheck(t *testing.T) {
	t.Parallel()
	if problems := Check("alerts.yaml", orchstat.DefaultAlerts); len(problems) > 0 {
		t.Fatalf("the built-in alerts.yaml has problems: %v", problems)
	}
	f, err := Parse("alerts.yaml", orchstat.DefaultAlerts)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range f.Rules {
		switch r.Name {
		case "run_failure_cascade", "record_failure_cascade":
			// The retry handler: 3 failures among the last 5 runs, at once.
			if r.Window.Runs != 5 || r.For != (Hold{}) || r.Severity != "critical" || r.Threshold == nil || *r.Threshold != 3 {
				t.Errorf("cascade: window %+v, for %+v, severity %q", r.Window, r.For, r.Severity)
			}
			continue
		case "failed_attempt_cost_high":
			// Money spent is spent: over $5 of a model's failed attempts in
			// a day fires at once, per model.
			if r.Window.Duration != 24*time.Hour || r.For != (Hold{}) || r.Severity != "warning" || r.Threshold == nil ||
				*r.Threshold != 5 || r.Metric != "failed_attempt_cost_usd" || len(r.By) != 3 {
				t.Errorf("rule %s: window %+v, for %+v, severity %q, metric %s, by %v", r.Name, r.Window, r.For, r.Severity, r.Metric, r.By)
			}
			continue
		case "wasted_attempts_high", "signature_repeats_high":
			// Other systems' records carry no reliable clock: their last 20 runs.
			if r.Window.Runs != 20 || r.For.Checks != 2 || r.Severity != "warning" || r.Threshold == nil || len(r.By) != 1 {
				t.Errorf("rule %s: window %+v, for %+v, severity %q, by %v", r.Name, r.Window, r.For, r.Severity, r.By)
			}
			continue
		}
		if r.Window.Duration != 24*time.Hour || r.For.Checks != 2 || r.Severity != "warning" || r.Threshold == nil {
			t.Errorf("rule %s: window %+v, for %+v, severity %q, threshold %v", r.Name, r.Window, r.For, r.Severity, r.Threshold)
		}
	}
}

func TestCheckEmptyFiles(t *testing.T) {
	t.Parallel()
	for _, y := range []string{"", "# only a comment\n", "rules:\n", "rules: []\n"} {
		if problems := Check("x.yaml", []byte(y)); len(problems) > 0 {
			t.Errorf("%q: %v", y, problems)
		}
	}
}

func FuzzCheck(f *testing.F) {
	f.Add(orchstat.DefaultAlerts)
	for _, s := range []string{
		"rules: [\n",
		rule("sql: |", "  SELECT 1;", "  x", "condition: value > 1"),
		rule("metric: runs", "condition: |", "  value >", "annotations: {a: '{{ .Foo }}'}"),
		"a: &a [*a]\nrules: *a\n",
		"rules:\n  - <<: [*x, {a: 1}]\n",
		"rules:\n  - name: é\n    condition: \"\\u00e9 + ü\"\n",
		"receivers:\n  - name: ops\n    webhook: {url: \"https://${H}/x\", headers: {A: \"Bearer ${T}\"}, timeout: 5s}\n  - name: am\n    send_resolved: false\n    alertmanager: {url: \"http://am:9093\", alert_ttl: 2h}\n  - name: run\n    command: {argv: [notify, \"${X}\"], timeout: 1m}\nroute:\n  receiver: ops\n  group_by: [alertname, provider]\n  repeat_interval: 4h\n  routes:\n    - match: {severity: critical}\n      receiver: run\n      continue: true\n      routes:\n        - match_re: {provider: \"open.*\"}\n          receiver: am\n          group_by: ['...']\n",
		"receivers:\n  - name: ops\n    webhook: {url: \"ftp://${1B}\", headers: {\"A B\": \"${}\"}}\n    command: {argv: []}\n  - {name: ops, sendresolved: 1}\n",
		"receivers: [{name: a, alertmanager: {url: http://x, alert_ttl: 0s}}]\nroute: &r {receiver: b, match_re: {x: \"(\"}, routes: [*r, {continue: yes}]}\n",
		"route:\n  match: {a: b}\n  routes:\n    - routes:\n        - receiver: nobody\n          group_by: [..., a-b]\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		problems := Check("fuzz.yaml", data)
		for _, p := range problems {
			_ = p.String()
		}
		file, err := Parse("fuzz.yaml", data)
		if (err == nil) != (len(problems) == 0) {
			t.Fatalf("Check found %d problems but Parse returned %v", len(problems), err)
		}
		if file != nil {
			for _, r := range file.Rules {
				r.Holds(Sample{Value: f64(1), Numerator: f64(1), Denominator: f64(1)})
				r.Annotate(Sample{Value: f64(1)})
			}
		}
	})
}

// Aliased merge keys grow exponentially with the file; the checker stops
// at a bound instead of hanging.
func TestMergeBomb(t *testing.T) {
	t.Parallel()
	var b strings.Builder
	b.WriteString("a0: &a0 {x: 1}\n")
	for i := 1; i <= 8; i++ {
		fmt.Fprintf(&b, "a%d: &a%d {<<: [%s]}\n", i, i, strings.TrimSuffix(strings.Repeat(fmt.Sprintf("*a%d, ", i-1), 10), ", "))
	}
	b.WriteString("rules:\n  - <<: *a8\n    name: x\n")
	done := make(chan []Problem)
	go func() { done <- Check("bomb.yaml", []byte(b.String())) }()
	select {
	case ps := <-done:
		if !slices.ContainsFunc(ps, func(p Problem) bool { return strings.Contains(p.Message, "merge keys expand to more than 1000") }) {
			t.Fatalf("no merge bound reported: %v", ps)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Check did not return")
	}
}

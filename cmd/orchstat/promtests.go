package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/orchstat/orchstat/ingest/trace"
	"github.com/orchstat/orchstat/model/reports"
	"github.com/orchstat/orchstat/rules/alerting"
	"github.com/orchstat/orchstat/rules/promrules"
	"github.com/orchstat/orchstat/rules/ruletest"
)

// promTest is one orchstat rule test as a promtool test, or why not.
type promTest struct {
	name, why string
	series    map[string][]float64 // sample name{labels} → a value per interval from the origin
	evals     []promEval
}

type promEval struct {
	at     time.Duration
	rule   string
	alerts []map[string]string
}

// translateTests turns orchstat's rule tests in files into promtool test
// files in dir, one per file, over the export e written at rulesPath. A
// test's input is ingested as `rules test` ingests it, at each
// evaluation (cron's ingest before a check), and the store's counters
// then are the input series from that moment: counters count at ingest
// time. A test translates when Prometheus must agree with it: inline
// events only, evaluations on whole intervals, every event and ingest
// inside each evaluated rule's window, and a `for` whose checks and time
// give the same states. The others are named, with why, on stderr.
func translateTests(ctx context.Context, io *IO, e *promrules.Export, rulesPath, dir string, interval time.Duration, files []string) error {
	exported := map[string]*alerting.Rule{}
	loaded := map[string]*ruletest.Loaded{}
	for _, f := range files {
		l, err := ruletest.Load(f)
		if err != nil {
			return err
		}
		loaded[f] = l
	}
	for _, a := range e.Alerting {
		exported[a.Alert] = nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for _, f := range files {
		l := loaded[f]
		for _, r := range l.Rules.Rules {
			if _, ok := exported[r.Name]; ok {
				exported[r.Name] = r
			}
		}
		var tests []promTest
		for _, t := range l.Tests {
			pt := translateTest(ctx, t, l.Rules, exported, interval)
			if pt.why != "" {
				fmt.Fprintf(io.Err, "orchstat rules export: %s: test %q not translated: %s\n", f, t.Name, pt.why)
				continue
			}
			tests = append(tests, pt)
		}
		out := filepath.Join(dir, strings.TrimSuffix(filepath.Base(f), filepath.Ext(f))+".promtool.yml")
		if len(tests) == 0 {
			fmt.Fprintf(io.Err, "orchstat rules export: %s: no test translated; %s not written\n", f, out)
			continue
		}
		abs, err := filepath.Abs(rulesPath)
		if err != nil {
			return err
		}
		if err := os.WriteFile(out, promTestFile(abs, interval, f, tests), 0o644); err != nil {
			return err
		}
	}
	return nil
}

// translateTest translates one test, or says why it cannot.
func translateTest(ctx context.Context, t ruletest.Test, rf *alerting.File, exported map[string]*alerting.Rule, interval time.Duration) promTest {
	pt := promTest{name: t.Name, series: map[string][]float64{}}
	if t.Input.Traces != "" || len(t.Input.Events) == 0 {
		return promTest{why: "its input is not inline events"}
	}
	var times []time.Time
	for _, ev := range t.Evaluations {
		at, err := time.Parse(time.RFC3339Nano, ev.At)
		if err != nil {
			return promTest{why: err.Error()}
		}
		times = append(times, at.UTC())
	}
	origin := times[0].Add(-interval) // a sample of 0 before the first ingest
	for i, ev := range t.Evaluations {
		rules := ev.Rules
		if len(rules) == 0 {
			for _, r := range rf.Rules {
				rules = append(rules, r.Name)
			}
		}
		for _, a := range ev.Alerts {
			if r, ok := exported[a.Rule]; !ok || r == nil {
				return promTest{why: fmt.Sprintf("it expects an alert of %s, which is not exported", a.Rule)}
			}
		}
		d := times[i].Sub(origin)
		if d%interval != 0 {
			return promTest{why: fmt.Sprintf("evaluation %d is not a whole number of %s intervals after the first", i+1, interval)}
		}
		for _, name := range rules {
			r, ok := exported[name]
			if !ok || r == nil {
				continue
			}
			if why := inWindow(t.Input.Events, times, i, origin, r.Window.Duration); why != "" {
				return promTest{why: why}
			}
			if why := sameStates(t, name, times, i, r, interval); why != "" {
				return promTest{why: why}
			}
			pe := promEval{at: d, rule: name, alerts: []map[string]string{}}
			for _, a := range ev.Alerts {
				if a.Rule != name || a.State != "firing" {
					continue
				}
				labels := map[string]string{"severity": r.Severity}
				for k, v := range r.Labels {
					labels[k] = v
				}
				for k, v := range a.Labels {
					if v != "" { // Prometheus drops an empty label
						labels[k] = v
					}
				}
				pe.alerts = append(pe.alerts, labels)
			}
			pt.evals = append(pt.evals, pe)
		}
	}
	if err := countersAtEvaluations(ctx, t.Input.Events, times, origin, interval, pt.series); err != nil {
		return promTest{why: err.Error()}
	}
	return pt
}

// inWindow says why evaluation i cannot be translated for a rule over
// window w: an ingest or an event falls out of the window, where counters
// (which count at ingest) and orchstat (which counts by the event's time)
// part.
func inWindow(events []ruletest.Event, times []time.Time, i int, origin time.Time, w time.Duration) string {
	from := times[i].Add(-w)
	if !origin.After(from) {
		return fmt.Sprintf("evaluation %d's window (%s) does not reach back to the first ingest", i+1, w)
	}
	for _, e := range events {
		at, err := time.Parse(time.RFC3339Nano, e.At)
		if err != nil {
			return err.Error()
		}
		if !at.After(times[i]) && !at.After(from) {
			return fmt.Sprintf("an event at %s is out of evaluation %d's window by its time but counted by ingest", e.At, i+1)
		}
	}
	return ""
}

// sameStates says why Prometheus's `for`, a time, would not give the
// states orchstat's, a number of checks, gives at evaluation i.
func sameStates(t ruletest.Test, rule string, times []time.Time, i int, r *alerting.Rule, interval time.Duration) string {
	hold := r.For.Duration
	if r.For.Checks > 1 {
		hold = time.Duration(r.For.Checks-1) * interval
	}
	state := func(j int, labels map[string]string) string {
		for _, a := range t.Evaluations[j].Alerts {
			if a.Rule == rule && maps2Equal(a.Labels, labels) && (a.State == "pending" || a.State == "firing") {
				return a.State
			}
		}
		return ""
	}
	for _, a := range t.Evaluations[i].Alerts {
		if a.Rule != rule || a.State != "pending" && a.State != "firing" {
			continue // resolved: Prometheus lists no alert whose condition no longer holds
		}
		first := i
		for first > 0 && state(first-1, a.Labels) != "" {
			first--
		}
		want := "pending"
		if times[i].Sub(times[first]) >= hold {
			want = "firing"
		}
		if a.State != want {
			return fmt.Sprintf("evaluation %d expects %s %s, where Prometheus's for: %s gives %s", i+1, rule, a.State, hold, want)
		}
	}
	return ""
}

func maps2Equal(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// countersAtEvaluations ingests the events due by each evaluation, as
// `rules test` does, and records the store's counters then into series,
// one value per interval from origin: 0 before the first ingest, then
// the last ingest's count.
func countersAtEvaluations(ctx context.Context, events []ruletest.Event, times []time.Time, origin time.Time, interval time.Duration, series map[string][]float64) error {
	tmp, err := os.MkdirTemp("", "orchstat-promtests-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	rs, err := openRuleTestStore(ctx, filepath.Join(tmp, "s.duckdb"))
	if err != nil {
		return err
	}
	store := rs.(*ruleTestStore)
	defer store.Close()
	specs, err := reports.Counters()
	if err != nil {
		return err
	}
	last := int(times[len(times)-1].Sub(origin) / interval)
	for i, at := range times {
		var due []ruletest.Event
		for _, e := range events {
			if t, _ := time.Parse(time.RFC3339Nano, e.At); !t.After(at) {
				due = append(due, e)
			}
		}
		runs := filepath.Join(tmp, fmt.Sprintf("runs%d", i))
		if err := ruletest.WriteEvents(runs, due, trace.AppendLine); err != nil {
			return err
		}
		if err := store.Ingest(ctx, runs, at); err != nil {
			return err
		}
		groups, err := store.st.Counters(ctx)
		if err != nil {
			return err
		}
		from := int(at.Sub(origin) / interval)
		for _, g := range groups {
			for _, s := range specs {
				v, ok := g.Counts[s.Count]
				if !ok || s.Family != g.Family {
					continue
				}
				key := s.Name + "_total" + seriesLabels(g.Labels)
				if series[key] == nil {
					series[key] = make([]float64, last+1)
				}
				n := 0.0
				if v != nil {
					n = *v
				}
				for m := from; m <= last; m++ {
					series[key][m] = n
				}
			}
		}
	}
	return nil
}

// seriesLabels writes labels as a series selector's, leaving out empty
// ones as Prometheus does.
func seriesLabels(l map[string]string) string {
	var parts []string
	for k, v := range l {
		if v != "" {
			parts = append(parts, fmt.Sprintf("%s=%q", k, v))
		}
	}
	if len(parts) == 0 {
		return ""
	}
	sort.Strings(parts)
	return "{" + strings.Join(parts, ",") + "}"
}

// promTestFile writes translated tests as a promtool test file.
func promTestFile(rules string, interval time.Duration, from string, tests []promTest) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "# promtool test rules file generated by `orchstat rules export` from %s:\n", from)
	b.WriteString("# orchstat's rule tests over the counters, the input ingested at each evaluation.\n")
	fmt.Fprintf(&b, "rule_files: [%s]\nevaluation_interval: %s\ntests:\n", yamlQuote(rules), promDur(interval))
	for _, t := range tests {
		fmt.Fprintf(&b, "  - name: %s\n    interval: %s\n    input_series:\n", yamlQuote(t.name), promDur(interval))
		keys := make([]string, 0, len(t.series))
		for k := range t.series {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			vals := make([]string, len(t.series[k]))
			for i, v := range t.series[k] {
				vals[i] = fmt.Sprint(v)
			}
			fmt.Fprintf(&b, "      - series: %s\n        values: %s\n", yamlQuote(k), yamlQuote(strings.Join(vals, " ")))
		}
		b.WriteString("    alert_rule_test:\n")
		for _, e := range t.evals {
			fmt.Fprintf(&b, "      - eval_time: %s\n        alertname: %s\n        exp_alerts:", promDur(e.at), e.rule)
			if len(e.alerts) == 0 {
				b.WriteString(" []\n")
				continue
			}
			b.WriteString("\n")
			for _, a := range e.alerts {
				keys := slices.Sorted(func(yield func(string) bool) {
					for k := range a {
						if !yield(k) {
							return
						}
					}
				})
				b.WriteString("          - exp_labels:\n")
				for _, k := range keys {
					fmt.Fprintf(&b, "              %s: %s\n", k, yamlQuote(a[k]))
				}
			}
		}
	}
	return b.Bytes()
}

func promDur(d time.Duration) string {
	if d%time.Minute == 0 {
		return fmt.Sprintf("%dm", d/time.Minute)
	}
	return fmt.Sprintf("%ds", d/time.Second)
}

func yamlQuote(s string) string { return fmt.Sprintf("%q", s) }

package alerting

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/expr-lang/expr/builtin"

	"github.com/orchstat/orchstat/rules/yamlast"
)

func allocated(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// The rule files: rules: and 20 KB or 200 KB of nested brackets
// (195 MB and 15 GB to check), flow mappings, indentation; /dev/zero and a
// huge file through Load. Each is one clear problem, at a line and
// column, in bounded memory.
func TestCheckHostileRuleFiles(t *testing.T) {
	indent := func(n int) string {
		var b strings.Builder
		b.WriteString("rules:\n")
		for i := range n {
			b.WriteString(strings.Repeat(" ", i+1) + "a:\n")
		}
		return b.String()
	}
	for _, tc := range []struct {
		name, doc string
		line, col int
	}{
		{"brackets 20KB", "rules: " + strings.Repeat("[", 10000) + strings.Repeat("]", 10000), 1, 71},
		{"brackets 200KB", "rules: " + strings.Repeat("[", 100000) + strings.Repeat("]", 100000), 1, 71},
		{"flow mappings", "rules: [" + strings.Repeat("{a: ", 50000) + strings.Repeat("}", 50000) + "]", 1, len("rules: [") + 4*62 + 1},
		{"indentation", indent(1000), 65, 65},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var problems []Problem
			bytes := allocated(func() { problems = Check("x.yaml", []byte(tc.doc)) })
			if len(problems) != 1 || problems[0].Line != tc.line || problems[0].Column != tc.col ||
				!strings.Contains(problems[0].String(), fmt.Sprintf("x.yaml:%d:%d: YAML: nested too deep: more than 64 levels", tc.line, tc.col)) {
				t.Fatalf("problems %v", problems)
			}
			if bytes > 4<<20 {
				t.Errorf("checking %d bytes allocated %d", len(tc.doc), bytes)
			}
			if _, err := Parse("x.yaml", []byte(tc.doc)); err == nil || !strings.Contains(err.Error(), "nested too deep") {
				t.Errorf("Parse: %v", err)
			}
		})
	}
	huge := filepath.Join(t.TempDir(), "huge.yaml")
	os.WriteFile(huge, []byte("rules:\n# "+strings.Repeat("x", 50<<20)+"\n"), 0o644)
	for _, path := range []string{"/dev/zero", huge} {
		var err error
		bytes := allocated(func() { _, err = Load(path) })
		var se *yamlast.SizeError
		if !errors.As(err, &se) || !strings.Contains(err.Error(), path+": ") {
			t.Errorf("Load(%s): %v", path, err)
		}
		if bytes > 8<<20 {
			t.Errorf("Load(%s) allocated %d bytes", path, bytes)
		}
	}
}

// A file of thousands of bad rules lists the first 100 problems and says
// how many more there are, rather than printing a line for each.
func TestCheckCapsProblems(t *testing.T) {
	t.Parallel()
	doc := "rules: [" + strings.TrimSuffix(strings.Repeat("a, ", 5000), ", ") + "]\n"
	problems := Check("x.yaml", []byte(doc))
	if len(problems) != maxProblems+1 || problems[maxProblems].Message != "4900 more problems not listed; fix these first" {
		t.Fatalf("%d problems, last %v", len(problems), problems[len(problems)-1])
	}
}

func ruleFile(condition string, extra ...string) string {
	return "rules:\n  - name: r\n    metric: provider_failure_rate\n    by: [provider]\n    threshold: 0.5\n    condition: '" +
		condition + "'\n" + strings.Join(extra, "")
}

// What a condition may build is bounded: the condition (10 GB),
// and other ways to allocate or loop without end, are an error of the
// rule from Holds, in bounded memory, never a crash. The smaller ones
// ran to completion before, building hundreds of megabytes.
func TestConditionBudget(t *testing.T) {
	for _, tc := range []struct{ name, cond, want string }{
		{"issue", `len(repeat(repeat("a", 100000), 100000)) > 0`, "builds more than 1048576 bytes (1 MiB) of text"},
		{"repeat 100 MB", `len(repeat(repeat("a", 1000), 100000)) > 0`, "of text"},
		{"join", `len(join(map(1..5000, repeat("x", 1000)), "")) > 0`, "of text"},
		{"replace", `len(replace(repeat("a", 10000), "a", repeat("b", 10000))) > 0`, "of text"},
		{"concatenation in a loop", `len(reduce(1..60, #acc + #acc, "ab")) > 0`, "of text"},
		{"concatenation in lets", `let a = labels.provider + repeat("x", 100000); let b = a + a; let c = b + b; let d = c + c; len(d + d) > 0`, "of text"},
		{"upper in a map", `len(map(1..5000, upper(repeat("x", 1000)))) > 0`, "of text"},
		{"map over a range", `len(map(1..1000000000, # * 2)) > 0`, "builds more than 10000 items"},
		{"range", `len(1..100000000) > 0`, "items"},
		{"nested loops", `all(1..9000, all(1..9000, # > 0))`, "items"},
		{"doubling lists", `len(reduce(1..40, concat(#acc, #acc), [1])) > 0`, "items"},
		{"string of a list", `len(string(1..5000)) > 0`, "string() takes a number, a boolean or text"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// The bombs hide behind a value no sample has, so the file
			// passes rules check and the check itself meets them.
			cond := "value == 3 && (" + tc.cond + ")"
			f, err := Parse("x.yaml", []byte(ruleFile(strings.ReplaceAll(cond, "'", "''"))))
			if err != nil {
				t.Fatal(err)
			}
			var holds bool
			bytes := allocated(func() {
				holds, err = f.Rules[0].Holds(Sample{Value: f64(3), Labels: map[string]string{"provider": "p"}})
			})
			if err == nil || !strings.HasPrefix(err.Error(), `rule "r": `) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Holds: %v, %v; want an error of rule r containing %q", holds, err, tc.want)
			}
			if bytes > 64<<20 {
				t.Errorf("allocated %d bytes", bytes)
			}
		})
	}
}

// Conditions as people write them are unchanged: arithmetic keeps its
// types and errors at check time, text joins with +, reduce sums.
func TestConditionsWithinBudget(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		cond string
		want bool
	}{
		{"value + 1 > threshold", true},
		{`labels.provider + "/" + labels.model == "p/m"`, true},
		{"reduce(1..10, #acc + #, 0) == 55", true},
		{`len(repeat("ab", 1000)) == 2000 && upper(labels.provider) == "P"`, true},
		{`join(split("a,b", ","), "-") == "a-b" && replace("aXa", "X", "b") == "aba"`, true},
		{"value in 1..100 && denominator >= 20", false},
		{`string(value) == "3"`, true},
		{"all(1..500, all(1..15, # > 0))", true},
	} {
		doc := "rules:\n  - name: r\n    metric: provider_failure_rate\n    by: [provider, model]\n    threshold: 1\n    condition: '" +
			strings.ReplaceAll(tc.cond, "'", "''") + "'\n"
		f, err := Parse("x.yaml", []byte(doc))
		if err != nil {
			t.Errorf("%s: %v", tc.cond, err)
			continue
		}
		got, err := f.Rules[0].Holds(Sample{Value: f64(3), Denominator: f64(10), Labels: map[string]string{"provider": "p", "model": "m"}})
		if err != nil || got != tc.want {
			t.Errorf("%s: %v, %v; want %v", tc.cond, got, err, tc.want)
		}
	}
	// Type errors are still found when the file is checked.
	ps := Check("x.yaml", []byte(ruleFile("value + 1")))
	if len(ps) != 1 || !strings.Contains(ps[0].Message, "expected bool, but got float64") {
		t.Errorf("value + 1: %v", ps)
	}
	ps = Check("x.yaml", []byte(ruleFile("len(toJSON(labels)) > 0")))
	if len(ps) != 1 || ps[0].Line != 6 || ps[0].Column != 21 || !strings.Contains(ps[0].Message, "toJSON is not available in conditions") {
		t.Errorf("toJSON: %v", ps)
	}
}

// rules check runs each condition on sample data, so a condition past
// its bounds for every input (the issue's) or one that fails on every
// input is a problem at its line, not a crash at the first check.
func TestCheckRunsConditions(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ cond, want string }{
		{`len(repeat(repeat("a", 100000), 100000)) > 0`, "x.yaml:6:16: rule \"r\": condition: builds more than 1048576 bytes (1 MiB) of text in one evaluation (on sample data: value 0, labels map[provider:sample])"},
		{`value > 100 && len(1..int(value)) > 0`, "condition: builds more than 10000 items in ranges, lists and maps in one evaluation (on sample data: value 1e+06"},
		{`int(labels.nothere) > 0`, `x.yaml:6:16: rule "r": condition: fails on every sample value and label: `},
	} {
		ps := Check("x.yaml", []byte(ruleFile(strings.ReplaceAll(tc.cond, "'", "''"))))
		if len(ps) != 1 || !strings.Contains(ps[0].String(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.cond, ps, tc.want)
		}
	}
	// Failing on some samples only may be the data's: left to the check.
	if ps := Check("x.yaml", []byte(ruleFile("int(labels.provider) > 0"))); len(ps) != 0 {
		t.Errorf("int(labels.provider): %v", ps)
	}
	// So is failing on every sample, for a sql rule: its labels are its
	// query's columns. Its budget is checked all the same.
	if ps := Check("x.yaml", []byte(sqlRule("int(labels.n) > 5", ""))); len(ps) != 0 {
		t.Errorf("sql, int(labels.n): %v", ps)
	}
	if ps := Check("x.yaml", []byte(sqlRule(`len(repeat(repeat("a", 100000), 100000)) > 0`, ""))); len(ps) != 1 || !strings.Contains(ps[0].Message, "builds more than") {
		t.Errorf("sql, bomb: %v", ps)
	}
}

func sqlRule(condition, template string) string {
	doc := "rules:\n  - name: s\n    sql: SELECT 1 AS value, 'x' AS n\n    condition: '" + strings.ReplaceAll(condition, "'", "''") + "'\n"
	if template != "" {
		doc += "    annotations:\n      summary: '" + strings.ReplaceAll(template, "'", "''") + "'\n"
	}
	return doc
}

// The annotation templates passed rules check and failed at every
// check. rules check now runs each template on sample data (the rule's by
// labels present, values zero and not) and reports it at its line; call
// and printf widths that would build gigabytes are refused too.
func TestCheckRunsTemplates(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ template, want string }{
		{"{{ index .Labels.provider 99 }}", `x.yaml:8:16: warning: rule "r": annotations.summary: fails on sample data (value 0, labels map[provider:sample]): error calling index: index out of range: 99`},
		{"{{ call .Labels }}", `x.yaml:8:20: rule "r": annotations.summary: call is not available: templates see no functions to call`},
		{`{{ printf "%0999999999d" 1 }}`, "annotations.summary: fails on sample data (value 0, labels map[provider:sample]): error calling printf: expands to more than 65536 bytes (64 KiB)"},
		{"{{ slice .Labels.provider 3 1 }}", "error calling slice: invalid slice index: 3 > 1"},
		{"{{ .Value.Foo }}", "can't evaluate field Foo in type float64"},
		// Nested with {{with $}} a thousand deep, ranges over the labels
		// would run for ever; they may nest twice.
		{strings.Repeat("{{ range .Labels }}{{ with $ }}", 1000) + strings.Repeat("{{ end }}{{ end }}", 1000), "ranges may nest at most 2 deep"},
		{strings.Repeat("{{ range .Labels }}{{ with $ }}", 3) + "x" + strings.Repeat("{{ end }}{{ end }}", 3), "x.yaml:8:88: rule \"r\": annotations.summary: ranges may nest at most 2 deep"},
	} {
		doc := ruleFile("value > threshold", "    annotations:\n      summary: '", strings.ReplaceAll(tc.template, "'", "''"), "'\n")
		ps := Check("x.yaml", []byte(doc))
		if len(ps) != 1 || !strings.Contains(ps[0].String(), tc.want) {
			t.Errorf("%s: %v\nwant %q", tc.template, ps, tc.want)
		}
	}
	// A template that fails on sample data is a warning: the file still
	// loads, so that check evaluates its other rules (Prometheus expands
	// templates when an alert fires, and an error then is that alert's).
	warned := ruleFile("value > threshold", "    annotations:\n      summary: '", "{{ index .Labels.provider 99 }}", "'\n")
	if _, err := Parse("x.yaml", []byte(warned)); err != nil {
		t.Errorf("a template failing on sample data refused the file: %v", err)
	}
	// Templates that work on the rule's labels pass, even those that
	// would fail on a label the check always has (.Labels.provider here).
	ok := ruleFile("value > threshold", "    annotations:\n      summary: '{{ index .Labels.provider 0 | printf \"%c\" }} {{ printf \"%.2f\" .Value }} {{ range $k, $v := .Labels }}{{ $k }}={{ $v }}{{ with $ }}{{ range .Labels }}{{ . }}{{ end }}{{ end }}{{ end }}'\n")
	if ps := Check("x.yaml", []byte(ok)); len(ps) != 0 {
		t.Errorf("%v", ps)
	}
	// A sql rule's labels are its columns, unknown to the samples: only
	// a template too large for any labels is a problem.
	if ps := Check("x.yaml", []byte(sqlRule("value > 0", "{{ index .Labels.n 0 }}"))); len(ps) != 0 {
		t.Errorf("sql, index .Labels.n 0: %v", ps)
	}
	if ps := Check("x.yaml", []byte(sqlRule("value > 0", `{{ printf "%0999999999d" 1 }}`))); len(ps) != 1 || !strings.Contains(ps[0].Message, "expands to more than 65536 bytes") {
		t.Errorf("sql, printf: %v", ps)
	}
}

// Annotate never panics and never builds more than MaxAnnotation, whatever
// the labels hold; its error names the rule and the annotation.
func TestAnnotateBounded(t *testing.T) {
	doc := ruleFile("value > threshold", "    annotations:\n      summary: '"+strings.Repeat("{{ .Labels.provider }}{{ printf \"%s%s\" .Labels.provider .Labels.provider }}", 500)+"'\n"+
		"      escaped: '{{ js .Labels.provider }}{{ html .Labels }}{{ urlquery .Labels.provider }}'\n")
	f, err := Parse("x.yaml", []byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	big := strings.Repeat("<'x'>", 1<<20)
	for _, s := range []Sample{
		{Value: f64(1), Labels: map[string]string{"provider": big}},
		{Value: f64(1), Labels: map[string]string{"provider": big[:40000]}},
	} {
		var err error
		bytes := allocated(func() {
			defer func() {
				if r := recover(); r != nil {
					t.Fatalf("Annotate panicked: %v", r)
				}
			}()
			_, err = f.Rules[0].Annotate(s)
		})
		if err == nil || !strings.HasPrefix(err.Error(), `rule "r": annotation `) || !strings.Contains(err.Error(), "expands to more than 65536 bytes") {
			t.Errorf("labels of %d bytes: %v", len(s.Labels["provider"]), err)
		}
		if bytes > 64<<20 {
			t.Errorf("labels of %d bytes: allocated %d", len(s.Labels["provider"]), bytes)
		}
	}
	got, err := f.Rules[0].Annotate(Sample{Value: f64(1), Labels: map[string]string{"provider": "p<"}})
	if err != nil || got["escaped"] != `p\u003Cmap[provider:p&lt;]p%3C` || len(got["summary"]) != 500*3*2 {
		t.Errorf("%q, %v", got, err)
	}
}

// Evaluations of one rule may come from several goroutines; each has its
// own budget.
func TestConditionConcurrent(t *testing.T) {
	t.Parallel()
	f, err := Parse("x.yaml", []byte(ruleFile(`len(repeat("ab", 300000)) > 0`)))
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error)
	for range 8 {
		go func() {
			var err error
			for range 20 {
				if _, e := f.Rules[0].Holds(Sample{Value: f64(1)}); e != nil {
					err = e
				}
			}
			done <- err
		}()
	}
	for range 8 {
		select {
		case err := <-done:
			if err != nil {
				t.Error(err)
			}
		case <-time.After(60 * time.Second):
			t.Fatal("hung")
		}
	}
}

// Every builtin the text budget wraps is one of expr's: a new version
// that renamed one would leave it unbounded.
func TestTextBuiltinsExist(t *testing.T) {
	t.Parallel()
	for _, name := range append(textBuiltins, disabledInConditions...) {
		if _, ok := builtin.Index[name]; !ok {
			t.Errorf("expr has no builtin %q", name)
		}
	}
}

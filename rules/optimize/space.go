// Package optimize searches the retry core's parameters for the policies
// that recorded failures say work best: the Pareto front of success,
// attempts, cost and time to resolution, each policy replayed by
// rules/replay as simulate replays a named one, checked on later records
// than it was found on. It is pure Go.
package optimize

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/orchstat/orchstat/model/failure"
	"github.com/orchstat/orchstat/rules/retry"
)

// A param is one parameter of the retry core the search varies: its
// name, the values it may take by default, and how a value changes a
// policy. A value is text, as --search and the output write it.
type param struct {
	name   string
	values []string
	set    func(p *retry.Policy, v string) error
	// doc says what the parameter is, for docs and errors.
	doc string
}

// durations are the waits the backoff's base and cap are searched over.
var durations = []string{"250ms", "500ms", "1s", "2s", "5s"}

// providerParams are the parameters of provider requests searched, in
// the order a policy's settings are written. The ranges stay within what
// a policy file may say (retry.MaxRetriesCap) and around the presets'
// own values. The backoff's schedule is also its jitter: none, full,
// equal, decorrelated or proportional.
func providerParams(classes []failure.Class, base *retry.Policy) []param {
	// Which failure classes are retried: the baseline's set, or that set
	// with one class the episodes failed with taken out (-class) or put
	// in (+class).
	changes := []string{"baseline"}
	for _, c := range classes {
		if base.Retriable[c] {
			changes = append(changes, "-"+string(c))
		} else {
			changes = append(changes, "+"+string(c))
		}
	}
	return []param{
		{name: "max_retries", values: ints(0, 8), doc: "retries after the first attempt (0 to 8)",
			set: func(p *retry.Policy, v string) error {
				n, err := strconv.Atoi(v)
				if err != nil || n < 0 || n > retry.MaxRetriesCap {
					return fmt.Errorf("max_retries %q: a whole number from 0 to %d", v, retry.MaxRetriesCap)
				}
				p.MaxRetries, p.PerOperation = n, nil
				return nil
			}},
		{name: "backoff", values: retry.ScheduleNames(), doc: "the backoff schedule: " + strings.Join(retry.ScheduleNames(), ", "),
			set: func(p *retry.Policy, v string) error {
				b, err := retry.WithSchedule(v, p.Backoff)
				if err != nil {
					return fmt.Errorf("backoff: %w", err)
				}
				p.Backoff = b
				return nil
			}},
		{name: "base", values: durations, doc: "the first retry's wait before jitter",
			set: func(p *retry.Policy, v string) error {
				d, err := time.ParseDuration(v)
				if err != nil || d < 0 {
					return fmt.Errorf("base %q: a duration such as 500ms", v)
				}
				if p.Backoff.Initial > 0 {
					p.Backoff.Initial = d
				}
				return nil
			}},
		{name: "cap", values: append([]string{"10s", "30s", "60s"}, "none"), doc: "the longest wait, or none",
			set: func(p *retry.Policy, v string) error {
				d, err := time.ParseDuration(v)
				if v != "none" && (err != nil || d <= 0) {
					return fmt.Errorf("cap %q: a duration such as 30s, or none", v)
				}
				// A schedule with no wait has nothing to cap.
				if p.Backoff.Initial > 0 {
					p.Backoff.Max = d
				}
				return nil
			}},
		{name: "classes", values: changes, doc: "the failure classes retried: the baseline's, or one taken out (-class) or put in (+class)",
			set: func(p *retry.Policy, v string) error {
				if v == "baseline" {
					return nil
				}
				c := failure.Class(v[min(1, len(v)):])
				if (v[0] != '-' && v[0] != '+') || !c.Known() {
					return fmt.Errorf("classes %q: baseline, or -class or +class with a failure class", v)
				}
				if p.Retriable == nil {
					p.Retriable = map[failure.Class]bool{}
				}
				p.Retriable[c] = v[0] == '+'
				return nil
			}},
		{name: "signature_halt", values: []string{"0", "2", "3", "5"}, doc: "halt after this many identical failure signatures in a row (0: never)",
			set: func(p *retry.Policy, v string) error {
				n, err := strconv.Atoi(v)
				if err != nil || n < 0 || n > retry.MaxRetriesCap {
					return fmt.Errorf("signature_halt %q: a whole number from 0 to %d", v, retry.MaxRetriesCap)
				}
				p.SignatureHalt = n
				return nil
			}},
		{name: "budget", values: []string{"none", "10:0.1", "5:0.1", "20:0.2"}, doc: "a token-bucket retry budget, tokens:ratio (gRPC's and the SRE book's 10:0.1), or none",
			set: func(p *retry.Policy, v string) error {
				if v == "none" {
					p.Budget = nil
					return nil
				}
				t, r, ok := strings.Cut(v, ":")
				tokens, err1 := strconv.ParseFloat(t, 64)
				ratio, err2 := strconv.ParseFloat(r, 64)
				if !ok || err1 != nil || err2 != nil || tokens <= 0 || ratio <= 0 {
					return fmt.Errorf("budget %q: tokens:ratio such as 10:0.1, or none", v)
				}
				p.Budget = &retry.Budget{MaxTokens: tokens, Ratio: ratio}
				return nil
			}},
	}
}

// loopParams are the parameters of the L2 repair loop (with L2 loops)
// and the L3 diagnosis trigger (with L3 steps), named as a policy file
// names them. The orchestrator runs 5 iterations, stops after 2
// non-improving ones, escalates after 2 of either kind once, and
// diagnoses after 2 identical patch-apply failures.
func loopParams(l2, l3 bool) []param {
	count := func(name string, lo, hi int, doc string, to func(p *retry.Policy) *int) param {
		return param{name: name, values: ints(lo, hi), doc: doc, set: func(p *retry.Policy, v string) error {
			n, err := strconv.Atoi(v)
			if err != nil || n < 0 || n > retry.MaxRetriesCap {
				return fmt.Errorf("%s %q: a whole number from 0 to %d", name, v, retry.MaxRetriesCap)
			}
			*to(p) = n
			return nil
		}}
	}
	var out []param
	if l2 {
		out = append(out,
			count("max_iterations", 1, 8, "the L2 loop's repair iterations (1 to 8)", func(p *retry.Policy) *int { return &p.MaxIterations }),
			count("non_improving_stop", 0, 4, "stop the loop after this many identical failure signatures in a row (0: never)",
				func(p *retry.Policy) *int { return &p.NonImprovingStop }),
			count("escalation.non_improving", 0, 3, "escalate to L3 after this many identical signatures in a row (0: never for this)",
				func(p *retry.Policy) *int { return &p.Escalation.NonImproving }),
			count("escalation.patch_apply_failures", 0, 3, "escalate to L3 after this many patches in a row that fail to apply (0: never for this)",
				func(p *retry.Policy) *int { return &p.Escalation.PatchApplyFailures }),
			count("escalation.max_escalations", 0, 1, "whether a loop may escalate at all (0: never, 1: once)",
				func(p *retry.Policy) *int { return &p.Escalation.MaxEscalations }))
	}
	if l3 {
		out = append(out, count("diagnosis_after", 0, 4, "start an L3 diagnosis after this many identical patch-apply failures (0: never)",
			func(p *retry.Policy) *int { return &p.DiagnosisAfter }))
	}
	return out
}

func ints(lo, hi int) []string {
	var out []string
	for i := lo; i <= hi; i++ {
		out = append(out, strconv.Itoa(i))
	}
	return out
}

// Space is the values each parameter is searched over.
type Space struct {
	params []param
}

// A narrowing is one item of --search: a parameter and its values.
type narrowing struct {
	name   string
	values []string
}

// allParams are every parameter either layer may search, for checking a
// narrowing before any episode is read.
func allParams() []param {
	return append(providerParams(nil, &retry.Policy{}), loopParams(true, true)...)
}

// CheckSearch checks a --search value: see parseSearch.
func CheckSearch(search string) error {
	if _, err := parseSearch(search); err != nil {
		return fmt.Errorf("--search %w", err)
	}
	return nil
}

// parseSearch reads a narrowing of the space, such as
// "max_retries=0..4,backoff=full|decorrelated": each item names a
// parameter and its values, a range of whole numbers lo..hi or
// alternatives a|b; every value is checked as a policy would take it.
func parseSearch(search string) ([]narrowing, error) {
	if strings.TrimSpace(search) == "" {
		return nil, nil
	}
	ps := allParams()
	var out []narrowing
	for _, item := range strings.Split(search, ",") {
		name, vals, ok := strings.Cut(strings.TrimSpace(item), "=")
		name = strings.TrimSpace(name)
		i := slices.IndexFunc(ps, func(p param) bool { return p.name == name })
		if !ok || i < 0 {
			var names []string
			for _, p := range ps {
				names = append(names, p.name)
			}
			return nil, fmt.Errorf("%q: name=values, where name is one of %s", item, strings.Join(names, ", "))
		}
		var values []string
		if lo, hi, isRange := strings.Cut(vals, ".."); isRange {
			a, err1 := strconv.Atoi(strings.TrimSpace(lo))
			b, err2 := strconv.Atoi(strings.TrimSpace(hi))
			if err1 != nil || err2 != nil || a > b {
				return nil, fmt.Errorf("%q: a range is lo..hi, whole numbers, lo first", item)
			}
			values = ints(a, b)
		} else {
			for _, v := range strings.Split(vals, "|") {
				values = append(values, strings.TrimSpace(v))
			}
		}
		for _, v := range values {
			if err := ps[i].set(&retry.Policy{Backoff: retry.Orchestrator}, v); err != nil {
				return nil, err
			}
		}
		out = append(out, narrowing{name, values})
	}
	return out, nil
}

// narrowSpace is ps with the values narrow gives them.
func narrowSpace(ps []param, narrow []narrowing) (Space, error) {
	for _, n := range narrow {
		if i := slices.IndexFunc(ps, func(p param) bool { return p.name == n.name }); i >= 0 {
			ps[i].values = n.values
		}
	}
	return Space{ps}, nil
}

// Size is how many policies the space holds.
func (s Space) Size() int {
	n := 1
	for _, p := range s.params {
		n *= len(p.values)
		if n > 1<<30 {
			return 1 << 30
		}
	}
	return n
}

// setting is one candidate: an index into each parameter's values.
type setting []int

// draw is n distinct settings drawn with r, or every setting when the
// space holds no more than n.
func (s Space) draw(n int, r *rand.Rand) []setting {
	var out []setting
	if s.Size() <= n {
		var walk func(prefix setting)
		walk = func(prefix setting) {
			if len(prefix) == len(s.params) {
				out = append(out, slices.Clone(prefix))
				return
			}
			for i := range s.params[len(prefix)].values {
				walk(append(prefix, i))
			}
		}
		walk(nil)
		return out
	}
	seen := map[string]bool{}
	for tries := 0; len(out) < n && tries < 50*n; tries++ {
		st := make(setting, len(s.params))
		for i, p := range s.params {
			st[i] = r.IntN(len(p.values))
		}
		if k := fmt.Sprint(st); !seen[k] {
			seen[k] = true
			out = append(out, st)
		}
	}
	return out
}

// apply changes p by st.
func (s Space) apply(p *retry.Policy, st setting) error {
	for i, prm := range s.params {
		if err := prm.set(p, prm.values[st[i]]); err != nil {
			return err
		}
	}
	return nil
}

// policy is base changed by st, named for its settings.
func (s Space) policy(base *retry.Policy, st setting) (*retry.Policy, []string, error) {
	p := base.Clone()
	var words []string
	for i, prm := range s.params {
		v := prm.values[st[i]]
		if err := prm.set(p, v); err != nil {
			return nil, nil, err
		}
		words = append(words, prm.name+"="+v)
	}
	p.Name = strings.Join(words, " ")
	return p, words, nil
}

// ReadSearchFile reads a search file, name being its path for errors: a
// narrowing per line, "max_retries=0..4" or "max_retries: 0..4", with #
// comments and blank lines. It returns the narrowing as --search writes
// it.
func ReadSearchFile(name string, data []byte) (string, error) {
	var items []string
	for i, line := range strings.Split(string(data), "\n") {
		line, _, _ = strings.Cut(line, "#")
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		if k, v, ok := strings.Cut(line, ":"); ok && !strings.Contains(k, "=") {
			line = strings.TrimSpace(k) + "=" + strings.TrimSpace(v)
		}
		if strings.Contains(line, ",") {
			return "", fmt.Errorf("%s:%d: one parameter per line, got %q", name, i+1, line)
		}
		if _, err := parseSearch(line); err != nil {
			return "", fmt.Errorf("%s:%d: %w", name, i+1, err)
		}
		items = append(items, line)
	}
	return strings.Join(items, ","), nil
}

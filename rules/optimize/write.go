package optimize

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/orchstat/orchstat/rules/retry"
)

// PolicyFile writes p as a policy file (rules/retry/policyfile's format)
// that extends the preset extends and sets what the search varies, so
// that `simulate --policy`, `exec` and the rest read back the policy the
// search picked. notes go first, as comments.
func PolicyFile(p *retry.Policy, name, extends string, notes ...string) []byte {
	var b strings.Builder
	fmt.Fprintf(&b, "# Written by orchstat simulate --optimize: %s\n", p.Name)
	for _, n := range notes {
		fmt.Fprintf(&b, "# %s\n", n)
	}
	fmt.Fprintf(&b, "name: %s\n", strconv.Quote(name))
	if extends != "" {
		fmt.Fprintf(&b, "extends: %s\n", extends)
	}
	fmt.Fprintf(&b, "max_retries: %d\n", p.MaxRetries)
	bo := p.Backoff
	if bo.Initial <= 0 {
		b.WriteString("backoff: none\n")
	} else {
		fmt.Fprintf(&b, "backoff: {initial: %s, max: %s, factor: %s, jitter: %s", bo.Initial, bo.Max,
			strconv.FormatFloat(max(bo.Factor, 1), 'g', -1, 64), bo.Jitter)
		if bo.Jitter == retry.JitterProportional {
			fmt.Fprintf(&b, ", spread: %s", strconv.FormatFloat(bo.Spread, 'g', -1, 64))
		}
		b.WriteString("}\n")
	}
	var classes []string
	for c, ok := range p.Retriable {
		if ok {
			classes = append(classes, string(c))
		}
	}
	slices.Sort(classes)
	fmt.Fprintf(&b, "retriable: [%s]\n", strings.Join(classes, ", "))
	fmt.Fprintf(&b, "signature_halt: %d\n", p.SignatureHalt)
	if p.Budget == nil {
		b.WriteString("budget: null\n")
	} else {
		fmt.Fprintf(&b, "budget: {ratio: %s, max_tokens: %s}\n",
			strconv.FormatFloat(p.Budget.Ratio, 'g', -1, 64), strconv.FormatFloat(p.Budget.MaxTokens, 'g', -1, 64))
	}
	fmt.Fprintf(&b, "max_iterations: %d\n", p.MaxIterations)
	fmt.Fprintf(&b, "non_improving_stop: %d\n", p.NonImprovingStop)
	e := p.Escalation
	fmt.Fprintf(&b, "escalation: {non_improving: %d, patch_apply_failures: %d, max_escalations: %d}\n",
		e.NonImproving, e.PatchApplyFailures, e.MaxEscalations)
	fmt.Fprintf(&b, "diagnosis_after: %d\n", p.DiagnosisAfter)
	return []byte(b.String())
}

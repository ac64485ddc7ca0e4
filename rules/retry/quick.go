package retry

import (
	"fmt"
	"strings"

	"github.com/orchstat/orchstat/model/failure"
)

// Quick is a few changes to a baseline policy, as simulate's quick flags
// name them: a policy to compare made without writing a policy file.
type Quick struct {
	// MaxRetries replaces the baseline's retries, and its per-operation
	// limits, when 0 or more; -1 leaves them.
	MaxRetries int
	// MaxAttempts and SignatureHalt replace the baseline's when above 0.
	MaxAttempts   int
	SignatureHalt int
	// Backoff names a schedule (ScheduleNames) for the baseline's waits.
	Backoff string
	// NoRetry are failure classes the policy does not retry.
	NoRetry []string
}

// Apply is base changed by q, named for the changes, or nil when q
// changes nothing. Its errors name the flag of the change at fault.
func (q Quick) Apply(base *Policy) (*Policy, error) {
	if q.MaxRetries < 0 && q.MaxAttempts <= 0 && q.SignatureHalt <= 0 && q.Backoff == "" && len(q.NoRetry) == 0 {
		return nil, nil
	}
	p := base.Clone()
	var name []string
	if q.MaxRetries >= 0 {
		p.MaxRetries = q.MaxRetries
		p.PerOperation = nil
		name = append(name, fmt.Sprintf("max-retries %d", q.MaxRetries))
	}
	if q.MaxAttempts > 0 {
		p.MaxAttempts = q.MaxAttempts
		if q.MaxRetries < 0 {
			// Attempts, not retries, are what this policy limits, and
			// its stops say so.
			p.MaxRetries, p.PerOperation = max(p.MaxRetries, q.MaxAttempts), nil
		}
		name = append(name, fmt.Sprintf("max-attempts %d", q.MaxAttempts))
	}
	if q.SignatureHalt > 0 {
		p.SignatureHalt = q.SignatureHalt
		name = append(name, fmt.Sprintf("signature-halt %d", q.SignatureHalt))
	}
	if q.Backoff != "" {
		b, err := WithSchedule(q.Backoff, base.Backoff)
		if err != nil {
			return nil, fmt.Errorf("--backoff: %w", err)
		}
		p.Backoff = b
		name = append(name, "backoff "+q.Backoff)
	}
	for _, c := range q.NoRetry {
		if !failure.Class(c).Known() {
			return nil, fmt.Errorf("--no-retry-class: unknown class %q (%s)", c, strings.Join(failure.ClassNames(), ", "))
		}
		delete(p.Retriable, failure.Class(c))
		name = append(name, "no retry of "+c)
	}
	p.Name = base.Name + " with " + strings.Join(name, ", ")
	return p, nil
}

// WithRetries is p with n retries for operation op, its other limits
// unchanged: `orchstat exec --max-retries` for the operation it runs.
func (p *Policy) WithRetries(op string, n int) *Policy {
	p = p.Clone()
	if p.PerOperation == nil {
		p.PerOperation = map[string]int{}
	}
	p.PerOperation[op] = n
	return p
}

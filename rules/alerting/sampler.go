package alerting

import "context"

// A Sampler computes a rule's samples at one instant: one per label set,
// none when there is no data. The rules own the interface, as prometheus's
// rules own their QueryFunc, so evaluating them needs no store: a check
// passes one reading the store, a test one made up.
type Sampler interface {
	Samples(ctx context.Context, r *Rule) ([]Sample, error)
}

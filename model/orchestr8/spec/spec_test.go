package spec

import (
	"maps"
	"slices"
	"testing"
)

// TestDefaultsAgree checks the facts against one another: every stage has
// default strategies and nothing else does, each default strategy is one
// applyStrategy knows, and the default values are within their ranges.
func TestDefaultsAgree(t *testing.T) {
	d := DefaultStrategies()
	if got := slices.Sorted(maps.Keys(d)); !slices.Equal(got, slices.Sorted(slices.Values(Stages))) {
		t.Errorf("default strategies are for %v; the stages are %v", got, Stages)
	}
	for st, list := range d {
		if len(list) == 0 {
			t.Errorf("stage %s has no default strategy", st)
		}
		for _, s := range list {
			if !slices.Contains(Strategies, s) {
				t.Errorf("stage %s: default strategy %q is not one applyStrategy knows", st, s)
			}
		}
	}
	if slices.Contains(Stages, Commit) {
		t.Errorf("the commit state %q is listed among the agents", Commit)
	}
	for _, c := range []struct {
		key string
		r   ConfigRange
		v   float64
	}{
		{KeyMaxRetries, MaxRetriesRange, DefaultMaxRetries},
		{KeyWindowSize, WindowSizeRange, DefaultWindowSize},
		{KeyThreshold, ThresholdRange, DefaultThreshold},
	} {
		if !c.r.Allows(c.v) {
			t.Errorf("the default %s %v is outside its range %+v", c.key, c.v, c.r)
		}
	}
}

// TestDefaultStrategiesFresh: a caller that changes its copy changes no
// other.
func TestDefaultStrategiesFresh(t *testing.T) {
	a := DefaultStrategies()
	a["alex"][0] = "mutated"
	delete(a, "cass")
	b := DefaultStrategies()
	if b["alex"][0] == "mutated" || b["cass"] == nil {
		t.Errorf("DefaultStrategies shares its maps or lists: %v", b)
	}
}

func TestConfigRangeAllows(t *testing.T) {
	for _, c := range []struct {
		r    ConfigRange
		f    float64
		want bool
	}{
		{MaxRetriesRange, 0, true},
		{MaxRetriesRange, -1, false},
		{MaxRetriesRange, 1.5, false},
		{WindowSizeRange, 0, false},
		{WindowSizeRange, 1, true},
		{ThresholdRange, 0.5, true},
		{ThresholdRange, 1.01, false},
	} {
		if got := c.r.Allows(c.f); got != c.want {
			t.Errorf("%+v.Allows(%v) = %v, want %v", c.r, c.f, got, c.want)
		}
	}
}

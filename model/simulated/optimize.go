package simulated

// Optimization is what `simulate --optimize` found for one system: the
// search's settings and a search per layer of the retry core. A layer's
// parameters decide only its own episodes (provider requests and calls;
// L2 repair loops and L3 steps), so each layer is searched on its own
// objectives and the picks combine into one policy.
type Optimization struct {
	// System names whose episodes were searched.
	System string `json:"system"`
	// Settings are how the search ran, so a reader can run it again.
	Settings SearchSettings `json:"settings"`
	Layers   []Layer        `json:"layers"`
	// Notes say what in scope was not searched, and why.
	Notes []string `json:"notes,omitempty"`
}

// Layer is one layer's search: its objectives and space, the baseline,
// the Pareto front of the policies it tried, those it set apart as beyond
// the evidence, the pick under the constraints, and each front policy
// replayed on the later episodes it did not search on.
type Layer struct {
	// Name is what the layer replays: "provider requests" or "L2 loops
	// and L3 steps".
	Name string `json:"name"`
	// Objectives are what it weighs, figures of the catalog by key.
	Objectives []Objective `json:"objectives"`
	// Space is each parameter searched with the values it took.
	Space []Param `json:"space"`
	// Constraints are those of the search's that name an objective of
	// this layer.
	Constraints []string `json:"constraints"`
	// SearchEpisodes and HoldoutEpisodes count the episodes searched on
	// (the older runs') and those the front was checked on (the newer).
	SearchEpisodes  int `json:"search_episodes"`
	HoldoutEpisodes int `json:"holdout_episodes"`
	// HoldoutByTime says the holdout is the newest episodes by time, not
	// whole runs: whole runs could not hold even half its share (one run
	// held most episodes), so a run may be on both sides.
	HoldoutByTime bool `json:"holdout_by_time,omitempty"`
	// Tried counts the candidate policies evaluated, and Replays the
	// episode replays the search cost (every candidate in full would cost
	// Tried × SearchEpisodes).
	Tried   int `json:"candidates_tried"`
	Replays int `json:"episode_replays"`
	// Baseline is the baseline's place: its figures on the search
	// episodes and on the holdout.
	Baseline Candidate `json:"baseline"`
	// Front are the non-dominated policies within the evidence bound,
	// best success first.
	Front []Candidate `json:"front"`
	// Beyond are policies that would be on the front but whose outcomes
	// are estimated beyond the record more than the bound allows: shown,
	// never picked.
	Beyond []Candidate `json:"beyond_the_evidence"`
	// Pick is the index in Front of the policy the constraints pick, -1
	// when none meets them; NoPick then says which constraint binds.
	Pick   int    `json:"pick"`
	NoPick string `json:"no_pick,omitempty"`
}

// SearchSettings are an optimisation's inputs.
type SearchSettings struct {
	Seed uint64 `json:"seed"`
	// Candidates is how many policies the search draws from each layer's
	// space.
	Candidates int `json:"candidates"`
	// Holdout is the share of the newest runs kept out of the search (0
	// with --no-holdout).
	Holdout float64 `json:"holdout"`
	// EvidenceBound is the largest share of estimated outcomes a policy
	// may have and still be picked.
	EvidenceBound float64  `json:"evidence_bound"`
	Constraints   []string `json:"constraints"`
}

// Param is one parameter of the retry core and the values searched.
type Param struct {
	Name   string   `json:"name"`
	Values []string `json:"values"`
}

// Candidate is one policy of the search.
type Candidate struct {
	Policy string `json:"policy"`
	// Settings are the parameters that make it, "name=value" each, in
	// the space's order.
	Settings []string `json:"settings"`
	// Search is its replay on the search episodes, with intervals.
	Search Result `json:"search"`
	// EstimatedShare is the share of its search outcomes estimated beyond
	// the record.
	EstimatedShare float64 `json:"estimated_share"`
	// Holdout is its replay on the newer episodes; nil without a holdout.
	Holdout *Result `json:"holdout,omitempty"`
	// Kept says, for a front policy better than the baseline on the
	// search, whether it stays better on the holdout; nil when there is
	// no holdout or nothing to keep.
	Kept *bool `json:"advantage_kept,omitempty"`
	// Fails lists the constraints it does not meet.
	Fails []string `json:"fails,omitempty"`
}

// Objective is a figure of the catalog a search weighs, by key, and
// whether more is better.
type Objective struct {
	Key    string `json:"key"`
	Higher bool   `json:"higher_is_better"`
}

// ProviderObjectives are what the provider layer weighs: success,
// attempts, cost and time to resolution.
var ProviderObjectives = []Objective{
	{"success_rate", true},
	{"attempts", false},
	{"cost_usd", false},
	{"resolution_p95_seconds", false},
}

// LoopObjectives are what the L2 and L3 layer weighs: loops that pass,
// iterations, escalations to L3 and L3 diagnoses, each a step an agent
// pays for.
var LoopObjectives = []Objective{
	{"l2_success_rate", true},
	{"l2_iterations", false},
	{"escalations", false},
	{"diagnoses", false},
}

// ObjectiveValue is r's value of the objective named key, a figure of
// the catalog.
func ObjectiveValue(r Result, key string) float64 {
	f, _ := FigureOf(key)
	return f.Of(r).Value
}

package codex

import (
	"encoding/json"
)

// runDetail is the run's Detail: what the session says about itself, and
// how every line of the file was accounted for.
type runDetail struct {
	Format          string          `json:"format"`
	Cwd             string          `json:"cwd,omitempty"`
	Originator      string          `json:"originator,omitempty"`
	CLIVersion      string          `json:"cli_version,omitempty"`
	Source          json.RawMessage `json:"source,omitempty"`
	ModelProvider   string          `json:"model_provider,omitempty"`
	Models          []string        `json:"models"`
	ModelsCut       bool            `json:"models_cut,omitempty"`
	ToolCalls       int             `json:"tool_calls"`
	Turns           int             `json:"turns"`
	TurnAborted     int             `json:"turn_aborted"`
	LastTurnAborted bool            `json:"last_turn_aborted"`
	Lines           lineCounts      `json:"lines"`
	// RateLimits are the plan's figures of the rollout's last token_count
	// that carried any: Codex's server's own, copied.
	RateLimits *rateLimits `json:"rate_limits,omitempty"`
}

// lineCounts: read = used + ignored + problems.
type lineCounts struct {
	Read     int `json:"read"`
	Used     int `json:"used"`
	Ignored  int `json:"ignored"`
	Problems int `json:"problems"`
}

func (r *rollout) detail() []byte {
	d := runDetail{Format: "rollout", Models: r.Models, ModelsCut: r.ModelsCut, ToolCalls: r.ToolCalls, Turns: r.Turns,
		TurnAborted: r.Aborted, LastTurnAborted: r.LastAborted,
		Lines: lineCounts{Read: r.Used + r.Ignored + r.Problems, Used: r.Used,
			Ignored: r.Ignored, Problems: r.Problems}, RateLimits: r.RateLimits}
	if r.Legacy {
		d.Format = "legacy"
	}
	if d.Models == nil {
		d.Models = []string{}
	}
	if m := r.Meta; m != nil {
		d.Cwd, d.Originator, d.CLIVersion = m.Cwd, m.Originator, m.CLIVersion
		d.ModelProvider = r.provider()
		d.Source = m.Source // keep has dropped one too long to copy
	}
	b, err := json.Marshal(d)
	if err != nil {
		return nil
	}
	return b
}

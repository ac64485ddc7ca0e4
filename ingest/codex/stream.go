package codex

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/orchstat/orchstat/model/records"
)

// Stream reads rollouts a line at a time. Every rollout line is a whole
// JSON object, so there is no Lines: a file is always read as lines.
var Stream = records.StreamFormat{
	New:    func(path string) records.Stream { return newRollout(path) },
	Resume: resume,
}

// stateVersion names the layout of progress a State holds; a state of
// another version is refused, and the file read again from its start.
const stateVersion = 1

// saved is a State: progress and the version that wrote it.
type saved struct {
	Version  int      `json:"v"`
	Progress progress `json:"p"`
}

// Final returns, and forgets, the calls closed, their attempts, and the
// problems of the lines read.
func (r *rollout) Final() *records.Set {
	out := r.out
	r.out = &records.Set{}
	return out
}

// Open returns the run, and the call of the stream errors awaiting a
// response if any, as if the file ended here. A file none of whose lines
// so far is a rollout line (nor begins with a legacy header) is not a
// rollout: the whole-file error.
func (r *rollout) Open() (*records.Set, error) {
	set := &records.Set{}
	if r.Lines == 0 {
		return set, nil
	}
	if !r.Legacy && r.Envelopes == 0 {
		return nil, &records.Error{Line: r.FirstNo, Offset: r.FirstOff, Field: "type",
			Msg: "not a Codex rollout: no line is {timestamp, type, payload}"}
	}
	if c, attempts, ok := r.pendingCall(); ok {
		set.Calls, set.CallAttempts = []records.Call{c}, attempts
	}
	set.Runs = []records.Run{r.run()}
	return set, nil
}

// State is progress as versioned JSON: the open stream errors (at most
// maxAttempts) and the run's aggregates, never the calls already closed.
func (r *rollout) State() ([]byte, error) {
	return json.Marshal(saved{Version: stateVersion, Progress: r.progress})
}

// resume goes on from a State.
func resume(path string, state []byte) (records.Stream, error) {
	var s saved
	d := json.NewDecoder(bytes.NewReader(state))
	d.DisallowUnknownFields()
	if err := d.Decode(&s); err != nil {
		return nil, fmt.Errorf("codex stream state: %w", err)
	}
	if d.More() {
		return nil, fmt.Errorf("codex stream state: data after the state")
	}
	if s.Version != stateVersion {
		return nil, fmt.Errorf("codex stream state: version %d, want %d", s.Version, stateVersion)
	}
	p := s.Progress
	if p.Lines < 0 || p.Used < 0 || p.Ignored < 0 || p.Problems < 0 || p.Envelopes < 0 ||
		len(p.Pending) >= maxAttempts || len(p.Models) > maxModels {
		return nil, fmt.Errorf("codex stream state: counts out of range")
	}
	if p.Meta != nil {
		p.Meta.keep()
	}
	r := newRollout(path)
	r.progress = p
	return r, nil
}

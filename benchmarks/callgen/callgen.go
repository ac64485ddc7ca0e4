// Package callgen writes Claude Code transcripts as a heavy user's
// machines would hold them, for the agents' views' benchmark and tests:
// sessions of assistant lines (model calls, with usage) under
// DEVICE/.claude/projects/PROJECT/SESSION.jsonl, some of them retried
// (api_error lines), some failed (isApiErrorMessage), some of a model no
// price names, some sessions copied to a second device (a synced
// ~/.claude) or copied aside on the same one, and, when asked, calls at
// the edges of the 2026 daylight-saving changes of Europe/Berlin and
// America/New_York and of the local midnights around them.
//
// The lines are those of ingest/claudecode's format as Claude Code 2.1
// writes them (see ../shared/testdata-external/claude-code), cut to what
// a call needs; a seed makes the same files.
package callgen

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"time"
)

// Options are what Write makes.
type Options struct {
	// Calls is how many calls the sessions hold, copies not counted.
	Calls int
	// PerSession is the calls of one session (default 200).
	PerSession int
	// Start and Span are when sessions begin: uniformly within Span of
	// Start (default 2026-01-01 UTC and a year).
	Start time.Time
	Span  time.Duration
	// Seed makes the same files again.
	Seed uint64
	// DSTEdges adds a session of calls at the 2026 daylight-saving
	// changes of Europe/Berlin and America/New_York, a second either
	// side, and at the local midnights of the days around them.
	DSTEdges bool
}

// Stats say what Write wrote.
type Stats struct {
	Files, Calls, Copied, Lines int
	Bytes                       int64
}

// Models are the models calls name, the last without a price.
var Models = []string{"claude-opus-4-6", "claude-sonnet-4-5-20250929", "claude-haiku-4-5-20251001", "claude-mystery-9"}

// dstChanges are the 2026 changes of offset of the two zones, in UTC.
var dstChanges = []struct {
	zone string
	at   time.Time
}{
	{"Europe/Berlin", time.Date(2026, 3, 29, 1, 0, 0, 0, time.UTC)},
	{"Europe/Berlin", time.Date(2026, 10, 25, 1, 0, 0, 0, time.UTC)},
	{"America/New_York", time.Date(2026, 3, 8, 7, 0, 0, 0, time.UTC)},
	{"America/New_York", time.Date(2026, 11, 1, 6, 0, 0, 0, time.UTC)},
}

// Write writes the transcripts under dir.
func Write(dir string, o Options) (Stats, error) {
	if o.PerSession <= 0 {
		o.PerSession = 200
	}
	if o.Start.IsZero() {
		o.Start = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	}
	if o.Span <= 0 {
		o.Span = 365 * 24 * time.Hour
	}
	r := rand.New(rand.NewPCG(o.Seed, 40))
	w := &writer{dir: dir, r: r}
	for n, s := 0, 0; n < o.Calls; s++ {
		calls := min(o.PerSession, o.Calls-n)
		start := o.Start.Add(time.Duration(r.Int64N(int64(o.Span))))
		times := make([]time.Time, calls)
		for i := range times {
			times[i] = start
			start = start.Add(time.Duration(5+r.IntN(90)) * time.Second)
		}
		if err := w.session(s, times); err != nil {
			return w.st, err
		}
		n += calls
	}
	if o.DSTEdges {
		times, err := dstTimes()
		if err != nil {
			return w.st, err
		}
		if err := w.session(-1, times); err != nil {
			return w.st, err
		}
	}
	return w.st, nil
}

// dstTimes are the edges DSTEdges asks for, in time order.
func dstTimes() ([]time.Time, error) {
	var out []time.Time
	for _, c := range dstChanges {
		loc, err := time.LoadLocation(c.zone)
		if err != nil {
			return nil, fmt.Errorf("callgen: the DST edges need the zone %s: %w", c.zone, err)
		}
		for _, d := range []time.Duration{-time.Second, 0, time.Second} {
			out = append(out, c.at.Add(d))
		}
		local := c.at.In(loc)
		for day := -1; day <= 2; day++ {
			midnight := time.Date(local.Year(), local.Month(), local.Day()+day, 0, 0, 0, 0, loc)
			for _, d := range []time.Duration{-time.Second, 0, time.Second} {
				out = append(out, midnight.Add(d).UTC())
			}
		}
	}
	// Calls of one session are written in time order, as Claude Code does.
	for i := 1; i < len(out); i++ {
		for j := i; j > 0 && out[j].Before(out[j-1]); j-- {
			out[j], out[j-1] = out[j-1], out[j]
		}
	}
	return out, nil
}

// writer writes sessions and counts what it wrote.
type writer struct {
	dir string
	r   *rand.Rand
	st  Stats
}

// session writes session s (-1: the DST edges) with a call at each time,
// and its copies: every tenth session on a second device, every
// twenty-fifth aside on the same one.
func (w *writer) session(s int, times []time.Time) error {
	id := fmt.Sprintf("%08x-0000-4000-8000-%012x", uint32(s), uint64(s)*2654435761%(1<<48))
	project := fmt.Sprintf("/home/dev/projects/p%d", (s+1)%37)
	body := w.lines(id, project, times)
	paths := []string{filepath.Join(w.dir, "desktop", ".claude", "projects", "-home-dev-projects", id+".jsonl")}
	if s%10 == 3 {
		paths = append(paths, filepath.Join(w.dir, "laptop", ".claude", "projects", "-home-dev-projects", id+".jsonl"))
	}
	if s%25 == 7 {
		paths = append(paths, filepath.Join(w.dir, "desktop", ".claude", "projects", "aside", id+".jsonl"))
	}
	for i, p := range paths {
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(p, body, 0o644); err != nil {
			return err
		}
		w.st.Files++
		w.st.Bytes += int64(len(body))
		if i > 0 {
			w.st.Copied += len(times)
		}
	}
	w.st.Calls += len(times)
	return nil
}

// lines are a session's lines: per call an assistant line, after an
// api_error line for one call in 40, failed (isApiErrorMessage) for one
// in 150.
func (w *writer) lines(session, cwd string, times []time.Time) []byte {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	for i, t := range times {
		r := w.r
		model := Models[pick(r.Float64())]
		head := map[string]any{"parentUuid": nil, "isSidechain": false, "userType": "external", "cwd": cwd,
			"sessionId": session, "version": "2.1.38", "gitBranch": "main"}
		msg := fmt.Sprintf("msg_%s_%05d", session[:8], i)
		if r.IntN(40) == 0 {
			l := clone(head)
			l["type"], l["subtype"], l["level"] = "system", "api_error", "error"
			l["error"] = map[string]any{"message": "Overloaded", "status": 529}
			l["retryInMs"], l["retryAttempt"], l["maxRetries"] = 1000, 1, 10
			l["timestamp"], l["uuid"] = stamp(t.Add(-2*time.Second)), fmt.Sprintf("%s-e%d", session, i)
			_ = enc.Encode(l)
			w.st.Lines++
		}
		l := clone(head)
		failed := r.IntN(150) == 0
		usage := map[string]any{"input_tokens": 1 + r.IntN(20), "cache_creation_input_tokens": r.IntN(20000),
			"cache_read_input_tokens": r.IntN(200000), "output_tokens": 1 + r.IntN(4000), "service_tier": "standard"}
		content := []map[string]any{{"type": "text", "text": "Done."}}
		if failed {
			model, usage = "<synthetic>", map[string]any{"input_tokens": 0, "output_tokens": 0}
			content = []map[string]any{{"type": "text", "text": "API Error: 529 Overloaded"}}
			l["isApiErrorMessage"] = true
		}
		l["type"], l["requestId"], l["uuid"] = "assistant", fmt.Sprintf("req_%s_%05d", session[:8], i), fmt.Sprintf("%s-a%d", session, i)
		l["message"] = map[string]any{"model": model, "id": msg, "type": "message", "role": "assistant",
			"content": content, "stop_reason": "end_turn", "stop_sequence": nil, "usage": usage}
		l["timestamp"] = stamp(t)
		_ = enc.Encode(l)
		w.st.Lines++
	}
	return b.Bytes()
}

// pick is a model's index for a draw u in [0, 1): opus 45%, sonnet 40%,
// haiku 14%, the unpriced one 1%.
func pick(u float64) int {
	switch {
	case u < 0.45:
		return 0
	case u < 0.85:
		return 1
	case u < 0.99:
		return 2
	}
	return 3
}

func stamp(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000Z") }

func clone(m map[string]any) map[string]any {
	out := make(map[string]any, len(m)+8)
	for k, v := range m {
		out[k] = v
	}
	return out
}

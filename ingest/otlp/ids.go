package otlp

import (
	"encoding/binary"
	"encoding/json"
	"hash/fnv"
	"strconv"

	"github.com/orchstat/orchstat/model/records"
)

// ring remembers the last n ids handed out, by a 64-bit hash: enough to
// keep a trace or session that reappears after it closed (spans exported
// late, a session idle past the window) from repeating the run id of its
// first part, in bounded memory. A hash collision only renames an id.
type ring struct {
	n    int
	list []uint64 // oldest first
	has  map[uint64]int
}

func newRing(n int) *ring { return &ring{n: n, has: map[uint64]int{}} }

func hashID(id string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(id))
	return h.Sum64()
}

func (r *ring) taken(id string) bool { return r.has[hashID(id)] > 0 }

func (r *ring) add(id string) {
	h := hashID(id)
	r.list = append(r.list, h)
	r.has[h]++
	for len(r.list) > r.n {
		old := r.list[0]
		if r.has[old]--; r.has[old] == 0 {
			delete(r.has, old)
		}
		r.list = r.list[1:]
	}
	if cap(r.list) > 4*r.n+16 {
		r.list = append([]uint64(nil), r.list...)
	}
}

// bytes packs the ring for State.
func (r *ring) bytes() []byte {
	out := make([]byte, 0, 8*len(r.list))
	for _, h := range r.list {
		out = binary.BigEndian.AppendUint64(out, h)
	}
	return out
}

func ringFrom(n int, b []byte) (*ring, bool) {
	if len(b)%8 != 0 {
		return nil, false
	}
	if len(b) > 8*n {
		b = b[len(b)-8*n:] // a ring kept longer than this reader keeps
	}
	r := newRing(n)
	for ; len(b) > 0; b = b[8:] {
		h := binary.BigEndian.Uint64(b)
		r.list = append(r.list, h)
		r.has[h]++
	}
	return r, true
}

// claim gives the set's runs and calls ids that no closed group's rows
// (within the rings' memory) hold: an id taken gets a "#n" suffix, and
// rows naming it follow. keep records the ids as handed out.
func (s *stream) claim(set *records.Set, keep bool) {
	runIDs := make([]string, len(set.Runs))
	for i, r := range set.Runs {
		runIDs[i] = r.RunID
	}
	callIDs := make([]string, len(set.Calls))
	for i, c := range set.Calls {
		callIDs[i] = c.CallID
	}
	runs, calls := fresh(s.runs, runIDs), fresh(s.calls, callIDs)
	if runs != nil || calls != nil {
		rename(set, runs, calls)
	}
	if keep {
		for _, r := range set.Runs {
			s.runs.add(r.RunID)
		}
		for _, c := range set.Calls {
			s.calls.add(c.CallID)
		}
	}
}

// fresh renames the ids the ring holds, avoiding the ring and every other
// id of the set; nil when none is renamed.
func fresh(r *ring, ids []string) map[string]string {
	var out map[string]string
	used := map[string]bool{}
	for _, id := range ids {
		used[id] = true
	}
	for _, id := range ids {
		if !r.taken(id) {
			continue
		}
		for k := 2; ; k++ {
			c := id + "#" + strconv.Itoa(k)
			if !used[c] && !r.taken(c) {
				used[c] = true
				if out == nil {
					out = map[string]string{}
				}
				out[id] = c
				break
			}
		}
	}
	return out
}

func rename(set *records.Set, runs, calls map[string]string) {
	runOf := func(id string) string {
		if n, ok := runs[id]; ok {
			return n
		}
		return id
	}
	callOf := func(id string) string {
		if n, ok := calls[id]; ok {
			return n
		}
		return id
	}
	for i := range set.Runs {
		r := &set.Runs[i]
		r.RunID = runOf(r.RunID)
		var d runDetail
		if json.Unmarshal(r.Detail, &d) == nil && d.ParentRun != "" && runOf(d.ParentRun) != d.ParentRun {
			d.ParentRun = runOf(d.ParentRun)
			r.Detail = d.json()
		}
	}
	for i := range set.Calls {
		c := &set.Calls[i]
		c.RunID, c.CallID = runOf(c.RunID), callOf(c.CallID)
	}
	for i := range set.CallAttempts {
		a := &set.CallAttempts[i]
		a.RunID, a.CallID = runOf(a.RunID), callOf(a.CallID)
	}
}

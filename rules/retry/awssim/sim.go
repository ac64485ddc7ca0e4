// Package awssim replays the simulation behind Marc Brooker's "Exponential
// Backoff And Jitter" (AWS Architecture Blog, 2015) through orchstat's retry
// core, as a check of the core against a published anchor.
//
// The model follows the published simulator, aws-samples/
// aws-arch-backoff-simulator (src/backoff_simulator.py): N clients each
// update one row once under optimistic concurrency control. A client reads
// the row's version, then writes conditioned on that version; the write
// succeeds only if no other write landed in between. On a failed write the
// client sleeps a backoff and starts again with a read. Every message (read
// request, read reply, write request, write reply) crosses a network whose
// delay is |Normal(10 ms, 2 ms)|. The work is the number of writes the
// server sees; the completion time is when the last client learns its write
// succeeded.
//
// The waits come from retry.Backoff.Next, the function orchstat's live
// retries and replay use, never from formulas of this package's own.
package awssim

import (
	"container/heap"
	"math"
	"math/rand/v2"
	"time"

	"github.com/orchstat/orchstat/rules/retry"
)

// Net is the network's delay per message: |Normal(Mean, SD)|.
type Net struct {
	Mean time.Duration
	SD   time.Duration
}

// PublishedNet is the published simulator's network, Net(10, 2) in
// milliseconds (the post: "a mean of 10ms and variance of 4ms").
var PublishedNet = Net{Mean: 10 * time.Millisecond, SD: 2 * time.Millisecond}

// Config is one simulation run.
type Config struct {
	Clients int
	Backoff retry.Backoff
	Seed    uint64
	// Net is the network delay; the zero Net is PublishedNet.
	Net Net
	// FirstRetry is the retry index passed to Backoff.Next for a client's
	// first retry; later retries count up from it. 0 means 2, the published
	// simulator's: its sleep after failed attempt a (a = 1, 2, ...) is
	// min(cap, base·2^a), so its first sleep is 2×base, which is the core's
	// Base(2) with Initial = base. Set 1 for the core's own counting, where
	// the first retry waits Initial. Decorrelated jitter ignores the index.
	FirstRetry int
}

// Client is one client's share of a run.
type Client struct {
	Calls  int           // writes it sent, the successful one included
	Waited time.Duration // total backoff it slept
	Done   time.Duration // when it learnt its write succeeded
}

// Result is one run's outcome.
type Result struct {
	Calls      int           // writes the server saw: the post's "work" (the simulator's stats.calls)
	Failures   int           // writes that failed on a stale version
	Reads      int           // reads the server served
	Completion time.Duration // when the last client learnt its write succeeded
	Clients    []Client
}

type kind uint8

const (
	serverRead kind = iota
	clientReadReply
	serverWrite
	clientWriteReply
)

type event struct {
	at      time.Duration
	seq     uint64 // ties in time go in the order the events were sent
	kind    kind
	client  int
	version int  // the version read, or the version the write is conditioned on
	ok      bool // a write reply: whether the write succeeded
}

type queue []event

func (q queue) Len() int { return len(q) }
func (q queue) Less(i, j int) bool {
	if q[i].at != q[j].at {
		return q[i].at < q[j].at
	}
	return q[i].seq < q[j].seq
}
func (q queue) Swap(i, j int) { q[i], q[j] = q[j], q[i] }
func (q *queue) Push(x any)   { *q = append(*q, x.(event)) }
func (q *queue) Pop() any {
	old := *q
	e := old[len(old)-1]
	*q = old[:len(old)-1]
	return e
}

// NewRand is the random stream a run with this seed draws from: PCG, seeded.
// Network delays and backoff draws share it, as they share Python's global
// random in the published simulator.
func NewRand(seed uint64) *rand.Rand {
	return rand.New(rand.NewPCG(seed, 0x61777373696d)) // "awssim"
}

// Run simulates one run. It is pure: the same Config gives the same Result.
func Run(cfg Config) Result {
	if cfg.Clients <= 0 {
		return Result{}
	}
	net := cfg.Net
	if net == (Net{}) {
		net = PublishedNet
	}
	first := cfg.FirstRetry
	if first == 0 {
		first = 2
	}
	r := NewRand(cfg.Seed)
	delay := func() time.Duration {
		return time.Duration(math.Abs(float64(net.Mean) + float64(net.SD)*r.NormFloat64()))
	}

	res := Result{Clients: make([]Client, cfg.Clients)}
	attempts := make([]int, cfg.Clients)       // failed writes so far
	prev := make([]time.Duration, cfg.Clients) // the last backoff slept, for decorrelated jitter
	q := make(queue, 0, cfg.Clients)
	var seq uint64
	send := func(at time.Duration, k kind, c, version int, ok bool) {
		seq++
		heap.Push(&q, event{at: at, seq: seq, kind: k, client: c, version: version, ok: ok})
	}
	for c := range cfg.Clients {
		send(delay(), serverRead, c, 0, false)
	}

	version := 0 // the row's version at the server
	var now time.Duration
	for q.Len() > 0 {
		e := heap.Pop(&q).(event)
		now = e.at
		c := e.client
		switch e.kind {
		case serverRead:
			res.Reads++
			send(now+delay(), clientReadReply, c, version, false)
		case clientReadReply:
			send(now+delay(), serverWrite, c, e.version, false)
		case serverWrite:
			res.Calls++
			res.Clients[c].Calls++
			ok := e.version == version
			if ok {
				version++
			} else {
				res.Failures++
			}
			send(now+delay(), clientWriteReply, c, 0, ok)
		case clientWriteReply:
			if e.ok {
				res.Clients[c].Done = now
				continue
			}
			attempts[c]++
			d := delay() // the simulator draws the network delay before the backoff
			w := cfg.Backoff.Next(first+attempts[c]-1, prev[c], r)
			prev[c] = w
			res.Clients[c].Waited += w
			send(now+d+w, serverRead, c, 0, false)
		}
	}
	res.Completion = now
	return res
}

// Schedule is a named backoff schedule.
type Schedule struct {
	Name    string
	Backoff retry.Backoff
}

// Published are the post's schedules with its parameters, base 5 ms and cap
// 2000 ms, as orchstat Backoffs: no backoff at all, capped exponential
// without jitter, and full, equal and decorrelated jitter.
func Published() []Schedule {
	const base, ceiling = 5 * time.Millisecond, 2000 * time.Millisecond
	b := func(j retry.Jitter) retry.Backoff {
		return retry.Backoff{Initial: base, Max: ceiling, Factor: 2, Jitter: j}
	}
	return []Schedule{
		{"no backoff", retry.Backoff{}},
		{"exponential, no jitter", b(retry.JitterNone)},
		{"full jitter", b(retry.JitterFull)},
		{"equal jitter", b(retry.JitterEqual)},
		{"decorrelated jitter", b(retry.JitterDecorrelated)},
	}
}

// Stat is a sample mean with a 95% interval for it (normal approximation,
// mean ± 1.96·s/√n).
type Stat struct {
	Mean, Lo, Hi float64
}

func stat(xs []float64) Stat {
	n := float64(len(xs))
	if n == 0 {
		return Stat{}
	}
	var sum float64
	for _, x := range xs {
		sum += x
	}
	m := sum / n
	if len(xs) < 2 {
		return Stat{m, m, m}
	}
	var ss float64
	for _, x := range xs {
		ss += (x - m) * (x - m)
	}
	h := 1.96 * math.Sqrt(ss/(n-1)/n)
	return Stat{m, m - h, m + h}
}

// Summary is a configuration's outcome over several seeds.
type Summary struct {
	Runs         int
	Calls        Stat // writes per run
	CompletionMS Stat // completion time per run, in milliseconds
}

// Sweep runs cfg with the seeds cfg.Seed, cfg.Seed+1, ..., runs of them, and
// summarises the runs.
func Sweep(cfg Config, runs int) Summary {
	calls := make([]float64, 0, runs)
	done := make([]float64, 0, runs)
	for i := range runs {
		c := cfg
		c.Seed = cfg.Seed + uint64(i)
		res := Run(c)
		calls = append(calls, float64(res.Calls))
		done = append(done, float64(res.Completion)/float64(time.Millisecond))
	}
	return Summary{Runs: runs, Calls: stat(calls), CompletionMS: stat(done)}
}

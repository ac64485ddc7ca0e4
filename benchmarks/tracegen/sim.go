package tracegen

import (
	"math"
	"math/rand/v2"
	"strconv"
)

// sim builds one run. It keeps three random streams so that switching
// Chunks on or off, or changing a line's key order, never changes what the
// run does: rng decides behaviour and the clock, frng key order, crng the
// chunk text.
type sim struct {
	cfg  *Config
	rng  *rand.Rand
	frng *rand.Rand
	crng *rand.Rand
	prng *rand.Rand // prompts and outputs (PayloadBytes)

	id      string
	startMs int64
	now     int64
	ended   bool

	j        jw
	lines    int   // all trace lines
	cuts     []int // byte offset after each non-chunk line
	files    []pendingFile
	pid      int
	requests int
	cancelAt int // ordinal of the request the user aborts; 0 = never

	repo      repo
	goal      string
	artifacts string
	budgetMs  int64
	costCap   float64
	models    []model         // per provider, in providers order
	roles     [3]roleProvider // planner, executor, reviewer
	usage     []usage

	level      int // think level the summary reports
	escalated  bool
	l3         *l3Meta
	patchPaths []string
	touched    []string
	reports    []string
	verif      *summaryVerif
	manStarted int64
	initialMan []byte
	finalMan   []byte
	keep       int // non-chunk lines kept by cut
}

type roleProvider struct {
	p     *provider
	model model
}

type usage struct {
	id       string
	in, out  int64
	cost     float64
	hasPrice bool
}

type l3Meta struct {
	candidatesGenerated, candidatesEvaluated int
	selected                                 string
	passing, reviewer, judge                 bool
	judgeReason                              string
	evalPaths                                []string
}

type summaryVerif struct {
	enabled, passed bool
	failedChecks    int // -1 = omitted, as in runs that passed
}

// pendingFile is an artifact and the number of non-chunk trace lines that
// existed when it was written, so a cut-short run keeps only earlier files.
type pendingFile struct {
	name  string
	data  []byte
	after int
}

const (
	saltFormat = 0x9e3779b97f4a7c15
	saltChunks = 0xc2b2ae3d27d4eb4f
	saltPrompt = 0x165667b19e3779f9
)

func newSim(cfg *Config, i int) *sim {
	s := &sim{
		cfg:  cfg,
		rng:  rand.New(rand.NewPCG(cfg.Seed, uint64(i))),
		frng: rand.New(rand.NewPCG(cfg.Seed^saltFormat, uint64(i))),
		crng: rand.New(rand.NewPCG(cfg.Seed^saltChunks, uint64(i))),
		prng: rand.New(rand.NewPCG(cfg.Seed^saltPrompt, uint64(i))),
	}
	s.startMs = runStart(cfg, i, s.rng)
	s.id = strconv.FormatInt(s.startMs, 10)
	s.now = s.startMs
	return s
}

// runStart spreads runs evenly over the window with jitter inside each slot,
// so start times, and with them the Date.now() runIds, strictly increase.
func runStart(cfg *Config, i int, r *rand.Rand) int64 {
	base := cfg.Start.UnixMilli()
	span := int64(cfg.Days) * 86_400_000
	if cfg.Runs == 0 {
		return base
	}
	slot := span / int64(cfg.Runs)
	if slot < 2 {
		return base + int64(i)
	}
	return base + int64(i)*slot + r.Int64N(slot/2)
}

func (s *sim) chance(p float64) bool { return s.rng.Float64() < p }

func (s *sim) between(lo, hi int64) int64 {
	if hi <= lo {
		return lo
	}
	return lo + s.rng.Int64N(hi-lo+1)
}

func (s *sim) tick(lo, hi int64) { s.now += s.between(lo, hi) }

func pick[T any](r *rand.Rand, xs []T) T { return xs[r.IntN(len(xs))] }

// Envelope key orders seen in the orchestrator's source and traces:
// t=type v=schemaVersion s=timestamp r=runId p=payload.
const (
	orderDefault    = "tvsrp"
	orderRunIDFirst = "tvrsp" // RunEscalated, CandidateGenerated, DiagnosisStarted
	orderSubprocess = "trsvp" // SubprocessSpawned/OutputChunked/Exited
	orderParsed     = "vsrtp" // SubprocessParsed
	orderLate       = "tvrps" // payload before timestamp
)

func baseOrder(typ string) string {
	switch typ {
	case "RunEscalated", "CandidateGenerated", "DiagnosisStarted":
		return orderRunIDFirst
	case "SubprocessSpawned", "SubprocessOutputChunked", "SubprocessExited":
		return orderSubprocess
	case "SubprocessParsed":
		return orderParsed
	}
	return orderDefault
}

type line struct {
	s     *sim
	typ   string
	ts    int64
	rest  string
	chunk bool
}

// ev starts a trace line stamped with the current clock. Write the payload
// through w() and end the line with done.
func (s *sim) ev(typ string) *line { return s.evAt(typ, s.now, false) }

func (s *sim) evAt(typ string, ts int64, chunk bool) *line {
	order := baseOrder(typ)
	r := s.frng
	if chunk {
		r = s.crng
	}
	if r.IntN(100) < 4 {
		order = orderLate
	}
	l := &line{s: s, typ: typ, ts: ts, chunk: chunk}
	j := &s.j
	j.obj()
	for i := 0; i < len(order); i++ {
		if order[i] == 'p' {
			l.rest = order[i+1:]
			break
		}
		l.key(order[i])
	}
	j.key("payload").obj()
	return l
}

func (l *line) key(k byte) {
	j := &l.s.j
	switch k {
	case 't':
		j.kstr("type", l.typ)
	case 'v':
		j.knum("schemaVersion", 1)
	case 's':
		j.key("timestamp").ts(l.ts)
	case 'r':
		j.kstr("runId", l.s.id)
	}
}

func (l *line) w() *jw { return &l.s.j }

func (l *line) done() {
	s := l.s
	s.j.end()
	for i := 0; i < len(l.rest); i++ {
		l.key(l.rest[i])
	}
	s.j.end()
	s.j.b = append(s.j.b, '\n')
	s.lines++
	if !l.chunk {
		s.cuts = append(s.cuts, len(s.j.b))
	}
}

func (s *sim) addFile(name string, data []byte) {
	s.files = append(s.files, pendingFile{name: name, data: data, after: len(s.cuts)})
}

// --- provider requests -------------------------------------------------

type reqOutcome struct {
	rp      roleProvider
	retries int
	ok      bool
	err     string
	dur     int64
	in, out int64
}

// draw decides a request's fate the way executeProviderRequest plays out:
// failed attempts, backoff sleeps of min(10000, 1000*2^(n-1)) ±10%, and the
// last error's message on failure.
func (s *sim) draw(rp roleProvider) reqOutcome {
	o := reqOutcome{rp: rp, ok: true}
	retryP, fatalP := s.cfg.RetryProb, s.cfg.FatalProb
	for _, in := range s.cfg.Incidents {
		if in.Provider == rp.p.id && s.now >= in.From.UnixMilli() && s.now < in.To.UnixMilli() {
			retryP, fatalP = in.RetryProb, in.FatalProb
		}
	}
	u := s.rng.Float64()
	switch {
	case u < fatalP:
		o.ok = false
		o.err = pick(s.rng, fatalErrors)
		o.dur = s.between(90, 900)
		return o
	case u < fatalP+retryP:
		o.retries = 1
		if v := s.rng.Float64(); v < 0.15 {
			o.retries = 3
		} else if v < 0.40 {
			o.retries = 2
		}
		o.ok = o.retries < 3 || !s.chance(s.cfg.ExhaustProb)
	}
	failures := o.retries
	if !o.ok {
		failures++ // the last attempt failed too
	}
	kind := s.retriedKind()
	for n := 1; n <= failures; n++ {
		if n > 1 && s.chance(0.3) { // errors mostly persist within a request
			kind = s.retriedKind()
		}
		k := retriedErrors[kind]
		o.err = pick(s.rng, k.msgs)
		o.dur += s.between(k.minMs, k.maxMs)
		if n <= o.retries {
			o.dur += backoff(n, s.rng.Float64())
		}
	}
	if o.ok {
		o.err = ""
		o.dur += s.attemptMs(rp.model)
		o.in = s.between(1500, 42000)
		o.out = s.between(120, 4200)
	}
	return o
}

func (s *sim) retriedKind() int {
	u := s.rng.Float64()
	for i, k := range retriedErrors {
		if u < k.weight {
			return i
		}
		u -= k.weight
	}
	return len(retriedErrors) - 1
}

// backoff is the adapter's delay before retry n (1-based) for a uniform
// draw u in [0,1).
func backoff(n int, u float64) int64 {
	d := math.Min(10000, 1000*math.Pow(2, float64(n-1)))
	return int64(math.Round(math.Max(0, d+d*0.1*(u*2-1))))
}

func (s *sim) attemptMs(m model) int64 {
	return int64(m.medianMs * math.Exp(0.45*s.rng.NormFloat64()))
}

func (s *sim) started(rp roleProvider) {
	l := s.ev("ProviderRequestStarted")
	l.w().kstr("provider", rp.p.id).kstr("model", rp.model.name)
	if n := s.cfg.PayloadBytes; n > 0 {
		l.w().kstr("prompt", payloadText(s.prng, n))
	}
	l.done()
}

func (s *sim) finished(o reqOutcome) {
	l := s.ev("ProviderRequestFinished")
	w := l.w().kstr("provider", o.rp.p.id).knum("durationMs", o.dur).kbool("success", o.ok)
	if !o.ok {
		w.kstr("error", o.err)
	}
	w.knum("retries", int64(o.retries))
	if n := s.cfg.PayloadBytes; n > 0 && o.ok {
		w.kstr("output", payloadText(s.prng, n))
	}
	l.done()
	if o.ok {
		s.account(o)
	}
}

func (s *sim) account(o reqOutcome) {
	var u *usage
	for i := range s.usage {
		if s.usage[i].id == o.rp.p.id {
			u = &s.usage[i]
		}
	}
	if u == nil {
		s.usage = append(s.usage, usage{id: o.rp.p.id})
		u = &s.usage[len(s.usage)-1]
	}
	u.in += o.in
	u.out += o.out
	if o.rp.model.inPerM > 0 {
		u.hasPrice = true
		u.cost += (float64(o.in)*o.rp.model.inPerM + float64(o.out)*o.rp.model.outPerM) / 1e6
	}
}

// call makes one provider request and returns its error message ("" on
// success). A user abort ends the run here: no Finished line is written.
func (s *sim) call(rp roleProvider) string {
	s.requests++
	s.tick(1, 8)
	s.started(rp)
	if s.requests == s.cancelAt {
		s.tick(500, 20000)
		s.finishCancelled()
		return "cancelled"
	}
	o := s.draw(rp)
	s.now += o.dur
	s.finished(o)
	return o.err
}

// request is call for requests whose failure ends the run.
func (s *sim) request(rp roleProvider) bool {
	if err := s.call(rp); err != "" {
		if !s.ended {
			s.finish("failure", "error", "Provider request failed: "+err)
		}
		return false
	}
	return true
}

// concurrent runs two requests side by side (planning plus a research pass),
// so their Started lines come before either Finished. Only the first one's
// failure ends the run: research errors are swallowed.
func (s *sim) concurrent(a, b roleProvider) bool {
	s.requests += 2
	s.tick(1, 8)
	s.started(a)
	t0 := s.now
	s.tick(0, 3)
	s.started(b)
	t1 := s.now
	oa, ob := s.draw(a), s.draw(b)
	endA, endB := t0+oa.dur, t1+ob.dur
	if endA <= endB {
		s.now = endA
		s.finished(oa)
		s.now = endB
		s.finished(ob)
	} else {
		s.now = endB
		s.finished(ob)
		s.now = endA
		s.finished(oa)
	}
	if !oa.ok {
		s.finish("failure", "error", "Provider request failed: "+oa.err)
		return false
	}
	return true
}

// --- subprocesses ---------------------------------------------------------

type procOut struct{ stdout, stderr string }

// subprocess emits Spawned, the output chunks (if enabled) spread over the
// process's lifetime, and Exited. out is only called when chunks are on, and
// must draw only from crng.
func (s *sim) subprocess(cmd []string, dur int64, exit int, out func() procOut) int {
	s.pid += 1 + s.rng.IntN(40)
	pid := int64(s.pid)
	s.tick(1, 5)
	l := s.ev("SubprocessSpawned")
	l.w().key("command").strs(cmd)
	l.w().kstr("cwd", s.repo.root).knum("pid", pid).kbool("pty", false)
	l.done()
	start := s.now
	if s.cfg.Chunks {
		s.chunks(pid, start, dur, out())
	}
	s.now = start + dur
	l = s.ev("SubprocessExited")
	l.w().knum("pid", pid).knum("exitCode", int64(exit)).key("signal").null()
	l.w().knum("durationMs", dur)
	l.done()
	return int(pid)
}

func (s *sim) chunks(pid, start, dur int64, o procOut) {
	out := splitChunks(s.crng, o.stdout)
	errs := splitChunks(s.crng, o.stderr)
	n := len(out) + len(errs)
	sampled := n > 8
	for k := 0; k < n; k++ {
		stream, text := "stdout", ""
		// interleave the streams in a random but order-preserving way
		if len(errs) > 0 && (len(out) == 0 || s.crng.IntN(n-k) < len(errs)) {
			stream, text, errs = "stderr", errs[0], errs[1:]
		} else {
			text, out = out[0], out[1:]
		}
		ts := start + dur*int64(k+1)/int64(n+1)
		l := s.evAt("SubprocessOutputChunked", ts, true)
		w := l.w().knum("pid", pid).kstr("stream", stream).kstr("chunk", text)
		if sampled && s.crng.IntN(3) == 0 {
			w.kbool("isSampled", true)
		}
		l.done()
	}
}

func (s *sim) chunkSize(mean float64) int {
	return int(s.cfg.ChunkScale * mean * (0.3 + s.crng.ExpFloat64()*0.7))
}

var cliFor = map[string][]string{
	"anthropic": {"claude", "-p", "--output-format", "text"},
	"openai":    {"codex", "exec", "--json"},
	"google":    {"gemini", "--prompt", "-"},
}

// cliOutput is a model's answer streamed through its CLI adapter and then
// parsed; gen renders the text and must draw only from crng.
func (s *sim) cliOutput(rp roleProvider, kind string, gen func() string) {
	dur := s.between(20, 400)
	s.subprocess(cliFor[rp.p.id], dur, 0, func() procOut { return procOut{stdout: gen()} })
	s.tick(0, 2)
	conf := 0.2
	if kind != "text" {
		conf = float64(60+s.rng.IntN(40)) / 100
	}
	l := s.ev("SubprocessParsed")
	l.w().kstr("kind", kind).key("confidence").float(conf)
	l.done()
}

// diffOutput is cliOutput for an executor answer: a diff, or prose when the
// model produced none.
func (s *sim) diffOutput(rp roleProvider, files []string, hasDiff bool) {
	if !hasDiff {
		s.cliOutput(rp, "text", func() string {
			return "I could not find the code this step refers to. Could you point me at the file?\n"
		})
		return
	}
	s.cliOutput(rp, "diff", func() string { return executorOutput(s.crng, files, s.chunkSize(1300)) })
}

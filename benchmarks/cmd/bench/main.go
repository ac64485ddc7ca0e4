// Command bench runs a small spec of named commands several times each and
// reports the median wall time, CPU time and peak RSS of each, then checks
// targets stated against those medians.
//
//	bench -spec spec.json [-n 5] [-interleave] [-md results.md] [-json results.json]
//
// The spec is JSON:
//
//	{
//	  "commands": [
//	    {"name": "a", "desc": "ingest into a new db",
//	     "argv": ["./orchstat", "--db", "x.db", "ingest", "--quiet", "corpus"],
//	     "before": "rm -f x.db x.db.wal",   // shell, run untimed before each repetition
//	     "probe": "./orchstat check --help", // shell; if it fails the command is "not available"
//	     "n": 3},                            // repetitions (default -n)
//	    {"name": "e", "shell": "cat ... | jq ... | sort | uniq -c",  // run with bash -c
//	     "stdout": "e.out"}                  // keep the last repetition's stdout here
//	  ],
//	  "targets": [
//	    {"label": "(b) <= 0.3 s", "cmd": "b", "metric": "wall", "limit": 0.3},
//	    {"label": "(a) <= 0.5 x (d)", "cmd": "a", "metric": "wall", "ref": "d", "factor": 0.5},
//	    {"label": "RSS(a) <= 300 MB", "cmd": "a", "metric": "rss", "limit": 300}
//	  ]
//	}
//
// Metrics: wall in seconds, cpu (user+system) in seconds, rss in MB
// (1 MB = 10^6 bytes; Linux reports ru_maxrss in KiB). A target has either a
// limit or a ref and a factor: the bound is factor times ref's median.
//
// Peak RSS is ru_maxrss of the waited-for child. For a "shell" command that
// is the largest single process of the pipeline (the kernel folds reaped
// descendants in as a maximum, not a sum).
//
// A repetition that exits non-zero stops that command: it is reported as
// failed with the first line of its stderr, and its targets as "n/a".
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"sort"
	"strings"
	"syscall"
	"time"
)

type Command struct {
	Name   string   `json:"name"`
	Desc   string   `json:"desc,omitempty"`
	Argv   []string `json:"argv,omitempty"`
	Shell  string   `json:"shell,omitempty"`
	Before string   `json:"before,omitempty"`
	Probe  string   `json:"probe,omitempty"`
	N      int      `json:"n,omitempty"`
	Stdout string   `json:"stdout,omitempty"`
}

type Target struct {
	Label  string  `json:"label"`
	Cmd    string  `json:"cmd"`
	Metric string  `json:"metric"`
	Limit  float64 `json:"limit,omitempty"`
	Ref    string  `json:"ref,omitempty"`
	Factor float64 `json:"factor,omitempty"`
}

type Spec struct {
	Commands []Command `json:"commands"`
	Targets  []Target  `json:"targets"`
}

type Sample struct {
	Wall  float64 `json:"wall_s"`
	CPU   float64 `json:"cpu_s"`
	RSSMB float64 `json:"rss_mb"`
	Load  float64 `json:"loadavg_before"` // 1-minute load average just before
}

type Result struct {
	Name    string   `json:"name"`
	Desc    string   `json:"desc,omitempty"`
	Command string   `json:"command"`
	Status  string   `json:"status"` // ok, failed, not available
	Detail  string   `json:"detail,omitempty"`
	Samples []Sample `json:"samples"`
	Wall    float64  `json:"median_wall_s"`
	CPU     float64  `json:"median_cpu_s"`
	RSSMB   float64  `json:"median_rss_mb"`
	MaxRSS  float64  `json:"max_rss_mb"`
	Load    float64  `json:"median_loadavg_before"` // median of the samples' 1-minute load averages
}

type TargetResult struct {
	Target
	Measured float64 `json:"measured"`
	Bound    float64 `json:"bound"`
	Ratio    float64 `json:"ratio"` // measured / bound
	Verdict  string  `json:"verdict"`
	Note     string  `json:"note,omitempty"`
}

// MarshalJSON writes NaN (not measured) as null, which encoding/json
// cannot do by itself.
func (t TargetResult) MarshalJSON() ([]byte, error) {
	type plain TargetResult
	return json.Marshal(struct {
		plain
		Measured *float64 `json:"measured"`
		Bound    *float64 `json:"bound"`
		Ratio    *float64 `json:"ratio"`
	}{plain(t), nullNaN(t.Measured), nullNaN(t.Bound), nullNaN(t.Ratio)})
}

func nullNaN(v float64) *float64 {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return nil
	}
	return &v
}

type Report struct {
	Started  time.Time      `json:"started"`
	Results  []Result       `json:"results"`
	Targets  []TargetResult `json:"targets"`
	Duration float64        `json:"duration_s"`
}

func main() {
	specPath := flag.String("spec", "", "spec file (JSON); - for stdin")
	n := flag.Int("n", 5, "repetitions of each command that does not set its own n")
	mdPath := flag.String("md", "", "write the Markdown tables here")
	jsonPath := flag.String("json", "", "write the raw results here")
	timeout := flag.Duration("timeout", 15*time.Minute, "limit for one repetition")
	interleave := flag.Bool("interleave", false, "run the commands round-robin, one repetition each per round, instead of all repetitions of one command before the next")
	flag.Parse()
	if *specPath == "" {
		fmt.Fprintln(os.Stderr, "bench: -spec is required")
		os.Exit(2)
	}
	spec, err := readSpec(*specPath)
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(2)
	}
	rep := Report{Started: time.Now()}
	b := newBench(spec.Commands, *n, *timeout)
	if *interleave {
		b.roundRobin()
	} else {
		b.inTurn()
	}
	rep.Results = b.results
	rep.Targets = evalTargets(spec.Targets, rep.Results)
	rep.Duration = time.Since(rep.Started).Seconds()
	if err := writeReport(rep, *mdPath, *jsonPath); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

// bench runs a spec's commands: reps[i] repetitions of command i, each
// limited to timeout, measured into results[i].
type bench struct {
	cmds    []Command
	reps    []int
	results []Result
	timeout time.Duration
}

// newBench prepares cmds, each repeated its own n times or else n.
func newBench(cmds []Command, n int, timeout time.Duration) *bench {
	b := &bench{cmds: cmds, reps: make([]int, len(cmds)), results: make([]Result, len(cmds)), timeout: timeout}
	for i, c := range cmds {
		b.reps[i] = c.N
		if b.reps[i] <= 0 {
			b.reps[i] = n
		}
		b.results[i] = Result{Name: c.Name, Desc: c.Desc, Command: c.display(), Status: "ok"}
	}
	return b
}

// inTurn runs every repetition of one command before the next.
func (b *bench) inTurn() {
	for i, c := range b.cmds {
		probe(c, &b.results[i])
		for k := 0; k < b.reps[i]; k++ {
			runRep(c, &b.results[i], k, b.reps[i], b.timeout)
		}
		b.done(i)
	}
}

// roundRobin runs repetition k of every command before repetition k+1 of
// any, so a burst of load from elsewhere spreads over all commands instead
// of landing on one. Commands run in spec order within a round, so one may
// use what an earlier one left.
func (b *bench) roundRobin() {
	for i, c := range b.cmds {
		probe(c, &b.results[i])
	}
	rounds := 0
	for _, n := range b.reps {
		rounds = max(rounds, n)
	}
	for k := 0; k < rounds; k++ {
		for i, c := range b.cmds {
			if k < b.reps[i] {
				runRep(c, &b.results[i], k, b.reps[i], b.timeout)
			}
		}
	}
	for i := range b.cmds {
		b.done(i)
	}
}

// done summarises command i's samples and says so on stderr.
func (b *bench) done(i int) {
	finish(&b.results[i])
	fmt.Fprintf(os.Stderr, "bench: %-14s %s\n", b.cmds[i].Name, summary(b.results[i]))
}

// writeReport prints the Markdown tables, and writes them to mdPath and
// the raw results to jsonPath when these are set.
func writeReport(rep Report, mdPath, jsonPath string) error {
	md := markdown(rep)
	fmt.Print(md)
	if mdPath != "" {
		if err := os.WriteFile(mdPath, []byte(md), 0o644); err != nil {
			return err
		}
	}
	if jsonPath == "" {
		return nil
	}
	b, err := json.MarshalIndent(rep, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(jsonPath, append(b, '\n'), 0o644)
}

func readSpec(path string) (*Spec, error) {
	var b []byte
	var err error
	if path == "-" {
		b, err = io.ReadAll(os.Stdin)
	} else {
		b, err = os.ReadFile(path)
	}
	if err != nil {
		return nil, err
	}
	var s Spec
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&s); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	seen := map[string]bool{}
	for _, c := range s.Commands {
		if c.Name == "" || seen[c.Name] {
			return nil, fmt.Errorf("%s: command names must be set and unique (%q)", path, c.Name)
		}
		seen[c.Name] = true
		if (len(c.Argv) == 0) == (c.Shell == "") {
			return nil, fmt.Errorf("%s: command %s needs exactly one of argv and shell", path, c.Name)
		}
	}
	for _, t := range s.Targets {
		if !seen[t.Cmd] || (t.Ref != "" && !seen[t.Ref]) {
			return nil, fmt.Errorf("%s: target %q names an unknown command", path, t.Label)
		}
		switch t.Metric {
		case "wall", "cpu", "rss":
		default:
			return nil, fmt.Errorf("%s: target %q: metric must be wall, cpu or rss", path, t.Label)
		}
		if (t.Ref == "") == (t.Limit == 0) || (t.Ref != "" && t.Factor == 0) {
			return nil, fmt.Errorf("%s: target %q needs a limit, or a ref and a factor", path, t.Label)
		}
	}
	return &s, nil
}

func (c Command) display() string {
	if c.Shell != "" {
		return c.Shell
	}
	parts := make([]string, len(c.Argv))
	for i, a := range c.Argv {
		parts[i] = shellQuote(a)
	}
	return strings.Join(parts, " ")
}

func shellQuote(s string) string {
	if s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_./=:,+@%", r))
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// probe marks r not available if c's probe fails.
func probe(c Command, r *Result) {
	if c.Probe == "" {
		return
	}
	out, err := exec.Command("bash", "-c", c.Probe).CombinedOutput()
	if err != nil {
		r.Status = "not available"
		r.Detail = firstLine(string(out))
		if r.Detail == "" {
			r.Detail = err.Error()
		}
	}
}

// runRep runs repetition i of reps of c, unless r has already failed.
func runRep(c Command, r *Result, i, reps int, timeout time.Duration) {
	if r.Status != "ok" {
		return
	}
	if c.Before != "" {
		if out, err := exec.Command("bash", "-c", c.Before).CombinedOutput(); err != nil {
			r.Status = "failed"
			r.Detail = "before: " + firstLine(string(out)) + " " + err.Error()
			return
		}
	}
	load := loadavg()
	s, stdout, stderr, err := runOnce(c, timeout)
	if err != nil {
		r.Status = "failed"
		msg := firstLine(stderr)
		if msg == "" {
			msg = firstLine(stdout)
		}
		r.Detail = strings.TrimSpace(err.Error() + ": " + msg)
		return
	}
	s.Load = load
	r.Samples = append(r.Samples, s)
	if c.Stdout != "" && i == reps-1 {
		if err := os.WriteFile(c.Stdout, []byte(stdout), 0o644); err != nil {
			fmt.Fprintln(os.Stderr, "bench:", err)
		}
	}
}

// finish computes r's medians from its samples.
func finish(r *Result) {
	if r.Status != "ok" || len(r.Samples) == 0 {
		return
	}
	var w, cpu, rss, load []float64
	for _, s := range r.Samples {
		w = append(w, s.Wall)
		cpu = append(cpu, s.CPU)
		rss = append(rss, s.RSSMB)
		load = append(load, s.Load)
		r.MaxRSS = math.Max(r.MaxRSS, s.RSSMB)
	}
	r.Wall, r.CPU, r.RSSMB, r.Load = median(w), median(cpu), median(rss), median(load)
}

func runOnce(c Command, timeout time.Duration) (Sample, string, string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	var cmd *exec.Cmd
	if c.Shell != "" {
		cmd = exec.CommandContext(ctx, "bash", "-c", c.Shell)
	} else {
		cmd = exec.CommandContext(ctx, c.Argv[0], c.Argv[1:]...)
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout = &stdout
	cmd.Stderr = &stderr
	start := time.Now()
	err := cmd.Run()
	wall := time.Since(start).Seconds()
	if ctx.Err() != nil {
		return Sample{}, stdout.String(), stderr.String(), fmt.Errorf("timed out after %s", timeout)
	}
	if err != nil {
		var ee *exec.ExitError
		if !errors.As(err, &ee) {
			return Sample{}, stdout.String(), stderr.String(), err
		}
		return Sample{}, stdout.String(), stderr.String(), fmt.Errorf("exit %d", ee.ExitCode())
	}
	s := Sample{Wall: wall}
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		s.RSSMB = float64(ru.Maxrss) * 1024 / 1e6 // KiB on Linux
		s.CPU = tv(ru.Utime) + tv(ru.Stime)
	}
	return s, stdout.String(), stderr.String(), nil
}

// loadavg is the 1-minute load average, or 0 where /proc is missing. On
// a shared machine it shows whether something else was competing for the
// CPU (this benchmark's own previous command counts too: it decays slowly).
func loadavg() float64 {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return 0
	}
	var l float64
	if _, err := fmt.Sscan(string(b), &l); err != nil {
		return 0
	}
	return l
}

func tv(t syscall.Timeval) float64 { return float64(t.Sec) + float64(t.Usec)/1e6 }

func median(xs []float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	m := len(s) / 2
	if len(s)%2 == 1 {
		return s[m]
	}
	return (s[m-1] + s[m]) / 2
}

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	if len(s) > 200 {
		s = s[:197] + "..."
	}
	return s
}

func summary(r Result) string {
	if r.Status != "ok" {
		return r.Status + ": " + r.Detail
	}
	return fmt.Sprintf("median %s wall, %s cpu, %.0f MB peak RSS (n=%d)", secs(r.Wall), secs(r.CPU), r.RSSMB, len(r.Samples))
}

func metric(r Result, m string) float64 {
	switch m {
	case "wall":
		return r.Wall
	case "cpu":
		return r.CPU
	default:
		return r.RSSMB
	}
}

func evalTargets(ts []Target, rs []Result) []TargetResult {
	byName := map[string]Result{}
	for _, r := range rs {
		byName[r.Name] = r
	}
	var out []TargetResult
	for _, t := range ts {
		tr := TargetResult{Target: t, Measured: math.NaN(), Bound: math.NaN(), Ratio: math.NaN()}
		r := byName[t.Cmd]
		if r.Status != "ok" {
			tr.Verdict = "n/a"
			tr.Note = t.Cmd + " " + r.Status
			out = append(out, tr)
			continue
		}
		tr.Measured = metric(r, t.Metric)
		if t.Ref != "" {
			ref := byName[t.Ref]
			if ref.Status != "ok" {
				tr.Verdict = "n/a"
				tr.Note = t.Ref + " " + ref.Status
				out = append(out, tr)
				continue
			}
			tr.Bound = t.Factor * metric(ref, t.Metric)
		} else {
			tr.Bound = t.Limit
		}
		tr.Ratio = tr.Measured / tr.Bound
		if tr.Measured <= tr.Bound {
			tr.Verdict = "PASS"
			tr.Note = fmt.Sprintf("%.0f%% under the bound", (1-tr.Ratio)*100)
		} else {
			tr.Verdict = "MISS"
			tr.Note = fmt.Sprintf("%.0f%% over the bound (needs %.2fx less)", (tr.Ratio-1)*100, tr.Ratio)
		}
		out = append(out, tr)
	}
	return out
}

func secs(s float64) string {
	switch {
	case math.IsNaN(s):
		return "-"
	case s < 10:
		return fmt.Sprintf("%.3f s", s)
	default:
		return fmt.Sprintf("%.1f s", s)
	}
}

func unit(m string, v float64) string {
	if math.IsNaN(v) {
		return "-"
	}
	if m == "rss" {
		return fmt.Sprintf("%.0f MB", v)
	}
	return secs(v)
}

func mdCell(s string) string { return strings.ReplaceAll(s, "|", `\|`) }

func markdown(rep Report) string {
	var b strings.Builder
	b.WriteString("| | what | n | median wall | min–max wall | median CPU (user+sys) | median peak RSS | median load before | status |\n")
	b.WriteString("|---|---|---:|---:|---:|---:|---:|---:|---|\n")
	for _, r := range rep.Results {
		if r.Status != "ok" {
			fmt.Fprintf(&b, "| %s | %s | %d | - | - | - | - | - | %s: %s |\n", r.Name, mdCell(r.Desc), len(r.Samples), r.Status, mdCell(r.Detail))
			continue
		}
		lo, hi := math.Inf(1), math.Inf(-1)
		for _, s := range r.Samples {
			lo, hi = math.Min(lo, s.Wall), math.Max(hi, s.Wall)
		}
		fmt.Fprintf(&b, "| %s | %s | %d | %s | %s–%s | %s | %.0f MB | %.2f | ok |\n",
			r.Name, mdCell(r.Desc), len(r.Samples), secs(r.Wall), secs(lo), secs(hi), secs(r.CPU), r.RSSMB, r.Load)
	}
	if len(rep.Targets) > 0 {
		b.WriteString("\n| target | measured | bound | measured / bound | verdict | margin |\n")
		b.WriteString("|---|---:|---:|---:|---|---|\n")
		for _, t := range rep.Targets {
			ratio := "-"
			if !math.IsNaN(t.Ratio) {
				ratio = fmt.Sprintf("%.2f", t.Ratio)
			}
			bound := unit(t.Metric, t.Bound)
			if t.Ref != "" && !math.IsNaN(t.Bound) {
				bound = fmt.Sprintf("%s (%g × %s)", bound, t.Factor, t.Ref)
			}
			fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s |\n", mdCell(t.Label), unit(t.Metric, t.Measured), bound, ratio, t.Verdict, mdCell(t.Note))
		}
	}
	return b.String()
}

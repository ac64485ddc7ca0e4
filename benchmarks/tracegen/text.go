package tracegen

import (
	"math/rand/v2"
	"strconv"
	"strings"
)

// Subprocess output: test runners, compilers, linters and model output with
// diffs. The point is realistic bytes for the JSON escaper and the ingester
// (quotes, backslashes, newlines, non-ASCII), not realistic programs.

var codeLines = []string{
	`const re = /^\d{4}-\d{2}-\d{2}$/;`,
	"throw new Error(`Unexpected status ${res.status}: \"${res.statusText}\"`);",
	`logger.warn('retrying… attempt %d of %d', attempt, maxRetries);`,
	`return p.replace(/\\/g, '/'); // → normalise Windows separators`,
	`const label = t('checkout.total'); // "合計"`,
	`if (delay > maxDelayMs) delay = maxDelayMs;`,
	`await sleep(delay + delay * 0.1 * (Math.random() * 2 - 1));`,
	`expect(result).toEqual({ ok: true, value: "naïve café" });`,
	`const { data, error } = await client.get<Invoice[]>("/v1/invoices", { params });`,
	`export function normalize(input: string): string {`,
	`  if (!input) return "";`,
	`}`,
	`import { describe, it, expect, vi } from "vitest";`,
	`const WIN_PATH = "C:\\Users\\dev\\AppData\\Local\\Temp";`,
	`  // TODO(maria): handle the 'ECONNRESET' case ⚠️`,
	`  for (const [key, value] of Object.entries(headers)) {`,
	`    res.setHeader(key, String(value));`,
	`  return { status: 'ok', items: rows.map(toDto), next: cursor ?? null };`,
	"\tconst msg = `Größe: ${size} — übersprungen`;",
	`export const DEFAULT_TIMEOUT_MS = 60_000;`,
}

var tsErrors = []string{
	"error TS2345: Argument of type 'string | undefined' is not assignable to parameter of type 'string'.\n  Type 'undefined' is not assignable to type 'string'.",
	"error TS2322: Type '\"asc\" | \"desc\"' is not assignable to type 'SortOrder'.",
	"error TS2339: Property 'retryAfter' does not exist on type 'HttpError'.",
	"error TS7006: Parameter 'row' implicitly has an 'any' type.",
	"error TS2554: Expected 2 arguments, but got 1.",
	"error TS18048: 'opts.signal' is possibly 'undefined'.",
	"error TS2307: Cannot find module './schema.js' or its corresponding type declarations.",
}

var lintErrors = []string{
	"error  Promises must be awaited, end with a call to .catch, or end with a call to .then with a rejection handler  @typescript-eslint/no-floating-promises",
	"error  'delayMs' is assigned a value but never used  @typescript-eslint/no-unused-vars",
	"error  Unexpected any. Specify a different type  @typescript-eslint/no-explicit-any",
	"warning  Unexpected console statement  no-console",
	"error  Strings must use singlequote  quotes",
	"error  Unnecessary escape character: \\/  no-useless-escape",
}

var testNames = []string{
	"retries on 503 with backoff",
	"parses \"quoted\" header values",
	"normalises C:\\Users paths",
	"handles empty pages",
	"rejects invalid cursor",
	"keeps insertion order",
	"formats 2026-10-01 as 1 Oct",
	"renders ¥ and € amounts",
	"stops after maxRetries",
	"does not leak timers",
}

var assertions = []string{
	"AssertionError: expected 3 to be 2 // Object.is equality",
	"AssertionError: expected [ 'a', 'b' ] to deeply equal [ 'a', 'b', 'c' ]",
	"TypeError: Cannot read properties of undefined (reading 'status')",
	"Error: Timed out in waitFor after 1000ms.",
	"AssertionError: expected '/c/Users/dev' to be 'C:\\\\Users\\\\dev'",
	"Error: expect(received).toThrow(expected)\n\nExpected substring: \"ECONNRESET\"\nReceived function did not throw",
}

type textBuf struct {
	r *rand.Rand
	b []byte
}

func (t *textBuf) pick(xs []string) string { return xs[t.r.IntN(len(xs))] }
func (t *textBuf) line(parts ...string) {
	for _, p := range parts {
		t.b = append(t.b, p...)
	}
	t.b = append(t.b, '\n')
}
func (t *textBuf) int(n int) string { return strconv.Itoa(n) }

// stderrFor renders what a failing check prints. It depends only on the
// check and variant, so a repeated failure has the same text and therefore
// the same failure signature.
func stderrFor(check string, variant uint64) string {
	t := textBuf{r: rand.New(rand.NewPCG(variant, 0x5eed)), b: make([]byte, 0, 2048)}
	switch check {
	case "typecheck":
		t.line("")
		t.line("> app@1.4.0 typecheck")
		t.line("> tsc --noEmit -p tsconfig.json")
		t.line("")
		n := 1 + t.r.IntN(6)
		files := map[string]bool{}
		for range n {
			f := t.pick(sourceFiles)
			files[f] = true
			t.line(f, "(", t.int(1+t.r.IntN(300)), ",", t.int(1+t.r.IntN(40)), "): ", t.pick(tsErrors))
		}
		t.line("")
		t.line("Found ", t.int(n), " errors in ", t.int(len(files)), " files.")
	case "lint":
		t.line("")
		t.line("> app@1.4.0 lint")
		t.line("> eslint . --ext .ts,.tsx")
		t.line("")
		n := 1 + t.r.IntN(8)
		for range 1 + t.r.IntN(3) {
			t.line("/repo/", t.pick(sourceFiles))
			for range 1 + t.r.IntN(4) {
				t.line("  ", t.int(1+t.r.IntN(300)), ":", t.int(1+t.r.IntN(60)), "  ", t.pick(lintErrors))
			}
			t.line("")
		}
		t.line("✖ ", t.int(n), " problems (", t.int(n), " errors, 0 warnings)")
	default:
		t.line("")
		t.line("> app@1.4.0 test")
		t.line("> vitest run")
		t.line("")
		failed := 1 + t.r.IntN(3)
		for i := range failed {
			f := t.pick(testFiles)
			name := t.pick(testNames)
			t.line(" FAIL  ", f, " > ", strings.TrimSuffix(f[strings.LastIndexByte(f, '/')+1:], ".test.ts"), " > ", name)
			t.line(t.pick(assertions))
			t.line("")
			line := 10 + t.r.IntN(200)
			t.line(" ❯ ", f, ":", t.int(line), ":", t.int(3+t.r.IntN(30)))
			for k := range 4 {
				t.line("    ", t.int(line-2+k), "| ", t.pick(codeLines))
			}
			t.line("       |                           ^")
			t.line("")
			t.line("⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯[", t.int(i+1), "/", t.int(failed), "]⎯")
			t.line("")
		}
		t.line(" Test Files  ", t.int(failed), " failed | ", t.int(3+t.r.IntN(40)), " passed")
		t.line("      Tests  ", t.int(failed), " failed | ", t.int(20+t.r.IntN(400)), " passed")
	}
	return string(t.b)
}

// stdoutFor renders what a check prints to stdout; only used for chunks.
func stdoutFor(r *rand.Rand, check string, passed bool, size int) string {
	t := textBuf{r: r, b: make([]byte, 0, size+256)}
	t.line("")
	t.line("> app@1.4.0 ", check)
	t.line("")
	for len(t.b) < size {
		switch check {
		case "tests":
			f := t.pick(testFiles)
			if t.r.IntN(5) == 0 {
				t.line(" ✓ ", f, " > ", t.pick(testNames), " ", t.int(1+t.r.IntN(90)), "ms")
			} else {
				t.line(" ✓ ", f, " (", t.int(1+t.r.IntN(40)), " tests) ", t.int(2+t.r.IntN(900)), "ms")
			}
			if t.r.IntN(12) == 0 {
				t.line("stdout | ", f, " > ", t.pick(testNames))
				t.line("[retry] attempt ", t.int(1+t.r.IntN(3)), ": \"", t.pick(retriedErrors[0].msgs), "\"")
			}
		case "lint":
			t.line("Linting ", t.pick(sourceFiles), " … ok")
		default:
			t.line("[tsc] checking ", t.pick(sourceFiles), " (", t.int(1+t.r.IntN(400)), " ms)")
		}
	}
	if passed {
		t.line("")
		t.line(" Duration  ", t.int(1+t.r.IntN(9)), ".", t.int(t.r.IntN(100)), "s")
	}
	return string(t.b)
}

// diffText renders a unified diff touching files.
func diffText(r *rand.Rand, files []string, hunkLines int) string {
	t := textBuf{r: r, b: make([]byte, 0, 256+hunkLines*60*len(files))}
	for _, f := range files {
		t.line("diff --git a/", f, " b/", f)
		t.line("index ", hex7(r), "..", hex7(r), " 100644")
		t.line("--- a/", f)
		t.line("+++ b/", f)
		start := 1 + r.IntN(200)
		t.line("@@ -", t.int(start), ",", t.int(hunkLines), " +", t.int(start), ",", t.int(hunkLines+1), " @@")
		for i := range hunkLines {
			switch {
			case i%5 == 2:
				t.line("-", t.pick(codeLines))
			case i%5 == 3:
				t.line("+", t.pick(codeLines))
			default:
				t.line(" ", t.pick(codeLines))
			}
		}
		t.line("+", t.pick(codeLines))
	}
	return string(t.b)
}

func hex7(r *rand.Rand) string {
	var b [7]byte
	for i := range b {
		b[i] = hexDigits[r.IntN(16)]
	}
	return string(b[:])
}

// executorOutput is a model's answer as a CLI adapter prints it.
func executorOutput(r *rand.Rand, files []string, size int) string {
	var b strings.Builder
	b.WriteString("I'll make the change in ")
	b.WriteString(strings.Join(files, ", "))
	b.WriteString(". The current code doesn't handle the \"retry-after\" header — here's the patch:\n\nBEGIN_DIFF\n")
	hunk := max(4, size/(70*max(1, len(files))))
	b.WriteString(diffText(r, files, hunk))
	b.WriteString("END_DIFF\n")
	return b.String()
}

func planOutput(steps []string) string {
	var b strings.Builder
	for i, s := range steps {
		b.WriteString(strconv.Itoa(i + 1))
		b.WriteString(". ")
		b.WriteString(s)
		b.WriteByte('\n')
	}
	return b.String()
}

// splitChunks cuts s the way a pipe delivers it: arbitrary sizes, no regard
// for lines, never splitting a UTF-8 sequence (Node decodes before emitting).
func splitChunks(r *rand.Rand, s string) []string {
	var out []string
	for len(s) > 0 {
		n := 256 + r.IntN(3840)
		if n >= len(s) {
			out = append(out, s)
			break
		}
		c := truncateUTF8(s, n)
		out = append(out, c)
		s = s[len(c):]
	}
	return out
}

// payloadText is a prompt or a model's output of about n bytes (the lines
// of code and test output above, with their quotes, backslashes, tabs and
// non-ASCII), for PayloadBytes: a whole line past n is kept.
func payloadText(r *rand.Rand, n int) string {
	t := textBuf{r: r, b: make([]byte, 0, n+128)}
	for len(t.b) < n {
		switch t.r.IntN(4) {
		case 0:
			t.line(t.pick(assertions))
		case 1:
			t.line("  ", t.pick(testNames), ": ", t.pick(tsErrors))
		default:
			t.line(t.pick(codeLines))
		}
	}
	return string(t.b)
}

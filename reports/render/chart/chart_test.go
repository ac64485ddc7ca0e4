package chart

import (
	"bytes"
	"encoding/xml"
	"errors"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// chartDump, when set, writes each test chart to that directory as an
// HTML page, to look at in a browser: CHART_DUMP=/tmp/charts go test.
var chartDump = os.Getenv("CHART_DUMP")

// chartElements parses an SVG fragment as XML and counts its elements
// by name, failing on anything that is not well-formed.
func chartElements(t *testing.T, svg []byte) map[string]int {
	t.Helper()
	counts := map[string]int{}
	dec := xml.NewDecoder(bytes.NewReader(svg))
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("SVG is not well-formed XML: %v\n%s", err, svg)
		}
		if se, ok := tok.(xml.StartElement); ok {
			counts[se.Name.Local]++
		}
	}
	return counts
}

// chartCheck checks what every chart must be, and dumps it when asked.
func chartCheck(t *testing.T, name string, svg []byte, title string) map[string]int {
	t.Helper()
	s := string(svg)
	if !strings.HasPrefix(s, `<svg viewBox="0 0 320 `) || !strings.Contains(s[:300], `width="100%" role="img" aria-label="`+title+`"`) {
		t.Errorf("root element = %.200s", s)
	}
	if !strings.Contains(s, "<title>"+title+"</title>") {
		t.Errorf("no <title>%s</title>", title)
	}
	for _, bad := range []string{"http", "url(", "@import", "<?xml", "xmlns", "<script", "<image"} {
		if strings.Contains(s, bad) {
			t.Errorf("SVG holds %q", bad)
		}
	}
	if !strings.Contains(s[:300], `font-family="Liberation Sans, Arial, Helvetica, sans-serif"`) || strings.Count(s, "font-family") != 1 {
		t.Error("the face is not named once, on the root, with generic fallbacks")
	}
	counts := chartElements(t, svg)
	if counts["svg"] != 1 || counts["title"] != 1 {
		t.Errorf("want one svg and one title, got %v", counts)
	}
	if chartDump != "" {
		page := "<!doctype html><meta charset=utf-8><body style='margin:0'><div style='max-width:640px'>" + s + "</div>"
		if err := os.WriteFile(filepath.Join(chartDump, name+".html"), []byte(page), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return counts
}

// chartSVG draws c, failing the test on an error.
func chartSVG(t *testing.T, c interface{ SVG() ([]byte, error) }) []byte {
	t.Helper()
	svg, err := c.SVG()
	if err != nil {
		t.Fatal(err)
	}
	again, err := c.SVG()
	if err != nil || !bytes.Equal(svg, again) {
		t.Error("drawing twice gave different bytes")
	}
	return svg
}

func TestLine(t *testing.T) {
	l := Line{
		Title:      "Provider retry rate by day",
		Categories: []string{"2026-01-26", "2026-01-27", "2026-01-28", "2026-01-29", "2026-01-30"},
		Series:     []Series{{Name: "retry rate", Values: []float64{0.1, 0.25, nan, 0.3, math.Inf(1)}}},
		Thresholds: []Threshold{{Label: "> 20% (warning)", Value: 0.2}, {Label: "> 28% (critical)", Value: 0.28}},
		Percent:    true,
	}
	counts := chartCheck(t, "line", chartSVG(t, l), "Provider retry rate by day")
	// Paths: a frame, axes, ticks... count the marks instead: the three
	// drawn values are circles, the two that cross 20% are triangles.
	s := string(chartSVG(t, l))
	if n := strings.Count(s, "A2,2 0 1 1"); n < 3 { // a 2-pt circle's arc
		t.Errorf("%d circle arcs, want the 3 finite values", n)
	}
	if counts["text"] == 0 {
		t.Error("no text")
	}
	for _, want := range []string{"20%", "&gt; 20% (warning)", "crosses a threshold", "stroke-dasharray"} {
		if !strings.Contains(s, want) {
			t.Errorf("chart lacks %q", want)
		}
	}

	if _, err := (Line{Title: "x", Categories: []string{"a"}, Series: []Series{{Values: []float64{nan}}}}).SVG(); !errors.Is(err, ErrNoData) {
		t.Errorf("all-missing line: err = %v, want ErrNoData", err)
	}
}

func TestBars(t *testing.T) {
	h := Bars{Title: "Repair iterations per loop", Categories: []string{"1", "2", "3", "5"},
		Series: []Series{{Name: "loops", Values: []float64{12, 7, 3, 1}}}, XLabel: "iterations"}
	counts := chartCheck(t, "histogram", chartSVG(t, h), "Repair iterations per loop")
	if counts["text"] < 4 {
		t.Errorf("want a label per category, got %d texts", counts["text"])
	}

	g := Bars{Title: "Retry and failure rates <by> provider", Percent: true, Horizontal: true,
		Categories: []string{"anthropic/claude-sonnet-4", "anthropic/-", "openai/gpt-5-with-a-very-long-model-name"},
		Series: []Series{
			{Name: "retry rate", Values: []float64{0.2, 0.14, nan}},
			{Name: "failure rate", Values: []float64{0.009, 0}},
		}}
	svg := chartSVG(t, g)
	chartCheck(t, "grouped", svg, "Retry and failure rates &lt;by&gt; provider")
	s := string(svg)
	for _, want := range []string{"retry rate", "failure rate", "anthropic/claude-sonnet-4<", "openai/gpt-5-with-a-very-lo"} {
		if !strings.Contains(s, want) {
			t.Errorf("chart lacks %q", want)
		}
	}
	if strings.Contains(s, "long-model-name<") || !strings.Contains(s, "…<") {
		t.Errorf("a label wider than labelWidth is not cut:\n%s", s)
	}

	if _, err := (Bars{Title: "x"}).SVG(); !errors.Is(err, ErrNoData) {
		t.Errorf("no categories: err = %v, want ErrNoData", err)
	}
	many := Bars{Title: "x", Categories: make([]string, MaxBars+1), Series: []Series{{Values: make([]float64, MaxBars+1)}}}
	if _, err := many.SVG(); err == nil {
		t.Error("more than MaxBars categories drawn")
	}
}

func TestIntervals(t *testing.T) {
	c := Intervals{Title: "Success rate", Percent: true,
		Categories: []string{"baseline", "aws-standard", "no-retry"},
		Points: []Interval{
			{Value: 0.91, Low: 0.91, High: 0.91, Exact: true},
			{Value: 0.93, Low: 0.9, High: 0.95},
			{Value: 0.8, Low: 0.75, High: 0.86, Estimated: true},
		}}
	svg := chartSVG(t, c)
	chartCheck(t, "intervals", svg, "Success rate")
	s := string(svg)
	if n := strings.Count(s, ">est.</text>"); n != 1 {
		t.Errorf("%d est. labels, want 1", n)
	}
	for _, want := range []string{"95% interval", "estimated (est.)", "baseline", "no-retry"} {
		if !strings.Contains(s, want) {
			t.Errorf("chart lacks %q", want)
		}
	}
	if _, err := (Intervals{Title: "x", Categories: []string{"a"}, Points: []Interval{{Value: nan}}}).SVG(); !errors.Is(err, ErrNoData) {
		t.Errorf("no value: err = %v, want ErrNoData", err)
	}
}

func TestLabel(t *testing.T) {
	for in, want := range map[string]string{
		"plain":            "plain",
		"a\x1b[31mb\n":     "a\ufffd[31mb\ufffd",
		"bad\xff":          "bad\ufffd",
		"abcdefghijklmnop": "abcdefghi…",
	} {
		if got := Label(in, 10); got != want {
			t.Errorf("Label(%q) = %q, want %q", in, got, want)
		}
	}
}

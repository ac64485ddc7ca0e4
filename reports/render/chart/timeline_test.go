package chart

import (
	"math"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

func day(s string) time.Time {
	t, err := time.Parse(time.DateOnly, s)
	if err != nil {
		panic(err)
	}
	return t
}

// Days eleven months apart are drawn eleven months apart, with every
// label whole and ticks only where there is a label.
func TestTimelineGaps(t *testing.T) {
	tl := Timeline{Title: "Calls per day", XLabel: "day (UTC)",
		Periods: []Period{{day("2025-09-03"), 1}, {day("2025-09-07"), 1}, {day("2026-07-13"), 1}},
		Series:  []Series{{Name: "claude-sonnet-4", Values: []float64{177, 20, math.NaN()}}, {Name: "gpt-5", Values: []float64{0, 3, 2}}}}
	svg, err := tl.SVG()
	if err != nil {
		t.Fatal(err)
	}
	chartCheck(t, "timeline-gaps", svg, "Calls per day")
	s := string(svg)
	if strings.Contains(s, "…") {
		t.Error("a label is cut")
	}
	// The bars are the only filled paths in a series' colours.
	xs := barXs(s)
	if len(xs) != 3 {
		t.Fatalf("%d bars, want 3 (a NaN and a 0 draw none): %v", len(xs), xs)
	}
	if near, far := xs[1]-xs[0], xs[2]-xs[1]; far < 20*near {
		t.Errorf("bars at %v: four days apart drawn %.1f apart, ten months %.1f", xs, near, far)
	}
	for _, want := range []string{"2025-10", "2026-01"} {
		if !strings.Contains(s, ">"+want+"<") {
			t.Errorf("no tick labelled %s", want)
		}
	}
}

// barXs are the left edges of the bars: narrow paths filled with the
// palette's colours.
func barXs(s string) []float64 {
	re := regexp.MustCompile(`<path d="M([0-9.]+),[0-9.]+L([0-9.]+),[^"]*Z" style="fill:#(0072B2|E69F00|000000|CC79A7)`)
	seen := map[string]bool{}
	var xs []float64
	for _, m := range re.FindAllStringSubmatch(s, -1) {
		x, _ := strconv.ParseFloat(m[1], 64)
		x1, _ := strconv.ParseFloat(m[2], 64)
		if seen[m[1]] || x1-x > 10 { // a legend's swatch
			continue
		}
		seen[m[1]] = true
		xs = append(xs, x)
	}
	return xs
}

func TestTimelineNoData(t *testing.T) {
	if _, err := (Timeline{Periods: []Period{{day("2025-01-01"), 1}}, Series: []Series{{Values: []float64{math.NaN()}}}}).SVG(); err != ErrNoData {
		t.Errorf("err = %v, want ErrNoData", err)
	}
}

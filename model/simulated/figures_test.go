package simulated

import (
	"encoding/json"
	"math"
	"reflect"
	"strings"
	"testing"
)

// Every figure of the catalog is a Metric field of Result whose JSON name
// is the figure's key, every Metric field is in the catalog, and Diff
// holds every key: the JSON, the table and the page read one list.
func TestFigureCatalogIsResult(t *testing.T) {
	var r Result
	rv := reflect.ValueOf(&r).Elem()
	byAddr := map[uintptr]string{}
	metrics := map[string]bool{}
	for i := range rv.NumField() {
		f := rv.Type().Field(i)
		if f.Type != reflect.TypeFor[Metric]() {
			continue
		}
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		byAddr[rv.Field(i).Addr().Pointer()] = name
		metrics[name] = true
	}
	seen := map[string]bool{}
	for _, f := range Figures() {
		got := byAddr[reflect.ValueOf(f.field(&r)).Pointer()]
		if got != f.Key {
			t.Errorf("figure %q reads Result's %q", f.Key, got)
		}
		if seen[f.Key] {
			t.Errorf("figure %q twice", f.Key)
		}
		seen[f.Key] = true
		if f.Label == "" {
			t.Errorf("figure %q: no label", f.Key)
		}
	}
	for m := range metrics {
		if !seen[m] {
			t.Errorf("Result's %q is in no figure", m)
		}
	}
	b, _ := json.Marshal(r)
	var keys map[string]json.RawMessage
	json.Unmarshal(b, &keys)
	for _, k := range FigureKeys() {
		if _, ok := keys[k]; !ok {
			t.Errorf("JSON lacks %q", k)
		}
	}
}

func TestFigureText(t *testing.T) {
	fig := func(key string) Figure {
		for _, f := range Figures() {
			if f.Key == key {
				return f
			}
		}
		t.Fatalf("no figure %q", key)
		return Figure{}
	}
	for _, tc := range []struct {
		key       string
		m         Metric
		diff, est bool
		want      string
	}{
		{"attempts", exact(212), false, false, "212"},
		{"halts", exact(0), false, false, "0"},
		{"attempts", Metric{Value: -45, Lo: -64, Hi: -27}, true, true, "−45 [−64 to −27] est."},
		{"backoff_seconds", Metric{Value: -45.25, Lo: -63.9, Hi: -26.6}, true, false, "−45.2 [−63.9 to −26.6]"},
		{"backoff_seconds", exact(3.5), false, false, "3.50"},
		{"success_rate", Metric{Value: 0.961, Lo: 0.94, Hi: 0.98}, false, false, "96.1% [94.0 to 98.0]"},
		{"success_rate", Metric{Value: -0.05, Lo: -0.08, Hi: -0.02}, true, false, "−5.00 pp [−8.00 to −2.00]"},
		{"success_rate", exact(math.NaN()), false, false, "-"},
		{"l2_iterations", Metric{Value: 2.5, Lo: 1, Hi: 4}, false, false, "2.50 [1.00 to 4.00]"},
		{"cost_usd", exact(-0.004), true, false, "0.00"},
	} {
		if got := fig(tc.key).Text(tc.m, tc.diff, tc.est); got != tc.want {
			t.Errorf("%s %+v: %q, want %q", tc.key, tc.m, got, tc.want)
		}
	}
}

func exact(v float64) Metric { return Metric{Value: v, Lo: v, Hi: v, Exact: true} }

// FigureKeys are the figures' keys, in the catalog's order.
func FigureKeys() []string {
	out := make([]string, len(figureCatalog))
	for i, f := range figureCatalog {
		out[i] = f.Key
	}
	return out
}

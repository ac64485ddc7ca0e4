package render

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/prometheus/common/expfmt"
)

func TestWriteTextfileParses(t *testing.T) {
	path := filepath.Join(t.TempDir(), "orchstat.prom")
	samples := []PromSample{
		{Name: "rule_value", Help: "A rule's metric.", Labels: map[string]string{"rule": "r", "metric": "provider_retry_rate", "provider": `we"ird\` + "\n"}, Value: 0.4},
		{Name: "rule_value", Help: "A rule's metric.", Labels: map[string]string{"rule": "r2", "metric": "runs"}, Value: math.Inf(1)},
		{Name: "alerts", Help: "Alerts by state.\nOne series per alert.", Labels: map[string]string{"alertname": "r", "alertstate": "firing", "9bad-name": "x"}, Value: 1},
		{Name: "check_timestamp_seconds", Help: "When the check ran.", Value: 1.7e9},
		{Name: "rule_value", Help: "A rule's metric.", Labels: map[string]string{"rule": "r3", "metric": "l3_steps"}, Value: math.NaN()},
	}
	if err := WriteTextfile(path, samples); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var p expfmt.TextParser
	families, err := p.TextToMetricFamilies(f)
	if err != nil {
		b, _ := os.ReadFile(path)
		t.Fatalf("not valid exposition format: %v\n%s", err, b)
	}
	if len(families) != 3 || len(families["orchstat_rule_value"].Metric) != 3 {
		t.Fatalf("families: %v", families)
	}
	for name, fam := range families {
		if !strings.HasPrefix(name, "orchstat_") || fam.GetHelp() == "" || fam.GetType().String() != "GAUGE" {
			t.Errorf("%s: help %q type %v", name, fam.GetHelp(), fam.GetType())
		}
	}
	// Written atomically: nothing but the file itself is left behind.
	entries, _ := os.ReadDir(filepath.Dir(path))
	if len(entries) != 1 {
		t.Fatalf("left behind: %v", entries)
	}
}

package orchstat_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/orchstat/orchstat/"

// pure are the packages that compute and must stay cheap to build, test and
// reuse: none links DuckDB, Arrow, cobra or the table renderer.
var pure = []string{
	"ingest",
	"ingest/trace",
	"model/records",
	"ingest/runfile",
	"ingest/factory",
	"ingest/claudestrator",
	"ingest/orchestr8",
	"model/orchestr8/spec",
	"ingest/otlp",
	"ingest/claudecode",
	"ingest/codex",
	"ingest/fakeprovider",
	"model/reports",
	"reports/sqlviews",
	"model/events",
	"rules/alerting",
	"rules/promrules",
	"model/failure",
	"rules/retry",
	"rules/replay",
	"rules/optimize",
	"rules/adaptive",
	"rules/retry/runner",
	"rules/retry/runner/guard",
	"rules/retry/policyfile",
	"rules/retry/awssim",
	"rules/notify",
	"rules/yamlast",
	"rules/internal/names",
	"reports/reference",
	"benchmarks/callgen",
	"query/lake",
	"reports/render/chart",
	"reports/summary",
	"model/records/prices",
	"model/episode",
	"model/simulated",
	"model/advice",
	"model/factory/spec",
	"model/factory/audit",
	"model/alerts",
	"rules/check",
	"rules/ruletest",
	"model/rows",
	"model/disk",
	"model/systems",
	"model/devices",
}

// noYAML are the packages that read JSON or decide retries: a YAML parser
// is the policy and rule files' business (rules/retry/policyfile, rules/alerting).
var noYAML = []string{
	"model/failure",
	"rules/retry",
	"ingest/factory",
	"ingest/claudestrator",
	"ingest/orchestr8",
	"model/orchestr8/spec",
	"ingest/otlp",
	"ingest/claudecode",
	"ingest/codex",
	"ingest/fakeprovider",
	"model/records",
	"ingest/trace",
	"model/records/prices",
}

var heavy = []string{
	"github.com/duckdb/",
	"github.com/apache/arrow",
	"github.com/spf13/cobra",
	"github.com/olekukonko/tablewriter",
}

// TestImports keeps the data flowing one way: files → ingest → store →
// metrics → rules and replay → reports, with the commands on top. It fails
// naming the chain of imports that breaks a rule.
func TestImports(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("needs the go command")
	}
	graph := importGraph(t)
	for _, p := range pure {
		for _, h := range heavy {
			if chain := importChain(graph, module+p, h); chain != nil {
				t.Errorf("%s is pure but links %s: %s", p, h, strings.Join(chain, " → "))
			}
		}
	}
	for _, p := range noYAML {
		if chain := importChain(graph, module+p, "github.com/goccy/go-yaml"); chain != nil {
			t.Errorf("%s links a YAML parser: %s", p, strings.Join(chain, " → "))
		}
	}
	// The store hands out models; drawing them is the commands' business.
	for _, banned := range []string{module + "reports/render", "github.com/olekukonko/tablewriter", "github.com/spf13/cobra"} {
		if chain := importChain(graph, module+"query", banned); chain != nil {
			t.Errorf("query links %s: %s", banned, strings.Join(chain, " → "))
		}
	}
	// Only the store talks to DuckDB: the rest reads its models and writes
	// through its transactions. (Benchmarks measure DuckDB itself.)
	for p, imps := range graph {
		if !strings.HasPrefix(p, module) || p == module+"query" || strings.HasPrefix(p, module+"benchmarks/") {
			continue
		}
		for _, imp := range imps {
			if strings.HasPrefix(imp, "github.com/duckdb/") {
				t.Errorf("%s imports %s; only query may", strings.TrimPrefix(p, module), imp)
			}
		}
	}
	// The store keeps alerts and notifications as plain rows and reads
	// series; the rules, their check and their notifications are built on
	// it, not in it (rules/check adapts the store to alerting.Sampler).
	for _, banned := range []string{"rules/alerting", "rules/notify", "rules/check", "rules/ruletest"} {
		if chain := importChainTo(graph, module+"query", module+banned); chain != nil {
			t.Errorf("query links %s: %s", banned, strings.Join(chain, " → "))
		}
	}
}

// floors are the module's top-level folders, lowest first. A package may
// import its own folder and the folders on floors below its own: model is
// the floor every stage imports and imports nothing of the project; the
// stages beside each other on floor 1 reach one another only through the
// model and through interfaces a command wires; cmd and the benchmarks sit
// on top.
var floors = [][]string{
	{"model"},
	{"ingest", "query", "rules", "reports"},
	{"cmd", "benchmarks", ""},
}

// TestFloors holds every package of the module to the floors above, naming
// the import that breaks them.
func TestFloors(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("needs the go command")
	}
	floorOf := map[string]int{}
	for i, folders := range floors {
		for _, f := range folders {
			floorOf[f] = i
		}
	}
	folder := func(p string) string {
		rel := strings.TrimPrefix(p, module)
		if p == strings.TrimSuffix(module, "/") {
			return ""
		}
		top, _, _ := strings.Cut(rel, "/")
		return top
	}
	for p, imps := range importGraph(t) {
		if !strings.HasPrefix(p, module) {
			continue
		}
		from := folder(p)
		fromFloor, ok := floorOf[from]
		if !ok {
			t.Errorf("%s sits in %s/, which has no floor", p, from)
			continue
		}
		for _, imp := range imps {
			if !strings.HasPrefix(imp, module) {
				continue
			}
			to := folder(imp)
			if to == from || floorOf[to] < fromFloor {
				continue
			}
			t.Errorf("%s → %s runs across floor %d (%s/ may import only model/ and its own folder)",
				strings.TrimPrefix(p, module), strings.TrimPrefix(imp, module), fromFloor, from)
		}
	}
}

// importGraph is every package of the module and its dependencies, with
// their direct imports (tests' excluded).
func importGraph(t *testing.T) map[string][]string {
	t.Helper()
	cmd := exec.Command("go", "list", "-deps", "-json=ImportPath,Imports", "./...")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, stderr.String())
	}
	graph := map[string][]string{}
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p struct {
			ImportPath string
			Imports    []string
		}
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		graph[p.ImportPath] = p.Imports
	}
	for _, p := range append(slices.Clone(pure), noYAML...) {
		if _, ok := graph[module+p]; !ok {
			t.Fatalf("%s is listed but is not a package of the module", p)
		}
	}
	return graph
}

// importChain is the shortest chain of imports from one package to a
// package whose path starts with prefix, or nil.
func importChain(graph map[string][]string, from, prefix string) []string {
	return chainTo(graph, from, func(p string) bool { return strings.HasPrefix(p, prefix) })
}

// importChainTo is the shortest chain of imports from one package to the
// package pkg, or nil.
func importChainTo(graph map[string][]string, from, pkg string) []string {
	return chainTo(graph, from, func(p string) bool { return p == pkg })
}

// chainTo is the shortest chain of imports from one package to a package
// that is target, or nil.
func chainTo(graph map[string][]string, from string, target func(string) bool) []string {
	prev := map[string]string{from: ""}
	queue := []string{from}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		if target(p) {
			var chain []string
			for ; p != ""; p = prev[p] {
				chain = append([]string{strings.TrimPrefix(p, module)}, chain...)
			}
			return chain
		}
		for _, imp := range graph[p] {
			if _, seen := prev[imp]; !seen {
				prev[imp] = p
				queue = append(queue, imp)
			}
		}
	}
	return nil
}

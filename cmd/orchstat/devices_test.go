package main

import (
	"database/sql"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/orchstat/orchstat/model/devices"
	"github.com/orchstat/orchstat/model/reports"
	"github.com/orchstat/orchstat/query"
)

// The calls of testdata/devices (see its README): the laptop's Claude Code
// session (2 calls) and Codex rollout (4), the workstation's session (1)
// and rollout (6), and the laptop's session and rollout synced to the
// workstation, at other paths.
const (
	laptopCalls      = 6
	workstationCalls = 7
	syncedCalls      = 6
)

// usageJSON runs report --by with args and reads its JSON.
func usageJSON(t *testing.T, d deps, args ...string) reports.UsageReport {
	t.Helper()
	code, stdout, stderr := runCLIWith(t, fixedNow, d, "", append(args, "--timezone", "UTC", "--format", "json")...)
	if code != 0 {
		t.Fatalf("%v: exit %d\n%s", args, code, stderr)
	}
	var r reports.UsageReport
	if err := json.Unmarshal([]byte(stdout), &r); err != nil {
		t.Fatalf("%v: %v\n%s", args, err, stdout)
	}
	return r
}

func rowCalls(u reports.Usage) map[string]int64 {
	m := map[string]int64{}
	for _, r := range u.Rows {
		m[r.Key] = r.Calls
	}
	return m
}

// TestSyncedFolderCountsEachCallOnce: a folder synced between two machines,
// read beside the local one, counts each call once in every view, and
// says how many it counted once; --by device puts each call under the
// device named for its folder, --by project under the folder it ran in,
// one project for /home/dev/shop and /Users/dev/shop.
func TestSyncedFolderCountsEachCallOnce(t *testing.T) {
	endToEnd(t, "ingests and reports devices in a real store")
	dir := t.TempDir()
	copyTree(t, "../../testdata/devices", dir)
	laptop, ws := filepath.Join(dir, "laptop"), filepath.Join(dir, "workstation")
	db := filepath.Join(dir, "s.duckdb")
	names := []string{"--device", "laptop=" + laptop, "--device", "workstation=" + ws}

	both := usageJSON(t, defaultDeps(), append([]string{"--db", db, "report", laptop, ws, "--by", "device"}, names...)...)
	if got := both.Usage.Total.Calls; got != laptopCalls+workstationCalls {
		t.Errorf("both folders: %d calls, want %d", got, laptopCalls+workstationCalls)
	}
	if got, want := rowCalls(both.Usage), map[string]int64{"laptop": laptopCalls, "workstation": workstationCalls}; !sameCounts(got, want) {
		t.Errorf("by device: %v, want %v", got, want)
	}
	want := reports.UsageCopies{OnSeveralDevices: syncedCalls, LeftOut: syncedCalls}
	if both.Usage.Copies != want {
		t.Errorf("copies %+v, want %+v", both.Usage.Copies, want)
	}
	for _, d := range both.Usage.Devices {
		if d.Name == "laptop" && (d.Shared != syncedCalls || len(d.Folders) != 1 || d.Folders[0] != laptop) {
			t.Errorf("laptop: %+v, want its folder and %d calls shared", d, syncedCalls)
		}
	}

	// Every grouping counts the same calls once.
	for _, by := range reports.UsageBy {
		u := usageJSON(t, defaultDeps(), "--db", db, "report", "--no-ingest", "--by", by)
		if u.Usage.Total.Calls != laptopCalls+workstationCalls || u.Usage.Copies != want {
			t.Errorf("--by %s: %d calls, copies %+v", by, u.Usage.Total.Calls, u.Usage.Copies)
		}
	}
	proj := usageJSON(t, defaultDeps(), "--db", db, "report", "--no-ingest", "--by", "project")
	if got, want := rowCalls(proj.Usage), map[string]int64{"~/shop": 7, "~/api": 6}; !sameCounts(got, want) {
		t.Errorf("by project: %v, want %v", got, want)
	}

	// Unnamed, a device is its agent's folder, shown whole outside home.
	plain := usageJSON(t, defaultDeps(), "--db", db, "report", "--no-ingest", "--by", "device")
	if got := rowCalls(plain.Usage); got[filepath.Join(laptop, ".claude")] != 2 || got[filepath.Join(ws, ".codex")] != 6 {
		t.Errorf("unnamed devices: %v", got)
	}

	// The whole report counts the same calls, and says how many it
	// counted once, system by system.
	code, out, stderr := runCLI(t, "", "--db", db, "report", "--no-ingest", "--format", "json")
	var rep reports.Report
	if err := json.Unmarshal([]byte(out), &rep); code != 0 || err != nil {
		t.Fatalf("report: exit %d, %v\n%s", code, err, stderr)
	}
	var calls, once int64
	for _, r := range rep.Calls.BySystem {
		calls, once = calls+r.Calls, once+r.CountedOnce
	}
	if calls != laptopCalls+workstationCalls || once != syncedCalls {
		t.Errorf("report: %d calls, %d counted once; want %d and %d", calls, once, laptopCalls+workstationCalls, syncedCalls)
	}

	// The table says what it counted once.
	code, out, stderr = runCLI(t, "", "--db", db, "report", "--no-ingest", "--by", "day", "--timezone", "UTC")
	if code != 0 || !strings.Contains(out, "6 calls seen on two devices or more: each counted once (6 copies left out)") {
		t.Errorf("exit %d, %s\n%s: no line on the copies", code, stderr, out)
	}
}

// TestCopyAtAnotherPathCountsOnce: one session's transcript and one
// rollout copied to other paths on the same device (their copies differ
// only by path) are counted once, as copies within one device.
func TestCopyAtAnotherPathCountsOnce(t *testing.T) {
	dir := t.TempDir()
	copyTree(t, "../../testdata/devices/laptop", filepath.Join(dir, ".claude-home"))
	root := filepath.Join(dir, ".claude-home")
	session := filepath.Join(root, ".claude", "projects", "-home-dev-shop", "3f6a2c1e-8b4d-4e2a-9c7f-1a2b3c4d5e6f.jsonl")
	data, err := os.ReadFile(session)
	if err != nil {
		t.Fatal(err)
	}
	aside := filepath.Join(root, ".claude", "projects", "-home-dev-shop-old", "3f6a2c1e-8b4d-4e2a-9c7f-1a2b3c4d5e6f.jsonl")
	os.MkdirAll(filepath.Dir(aside), 0o755)
	if err := os.WriteFile(aside, data, 0o644); err != nil {
		t.Fatal(err)
	}
	u := usageJSON(t, defaultDeps(), "--db", filepath.Join(dir, "c.duckdb"), "report", root, "--by", "session")
	if u.Usage.Total.Calls != laptopCalls {
		t.Errorf("%d calls, want %d", u.Usage.Total.Calls, laptopCalls)
	}
	if want := (reports.UsageCopies{WithinOneDevice: 2, LeftOut: 2}); u.Usage.Copies != want {
		t.Errorf("copies %+v, want %+v", u.Usage.Copies, want)
	}
}

// TestLakeRunnersAreDevices: the same session exported by two runners
// counts once in report --lake, and the runners are the devices.
func TestLakeRunnersAreDevices(t *testing.T) {
	endToEnd(t, "ingests and reports devices in a real store")
	dir := t.TempDir()
	copyTree(t, "../../testdata/devices", dir)
	lake := filepath.Join(dir, "lake")
	for _, r := range []string{"laptop", "workstation"} {
		db := filepath.Join(dir, r+".duckdb")
		if code, _, stderr := runCLI(t, "", "--db", db, "export", "--quiet", "--lake", lake, "--runner", r, filepath.Join(dir, r)); code != 0 {
			t.Fatalf("export %s: exit %d\n%s", r, code, stderr)
		}
	}
	u := usageJSON(t, lakeDeps(t), "report", "--lake", lake, "--by", "device")
	if got, want := rowCalls(u.Usage), map[string]int64{"laptop": laptopCalls, "workstation": workstationCalls}; !sameCounts(got, want) {
		t.Errorf("by device: %v, want %v", got, want)
	}
	if want := (reports.UsageCopies{OnSeveralDevices: syncedCalls, LeftOut: syncedCalls}); u.Usage.Copies != want {
		t.Errorf("copies %+v, want %+v", u.Usage.Copies, want)
	}
	// docs/lake.md's query of its own counts the same calls.
	doc, err := os.ReadFile("../../docs/lake.md")
	if err != nil {
		t.Fatal(err)
	}
	_, block, _ := strings.Cut(string(doc), "-- DuckDB: each call once")
	block, _, _ = strings.Cut(block, "```")
	block = strings.ReplaceAll(block[strings.Index(block, "\n"):], lakeDocPlaceholder, lake)
	connector, err := query.NewConnector("")
	if err != nil {
		t.Fatal(err)
	}
	duck := sql.OpenDB(connector)
	defer duck.Close()
	var n int64
	if err := duck.QueryRow(block).Scan(&n); err != nil || n != laptopCalls+workstationCalls {
		t.Errorf("docs/lake.md's count of calls: %d, %v; want %d\n%s", n, err, laptopCalls+workstationCalls, block)
	}

	// A runner's own folder can be named too.
	named := usageJSON(t, lakeDeps(t), "report", "--lake", lake, "--by", "device",
		"--device", "ws-codex=workstation:"+filepath.Join(dir, "workstation", ".codex"))
	if got := rowCalls(named.Usage); got["ws-codex"] != 6 || got["workstation"] != 1 {
		t.Errorf("named in a lake: %v", got)
	}
}

func sameCounts(a, b map[string]int64) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// TestUsageByDeviceGolden: report --by device and --by project over
// testdata/devices, in every format, against testdata/golden/usage.*.
func TestUsageByDeviceGolden(t *testing.T) {
	endToEnd(t, "ingests and reports devices in a real store")
	// Before goldenStore, which moves to a folder of its own.
	src, _ := filepath.Abs("../../testdata/devices")
	goldenDir, db := goldenStore(t, "devices")
	// Folders under home read "~/...", so the files' folder is home.
	t.Setenv("HOME", src)
	for _, by := range []string{"device", "project"} {
		for _, format := range []string{"table", "markdown", "json", "csv", "html"} {
			t.Run(by+"/"+format, func(t *testing.T) {
				code, out, stderr := runCLI(t, "", "--db", db, "report", "--no-ingest", "--by", by, "--timezone", "UTC",
					"--device", "laptop="+filepath.Join(src, "laptop"), "--device", "workstation="+filepath.Join(src, "workstation"),
					"--format", format)
				if code != 0 {
					t.Fatalf("exit %d: %s", code, stderr)
				}
				matchGolden(t, filepath.Join(goldenDir, "usage."+by+"."+format), out)
			})
		}
	}
}

// TestOTelCallIdentity: OpenTelemetry events with no request id (Codex's)
// are one call per first event's time. A copy of an export at another path
// counts once; a second export of the same session with other times (a
// receiver's file rotated mid-session) counts apart, where ids by place
// in the file would have taken its calls for copies.
func TestOTelCallIdentity(t *testing.T) {
	data, err := os.ReadFile("../../ingest/otlp/testdata/codex_events.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	write := func(p string, b []byte) {
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(dir, "laptop", "otel", "logs.jsonl"), data)
	write(filepath.Join(dir, "workstation", "otel", "logs-copy.jsonl"), data)
	// An hour later (3600 s = 36 in the digits after "1731"), one session.
	write(filepath.Join(dir, "laptop", "otel", "logs-rotated.jsonl"), []byte(strings.ReplaceAll(string(data), `"1731000`, `"1731036`)))
	u := usageJSON(t, defaultDeps(), "--db", filepath.Join(dir, "o.duckdb"), "report", "--input-format", "otlp",
		filepath.Join(dir, "laptop"), filepath.Join(dir, "workstation"), "--by", "device")
	if u.Usage.Total.Calls != 6 {
		t.Errorf("%d calls, want 3 in each of two files of one session", u.Usage.Total.Calls)
	}
	if want := (reports.UsageCopies{OnSeveralDevices: 3, LeftOut: 3}); u.Usage.Copies != want {
		t.Errorf("copies %+v, want %+v", u.Usage.Copies, want)
	}
}

// externalDir is externalData/sub, beside the repository, or beside the
// folder of worktrees it is checked out in; the test skips without it.
func externalDir(t *testing.T, sub string) string {
	t.Helper()
	for _, root := range []string{externalData, filepath.Join("..", externalData)} {
		p, err := filepath.Abs(filepath.Join(root, sub))
		if err != nil {
			continue
		}
		if fi, err := os.Stat(p); err == nil && fi.IsDir() {
			return p
		}
	}
	t.Skip("../shared/testdata-external/" + sub + " is absent")
	return ""
}

// TestSyncedExternalRecords: the real Claude Code transcripts and Codex
// rollouts, read in place, and a copy of them as another machine's synced
// folder: read together they count exactly the calls of the originals,
// session by session, and every call is said to be seen on two devices.
func TestSyncedExternalRecords(t *testing.T) {
	endToEnd(t, "ingests and reports devices in a real store")
	claude, codex := externalDir(t, "claude-code"), externalDir(t, "codex")
	dir := t.TempDir()
	synced := filepath.Join(dir, "sync", "workstation")
	copyTree(t, claude, filepath.Join(synced, "claude-code"))
	copyTree(t, codex, filepath.Join(synced, "codex"))

	one := usageJSON(t, defaultDeps(), "--db", filepath.Join(dir, "one.duckdb"), "report", claude, codex, "--by", "session")
	both := usageJSON(t, defaultDeps(), "--db", filepath.Join(dir, "both.duckdb"), "report", claude, codex, synced, "--by", "session",
		"--device", "here="+filepath.Dir(claude), "--device", "workstation="+synced)
	if one.Usage.Total.Calls == 0 {
		t.Fatal("no calls in the external records")
	}
	if both.Usage.Total.Calls != one.Usage.Total.Calls {
		t.Errorf("%d calls with the synced copy, %d without", both.Usage.Total.Calls, one.Usage.Total.Calls)
	}
	if got, want := rowCalls(both.Usage), rowCalls(one.Usage); !sameCounts(got, want) {
		t.Errorf("sessions with the synced copy %v, without %v", got, want)
	}
	if both.Usage.Copies.OnSeveralDevices != one.Usage.Total.Calls {
		t.Errorf("%d calls said to be on two devices, want every one of %d", both.Usage.Copies.OnSeveralDevices, one.Usage.Total.Calls)
	}
	t.Logf("%d calls; alone %+v; with the synced copy %+v", one.Usage.Total.Calls, one.Usage.Copies, both.Usage.Copies)
}

// TestDeviceNamer: --device's paths are made absolute, "~/" is home, and
// a lake's RUNNER:PATH is kept as given.
func TestDeviceNamer(t *testing.T) {
	home := func() (string, error) { return "/home/dev", nil }
	wd, _ := os.Getwd()
	for _, tc := range []struct {
		lake bool
		spec string
		want devices.Named
	}{
		{false, "laptop=~/.claude", devices.Named{Name: "laptop", Path: "/home/dev/.claude"}},
		{false, "ws=sync/ws/", devices.Named{Name: "ws", Path: filepath.Join(wd, "sync/ws")}},
		{true, "ci=ci-1:/srv/.claude", devices.Named{Name: "ci", Path: "ci-1:/srv/.claude"}},
	} {
		o := &reportOptions{Devices: []string{tc.spec}}
		if tc.lake {
			o.Lake = "/lake"
		}
		n, err := o.deviceNamer(home)
		if err != nil || len(n.Named) != 1 || n.Named[0] != tc.want || n.Home != "/home/dev" || n.Lake != tc.lake {
			t.Errorf("%q: %+v, %v; want %+v", tc.spec, n, err, tc.want)
		}
	}
}

// TestUsageByDeviceAt80Columns: at an 80-column terminal the device view,
// its long folder names and the line on copies fit.
func TestUsageByDeviceAt80Columns(t *testing.T) {
	endToEnd(t, "ingests and reports devices in a real store")
	dir := t.TempDir()
	copyTree(t, "../../testdata/devices", dir)
	db := filepath.Join(dir, "w.duckdb")
	if code, _, stderr := runCLI(t, "", "--db", db, "ingest", "-q", dir); code != 0 {
		t.Fatalf("ingest: exit %d\n%s", code, stderr)
	}
	for _, by := range []string{"device", "project"} {
		code, out, stderr := runCLIWidth(t, 80, fixedNow, "--db", db, "report", "--no-ingest", "--by", by, "--timezone", "UTC")
		if code != 0 {
			t.Fatalf("exit %d\n%s", code, stderr)
		}
		for i, l := range strings.Split(out, "\n") {
			if n := len([]rune(l)); n > 80 {
				t.Errorf("--by %s: line %d is %d columns wide: %q", by, i+1, n, l)
			}
		}
		if !strings.Contains(out, "6 calls seen on two devices or more") {
			t.Errorf("--by %s: no line on the copies:\n%s", by, out)
		}
	}
}

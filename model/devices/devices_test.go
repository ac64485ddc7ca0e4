package devices

import "testing"

func TestDevice(t *testing.T) {
	named := []Named{{"laptop", "/home/dev/.claude"}, {"workstation", "/home/dev/sync/workstation"},
		{"ws-codex", "/home/dev/sync/workstation/.codex"}, {"ci", "ci-1:/srv/home/.claude"}}
	for _, tc := range []struct {
		n          Namer
		path, want string
	}{
		// A named folder wins, the longest one first.
		{Namer{Named: named}, "/home/dev/.claude/projects/-home-dev-shop/s.jsonl", "laptop"},
		{Namer{Named: named}, "/home/dev/sync/workstation/.claude/projects/x/s.jsonl", "workstation"},
		{Namer{Named: named}, "/home/dev/sync/workstation/.codex/sessions/r.jsonl", "ws-codex"},
		// A path is not within a folder whose name it only starts with.
		{Namer{Named: named, Home: "/home/dev"}, "/home/dev/.claude-old/s.jsonl", "~/.claude-old"},
		// Unnamed: the agent's folder, home as ~.
		{Namer{Home: "/home/dev"}, "/home/dev/sync/workstation/.claude/projects/x/s.jsonl", "~/sync/workstation/.claude"},
		{Namer{Home: "/home/dev"}, "/home/dev/.codex/sessions/2026/03/04/r.jsonl", "~/.codex"},
		{Namer{Home: "/home/dev"}, "/home/dev/.config/claude/projects/x/s.jsonl", "~/.config/claude"},
		{Namer{}, "/mnt/backup/.claude/projects/x/s.jsonl", "/mnt/backup/.claude"},
		// Not an agent's folder: the file's own.
		{Namer{Home: "/home/dev"}, "/var/otel/export/logs.json", "/var/otel/export"},
		// Windows paths, as a Windows machine's store keeps them.
		{Namer{Home: `C:\Users\dev`}, `C:\Users\dev\.claude\projects\x\s.jsonl`, `~\.claude`},
		{Namer{Named: []Named{{"win", `D:\sync\ws`}}}, `D:\sync\ws\.codex\r.jsonl`, "win"},
		{Namer{}, `D:\otel\logs.json`, `D:\otel`},
		// A lake: the runner, unless a name holds the runner's path.
		{Namer{Lake: true}, "laptop:/home/dev/.claude/projects/x/s.jsonl", "laptop"},
		{Namer{Lake: true, Named: named}, "ci-1:/srv/home/.claude/projects/x/s.jsonl", "ci"},
	} {
		if got, _ := tc.n.Device(tc.path); got != tc.want {
			t.Errorf("Device(%q) = %q, want %q", tc.path, got, tc.want)
		}
	}
}

func TestParseNamed(t *testing.T) {
	for _, tc := range []struct {
		spec, name, path string
		ok               bool
	}{
		{"laptop=/home/dev/.claude", "laptop", "/home/dev/.claude", true},
		{" ws = /x ", "ws", "/x", true},
		{"laptop", "", "", false},
		{"=/x", "", "", false},
		{"laptop=", "", "", false},
		{"a\tb=/x", "", "", false},
	} {
		got, err := ParseNamed(tc.spec)
		if (err == nil) != tc.ok || got.Name != tc.name || got.Path != tc.path {
			t.Errorf("ParseNamed(%q) = %+v, %v", tc.spec, got, err)
		}
	}
}

func TestProject(t *testing.T) {
	for cwd, want := range map[string]string{
		"/home/dev/shop":        "~/shop",
		"/Users/dev/shop/":      "~/shop",
		"/root/shop":            "~/shop",
		`C:\Users\dev\src\shop`: "~/src/shop",
		"/home/dev":             "~",
		"/srv/build/shop":       "/srv/build/shop",
		"":                      NoProject,
	} {
		if got := Project(cwd); got != want {
			t.Errorf("Project(%q) = %q, want %q", cwd, got, want)
		}
	}
}

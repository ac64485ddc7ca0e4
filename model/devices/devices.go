// Package devices says where an agent's record came from (the device)
// and what it worked on (the project), for `orchstat report --by device`
// and `--by project`.
//
// A device is where orchstat read a record, not where the call was made:
// no Claude Code transcript, Codex rollout or OpenTelemetry export names
// its host reliably, so a folder synced from another machine is a device
// of its own only because it is another folder. The name is, in order:
//
//   - the NAME of the longest `--device NAME=PATH` whose PATH holds the
//     file, so a user names their machines ("laptop=~/.claude",
//     "workstation=~/sync/workstation/.claude");
//   - in a lake, the runner that exported the file (lake paths read
//     "runner:path");
//   - the agent's folder the file is in: the path up to its first
//     `.claude`, `.codex` or `.config/claude` component (~/.claude,
//     ~/sync/workstation/.claude), the home folder written `~`;
//   - else the file's own folder (an OTLP file written anywhere).
//
// A project is the working folder a call ran in, as the record states it
// (Claude Code's `cwd` on every line, Codex's `cwd` in its session meta;
// OpenTelemetry exports carry none). The home folder of any user, on
// Linux, macOS or Windows, is written `~`, so that one repository checked
// out at /home/dev/shop on one machine and /Users/dev/shop on another is
// one project.
package devices

import (
	"fmt"
	"regexp"
	"strings"
)

// Named is a device the user named: NAME=PATH.
type Named struct {
	Name string
	Path string
}

// ParseNamed reads NAME=PATH. The name is what the report shows, so it
// must say something: 1 to 64 characters, no control characters.
func ParseNamed(spec string) (Named, error) {
	name, p, ok := strings.Cut(spec, "=")
	name, p = strings.TrimSpace(name), strings.TrimSpace(p)
	switch {
	case !ok || name == "" || p == "":
		return Named{}, fmt.Errorf("%q: want NAME=PATH (laptop=~/.claude)", spec)
	case len(name) > 64:
		return Named{}, fmt.Errorf("%q: a device name has at most 64 characters", spec)
	case strings.ContainsFunc(name, func(r rune) bool { return r < 0x20 || r == 0x7f }):
		return Named{}, fmt.Errorf("%q: a device name has no control characters", spec)
	}
	return Named{Name: name, Path: p}, nil
}

// Namer names the device of a file's path.
type Namer struct {
	// Named are the user's names; the longest path holding a file wins.
	Named []Named
	// Home is the user's home folder, written "~" in the names made from
	// paths ("" leaves paths whole).
	Home string
	// Lake says paths are a lake's, "runner:path" (see docs/lake.md).
	Lake bool
}

// Device names the device of the file at p, and the folder that makes
// it that device (the named PATH, the runner, the agent's folder).
func (n Namer) Device(p string) (name, folder string) {
	best := -1
	for i, d := range n.Named {
		if within(p, d.Path) && (best < 0 || len(d.Path) > len(n.Named[best].Path)) {
			best = i
		}
	}
	if best >= 0 {
		return n.Named[best].Name, n.tilde(n.Named[best].Path)
	}
	if n.Lake {
		if runner, _, ok := strings.Cut(p, ":"); ok && runner != "" {
			return runner, runner
		}
	}
	root := n.tilde(agentRoot(p))
	return root, root
}

// tilde writes the home folder at the head of p as "~".
func (n Namer) tilde(p string) string {
	if n.Home != "" && within(p, n.Home) {
		return "~" + strings.TrimPrefix(p, strings.TrimSuffix(n.Home, "/"))
	}
	return p
}

// within says p is dir or under it.
func within(p, dir string) bool {
	sep := separator(dir)
	dir = strings.TrimSuffix(dir, sep)
	return p == dir || strings.HasPrefix(p, dir+sep)
}

// separator is the path's: "\" for a Windows path that has no "/", the
// store keeping paths as the machine that read them wrote them.
func separator(p string) string {
	if !strings.Contains(p, "/") && strings.Contains(p, `\`) {
		return `\`
	}
	return "/"
}

// agentRoot is the path up to its first agent folder, else its folder.
func agentRoot(p string) string {
	sep := separator(p)
	parts := strings.Split(p, sep)
	for i, s := range parts {
		if s == ".claude" || s == ".codex" || (s == "claude" && i > 0 && parts[i-1] == ".config") {
			return strings.Join(parts[:i+1], sep)
		}
	}
	if i := strings.LastIndex(p, sep); i > 0 {
		return p[:i]
	}
	return p
}

// NoProject is the project of a call whose record names no folder.
const NoProject = "(no project)"

// homeDir matches a home folder at the head of a path: /home/USER,
// /Users/USER, /root, C:\Users\USER (with either slash).
var homeDir = regexp.MustCompile(`^(?:/home/[^/]+|/Users/[^/]+|/root|[A-Za-z]:[/\\][Uu]sers[/\\][^/\\]+)(?:[/\\]|$)`)

// Project names the project of a call that ran in cwd.
func Project(cwd string) string {
	cwd = strings.TrimSpace(cwd)
	if cwd == "" {
		return NoProject
	}
	if loc := homeDir.FindStringIndex(cwd); loc != nil {
		rest := strings.ReplaceAll(cwd[loc[1]:], `\`, "/")
		cwd = strings.TrimSuffix("~/"+rest, "/")
	}
	return cwd
}

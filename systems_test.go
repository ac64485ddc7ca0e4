package orchstat_test

import (
	"slices"
	"testing"

	"github.com/orchstat/orchstat/ingest"
	"github.com/orchstat/orchstat/model/reports"
	"github.com/orchstat/orchstat/model/systems"
	"github.com/orchstat/orchstat/rules/replay"
	"github.com/orchstat/orchstat/rules/retry"
)

// TestEverySystemHandled holds each system model/systems declares to
// every stage that must know it, and each format ingest reads to a
// declared system: a system or kind declared in one place and forgotten
// in another fails here, naming the place.
func TestEverySystemHandled(t *testing.T) {
	formats := map[string]int{}
	for i, f := range ingest.RecordFormats() {
		if _, ok := systems.Get(f.System); !ok {
			t.Errorf("ingest reads a format of system %q, which model/systems does not declare", f.System)
		}
		if _, dup := formats[f.System]; dup {
			t.Errorf("ingest registers two formats of system %q", f.System)
		}
		formats[f.System] = i
	}
	ranks, kinds := map[int]string{}, map[string]string{}
	for _, s := range systems.All {
		if s.Name == "" {
			t.Fatalf("model/systems declares a system with no name: %+v", s)
		}
		if other, dup := ranks[s.Rank]; dup {
			t.Errorf("%s: Rank %d is %s's too: reports would list them in no set order", s.Name, s.Rank, other)
		}
		ranks[s.Rank] = s.Name
		if !slices.Contains(reports.SystemOrder, s.Name) {
			t.Errorf("%s: not in reports.SystemOrder", s.Name)
		}

		// How its records are read.
		switch {
		case s.Format != "" && s.Within != "":
			t.Errorf("%s: has a format (%q) and comes within %s's files: which is it?", s.Name, s.Format, s.Within)
		case s.Format == "" && s.Within == "":
			t.Errorf("%s: no Format and no Within: nothing reads its records", s.Name)
		case s.Within != "":
			if w, ok := systems.Get(s.Within); !ok || w.Format == "" {
				t.Errorf("%s: Within %q, which is no system with files of its own", s.Name, s.Within)
			}
		}
		if s.Format != "" && !slices.Contains(ingest.Formats, s.Format) {
			t.Errorf("%s: --input-format does not offer %q", s.Name, s.Format)
		}
		i, registered := formats[s.Name]
		switch {
		case s.Name == systems.Orchestrator:
			if registered || len(s.Kinds) > 0 {
				t.Errorf("%s: its files are ingest's own (trace, summary, verification), not a record format's", s.Name)
			}
		case s.Format == "":
			if registered || len(s.Kinds) > 0 {
				t.Errorf("%s: has kinds or a format package but no Format to name them with", s.Name)
			}
		case !registered:
			t.Errorf("%s: no format package registered in ingest/formats.go's formats reads its kinds %v", s.Name, s.Kinds)
		default:
			f := ingest.RecordFormats()[i]
			var names []string
			for _, k := range f.Kinds {
				names = append(names, k.Name)
				switch {
				case k.Parse == nil:
					t.Errorf("%s: kind %q has no parser", s.Name, k.Name)
				case k.File == "" && k.Path == nil && k.Head == nil:
					t.Errorf("%s: kind %q has no File, Path or Head: no file is ever recognised as it", s.Name, k.Name)
				case k.Beside != "" && k.File == "":
					t.Errorf("%s: kind %q needs a file Beside it but has no File of its own", s.Name, k.Name)
				}
				if f.Home != "" && k.File == "" {
					t.Errorf("%s: kind %q has no File to look for in its Home %s", s.Name, k.Name, f.Home)
				}
			}
			if !slices.Equal(names, s.Kinds) {
				t.Errorf("%s: model/systems declares kinds %v, its format package %v", s.Name, s.Kinds, names)
			}
			if f.Guess == nil {
				t.Errorf("%s: no Guess: a file given with --input-format %s whose name says nothing is never read", s.Name, s.Format)
			}
		}
		for _, k := range s.Kinds {
			if other, dup := kinds[k]; dup {
				t.Errorf("%s: kind %q is %s's too", s.Name, k, other)
			}
			kinds[k] = s.Name
		}

		// How simulate replays it. rules/replay panics on a preset the
		// engine does not have, so that is asked first.
		if s.Preset != "" {
			if _, err := retry.Preset(s.Preset); err != nil {
				t.Errorf("%s: Preset: %v", s.Name, err)
				continue
			}
		}
		if s.Replay != systems.NotReplayed && s.Preset == "" {
			t.Errorf("%s: replayed, but has no Preset to replay it against", s.Name)
			continue
		}
		_, attempts := replay.ForSystem(s.Name)
		_, calls := replay.ForEpisodes(s.Name)
		switch s.Replay {
		case systems.Attempts:
			if !attempts {
				t.Errorf("%s: replayed by its attempts, but replay.ForSystem does not take it", s.Name)
			}
		case systems.Calls:
			if !calls {
				t.Errorf("%s: replayed by its calls, but replay.ForEpisodes does not take it", s.Name)
			}
		case systems.NotReplayed:
			if s.NoReplay == "" {
				t.Errorf("%s: not replayed, and NoReplay does not say why", s.Name)
			}
			if attempts || calls {
				t.Errorf("%s: not replayed, yet rules/replay replays it", s.Name)
			}
		default:
			t.Errorf("%s: Replay %d is no way of replaying", s.Name, s.Replay)
		}
		if s.Replay != systems.NotReplayed && s.NoReplay != "" {
			t.Errorf("%s: replayed, yet NoReplay says why not", s.Name)
		}
	}
}

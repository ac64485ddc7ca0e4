package runner

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// appendLine is a stand-in for the trace envelope's writer: the type and
// the payload as JSON, a line each.
func appendLine(dst []byte, runID, typ string, at time.Time, payload any) ([]byte, error) {
	b, err := json.Marshal(map[string]any{"runId": runID, "type": typ, "ts": at.UnixMilli(), "payload": payload})
	return append(append(dst, b...), '\n'), err
}

func readTrace(t *testing.T, path string) []map[string]any {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []map[string]any
	for _, l := range bytes.Split(bytes.TrimSpace(b), []byte("\n")) {
		var m map[string]any
		if err := json.Unmarshal(l, &m); err != nil {
			t.Fatal(err)
		}
		out = append(out, m)
	}
	return out
}

func TestRecorder(t *testing.T) {
	started := time.Date(2026, 11, 27, 7, 0, 0, 0, time.UTC)
	dir := t.TempDir()
	spec := RecordSpec{Op: "test", Argv: []string{"go", "test"}, Command: "go test", RunsDir: dir, Started: started, PID: 42, Append: appendLine}

	// Its own run: RunStarted, the attempts, CommandFinished, RunFinished.
	r := Record(spec)
	if r.RunID() != "1795762800000" || r.Invocation() != r.RunID() {
		t.Fatalf("run %q invocation %q", r.RunID(), r.Invocation())
	}
	a := Attempt{N: 1, Started: started, Duration: time.Second, ExitCode: 1}
	r.AttemptStarted(1, 7, started)
	r.AttemptFinished(a)
	r.RetryScheduled(a, time.Second, started.Add(time.Second))
	r.Finish(Finished{Result: Result{Attempts: []Attempt{a}, Reason: "max_retries"}, At: started.Add(2 * time.Second)})
	var types []string
	for _, e := range readTrace(t, filepath.Join(dir, r.RunID(), "trace.jsonl")) {
		types = append(types, e["type"].(string))
	}
	if got := strings.Join(types, " "); got != "RunStarted CommandAttemptStarted CommandAttemptFinished CommandRetryScheduled CommandFinished RunFinished" {
		t.Errorf("events: %s", got)
	}

	// A second invocation in the same millisecond starts the next run;
	// one joining a run it did not start names an invocation of its own
	// and writes no run events.
	if r2 := Record(spec); r2.RunID() != "1795762800001" {
		t.Errorf("second run %q", r2.RunID())
	}
	spec.RunID = r.RunID()
	j := Record(spec)
	if j.Invocation() != r.RunID()+"/exec-1795762800000-42" {
		t.Errorf("joining invocation %q", j.Invocation())
	}
	j.Finish(Finished{Result: Result{Success: true, Reason: "passed"}, At: started})
	evs := readTrace(t, filepath.Join(dir, r.RunID(), "trace.jsonl"))
	if last := evs[len(evs)-1]; last["type"] != "CommandFinished" {
		t.Errorf("a joining invocation ended the run: %v", last)
	}
}

// TestRecorderWarnsOnce: a trace that cannot be written is said once, and
// the command goes on unrecorded.
func TestRecorderWarnsOnce(t *testing.T) {
	file := filepath.Join(t.TempDir(), "file")
	os.WriteFile(file, nil, 0o644)
	var warned []error
	r := Record(RecordSpec{Op: "build", RunsDir: filepath.Join(file, "runs"), Started: time.Unix(0, 0), Append: appendLine,
		Warn: func(err error) { warned = append(warned, err) }})
	r.AttemptStarted(1, 1, time.Unix(0, 0))
	r.Finish(Finished{})
	if len(warned) != 1 || !errors.Is(warned[0], os.ErrExist) && !strings.Contains(warned[0].Error(), "not a directory") {
		t.Errorf("warned %v", warned)
	}
}

func TestClip(t *testing.T) {
	long := strings.Repeat("é", MaxString+10)
	if got := Clip(long); len([]rune(got)) != MaxString {
		t.Errorf("clipped to %d characters", len([]rune(got)))
	}
	if Clip("short") != "short" {
		t.Error("a short string changed")
	}
}
